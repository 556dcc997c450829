"""SelfGuidedModel's wiring (``bertsent.models.self_guided``), on a tiny randomly initialised BERT with dropout 0.1:
BERT_F's views (every hidden state, layer 0 included; no dropout), BERT_T's dropout, and the one projection head."""
import pytest
import torch
from torch import nn

from bertsent.encode.pooling import max_pooling, mean_pooling
from bertsent.losses import sg_opt3_loss
from bertsent.models import ProjectionHead, SelfGuidedModel

LAYERS = 2


def tiny_model(**options) -> SelfGuidedModel:
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(vocab_size=120, hidden_size=32, num_hidden_layers=LAYERS, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=32, hidden_dropout_prob=0.1,
                        attention_probs_dropout_prob=0.1)
    return SelfGuidedModel(BertModel(config, add_pooling_layer=False), head_dim=48, **options)


def tiny_batch():
    generator = torch.Generator().manual_seed(1)
    input_ids = torch.randint(5, 120, (4, 10), generator=generator)
    attention_mask = torch.ones_like(input_ids)
    attention_mask[2:, 7:] = 0  # padding in two rows
    return input_ids, attention_mask


@pytest.mark.parametrize("view_pooling, pool", [("max", max_pooling), ("mean", mean_pooling)])
def test_views_are_every_hidden_state_of_the_frozen_copy_embedding_layer_included(view_pooling, pool):
    model = tiny_model(view_pooling=view_pooling).eval()  # no dropout anywhere: the views alone are compared
    input_ids, attention_mask = tiny_batch()
    views = model.views(input_ids, attention_mask)
    with torch.no_grad():
        hidden = model.frozen(input_ids=input_ids, attention_mask=attention_mask,
                              output_hidden_states=True).hidden_states
        embedding_layer = model.frozen.embeddings(input_ids=input_ids)  # hidden state 0
    assert len(hidden) == LAYERS + 1
    assert views.shape == (4, LAYERS + 1, 32), "one view per hidden state k = 0..l"
    assert torch.allclose(hidden[0], embedding_layer)
    assert torch.allclose(views[:, 0], pool(embedding_layer, attention_mask), atol=1e-6), \
        "view 0 must be the pooled embedding layer"
    for k, state in enumerate(hidden):
        assert torch.allclose(views[:, k], pool(state, attention_mask), atol=1e-6), f"view {k}"
    # the projected views the loss sees are the same l + 1 views, in the same order
    c, h = model(input_ids, attention_mask)
    assert h.shape == (4, LAYERS + 1, 48)
    with torch.no_grad():
        assert torch.allclose(h, model.head(views), atol=1e-6)


def test_frozen_copy_runs_without_dropout_and_trained_copy_with_it():
    model = tiny_model().train()
    input_ids, attention_mask = tiny_batch()
    assert model.frozen is not model.trained
    frozen_modules = set(map(id, model.frozen.modules()))
    assert not frozen_modules & set(map(id, model.trained.modules())), "BERT_F shares modules with BERT_T"
    assert not any(m.training for m in model.frozen.modules()), "BERT_F must stay in eval mode while training"
    assert all(m.training for m in model.trained.modules() if isinstance(m, nn.Dropout))
    assert any(isinstance(m, nn.Dropout) and m.p > 0 for m in model.frozen.modules())  # dropout exists, but is off
    assert torch.equal(model.views(input_ids, attention_mask), model.views(input_ids, attention_mask))
    c1, h1 = model(input_ids, attention_mask)
    c2, h2 = model(input_ids, attention_mask)
    assert torch.equal(h1, h2), "BERT_F's views must not depend on dropout"
    assert not torch.equal(c1, c2), "BERT_T must train with dropout"
    # eval() and back to train() keep BERT_F in eval mode
    model.eval().train()
    assert not any(m.training for m in model.frozen.modules())


def test_frozen_dropout_option_turns_the_frozen_copys_dropout_on():
    model = tiny_model(frozen_dropout=True).train()
    input_ids, attention_mask = tiny_batch()
    assert all(m.training for m in model.frozen.modules() if isinstance(m, nn.Dropout))
    assert not torch.equal(model.views(input_ids, attention_mask), model.views(input_ids, attention_mask))
    model.eval()
    assert not any(m.training for m in model.frozen.modules())


