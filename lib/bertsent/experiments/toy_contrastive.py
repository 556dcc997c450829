"""Contrastive learning on a toy problem: InfoNCE on the unit circle, small enough to train in seconds on one core.

The teaching page *Contrastive learning in ten minutes* uses this module. Everything the book's sentence
encoders do happens here in miniature, and can be drawn:

- **Data** (:func:`toy_clusters`): 2-D points from ``K`` Gaussian clusters whose centres lie on a grid. The
  cluster is hidden from training; it is only used to colour the pictures and to measure whether points of the
  same cluster end up together.
- **Augmentation** (:func:`augment`): a view of a point is the point plus Gaussian noise. Two views of the same
  point are a positive pair; the other points of the batch are negatives (also those of the same cluster).
- **Encoder** (:class:`ToyEncoder`): a two-layer MLP whose output is normalised onto the unit circle, so every
  embedding is an angle.
- **Objective**: InfoNCE, the library's in-batch loss
  (:func:`bertsent.losses.attention_pooling.supervised.supervised_infonce_loss` without hard negatives)::

      l_i = -log( exp(cos(z_i, z_i') / tau) / sum_j exp(cos(z_i, z_j') / tau) )

- **Geometry**: alignment and uniformity of Wang and Isola (2020), the functions of
  :mod:`bertsent.evaluation.geometry`; :func:`circle_uniformity` gives the uniformity of points spread evenly
  over the circle (the best a 2-D encoder can do).

:func:`temperature_sweep` trains one encoder per temperature from the same initial weights and the same
batches, so the temperature is the only difference between them. Everything is seeded: the same arguments give
the same numbers (in float32 on one thread).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from scipy.special import i0e
from torch import nn

from ..evaluation.geometry import alignment, uniformity
from ..losses.attention_pooling.supervised import supervised_infonce_loss

METHOD_VERSION = 1  # bump when the maths changes

__all__ = ["ToyEncoder", "ToySweep", "augment", "circle_uniformity", "embed", "evaluate_encoder",
           "similarity_samples", "stage_label", "temperature_sweep", "toy_clusters", "train_infonce"]


def toy_clusters(n_clusters: int = 6, n_points: int = 600, spread: float = 0.15, seed: int = 0):
    """``n_points`` 2-D points from ``n_clusters`` Gaussian clusters (standard deviation ``spread``) whose centres
    sit on a square grid with spacing 1, centred on the origin; points are assigned to clusters in turn.

    Returns:
        ``(points, labels)``: float32 tensor ``(n_points, 2)`` and int64 tensor ``(n_points,)``.
    """
    if n_clusters < 1 or n_points < n_clusters:
        raise ValueError(f"toy_clusters needs n_clusters >= 1 and n_points >= n_clusters; "
                         f"got {n_clusters} and {n_points}.")
    side = math.ceil(math.sqrt(n_clusters))
    grid = torch.tensor([(i % side, i // side) for i in range(n_clusters)], dtype=torch.float32)
    centres = grid - grid.mean(dim=0)
    generator = torch.Generator().manual_seed(seed)
    labels = torch.arange(n_points) % n_clusters
    points = centres[labels] + spread * torch.randn(n_points, 2, generator=generator)
    return points, labels


def augment(points: torch.Tensor, noise: float, generator: torch.Generator | None = None) -> torch.Tensor:
    """A random view of each point: the point plus Gaussian noise of standard deviation ``noise``."""
    return points + noise * torch.randn(points.shape, generator=generator)


class ToyEncoder(nn.Module):
    """``x -> normalise(MLP(x))``: 2-D input, two hidden layers of ``hidden`` tanh units, ``dim``-D unit output."""

    def __init__(self, hidden: int = 64, dim: int = 2, input_dim: int = 2):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(input_dim, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(),
                                 nn.Linear(hidden, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.normalize(self.net(x), dim=-1)


def embed(encoder: nn.Module, points: torch.Tensor) -> np.ndarray:
    """The encoder's unit vectors for ``points``, as a float64 numpy array (no gradients)."""
    with torch.no_grad():
        return encoder(points).double().numpy()


