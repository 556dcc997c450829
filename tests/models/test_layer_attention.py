"""The layer-wise attention pooler against a hand computation, a loop reference, and its contracts."""
import math

import pytest
import torch

from bertsent.models.layer_attention import (
    ATTENTION_POOLINGS,
    LayerAttentionModel,
    LayerAttentionPooler,
    fixed_pooling,
    layer_readouts,
)

SLOPE = 11 / 48  # RReLU's negative slope in eval mode: (1/8 + 1/3) / 2


def identity_pooler(pooling="att_both_cls"):
    """d = 2, L = 2; W_Q = W_K = W_V = I; W_o = [I I] (concatenated) or I, b_o = 0."""
    pooler = LayerAttentionPooler(2, 2, pooling).eval()
    with torch.no_grad():
        for linear in (pooler.query, pooler.key, pooler.value):
            linear.weight.copy_(torch.eye(2))
        pooler.output.weight.copy_(torch.cat([torch.eye(2)] * (2 if pooling == "att_both_cls" else 1), dim=1))
        pooler.output.bias.zero_()
    return pooler


# two sentences, two hidden states, d = 2: s[b, l] = [CLS] of state l, t[b, l] = mean of state l
S = torch.tensor([[[2.0, 0.0], [0.0, 2.0]],
                  [[2.0, 0.0], [2.0, 0.0]]])
T = torch.tensor([[[1.0, 0.0], [0.0, 1.0]],
                  [[1.0, 0.0], [0.0, -2.0]]])


def test_pooler_matches_a_hand_computed_two_layer_two_sentence_case():
    # Sentence 1: q_0 = (2,0), q_1 = (0,2); k = v = t (non-negative, RReLU leaves them).
    #   scores / L: l=0: (2/2, 0) = (1, 0); l=1: (0, 1)  -> alpha_0 = (e, 1)/(e+1), alpha_1 = (1, e)/(e+1)
    #   a = mean_l sum_m alpha_lm v_m = ((e+1)/(2(e+1)), (1+e)/(2(e+1))) = (0.5, 0.5)
    #   z = tanh(s_last + a) = tanh(0 + 0.5, 2 + 0.5)
    # Sentence 2: q_0 = q_1 = (2,0); k_1 = v_1 = RReLU(0, -2) = (0, -2 * 11/48) = (0, -11/24).
    #   scores / L: (2/2, 0) = (1, 0) for both queries -> alpha_l = (e, 1)/(e+1)
    #   a = (e/(e+1), -11/(24(e+1)));  z = tanh((2, 0) + a)
    e = math.e
    expected = torch.tensor([[math.tanh(0.5), math.tanh(2.5)],
                             [math.tanh(2 + e / (e + 1)), math.tanh(-11 / (24 * (e + 1)))]])
    pooler = identity_pooler()
    z = pooler(S, T)
    torch.testing.assert_close(z, expected)
    torch.testing.assert_close(pooler.alpha[1], torch.tensor([[e, 1.0], [e, 1.0]]) / (e + 1))
    torch.testing.assert_close(pooler.alpha[0], torch.tensor([[e, 1.0], [1.0, e]]) / (e + 1))


def test_without_the_concatenation_the_output_reads_a_alone():
    e = math.e
    z = identity_pooler("att_both")(S, T)
    torch.testing.assert_close(z[0], torch.tanh(torch.tensor([0.5, 0.5])))
    torch.testing.assert_close(z[1], torch.tanh(torch.tensor([e / (e + 1), -11 / (24 * (e + 1))])))


def reference(pooler, s, t):
    """The equations, one sentence, query and key at a time."""
    def rrelu(x):
        return torch.where(x >= 0, x, x * SLOPE)

    queries, keys = {"att_cls": (s, s), "att_mean": (t, t)}.get(pooler.pooling, (s, t))
    b, L, _ = s.shape
    out = []
    for i in range(b):
        a = torch.zeros(pooler.dim)
        for l in range(L):
            q = rrelu(pooler.query.weight @ queries[i, l])
            scores = torch.stack([rrelu(pooler.key.weight @ keys[i, m]) @ q / L for m in range(L)])
            weights = torch.exp(scores - scores.max()) / torch.exp(scores - scores.max()).sum()
            for m in range(L):
                a += weights[m] * rrelu(pooler.value.weight @ keys[i, m]) / L
        x = torch.cat([s[i, -1], a]) if pooler.pooling == "att_both_cls" else a
        out.append(torch.tanh(pooler.output.weight @ x + pooler.output.bias))
    return torch.stack(out)


