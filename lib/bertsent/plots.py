"""Figures of the book."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

POOLING_LABELS = {"cls": "[CLS]", "mean": "mean", "max": "max", "first_last_avg": "first-last avg"}


def layer_pooling_heatmap(grid: pd.DataFrame, title: str, ax=None, vmin=None, vmax=None):
    """Heatmap of a ``layer x pooling`` grid of Spearman x 100; undefined cells are drawn as hatched "n/a".

    ``grid``: index = layer, columns = pooling.
    """
    ax = ax or plt.gca()
    grid = grid.rename(columns=POOLING_LABELS)
    sns.heatmap(grid, annot=True, fmt=".1f", cmap="viridis", vmin=vmin, vmax=vmax, ax=ax,
                cbar_kws={"label": "Spearman x 100"}, linewidths=0.5, linecolor="white")
    for (row, col), value in np.ndenumerate(grid.to_numpy()):
        if np.isnan(value):
            ax.add_patch(plt.Rectangle((col, row), 1, 1, fill=False, hatch="//", edgecolor="0.6", lw=0))
            ax.text(col + 0.5, row + 0.5, "n/a", ha="center", va="center", fontsize=8, color="0.4")
    ax.set_title(title)
    ax.set_xlabel("pooling")
    ax.set_ylabel("layer (0 = embeddings)")
    return ax


def layer_pooling_figure(grids: dict[str, pd.DataFrame], backbone: str):
    """One row of heatmaps (e.g. STS-B test and the STS average) for a backbone, on a shared colour scale."""
    values = np.concatenate([g.to_numpy().ravel() for g in grids.values()])
    vmin, vmax = np.nanmin(values), np.nanmax(values)
    n_layers = max(len(g) for g in grids.values())
    fig, axes = plt.subplots(1, len(grids), figsize=(5.2 * len(grids), 1.2 + 0.45 * n_layers), squeeze=False)
    for ax, (title, grid) in zip(axes[0], grids.items()):
        layer_pooling_heatmap(grid, f"{backbone}: {title}", ax=ax, vmin=vmin, vmax=vmax)
    fig.tight_layout()
    return fig
