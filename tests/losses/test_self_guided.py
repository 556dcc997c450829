"""Each loss against a brute-force loop over its definition, on small random tensors."""
import math

import pytest
import torch

from bertsent.losses import sg_base_loss, sg_opt1_loss, sg_opt2_loss, sg_opt3_loss, weight_distance_regularizer

TAU = 0.07


def phi(u, v, tau=TAU):
    return math.exp(torch.nn.functional.cosine_similarity(u, v, dim=0).item() / tau)


@pytest.fixture
def batch():
    generator = torch.Generator().manual_seed(0)
    b, views, d = 4, 3, 5
    return torch.randn(b, d, generator=generator, dtype=torch.float64), \
        torch.randn(b, views, d, generator=generator, dtype=torch.float64)


def test_base_is_nt_xent_over_all_2b_vectors(batch):
    c, views = batch
    h = views[:, 1]
    x = list(c) + list(h)
    b = len(c)
    total = 0.0
    for m in range(2 * b):
        partner = (m + b) % (2 * b)
        denominator = sum(phi(x[m], x[n]) for n in range(2 * b) if n != m)
        total += -math.log(phi(x[m], x[partner]) / denominator)
    assert sg_base_loss(c, h, TAU).item() == pytest.approx(total / (2 * b), rel=1e-9)


def test_opt1_keeps_sentence_sentence_repulsion(batch):
    c, views = batch
    h = views[:, 0]
    b = len(c)
    total = 0.0
    for i in range(b):
        negatives = sum(phi(c[i], c[j]) + phi(c[i], h[j]) for j in range(b) if j != i)
        total += -math.log(phi(c[i], h[i]) / (phi(c[i], h[i]) + negatives))
    assert sg_opt1_loss(c, h, TAU).item() == pytest.approx(total / b, rel=1e-9)


def test_opt2_has_views_as_the_only_negatives(batch):
    c, views = batch
    h = views[:, 2]
    b = len(c)
    total = 0.0
    for i in range(b):
        negatives = sum(phi(c[i], h[j]) for j in range(b) if j != i)
        total += -math.log(phi(c[i], h[i]) / (phi(c[i], h[i]) + negatives))
    assert sg_opt2_loss(c, h, TAU).item() == pytest.approx(total / b, rel=1e-9)


def test_opt3_uses_every_layer_and_ignores_own_other_layers(batch):
    c, h = batch
    b, views, _ = h.shape
    total = 0.0
    for i in range(b):
        negatives = sum(phi(c[i], h[m, n]) for m in range(b) if m != i for n in range(views))
        for k in range(views):
            total += -math.log(phi(c[i], h[i, k]) / (phi(c[i], h[i, k]) + negatives))
    assert sg_opt3_loss(c, h, TAU).item() == pytest.approx(total / (b * views), rel=1e-9)
    # moving another layer of sentence 0 changes only the positive of that term, nothing else
    moved = h.clone()
    moved[0, 1] = -moved[0, 1]
    assert sg_opt3_loss(c, moved, TAU).item() != pytest.approx(sg_opt3_loss(c, h, TAU).item())


def test_losses_are_finite_at_the_papers_temperature():
    c, h = torch.randn(16, 64), torch.randn(16, 7, 64)
    for value in (sg_base_loss(c, h[:, 0], 0.01), sg_opt1_loss(c, h[:, 0], 0.01), sg_opt2_loss(c, h[:, 0], 0.01),
                  sg_opt3_loss(c, h, 0.01)):
        assert torch.isfinite(value)


def test_regularizer_is_the_squared_distance():
    frozen = torch.nn.Linear(3, 2)
    trained = torch.nn.Linear(3, 2)
    trained.load_state_dict(frozen.state_dict())
    assert weight_distance_regularizer(trained, frozen, 0.1).item() == 0.0
    with torch.no_grad():
        trained.weight[0, 0] += 2.0
        trained.bias[1] -= 1.0
    assert weight_distance_regularizer(trained, frozen, 0.1).item() == pytest.approx(0.1 * (4.0 + 1.0))
    trained.bias.requires_grad_(False)  # frozen parameters are not counted
    assert weight_distance_regularizer(trained, frozen, 0.1).item() == pytest.approx(0.4)
    weight_distance_regularizer(trained, frozen).backward()
    assert frozen.weight.grad is None  # no gradient reaches the frozen copy