def test_one_projection_head_serves_both_branches():
    model = tiny_model().train()
    input_ids, attention_mask = tiny_batch()
    heads = [name for name, m in model.named_modules() if isinstance(m, ProjectionHead)]
    assert heads == ["head"], f"one projection head for both branches, not {heads}"
    outside = [p for name, p in model.named_parameters() if not name.startswith(("trained.", "frozen."))]
    assert {id(p) for p in outside} == {id(p) for p in model.head.parameters()}, \
        "the only parameters outside BERT_T and BERT_F are the one head's"
    inputs = []
    handle = model.head.register_forward_hook(lambda module, args, output: inputs.append(tuple(args[0].shape)))
    c, h = model(input_ids, attention_mask)
    handle.remove()
    assert sorted(inputs) == sorted([(4, 32), (4, LAYERS + 1, 32)]), "the head projects both BERT_T's [CLS] and BERT_F's views"

    head = list(model.head.parameters())
    for branch, loss in (("BERT_T's [CLS] (c)", sg_opt3_loss(c, h.detach(), 0.1)),
                         ("BERT_F's views (h)", sg_opt3_loss(c.detach(), h, 0.1))):
        grads = torch.autograd.grad(loss, head, retain_graph=True, allow_unused=True)
        assert all(g is not None and g.abs().sum() > 0 for g in grads), f"no gradient reaches the head from {branch}"


# ---------------------------------------------------------------- one embedding table for both copies

def embedding_sharing(model: SelfGuidedModel, embeddings: str):
    """(shared, separate): BERT_F's parameters that are BERT_T's own tensors, and those that are not."""
    trained = dict(model.trained.named_parameters())
    frozen = dict(model.frozen.named_parameters(remove_duplicate=False))
    assert trained.keys() == frozen.keys()
    shared = [n for n in frozen if frozen[n].data_ptr() == trained[n].data_ptr()]
    separate = [n for n in frozen if frozen[n].data_ptr() != trained[n].data_ptr()]
    assert all(n.startswith(embeddings) for n in shared), f"only layer 0 may be shared, not {shared}"
    return shared, separate


def test_the_two_copies_share_one_frozen_embedding_layer_and_nothing_else():
    model = tiny_model().train()
    shared, separate = embedding_sharing(model, "embeddings.")
    assert sorted(shared) == sorted(n for n, _ in model.trained.embeddings.named_parameters(prefix="embeddings"))
    assert "embeddings.word_embeddings.weight" in shared
    assert model.frozen.embeddings.word_embeddings.weight is model.trained.embeddings.word_embeddings.weight
    assert all(n.startswith("encoder.layer.") for n in separate) and separate
    for name in shared:
        assert not model.trained.get_parameter(name).requires_grad, f"{name} is trained"
    assert not any(p.requires_grad for p in model.frozen.parameters())
    assert all(p.requires_grad for n, p in model.trained.named_parameters() if n in separate)
    # modules stay separate: the frozen copy's embedding module can be in eval mode while the trained one trains
    assert model.frozen.embeddings is not model.trained.embeddings
    assert model.trained.embeddings.training and not model.frozen.embeddings.training
    # the model counts the table once
    unique = {p.data_ptr() for p in model.parameters()}
    assert len(unique) == len(list(model.parameters())) == len(list(model.named_parameters(remove_duplicate=False))) - len(shared)


def test_a_trained_step_moves_the_trained_copy_only():
    model = tiny_model().train()
    input_ids, attention_mask = tiny_batch()
    before = {n: p.detach().clone() for n, p in model.frozen.named_parameters(remove_duplicate=False)}
    optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.5)
    c, h = model(input_ids, attention_mask)
    sg_opt3_loss(c, h, 0.1).backward()
    optimizer.step()
    for name, value in model.frozen.named_parameters(remove_duplicate=False):
        assert torch.equal(value, before[name]), f"BERT_F's {name} moved"
    assert not torch.equal(model.trained.encoder.layer[0].attention.self.query.weight,
                           model.frozen.encoder.layer[0].attention.self.query.weight)


