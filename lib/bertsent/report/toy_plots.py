"""Figures of the teaching page *Contrastive learning in ten minutes* (:mod:`bertsent.experiments.toy_contrastive`).

Drawn for the page width (:data:`bertsent.report.plots.PAGE_WIDTH` inches, so they are not shrunk): at most three
panels a row, text of at least :data:`~bertsent.report.plots.MIN_FONT` points, complete legends outside the data.
"""
from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from .plots import MIN_FONT, PAGE_WIDTH, legend_below, page_figure

PAIR_COLOURS = {"positive": "tab:green", "same cluster": "tab:blue", "other cluster": "tab:red"}
PAIR_LABELS = {"positive": "two views of one point", "same cluster": "same cluster, different points",
               "other cluster": "different clusters"}


def _grid(n_panels: int, ncols: int, panel: tuple[float, float]):
    ncols = min(ncols, n_panels)
    nrows = math.ceil(n_panels / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(min(PAGE_WIDTH, panel[0] * ncols), panel[1] * nrows),
                             squeeze=False)
    for ax in axes.ravel()[n_panels:]:
        ax.set_visible(False)
    return fig, axes.ravel()[:n_panels]


def _cluster_colours(clusters) -> dict:
    cmap = plt.get_cmap("tab10")
    return {c: cmap(k % 10) for k, c in enumerate(sorted(set(clusters)))}


@page_figure
def circle_embeddings(embeddings: pd.DataFrame, inputs: pd.DataFrame | None = None, stages=None, ncols: int = 3):
    """The held-out points on the unit circle, one panel per stage ("before", then each temperature), coloured
    by cluster; with ``inputs``, a first panel shows the points themselves in the input plane.

    ``embeddings``: columns stage, cluster, x, y; ``inputs``: columns cluster, x, y.
    """
    stages = list(stages or dict.fromkeys(embeddings["stage"]))
    colours = _cluster_colours(embeddings["cluster"])
    n_panels = len(stages) + (inputs is not None)
    fig, axes = _grid(n_panels, ncols, (2.5, 2.6))
    panels = iter(axes)
    if inputs is not None:
        ax = next(panels)
        ax.scatter(inputs["x"], inputs["y"], c=[colours[c] for c in inputs["cluster"]], s=8, alpha=0.7, lw=0)
        ax.set_title("input points (2-D)", fontsize=11)
        ax.set_aspect("equal")
        ax.tick_params(labelsize=MIN_FONT)
    angles = np.linspace(0, 2 * np.pi, 200)
    for ax, stage in zip(panels, stages):
        rows = embeddings[embeddings["stage"] == stage]
        ax.plot(np.cos(angles), np.sin(angles), color="0.8", lw=1, zorder=1)
        # a little radial spread per cluster, so that points at the same angle stay visible
        radius = 1 + 0.06 * (rows["cluster"].to_numpy() % 3 - 1)
        ax.scatter(rows["x"] * radius, rows["y"] * radius, c=[colours[c] for c in rows["cluster"]], s=10,
                   alpha=0.6, lw=0, zorder=2)
        ax.set_title("untrained encoder" if stage == "before" else f"trained, {stage.replace('tau', 'τ')}",
                     fontsize=11)
        ax.set_xlim(-1.25, 1.25)
        ax.set_ylim(-1.25, 1.25)
        ax.set_aspect("equal")
        ax.set_xticks([])
        ax.set_yticks([])
    fig.tight_layout()
    return fig