@pytest.mark.parametrize("pooling", ATTENTION_POOLINGS)
def test_every_attention_variant_matches_a_loop_over_the_equations(pooling):
    torch.manual_seed(0)
    pooler = LayerAttentionPooler(5, 4, pooling).eval()
    s, t = torch.randn(3, 4, 5), torch.randn(3, 4, 5)
    torch.testing.assert_close(pooler(s, t), reference(pooler, s, t), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("pooling", ATTENTION_POOLINGS)
def test_alpha_sums_to_one_over_layers(pooling):
    torch.manual_seed(1)
    pooler = LayerAttentionPooler(8, 13, pooling).train()
    pooler(torch.randn(4, 13, 8) * 3, torch.randn(4, 13, 8) * 3)
    assert pooler.alpha.shape == (4, 13, 13)
    assert (pooler.alpha >= 0).all()
    torch.testing.assert_close(pooler.alpha.sum(dim=-1), torch.ones(4, 13))
    assert not torch.allclose(pooler.alpha, torch.full_like(pooler.alpha, 1 / 13))  # it does weigh the layers


def test_rrelu_is_random_in_training_mode_and_fixed_in_eval_mode():
    torch.manual_seed(2)
    pooler = LayerAttentionPooler(8, 3)
    s, t = torch.randn(2, 3, 8), torch.randn(2, 3, 8)
    pooler.train()
    assert not torch.allclose(pooler(s, t), pooler(s, t))
    pooler.eval()
    torch.testing.assert_close(pooler(s, t), pooler(s, t))


def test_fixed_poolings_read_the_last_hidden_state():
    s, t = torch.randn(2, 3, 4), torch.randn(2, 3, 4)
    assert torch.equal(LayerAttentionPooler(4, 3, "cls_last")(s, t), s[:, -1])
    assert torch.equal(LayerAttentionPooler(4, 3, "mean_last")(s, t), t[:, -1])
    both = LayerAttentionPooler(4, 3, "cls_mean_last")
    assert torch.equal(both(s, t), torch.cat([s[:, -1], t[:, -1]], dim=1)) and both.output_dim == 8
    assert both.alpha is None and not list(both.parameters())
    with pytest.raises(ValueError, match="Known: cls_last"):
        fixed_pooling(s, t, "max")


def test_bad_pooling_and_shapes_are_refused_with_the_fix():
    with pytest.raises(ValueError, match="Unknown pooling 'attention'.*att_both_cls"):
        LayerAttentionPooler(4, 3, "attention")
    with pytest.raises(ValueError, match="num_hidden_layers \\+ 1"):
        LayerAttentionPooler(4, 3)(torch.randn(2, 5, 4), torch.randn(2, 5, 4))


def test_readouts_cls_and_mean_for_encoders_last_token_for_causal_models():
    h = torch.arange(2 * 4 * 2, dtype=torch.float32).reshape(2, 4, 2)
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]])
    s, t = layer_readouts((h, h + 100), mask)
    assert s.shape == t.shape == (2, 2, 2)
    assert torch.equal(s[:, 0], h[:, 0]) and torch.equal(s[:, 1], h[:, 0] + 100)
    torch.testing.assert_close(t[0, 0], h[0, :3].mean(0))
    s, t = layer_readouts((h,), mask, causal=True, skip_bos=True)
    assert torch.equal(s[:, 0], torch.stack([h[0, 2], h[1, 1]]))  # the last real token
    torch.testing.assert_close(t[0, 0], h[0, 1:3].mean(0))  # BOS left out


def tiny_encoder():
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    return BertModel(BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                intermediate_size=32, max_position_embeddings=32), add_pooling_layer=False)


def test_the_model_pools_every_hidden_state_and_exposes_alpha():
    model = LayerAttentionModel(tiny_encoder()).eval()
    assert model.pooler.n_states == 3  # embeddings + 2 layers
    ids = torch.tensor([[2, 5, 6, 3, 0], [2, 7, 3, 0, 0]])
    mask = (ids > 0).long()
    z = model(ids, mask)
    assert z.shape == (2, 16) and model.alpha.shape == (2, 3, 3)
    hidden = model.encoder(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states
    torch.testing.assert_close(model.fixed_readout(ids, mask, "cls_last"), hidden[-1][:, 0])
    # padding does not change a sentence's vector
    torch.testing.assert_close(model(ids[1:, :3], mask[1:, :3]), z[1:], rtol=1e-4, atol=1e-5)


def test_the_pooler_keeps_pytorchs_default_initialisation():
    """The pooler's linear layers keep PyTorch's default ``nn.Linear`` initialisation: weights (and the output
    layer's bias) uniform in +-1/sqrt(fan_in). The released LayerAttPooler code draws the weights from
    normal(0, 0.02) with a zero bias; the committed runs were trained with the default, and the method page
    (book/attention-pooling/method.md) states the difference. Changing the initialisation changes this test and
    that sentence together."""
    torch.manual_seed(0)
    d = 256
    pooler = LayerAttentionPooler(d, 13)  # att_both_cls: W_o is d x 2d
    for name, fan_in in [("query", d), ("key", d), ("value", d), ("output", 2 * d)]:
        weight, bound = getattr(pooler, name).weight, 1 / math.sqrt(fan_in)
        assert weight.abs().max() <= bound, f"{name}: weights outside PyTorch's uniform +-1/sqrt({fan_in})"
        assert weight.abs().max() > 0.99 * bound, f"{name}: weights do not fill +-1/sqrt({fan_in}) (not uniform)"
        assert weight.std().item() == pytest.approx(bound / math.sqrt(3), rel=0.02), \
            f"{name}: weight sd {weight.std().item():.4f}, uniform's {bound / math.sqrt(3):.4f} (the release: 0.02)"
    bias, bound = pooler.output.bias, 1 / math.sqrt(2 * d)
    assert (bias != 0).all() and bias.abs().max() <= bound, "the output bias is not PyTorch's uniform draw"
    assert bias.abs().max() > 0.9 * bound
    # the model does not re-initialise its pooler (e.g. with the encoder's normal(0, initializer_range) draw)
    model = LayerAttentionModel(tiny_encoder())
    weight, bound = model.pooler.query.weight, 1 / math.sqrt(16)
    assert weight.abs().max() <= bound and weight.std().item() > 3 * 0.02
    assert (model.pooler.output.bias != 0).all()