# ---------------------------------------------------------------- a causal LM: the last token as c, no BOS in views

def gemma_model(tiny_gemma, **options) -> SelfGuidedModel:
    import copy

    torch.manual_seed(0)
    return SelfGuidedModel(copy.deepcopy(tiny_gemma.model), head_dim=24, **options).eval()


def gemma_batch(tiny_gemma, sentences=("a man plays guitar .", "dogs run")):
    batch = tiny_gemma.tokenizer(list(sentences), padding=True, return_tensors="pt")
    assert batch["attention_mask"].tolist() == [[1] * 6, [1, 1, 1, 0, 0, 0]], "right padding, BOS first"
    return batch["input_ids"], batch["attention_mask"]


def alone_states(model, tokenizer, sentence):
    ids = tokenizer(sentence, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        return torch.stack(model(input_ids=ids, output_hidden_states=True).hidden_states)[:, 0]  # (layers, tokens, d)


def test_gemma_embedding_table_is_shared_and_frozen(tiny_gemma):
    model = gemma_model(tiny_gemma, readout="last", skip_bos=True)
    shared, separate = embedding_sharing(model, "embed_tokens.")
    assert shared == ["embed_tokens.weight"]
    assert model.frozen.embed_tokens.weight.data_ptr() == model.trained.embed_tokens.weight.data_ptr()
    assert not model.trained.embed_tokens.weight.requires_grad
    assert any(n.startswith("layers.0.") for n in separate)
    assert model.frozen.embed_tokens is not model.trained.embed_tokens


def test_c_is_the_last_real_token_of_the_trained_copy_with_right_padding(tiny_gemma):
    model = gemma_model(tiny_gemma, readout="last", skip_bos=True)
    input_ids, attention_mask = gemma_batch(tiny_gemma)
    with torch.no_grad():
        vectors = model.sentence_vectors(input_ids, attention_mask)
        c, _ = model(input_ids, attention_mask)
    for row, sentence in enumerate(["a man plays guitar .", "dogs run"]):
        expected = alone_states(model.trained, tiny_gemma.tokenizer, sentence)[-1, -1]  # last layer, last token
        assert torch.allclose(vectors[row], expected, atol=1e-5), sentence
    assert torch.allclose(c, model.head(vectors), atol=1e-6)
    # position 0 (what "cls" reads) is the BOS state: one vector for both rows, not the sentence
    with torch.no_grad():
        first = gemma_model(tiny_gemma).sentence_vectors(input_ids, attention_mask)
    assert torch.allclose(first[0], first[1]) and not torch.allclose(vectors[0], vectors[1])


@pytest.mark.parametrize("view_pooling", ["max", "mean"])
def test_gemma_views_leave_out_bos(tiny_gemma, view_pooling):
    model = gemma_model(tiny_gemma, readout="last", skip_bos=True, view_pooling=view_pooling)
    input_ids, attention_mask = gemma_batch(tiny_gemma)
    views = model.views(input_ids, attention_mask)
    assert views.shape == (2, 4, 16)
    for row, sentence in enumerate(["a man plays guitar .", "dogs run"]):
        words = alone_states(model.frozen, tiny_gemma.tokenizer, sentence)[:, 1:]  # BOS dropped
        expected = words.max(dim=1).values if view_pooling == "max" else words.mean(dim=1)
        assert torch.allclose(views[row], expected, atol=1e-5), sentence
    kept = gemma_model(tiny_gemma, readout="last", skip_bos=False, view_pooling=view_pooling)
    assert not torch.allclose(kept.views(input_ids, attention_mask), views, atol=1e-3)


def test_unknown_readout_is_refused():
    from transformers import BertConfig, BertModel

    encoder = BertModel(BertConfig(vocab_size=50, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                                   intermediate_size=16), add_pooling_layer=False)
    with pytest.raises(ValueError, match="Unknown readout 'mean'. Known: cls, last"):
        SelfGuidedModel(encoder, readout="mean")
