"""The InfoNCE objectives of layer-wise attention pooling against brute-force loops."""
import math

import pytest
import torch

from bertsent.losses.attention_pooling import dropout_infonce_loss, hybrid_infonce_loss, supervised_infonce_loss


def cos(u, v):
    return float(u @ v / (u.norm() * v.norm()))


def brute_force(anchor, positive, negative, tau, w=0.0):
    """-log( e^{cos(z_i,z_i+)/tau} / sum_j (e^{cos(z_i,z_j+)/tau} + e^{cos(z_i,z_j-)/tau + w[j=i]}) ), averaged."""
    total = 0.0
    b = len(anchor)
    for i in range(b):
        numerator = math.exp(cos(anchor[i], positive[i]) / tau)
        denominator = 0.0
        for j in range(b):
            denominator += math.exp(cos(anchor[i], positive[j]) / tau)
            if negative is not None:
                denominator += math.exp(cos(anchor[i], negative[j]) / tau + (w if j == i else 0.0))
        total += -math.log(numerator / denominator)
    return total / b


@pytest.fixture
def batch():
    torch.manual_seed(0)
    return torch.randn(5, 7, dtype=torch.float64), torch.randn(5, 7, dtype=torch.float64), torch.randn(5, 7, dtype=torch.float64)


@pytest.mark.parametrize("tau", [0.05, 0.5])
def test_hard_negative_infonce_matches_a_brute_force_loop(batch, tau):
    a, p, n = batch
    assert supervised_infonce_loss(a, p, n, tau).item() == pytest.approx(brute_force(a, p, n, tau), rel=1e-9)


def test_the_hard_negative_weight_is_added_to_the_anchors_own_negative_only(batch):
    a, p, n = batch
    loss = supervised_infonce_loss(a, p, n, 0.5, hard_negative_weight=1.0).item()
    assert loss == pytest.approx(brute_force(a, p, n, 0.5, w=1.0), rel=1e-9)
    assert loss > supervised_infonce_loss(a, p, n, 0.5).item()


def test_hard_negatives_enter_the_denominator(batch):
    a, p, n = batch
    without = supervised_infonce_loss(a, p, None, 0.5).item()
    assert without == pytest.approx(brute_force(a, p, None, 0.5), rel=1e-9)
    assert supervised_infonce_loss(a, p, n, 0.5).item() > without


def test_the_loss_uses_cosine_not_dot_products(batch):
    a, p, n = batch
    scaled = supervised_infonce_loss(3 * a, 0.1 * p, 7 * n, 0.05)
    torch.testing.assert_close(scaled, supervised_infonce_loss(a, p, n, 0.05))


def test_unsupervised_loss_is_infonce_between_two_views(batch):
    a, p, _ = batch
    assert dropout_infonce_loss(a, p, 0.05).item() == pytest.approx(brute_force(a, p, None, 0.05), rel=1e-9)


def test_unsupervised_loss_refuses_identical_views(batch):
    a, _, _ = batch
    with pytest.raises(ValueError, match="model.train"):
        dropout_infonce_loss(a, a.clone())


def test_hybrid_is_the_supervised_plus_weighted_unsupervised_loss(batch):
    a, p, n = batch
    u, v = p + 0.1, a - 0.1
    expected = brute_force(a, p, n, 0.05) + 0.3 * brute_force(u, v, None, 0.05)
    assert hybrid_infonce_loss(a, p, n, u, v, 0.05, unsupervised_weight=0.3).item() == pytest.approx(expected, rel=1e-9)


def test_mismatched_shapes_are_refused(batch):
    a, p, _ = batch
    with pytest.raises(ValueError, match="same shape"):
        supervised_infonce_loss(a, p[:3])
