"""Multi-exit BERT: shapes, the exits' states are the layers' [CLS] states, entropy-based early exit."""
import math

import pytest
import torch

from bertsent.models.multi_exit import MultiExitClassifier, early_exit_decisions, prediction_entropy


@pytest.fixture(scope="module")
def tiny_path(tmp_path_factory):
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(vocab_size=100, hidden_size=16, num_hidden_layers=3, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=32)
    path = tmp_path_factory.mktemp("tiny-multi-exit")
    BertModel(config).save_pretrained(path)
    return str(path)


@pytest.fixture
def inputs():
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(1, 100, (5, 7), generator=generator)
    mask = torch.ones(5, 7, dtype=torch.long)
    mask[0, 4:] = 0
    return ids, mask


def test_forward_gives_every_exit(tiny_path, inputs):
    model = MultiExitClassifier(tiny_path, num_labels=3).eval()
    out = model(*inputs, labels=torch.tensor([0, 1, 2, 0, 1]))
    assert model.num_exits == 3
    assert out.exit_logits.shape == (3, 5, 3) and out.exit_features.shape == (3, 5, 16)
    assert torch.equal(out.logits, out.exit_logits[-1])
    expected = sum(torch.nn.functional.cross_entropy(z, torch.tensor([0, 1, 2, 0, 1])) for z in out.exit_logits) / 3
    assert out.loss.item() == pytest.approx(expected.item(), rel=1e-6)
    # the layer-by-layer pass gives the encoder's own last [CLS] state
    last = model.bert(input_ids=inputs[0], attention_mask=inputs[1]).last_hidden_state[:, 0]
    assert torch.allclose(model.cls_states(*inputs)[-1], last, atol=1e-5)


def test_early_exit_picks_the_first_exit_under_the_threshold():
    confident, unsure = [5.0, -5.0], [0.1, 0.0]  # entropies about 0.045 and 0.69 nats
    exit_logits = torch.tensor([
        [unsure, confident, unsure, [-5.0, 5.0]],  # exit 1
        [confident, unsure, unsure, unsure],  # exit 2
        [[-5.0, 5.0], [-5.0, 5.0], [0.0, 0.3], confident],  # exit 3 (last: takes the rest)
    ])
    predictions, layers = early_exit_decisions(exit_logits, threshold=0.1)
    assert layers.tolist() == [2, 1, 3, 1]
    assert predictions.tolist() == [0, 0, 1, 1]
    assert early_exit_decisions(exit_logits, threshold=0.0)[1].tolist() == [3, 3, 3, 3]
    assert early_exit_decisions(exit_logits, threshold=math.log(2) + 0.01)[1].tolist() == [1, 1, 1, 1]
    assert prediction_entropy(torch.tensor([0.0, 0.0])).item() == pytest.approx(math.log(2))


def test_layer_by_layer_early_exit_agrees_with_the_decisions_on_all_exits(tiny_path, inputs):
    torch.manual_seed(1)
    model = MultiExitClassifier(tiny_path).eval()
    for head in model.exits:  # spread the exits' confidence so that thresholds split the batch
        head.classifier.weight.data.normal_(0, 3.0)
    with torch.no_grad():
        exit_logits = model(*inputs).exit_logits
    entropies = prediction_entropy(exit_logits)
    for threshold in [0.0, float(entropies.median()), float(entropies.max()) + 1e-3]:
        predictions, layers = model.early_exit(*inputs, threshold=threshold)
        expected_predictions, expected_layers = early_exit_decisions(exit_logits, threshold)
        assert layers.tolist() == expected_layers.tolist()
        assert predictions.tolist() == expected_predictions.tolist()
    assert len(set(early_exit_decisions(exit_logits, float(entropies.median()))[1].tolist())) > 1


def test_bad_exit_logits_are_refused():
    with pytest.raises(ValueError, match="exits, examples, classes"):
        early_exit_decisions(torch.zeros(4, 2), 0.1)


def test_the_exits_are_the_heads_a_head_learning_rate_reaches(tiny_path):
    from bertsent.models.multi_exit import MultiExitClassifier
    from bertsent.training.loop import decay_parameter_groups

    model = MultiExitClassifier(tiny_path)
    names = {id(p): n for n, p in model.named_parameters()}
    heads = [names[id(p)] for g in decay_parameter_groups(model, 0.01, 1e-3)[2:] for p in g["params"]]
    assert heads and all(n.startswith("exits.") for n in heads)
    assert len(heads) == sum(1 for n in names.values() if n.startswith("exits."))


def test_every_exit_has_its_own_weights(tiny_path):
    """Each exit is a separate head: no parameter is shared between two exits, they start from different draws,
    and a change to one exit's weights leaves the others' logits alone."""
    model = MultiExitClassifier(tiny_path, num_labels=2).eval()
    per_exit = [list(head.parameters()) for head in model.exits]
    pointers = [{p.data_ptr() for p in params} for params in per_exit]
    for i in range(len(pointers)):
        for j in range(i):
            assert not pointers[i] & pointers[j], f"exits {j + 1} and {i + 1} share parameters"
    assert len(list(model.exits.parameters())) == sum(len(params) for params in per_exit), \
        "the exits' parameters are fewer than the heads' (a head is shared)"
    weights = [head.classifier.weight for head in model.exits]
    assert not torch.allclose(weights[0], weights[1]), "exits 1 and 2 start from the same classifier weights"
    ids = torch.randint(1, 100, (4, 6), generator=torch.Generator().manual_seed(3))
    mask = torch.ones_like(ids)
    with torch.no_grad():
        before = model(ids, mask).exit_logits
        model.exits[0].classifier.bias.add_(1.0)
        after = model(ids, mask).exit_logits
    assert not torch.allclose(after[0], before[0])
    assert torch.equal(after[1:], before[1:]), "changing exit 1's weights changed a later exit's logits"


def test_an_exits_representation_is_read_before_its_dropout(tmp_path):
    """exit_features[l] is the exit's pooled state tanh(pooler(cls_l)), the classifier's input before dropout:
    in training mode (encoder dropout off, exit dropout 0.5) it is not zeroed or rescaled, while the logits are."""
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=100, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=32, max_position_embeddings=32, hidden_dropout_prob=0.0,
                         attention_probs_dropout_prob=0.0, classifier_dropout=0.5),
              add_pooling_layer=False).save_pretrained(tmp_path)
    model = MultiExitClassifier(str(tmp_path), num_labels=3).train()
    ids = torch.randint(1, 100, (6, 7), generator=torch.Generator().manual_seed(0))
    mask = torch.ones_like(ids)
    torch.manual_seed(1)
    out = model(ids, mask)
    states = model.cls_states(ids, mask)  # deterministic: the encoder has no dropout
    for l, (head, state) in enumerate(zip(model.exits, states)):
        pooled = torch.tanh(head.pooler(state))
        assert torch.allclose(out.exit_features[l], pooled, atol=1e-6), \
            f"exit {l + 1}'s representation is not its pooled state before dropout (dropout applied to it?)"
    # the dropout is there, between the representation and the classifier
    torch.manual_seed(2)
    assert not torch.allclose(model(ids, mask).exit_logits, out.exit_logits), "no dropout before the classifier"