def train_infonce(points: torch.Tensor, temperature: float, steps: int = 300, batch_size: int = 128,
                  noise: float = 0.1, lr: float = 0.01, hidden: int = 64, seed: int = 0):
    """Trains a :class:`ToyEncoder` with InfoNCE on two noisy views of ``batch_size`` random points per step.

    The initial weights and the batches depend on ``seed`` only, not on ``temperature``: two calls that differ
    in the temperature see the same start and the same data. Adam, constant learning rate ``lr``.

    Returns:
        ``(initial, encoder, history)``: the encoder before training (a copy), after training, and a frame with
        columns ``step`` (1-based) and ``loss``.
    """
    if steps < 0 or batch_size < 2:
        raise ValueError(f"train_infonce needs steps >= 0 and batch_size >= 2; got {steps} and {batch_size}.")
    if temperature <= 0:
        raise ValueError(f"The temperature must be positive; got {temperature}.")
    torch.manual_seed(seed)
    encoder = ToyEncoder(hidden=hidden)
    initial = ToyEncoder(hidden=hidden)
    initial.load_state_dict(encoder.state_dict())
    optimizer = torch.optim.Adam(encoder.parameters(), lr=lr)
    generator = torch.Generator().manual_seed(seed + 1)
    batch_size = min(batch_size, len(points))
    losses = []
    for _ in range(steps):
        batch = points[torch.randperm(len(points), generator=generator)[:batch_size]]
        view1, view2 = augment(batch, noise, generator), augment(batch, noise, generator)
        loss = supervised_infonce_loss(encoder(view1), encoder(view2), None, temperature)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    history = pd.DataFrame({"step": np.arange(1, steps + 1), "loss": losses})
    return initial, encoder, history


def circle_uniformity(t: float = 2) -> float:
    """Uniformity of points spread evenly over the unit circle: ``log E exp(-t ||x - y||^2)`` with the angle
    between ``x`` and ``y`` uniform. ``||x - y||^2 = 2 - 2 cos(theta)``, so the mean is ``exp(-2t) I_0(2t)``
    (``I_0``: the modified Bessel function), which is ``i0e(2t)``. About -1.575 for ``t = 2``.
    """
    return float(np.log(i0e(2 * t)))


def _pair_views(points: torch.Tensor, noise: float, seed: int):
    generator = torch.Generator().manual_seed(seed)
    return augment(points, noise, generator), augment(points, noise, generator)


def evaluate_encoder(encoder: nn.Module, points: torch.Tensor, labels: torch.Tensor, noise: float = 0.1,
                     seed: int = 0) -> dict:
    """Geometry of an encoder on held-out points (Wang and Isola 2020, :mod:`bertsent.evaluation.geometry`).

    - ``alignment``: mean ``||f(x) - f(x')||^2`` over two noisy views of each point (0 = views coincide, 4 = opposite);
    - ``uniformity``: ``log mean exp(-2 ||f(x_i) - f(x_j)||^2)`` over all pairs of points (lower = more spread;
      :func:`circle_uniformity` is the floor of an even spread);
    - ``cos_positive``, ``cos_same_cluster``, ``cos_other_cluster``: mean cosine of the two views of a point, of
      two distinct points of the same cluster, and of two points of different clusters.
    """
    view1, view2 = _pair_views(points, noise, seed)
    a, b = embed(encoder, view1), embed(encoder, view2)
    z = embed(encoder, points)
    cos = z @ z.T
    labels = labels.numpy()
    same = labels[:, None] == labels[None, :]
    off_diagonal = ~np.eye(len(z), dtype=bool)
    return {"alignment": alignment(a, b), "uniformity": uniformity(z, t=2),
            "cos_positive": float(np.mean(np.sum(a * b, axis=1))),
            "cos_same_cluster": float(cos[same & off_diagonal].mean()),
            "cos_other_cluster": float(cos[~same].mean()) if (~same).any() else float("nan")}


