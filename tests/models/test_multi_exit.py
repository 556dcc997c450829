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
