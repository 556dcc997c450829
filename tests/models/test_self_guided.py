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
