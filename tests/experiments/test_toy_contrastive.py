"""The toy contrastive problem of the teaching page: data, loss, geometry, the temperature sweep."""
import numpy as np
import pytest
import torch

from bertsent.evaluation.geometry import alignment, uniformity
from bertsent.experiments.toy_contrastive import (ToyEncoder, circle_uniformity, evaluate_encoder, similarity_samples,
                                                  temperature_sweep, toy_clusters, train_infonce)


def test_clusters_are_seeded_and_labelled_in_turn():
    points, labels = toy_clusters(4, 40, spread=0.1, seed=3)
    again, _ = toy_clusters(4, 40, spread=0.1, seed=3)
    other, _ = toy_clusters(4, 40, spread=0.1, seed=4)
    assert points.shape == (40, 2) and torch.equal(points, again) and not torch.equal(points, other)
    assert labels.tolist()[:5] == [0, 1, 2, 3, 0]
    # each cluster sits around its own grid centre (spacing 1), far more than its spread
    means = torch.stack([points[labels == k].mean(0) for k in range(4)])
    assert torch.cdist(means, means)[~torch.eye(4, dtype=bool)].min() > 0.7


def test_alignment_of_identical_views_is_zero_and_uniformity_of_antipodal_points_is_minus_eight():
    z = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    assert alignment(z, z) == 0
    assert uniformity(np.array([[1.0, 0.0], [-1.0, 0.0]])) == pytest.approx(-8.0)


def test_circle_uniformity_is_the_mean_over_an_even_spread():
    angles = np.linspace(0, 2 * np.pi, 2000, endpoint=False)
    even = np.stack([np.cos(angles), np.sin(angles)], axis=1)
    assert circle_uniformity(2) == pytest.approx(uniformity(even), abs=2e-3)
    assert circle_uniformity(2) == pytest.approx(-1.5750, abs=1e-4)


def test_encoder_outputs_unit_vectors():
    z = ToyEncoder(hidden=8)(torch.randn(5, 2))
    assert z.shape == (5, 2)
    assert torch.allclose(z.norm(dim=1), torch.ones(5), atol=1e-6)


def test_infonce_training_lowers_the_loss_and_is_deterministic():
    points, _ = toy_clusters(4, 200, seed=0)
    initial, encoder, history = train_infonce(points, 0.2, steps=60, batch_size=32, seed=1)
    assert list(history["step"]) == list(range(1, 61))
    assert history["loss"].tail(10).mean() < history["loss"].head(10).mean() - 0.2
    _, _, again = train_infonce(points, 0.2, steps=60, batch_size=32, seed=1)
    assert history["loss"].tolist() == again["loss"].tolist()
    # the copy kept is the encoder before training: different weights from the trained one
    assert not torch.equal(initial.net[0].weight, encoder.net[0].weight)


def test_the_temperature_is_the_only_difference_between_runs():
    points, _ = toy_clusters(4, 100, seed=0)
    first, _, _ = train_infonce(points, 0.1, steps=3, batch_size=16, seed=5)
    second, _, _ = train_infonce(points, 1.0, steps=3, batch_size=16, seed=5)
    assert all(torch.equal(a, b) for a, b in zip(first.state_dict().values(), second.state_dict().values()))


def test_bad_arguments_are_refused():
    points, _ = toy_clusters(2, 10)
    with pytest.raises(ValueError, match="temperature must be positive"):
        train_infonce(points, 0.0, steps=1)
    with pytest.raises(ValueError, match="n_points >= n_clusters"):
        toy_clusters(5, 3)
    with pytest.raises(ValueError, match="at least one temperature"):
        temperature_sweep([])


def test_evaluation_of_a_collapsed_encoder():
    class Constant(torch.nn.Module):
        def forward(self, x):
            return torch.nn.functional.normalize(torch.ones(len(x), 2), dim=-1)

    points, labels = toy_clusters(3, 30)
    measures = evaluate_encoder(Constant(), points, labels)
    assert measures["alignment"] == pytest.approx(0) and measures["uniformity"] == pytest.approx(0)
    assert measures["cos_other_cluster"] == pytest.approx(1) and measures["cos_same_cluster"] == pytest.approx(1)
    samples = similarity_samples(Constant(), points, labels)
    assert len(samples) == 30 + 30 * 29 // 2
    assert samples["pair"].value_counts().to_dict() == {"other cluster": 300, "positive": 30, "same cluster": 135}


def test_sweep_gives_one_row_per_temperature_and_the_untrained_encoder():
    sweep = temperature_sweep([0.1, 0.5, 1.0], n_clusters=3, n_train=60, n_eval=30, steps=5, batch_size=16)
    assert sweep.table["stage"].tolist() == ["before", "tau = 0.1", "tau = 0.5", "tau = 1"]
    assert np.isnan(sweep.table["temperature"].iloc[0])
    assert sweep.table["temperature"].iloc[1:].tolist() == [0.1, 0.5, 1.0]
    assert sweep.history.groupby("temperature").size().tolist() == [5, 5, 5]
    assert sweep.embeddings.groupby("stage").size().tolist() == [30] * 4
    assert len(sweep.inputs) == 30 and set(sweep.similarities["stage"]) == set(sweep.table["stage"])
    again = temperature_sweep([0.1, 0.5, 1.0], n_clusters=3, n_train=60, n_eval=30, steps=5, batch_size=16)
    assert sweep.table.equals(again.table)


def test_training_spreads_the_clusters_over_the_circle():
    sweep = temperature_sweep([0.2], n_clusters=6, n_train=300, n_eval=120, steps=150, batch_size=64)
    before, after = sweep.table.iloc[0], sweep.table.iloc[1]
    assert after["uniformity"] < before["uniformity"] - 0.3
    assert after["cos_other_cluster"] < before["cos_other_cluster"]