@page_figure
def temperature_geometry(table: pd.DataFrame, circle_floor: float | None = None):
    """Alignment (left) and uniformity (right) against the temperature (log scale), both lower-is-better; the
    untrained encoder as a dotted line, and on the right the uniformity of an even spread over the circle.

    ``table``: columns temperature (NaN for the untrained encoder), alignment, uniformity.
    """
    trained = table[table["temperature"].notna()].sort_values("temperature")
    before = table[table["temperature"].isna()]
    fig, axes = plt.subplots(1, 2, figsize=(PAGE_WIDTH, 3.6))
    for ax, column, label in [(axes[0], "alignment", "alignment  E‖f(x)−f(x′)‖²\n(lower = views closer)"),
                              (axes[1], "uniformity", "uniformity  log E exp(−2‖f(x)−f(y)‖²)\n(lower = more spread)")]:
        ax.plot(trained["temperature"], trained[column], marker="o", color="tab:purple", label="trained")
        if len(before):
            ax.axhline(before[column].iloc[0], color="0.5", ls=":", label="untrained")
        ax.set_xscale("log")
        ax.set_xticks(trained["temperature"])
        ax.set_xticklabels([f"{t:g}" for t in trained["temperature"]])
        ax.minorticks_off()
        ax.set_xlabel("temperature τ", fontsize=11)
        ax.set_ylabel(label, fontsize=10)
        ax.tick_params(labelsize=10)
    if circle_floor is not None:
        axes[1].axhline(circle_floor, color="tab:green", ls="--", label="even spread over the circle")
    handles = {label: handle for ax in axes for handle, label in zip(*ax.get_legend_handles_labels())}
    legend_below(fig, list(handles.values()), list(handles), ncol=3)
    return fig


@page_figure
def similarity_histograms(similarities: pd.DataFrame, stages=None, ncols: int = 3, bins: int = 40):
    """Densities of the cosine of positive pairs, of distinct points of one cluster and of points of different
    clusters, one panel per stage. ``similarities``: columns stage, pair, cosine."""
    stages = list(stages or dict.fromkeys(similarities["stage"]))
    fig, axes = _grid(len(stages), ncols, (2.5, 2.6))
    edges = np.linspace(-1, 1, bins + 1)
    for ax, stage in zip(axes, stages):
        rows = similarities[similarities["stage"] == stage]
        for pair, colour in PAIR_COLOURS.items():
            values = rows.loc[rows["pair"] == pair, "cosine"]
            if len(values):
                ax.hist(values, bins=edges, density=True, histtype="stepfilled", alpha=0.35, color=colour,
                        edgecolor=colour, label=PAIR_LABELS[pair])
        ax.set_yscale("log")
        ax.set_title("untrained encoder" if stage == "before" else stage.replace("tau", "τ"), fontsize=11)
        ax.set_xlabel("cosine", fontsize=10)
        ax.tick_params(labelsize=MIN_FONT)
    axes[0].set_ylabel("density (log scale)", fontsize=10)
    legend_below(fig, *axes[0].get_legend_handles_labels(), ncol=2)
    return fig


@page_figure
def loss_curves(history: pd.DataFrame, batch_size: int | None = None, smooth: int = 10):
    """InfoNCE loss against step, one line per temperature (a running mean over ``smooth`` steps); with
    ``batch_size``, the loss of a guess that gives every candidate the same probability, ``log(batch_size)``.

    ``history``: columns temperature, step, loss.
    """
    fig, ax = plt.subplots(figsize=(PAGE_WIDTH, 3.4))
    temperatures = sorted(history["temperature"].unique())
    colours = plt.get_cmap("viridis")(np.linspace(0, 0.9, len(temperatures)))
    for colour, temperature in zip(colours, temperatures):
        rows = history[history["temperature"] == temperature].sort_values("step")
        ax.plot(rows["step"], rows["loss"].rolling(smooth, min_periods=1).mean(), color=colour,
                label=f"τ = {temperature:g}")
    if batch_size:
        ax.axhline(np.log(batch_size), color="0.5", ls="--", label=f"uniform guess, log {batch_size}")
    ax.set_xlabel("training step", fontsize=11)
    ax.set_ylabel("InfoNCE loss", fontsize=11)
    ax.tick_params(labelsize=10)
    legend_below(fig, *ax.get_legend_handles_labels(), ncol=3)
    return fig