def similarity_samples(encoder: nn.Module, points: torch.Tensor, labels: torch.Tensor, noise: float = 0.1,
                       seed: int = 0) -> pd.DataFrame:
    """Every cosine the page's histogram draws: one row per positive pair (two views of a point) and per pair
    of distinct points (``i < j``), columns ``pair`` ("positive", "same cluster", "other cluster") and ``cosine``."""
    view1, view2 = _pair_views(points, noise, seed)
    a, b = embed(encoder, view1), embed(encoder, view2)
    z = embed(encoder, points)
    i, j = np.triu_indices(len(z), k=1)
    labels = labels.numpy()
    kinds = np.where(labels[i] == labels[j], "same cluster", "other cluster")
    return pd.concat([pd.DataFrame({"pair": "positive", "cosine": np.sum(a * b, axis=1)}),
                      pd.DataFrame({"pair": kinds, "cosine": np.sum(z[i] * z[j], axis=1)})], ignore_index=True)


@dataclass
class ToySweep:
    """What :func:`temperature_sweep` measured.

    ``table``: one row per temperature (``temperature``, ``final_loss`` = mean of the last 10% of steps, and the
    columns of :func:`evaluate_encoder`), plus a first row ``temperature = NaN`` for the untrained encoder;
    ``history``: ``temperature, step, loss``; ``embeddings``: ``stage`` ("before" or the temperature as text),
    ``cluster``, ``x``, ``y`` of the held-out points; ``similarities``: ``stage``, ``pair``, ``cosine``;
    ``inputs``: ``cluster``, ``x``, ``y`` of the held-out points themselves (the input space).
    """

    table: pd.DataFrame
    history: pd.DataFrame
    embeddings: pd.DataFrame
    similarities: pd.DataFrame
    inputs: pd.DataFrame


def stage_label(temperature: float) -> str:
    """How a temperature is written in the ``stage`` columns and on the figures: ``tau = 0.1``."""
    return f"tau = {temperature:g}"


def temperature_sweep(temperatures, n_clusters: int = 6, n_train: int = 600, n_eval: int = 300,
                      spread: float = 0.15, steps: int = 300, batch_size: int = 128, noise: float = 0.1,
                      lr: float = 0.01, hidden: int = 64, seed: int = 0) -> ToySweep:
    """Trains one encoder per temperature (same data, same initial weights, same batches) and measures each on
    ``n_eval`` held-out points drawn from the same clusters (seed ``seed + 100``)."""
    temperatures = [float(t) for t in temperatures]
    if not temperatures:
        raise ValueError("temperature_sweep needs at least one temperature.")
    train_points, _ = toy_clusters(n_clusters, n_train, spread, seed)
    eval_points, eval_labels = toy_clusters(n_clusters, n_eval, spread, seed + 100)
    rows, histories, embeddings, similarities = [], [], [], []

    def measure(stage, encoder, extra):
        rows.append({**extra, **evaluate_encoder(encoder, eval_points, eval_labels, noise, seed)})
        z = embed(encoder, eval_points)
        embeddings.append(pd.DataFrame({"stage": stage, "cluster": eval_labels.numpy(), "x": z[:, 0], "y": z[:, 1]}))
        similarities.append(similarity_samples(encoder, eval_points, eval_labels, noise, seed).assign(stage=stage))

    for k, temperature in enumerate(temperatures):
        initial, encoder, history = train_infonce(train_points, temperature, steps, batch_size, noise, lr, hidden, seed)
        if k == 0:
            measure("before", initial, {"temperature": float("nan"), "final_loss": float("nan")})
        tail = history["loss"].tail(max(1, len(history) // 10))
        measure(stage_label(temperature), encoder,
                {"temperature": temperature, "final_loss": float(tail.mean()) if len(tail) else float("nan")})
        histories.append(history.assign(temperature=temperature))
    table = pd.DataFrame(rows)
    table.insert(0, "stage", ["before"] + [stage_label(t) for t in temperatures])
    history = pd.concat(histories, ignore_index=True)[["temperature", "step", "loss"]]
    similarities = pd.concat(similarities, ignore_index=True)[["stage", "pair", "cosine"]]
    inputs = pd.DataFrame({"cluster": eval_labels.numpy(), "x": eval_points[:, 0].numpy(),
                           "y": eval_points[:, 1].numpy()})
    return ToySweep(table, history, pd.concat(embeddings, ignore_index=True), similarities, inputs)
