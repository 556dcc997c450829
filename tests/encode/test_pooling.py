import pytest
import torch

from bertsent.encode.pooling import (cls_pooling, first_last_avg_from_means, first_last_avg_pooling, max_pooling,
                                     mean_pooling, pool_all_layers)

# Two sentences, three positions, two dimensions; the second sentence has one padding position
# holding large values that must not leak into any pooling.
H = torch.tensor([
    [[1.0, 2.0], [3.0, -4.0], [5.0, 0.0]],
    [[2.0, 1.0], [-6.0, 3.0], [100.0, 100.0]],
])
MASK = torch.tensor([[1, 1, 1], [1, 1, 0]])


def test_cls():
    assert torch.equal(cls_pooling(H, MASK), torch.tensor([[1.0, 2.0], [2.0, 1.0]]))


def test_mean_ignores_padding():
    # (1+3+5)/3, (2-4+0)/3 ; (2-6)/2, (1+3)/2
    expected = torch.tensor([[3.0, -2.0 / 3.0], [-2.0, 2.0]])
    assert torch.allclose(mean_pooling(H, MASK), expected)


def test_max_ignores_padding():
    expected = torch.tensor([[5.0, 2.0], [2.0, 3.0]])
    assert torch.equal(max_pooling(H, MASK), expected)


def test_max_with_all_negative_values_and_padding():
    h = torch.tensor([[[-3.0], [-1.0], [0.0]]])
    assert max_pooling(h, torch.tensor([[1, 1, 0]])).item() == -1.0  # the padded 0 is not the max


def test_first_last_average():
    h_first = H
    h_last = 2 * H + 1
    # mean of (h + 2h + 1)/2 = 1.5 * mean(h) + 0.5
    expected = 1.5 * mean_pooling(H, MASK) + 0.5
    assert torch.allclose(first_last_avg_pooling(h_first, h_last, MASK), expected)
    means = torch.stack([mean_pooling(h, MASK) for h in (H * 0, h_first, h_last)])
    assert torch.allclose(first_last_avg_from_means(means)[2], expected)


def test_pool_all_layers_shapes_and_first_layer():
    layers = (H, H + 1, H * 3)
    pooled = pool_all_layers(layers, MASK)
    assert list(pooled) == ["cls", "mean", "max", "first_last_avg"]
    assert all(t.shape == (3, 2, 2) for t in pooled.values())
    # first = hidden state 1 (the first transformer layer), so first_last_avg at layer 1 equals mean at layer 1
    assert torch.allclose(pooled["first_last_avg"][1], pooled["mean"][1])
    with pytest.raises(ValueError, match="Unknown pooling"):
        pool_all_layers(layers, MASK, ["median"])
