"""Figures of the book."""
from __future__ import annotations

import functools
import math

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.colors import TwoSlopeNorm
from matplotlib.ticker import MaxNLocator

# The page shows a figure at most about 750 px wide: a figure no wider than PAGE_WIDTH inches (at 100 dpi) is not
# shrunk, so its text stays at the size it is set in; every figure here uses at least MIN_FONT points.
PAGE_WIDTH = 7.5
MIN_FONT = 10
PAGE_RC = {"font.size": MIN_FONT, "axes.titlesize": 11, "axes.labelsize": MIN_FONT, "xtick.labelsize": MIN_FONT,
           "ytick.labelsize": MIN_FONT, "legend.fontsize": MIN_FONT, "legend.title_fontsize": MIN_FONT,
           "figure.titlesize": 12}


def _inline_backend() -> bool:
    """Whether figures go to a notebook (IPython's inline backend), where a page shows what is displayed."""
    return "inline" in str(plt.get_backend()).lower()


def page_figure(function):
    """Build the figure under :data:`PAGE_RC` (legible sizes at the page's width); in a notebook, display it there
    and close it.

    A notebook's first figure loads IPython's inline backend, which turns interactive mode on; leaving
    :func:`matplotlib.pyplot.rc_context` used to restore interactive mode to off, so that no later figure of the
    page (not even a plain ``plt.subplots()``) was shown. The mode the backend set is kept, and each figure is
    displayed where it is drawn and then closed: shown once, in order, and not piling up in memory. Outside a
    notebook the figure stays open for the caller (tests, scripts)."""
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        with plt.rc_context(PAGE_RC):
            figure = function(*args, **kwargs)
            interactive = matplotlib.is_interactive()
            if _inline_backend() and isinstance(figure, plt.Figure):
                from IPython.display import display

                display(figure)
                plt.close(figure)
        matplotlib.interactive(interactive)
        return figure
    return wrapper


def panel_grid(n: int, per_row: int = 2, panel: tuple[float, float] = (3.7, 3.0), **subplots):
    """``n`` panels in rows of at most ``per_row``, the figure no wider than :data:`PAGE_WIDTH`. Returns the figure,
    the ``n`` axes (a flat list) and the spare axes of the last row (hidden, free to hold a legend)."""
    columns = max(1, min(n, per_row))
    rows = math.ceil(n / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(min(PAGE_WIDTH, columns * panel[0]), rows * panel[1]),
                             squeeze=False, **subplots)
    flat = list(axes.ravel())
    for ax in flat[n:]:
        ax.axis("off")
    return fig, flat[:n], flat[n:]


def integer_ticks(ax, axis: str = "x"):
    """Ticks at whole numbers only (layers, exits): no half steps."""
    (ax.xaxis if axis == "x" else ax.yaxis).set_major_locator(MaxNLocator(integer=True))


def label_colours(labels, palette: str = "tab10") -> dict:
    """One colour per label, the same in every panel."""
    labels = list(dict.fromkeys(labels))
    return dict(zip(labels, sns.color_palette(palette if len(labels) <= 10 else "tab20", len(labels))))


def complete_legend_entries(axes) -> tuple[list, list]:
    """Every labelled artist of ``axes``, once per label: (handles, labels)."""
    handles = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            if not label.startswith("_"):
                handles.setdefault(label, handle)
    return list(handles.values()), list(handles)


def complete_legend(axes, target, **legend):
    """A legend on ``target`` with every labelled line of ``axes`` (once per label), not only ``target``'s own."""
    handles = dict(zip(*complete_legend_entries(axes)[::-1]))
    if target in axes:
        return target.legend(list(handles.values()), list(handles), **legend)
    target.axis("off")
    return target.legend(list(handles.values()), list(handles), loc="center", **legend)


def legend_below(fig, handles, labels, ncol: int = 2, title: str | None = None):
    """One legend for the whole figure, under its panels, where it covers no data: the figure grows by the
    legend's height (the panels keep theirs) and is laid out. Call it instead of ``fig.tight_layout()``."""
    legend = fig.legend(handles, labels, loc="lower center", ncol=max(1, min(ncol, len(labels))), frameon=False,
                        title=title)
    width, height = fig.get_size_inches()
    room = legend.get_window_extent(fig.canvas.get_renderer()).height / fig.dpi + 0.1
    fig.set_size_inches(width, height + room)
    fig.tight_layout(rect=(0, room / (height + room), 1, 1))
    return legend


def legend_above(ax, title: str | None = None, ncol: int = 1, **legend):
    """``ax``'s legend above the panel, outside the data; ``title`` (the panel's name) heads it in place of the
    panel title, which would collide with it."""
    ax.set_title("")
    return ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.01), ncol=ncol, frameon=False, title=title,
                     borderaxespad=0.2, **legend)


def gold_band_order(labels) -> list[str]:
    """Gold-score band labels (``"0-1"`` ... ``"4-5"``) sorted by their gold score, whatever order they came in."""
    def low(label):
        try:
            return float(str(label).split("-")[0])
        except ValueError:
            return math.inf
    return sorted(dict.fromkeys(label for label in labels if pd.notna(label)), key=low)


POOLING_LABELS = {"cls": "[CLS]", "mean": "mean", "max": "max", "first_last_avg": "first-last avg"}


def layer_pooling_heatmap(grid: pd.DataFrame, title: str, ax=None, vmin=None, vmax=None, cbar: bool = True):
    """Heatmap of a ``layer x pooling`` grid of Spearman x 100; undefined cells are drawn as hatched "n/a".

    ``grid``: index = layer, columns = pooling.
    """
    ax = ax or plt.gca()
    grid = grid.rename(columns=POOLING_LABELS)
    sns.heatmap(grid, annot=True, fmt=".1f", cmap="viridis", vmin=vmin, vmax=vmax, ax=ax, cbar=cbar,
                cbar_kws={"label": "Spearman x 100"} if cbar else None, linewidths=0.5, linecolor="white")
    for (row, col), value in np.ndenumerate(grid.to_numpy()):
        if np.isnan(value):
            ax.add_patch(plt.Rectangle((col, row), 1, 1, fill=False, hatch="//", edgecolor="0.6", lw=0))
            ax.text(col + 0.5, row + 0.5, "n/a", ha="center", va="center", color="0.4")
    ax.set_title(title)
    ax.set_xlabel("pooling")
    ax.set_ylabel("layer (0 = embeddings)")
    return ax


@page_figure
def layer_pooling_figure(grids: dict[str, pd.DataFrame], backbone: str):
    """The heatmaps of a backbone (e.g. STS-B test and the STS average), two to a row, on a shared colour scale
    (one colour bar, beside the last panel)."""
    values = np.concatenate([g.to_numpy().ravel() for g in grids.values()])
    vmin, vmax = np.nanmin(values), np.nanmax(values)
    n_layers = max(len(g) for g in grids.values())
    fig, axes, _ = panel_grid(len(grids), 2, panel=(3.75, 1.4 + 0.42 * n_layers))
    for i, (ax, (title, grid)) in enumerate(zip(axes, grids.items())):
        layer_pooling_heatmap(grid, title, ax=ax, vmin=vmin, vmax=vmax, cbar=i == len(grids) - 1)
        if i % 2:
            ax.set_ylabel("")
    fig.suptitle(backbone)
    fig.tight_layout()
    return fig


METHOD_LABELS = {"cls": "[CLS]", "mean": "mean", "whitening": "whitening", "sg": "SG", "sg_opt": "SG-OPT",
                 "glove_mean": "GloVe mean"}


@page_figure
def anisotropy_curves(table: pd.DataFrame):
    """Anisotropy against layer, one panel per backbone (two to a row), one line per pooling (the same colour in
    every panel; one legend with every pooling); layer ticks at whole numbers.

    ``table``: columns backbone, pooling, layer, anisotropy.
    """
    backbones = list(dict.fromkeys(table["backbone"]))
    colours = label_colours(table["pooling"])
    fig, axes, spare = panel_grid(len(backbones), 2, sharey=True)
    for ax, backbone in zip(axes, backbones):
        rows = table[table["backbone"] == backbone]
        for pooling, line in rows.groupby("pooling", sort=False):
            ax.plot(line["layer"], line["anisotropy"], marker="o", ms=3, color=colours[pooling],
                    label=POOLING_LABELS.get(pooling, pooling))
        ax.set_title(backbone)
        ax.set_xlabel("layer (0 = embeddings)")
        ax.axhline(0, color="0.7", lw=0.8)
        integer_ticks(ax)
    for ax in axes[::2]:
        ax.set_ylabel("mean cosine of random pairs")
    if spare:
        complete_legend(axes, spare[0], title="pooling")
        fig.tight_layout()
    else:
        legend_below(fig, *complete_legend_entries(axes), ncol=4, title="pooling")
    return fig


@page_figure
def alignment_uniformity_map(methods: pd.DataFrame, trajectory: pd.DataFrame | None = None,
                             trajectory_label: str = "SG-OPT during training"):
    """Wang and Isola's map: uniformity (x) against alignment (y), both lower-is-better, points coloured
    by STS average; an optional training trajectory drawn as a line from step 0 to the end.

    ``methods``: columns backbone, method, alignment, uniformity, sts_avg;
    ``trajectory``: columns step, alignment, uniformity.
    """
    fig, ax = plt.subplots(figsize=(7.2, 5.2))
    markers = dict(zip(dict.fromkeys(methods["backbone"]), "osD^vP*X"))
    norm = plt.Normalize(methods["sts_avg"].min(), methods["sts_avg"].max())
    for _, row in methods.iterrows():
        ax.scatter(row["uniformity"], row["alignment"], c=[row["sts_avg"]], cmap="viridis", norm=norm, s=70,
                   marker=markers[row["backbone"]], edgecolors="black", linewidths=0.5, zorder=3)
        ax.annotate(METHOD_LABELS.get(row["method"], row["method"]), (row["uniformity"], row["alignment"]),
                    textcoords="offset points", xytext=(5, 4))
    if trajectory is not None and len(trajectory):
        ax.plot(trajectory["uniformity"], trajectory["alignment"], color="tab:red", lw=1, marker=".", ms=4,
                zorder=2, label=trajectory_label)
        first, last = trajectory.iloc[0], trajectory.iloc[-1]
        ax.annotate(f"step {int(first['step'])}", (first["uniformity"], first["alignment"]),
                    color="tab:red", xytext=(-10, -12), textcoords="offset points")
        ax.annotate(f"step {int(last['step'])}", (last["uniformity"], last["alignment"]),
                    color="tab:red", xytext=(-10, 6), textcoords="offset points")
    for backbone, marker in markers.items():
        ax.scatter([], [], marker=marker, color="0.5", label=backbone)
    fig.colorbar(plt.cm.ScalarMappable(norm=norm, cmap="viridis"), ax=ax, label="STS average (Spearman x 100)")
    ax.set_xlabel("uniformity (log E exp(-2||x-y||²), lower = more uniform)")
    ax.set_ylabel("alignment (E||x-y||², gold >= 4 pairs;\nlower = closer)")
    legend_below(fig, *ax.get_legend_handles_labels(), ncol=3)
    return fig


@page_figure
def cosine_band_histograms(bands: pd.DataFrame, readouts: list[tuple[str, str]]):
    """Densities of pair cosine by gold-score band, one panel per (backbone, method) readout (two to a row), the
    bands in the order of their gold score (cold = low gold, warm = high) and one legend.

    ``bands``: columns backbone, method, cosine, band (as from ``cosine_by_gold_band``).
    """
    order = gold_band_order(bands["band"])
    palette = dict(zip(order, sns.color_palette("coolwarm", n_colors=len(order))))
    fig, axes, spare = panel_grid(len(readouts), 2, panel=(3.7, 2.9))
    data = bands.assign(band=bands["band"].astype(str))
    for i, (ax, (backbone, method)) in enumerate(zip(axes, readouts)):
        rows = data[(data["backbone"] == backbone) & (data["method"] == method)]
        sns.kdeplot(data=rows, x="cosine", hue="band", hue_order=order, common_norm=False, palette=palette, ax=ax,
                    fill=True, alpha=0.25, lw=1, warn_singular=False, legend=False)
        ax.set_title(f"{backbone}: {METHOD_LABELS.get(method, method)}")
        ax.set_xlim(-0.3, 1.0)
        if i % 2:
            ax.set_ylabel("")
    handles = [plt.Line2D([], [], color=palette[band], lw=6, alpha=0.6) for band in order]
    if spare:
        spare[0].legend(handles, order, title="gold score", loc="center")
        fig.tight_layout()
    else:
        legend_below(fig, handles, order, ncol=len(order), title="gold score")
    return fig


@page_figure
def spectra_plot(spectra: pd.DataFrame):
    """Normalised singular values (log scale) of each readout's sentence-vector matrix, one panel per backbone (two
    to a row), one line per readout in the same colour everywhere, and one legend with every readout (a readout
    only some backbones have, such as the trained ones, is in it too). A flat spectrum spreads the vectors over
    many directions, a steep one crowds them into a few."""
    backbones = list(dict.fromkeys(spectra["backbone"]))
    colours = label_colours(spectra["method"])
    fig, axes, spare = panel_grid(len(backbones), 2, sharey=True)
    for ax, backbone in zip(axes, backbones):
        rows = spectra[spectra["backbone"] == backbone]
        for method, line in rows.groupby("method", sort=False):
            ax.plot(line["index"], line["singular_value"], color=colours[method],
                    label=METHOD_LABELS.get(method, method))
        ax.set_yscale("log")
        ax.set_title(backbone)
        ax.set_xlabel("component")
    for ax in axes[::2]:
        ax.set_ylabel("singular value / largest")
    if spare:
        complete_legend(axes, spare[0], title="readout")
        fig.tight_layout()
    else:
        legend_below(fig, *complete_legend_entries(axes), ncol=4, title="readout")
    return fig


@page_figure
def pretraining_curves(history: pd.DataFrame, title: str = ""):
    """Loss (training and held-out MLM) above held-out MLM / NSP accuracy against tokens seen; the accuracy panel
    runs from 0 to 100% with NSP's chance level (50%) drawn, so noise around chance is not blown up.

    ``history``: a pre-training run's ``history.csv`` (columns tokens, train_loss, heldout_mlm_loss,
    heldout_mlm_accuracy and, with NSP, heldout_nsp_accuracy).
    """
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(6.8, 6.4), sharex=True)
    millions = history["tokens"] / 1e6
    top.plot(millions, history["train_loss"], marker=".", label="training loss (MLM + NSP, running mean)")
    top.plot(millions, history["heldout_mlm_loss"], marker=".", label="held-out MLM loss")
    top.set_ylabel("cross-entropy")
    bottom.plot(millions, 100 * history["heldout_mlm_accuracy"], marker=".", label="held-out MLM accuracy")
    if "heldout_nsp_accuracy" in history:
        bottom.plot(millions, 100 * history["heldout_nsp_accuracy"], marker=".", label="held-out NSP accuracy")
        bottom.axhline(50, color="0.4", lw=1, ls="--", label="NSP chance (50%)")
    bottom.set_ylim(0, 100)
    bottom.set_xlabel("tokens seen (millions)")
    bottom.set_ylabel("accuracy (%)")
    if title:
        fig.suptitle(title)
    legend_below(fig, *complete_legend_entries([top, bottom]), ncol=2)
    return fig


@page_figure
def ablation_changes(table: pd.DataFrame, backbone: str, reference: str = "sg_opt"):
    """Each ablation's change in STS average from SG-OPT: ours (bars; the shaded band is two standard
    deviations of SG-OPT over its seeds) beside the paper's (diamonds, BERT-base).

    ``table``: :func:`bertsent.experiments.self_guided.ablation_table` rows.
    """
    rows = table[(table["backbone"] == backbone) & (table["variant"] != reference)]
    spread = table[(table["backbone"] == backbone) & (table["variant"] == reference)]["std"].fillna(0).iloc[0]
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(rows) + 1.2))
    y = np.arange(len(rows))
    ax.barh(y, rows["change"], color="tab:blue", alpha=0.8, label=f"ours ({backbone})")
    ax.scatter(rows["paper_change"], y, marker="D", color="tab:red", zorder=3, label="paper (BERT-base)")
    ax.axvspan(-2 * spread, 2 * spread, color="0.85", zorder=0, label="SG-OPT seed spread (2 sd)")
    ax.axvline(0, color="0.3", lw=0.8)
    ax.set_yticks(y, rows["variant"])
    ax.invert_yaxis()
    ax.set_xlabel(f"change in STS average from {reference} (Spearman x 100)")
    legend_below(fig, *ax.get_legend_handles_labels(), ncol=2)
    return fig


@page_figure
def pretraining_comparison(history: pd.DataFrame):
    """Held-out loss (left) and accuracy (right) against tokens seen for several pre-training runs (one line per
    ``run``, the same colour in every panel), one row per objective. The NSP accuracy panel runs from 0 to 100% with
    its chance level (50%) drawn, so noise around chance is not blown up.

    ``history``: rows of several runs' ``history.csv`` with a ``run`` column. Masked-LM and left-to-right
    losses predict different things (a hidden token from both sides; the next token from the left), so each
    objective gets its own panels.
    """
    metrics = [m for m in ("mlm", "ltr", "nsp") if f"heldout_{m}_loss" in history and history[f"heldout_{m}_loss"].notna().any()]
    colours = label_colours(history["run"])
    fig, axes = plt.subplots(len(metrics), 2, figsize=(PAGE_WIDTH, 3.0 * len(metrics)), squeeze=False)
    for row, metric in enumerate(metrics):
        loss, accuracy = axes[row]
        for run, rows in history.dropna(subset=[f"heldout_{metric}_loss"]).groupby("run", sort=False):
            millions = rows["tokens"] / 1e6
            loss.plot(millions, rows[f"heldout_{metric}_loss"], marker=".", color=colours[run], label=run)
            accuracy.plot(millions, 100 * rows[f"heldout_{metric}_accuracy"], marker=".", color=colours[run], label=run)
        loss.set_title(f"held-out {metric.upper()} loss")
        accuracy.set_title(f"held-out {metric.upper()} accuracy")
        loss.set_ylabel("loss (nats)")
        accuracy.set_ylabel("accuracy (%)")
        if metric == "nsp":
            accuracy.axhline(50, color="0.4", lw=1, ls="--", label="chance (50%)")
            accuracy.set_ylim(0, 100)
    for ax in axes[-1]:
        ax.set_xlabel("tokens seen (millions)")
    legend_below(fig, *complete_legend_entries(list(axes.ravel())), ncol=3)
    return fig


@page_figure
def selection_curves(history: pd.DataFrame, title: str = ""):
    """STS-B dev Spearman of [CLS] (top) and the training loss (bottom) at every evaluation of several SG / SG-OPT
    runs (one line per ``run``), the legend below them; the kept checkpoint of each run is circled.

    ``history``: rows of :func:`bertsent.experiments.runs.run_history` with a ``run`` column.
    """
    runs = history.groupby("run", sort=False)
    legend_rows = math.ceil(runs.ngroups / 2)
    legend_height = 0.3 + 0.24 * legend_rows
    height = 6.0 + legend_height
    fig, (left, right) = plt.subplots(2, 1, figsize=(PAGE_WIDTH, height), sharex=True)
    # one distinct colour per run: the default 10-colour cycle repeats from the eleventh run on
    colours = sns.color_palette("tab10" if runs.ngroups <= 10 else "tab20", runs.ngroups)
    for colour, (run, rows) in zip(colours, runs):
        left.plot(rows["step"], rows["dev"], marker=".", color=colour, label=run)
        best = rows[rows["best"]]
        left.scatter(best["step"], best["dev"], s=80, facecolors="none", edgecolors=[colour])
        trained = rows[rows["step"] > 0]
        right.plot(trained["step"], trained["loss"], color=colour, label=run)
    left.set_ylabel("STS-B dev Spearman x 100\n([CLS])")
    right.set_xlabel("step")
    right.set_ylabel("running training loss")
    right.set_yscale("log")
    handles, labels = left.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, frameon=False)
    if title:
        fig.suptitle(title)
    fig.tight_layout(rect=(0, legend_height / height, 1, 1))
    return fig


@page_figure
def stall_study_curves(history: pd.DataFrame, majority_floor: float | None = None,
                       unigram_loss: float | None = None):
    """The pre-training stall study: held-out masked-LM loss, accuracy at [MASK] positions, and accuracy at
    unchanged positions against tokens seen, one line per ``run``; panels stacked so the page width holds them.

    ``majority_floor``: the accuracy of always predicting the most frequent word piece (drawn as a line on the
    [MASK] panel); ``unigram_loss``: the entropy of the word-piece distribution, the loss of a model that
    ignores context (drawn on the loss panel). The unchanged panel shows what a pooled accuracy hides: a model
    can learn to copy its input long before it predicts a hidden word.
    """
    panels = [("heldout_mlm_loss", "held-out MLM loss (nats)", unigram_loss, "unigram entropy"),
              ("heldout_mlm_mask_accuracy", "accuracy at [MASK] positions (%)", majority_floor, "always the majority token"),
              ("heldout_mlm_unchanged_accuracy", "accuracy at unchanged positions (%)", None, None)]
    runs = list(dict.fromkeys(history["run"]))
    colours = dict(zip(runs, sns.color_palette("tab10" if len(runs) <= 10 else "tab20", len(runs))))
    fig, axes = plt.subplots(len(panels), 1, figsize=(7.5, 3.1 * len(panels)), sharex=True)
    for ax, (column, label, floor, floor_label) in zip(axes, panels):
        scale = 1 if column.endswith("loss") else 100
        for run, rows in history.dropna(subset=[column]).groupby("run", sort=False):
            rows = rows[rows["tokens"] > 0] if column.endswith("loss") else rows
            ax.plot(rows["tokens"] / 1e6, scale * rows[column], marker=".", color=colours[run], label=run)
        if floor is not None:
            ax.axhline(scale * floor, color="black", linestyle="--", linewidth=1, label=floor_label)
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[-1].set_xlabel("tokens seen (millions)")
    legend_below(fig, *complete_legend_entries(list(axes)), ncol=2)
    return fig


@page_figure
def alpha_heatmaps(alphas: dict[str, np.ndarray]):
    """Layer-wise attention pooling's learned weights, one row per backbone: the mean alpha (rows = query hidden
    state l, columns = key hidden state m, each row sums to one) beside the weight each hidden state receives in the
    pooled vector (the column means), with the uniform 1/L dashed.

    The colour scale is the same for every backbone and does not stretch to the values: it runs over every weight
    alpha can take, 0 to 1, centred on the uniform weight 1/L (white; red above it, blue below), so near-uniform
    weights look near-uniform; the colour bar states the range the weights actually span."""
    n = len(alphas)
    fig, axes = plt.subplots(n, 2, figsize=(PAGE_WIDTH, 3.9 * n), squeeze=False,
                             gridspec_kw={"width_ratios": [1.35, 1]})
    for row, (backbone, alpha) in enumerate(alphas.items()):
        alpha = np.asarray(alpha)
        states = alpha.shape[0]
        uniform = 1 / states
        norm = TwoSlopeNorm(vmin=0.0, vcenter=uniform, vmax=1.0)
        sns.heatmap(alpha, ax=axes[row][0], cmap="RdBu_r", norm=norm, annot=states <= 8, fmt=".2f", square=True,
                    cbar_kws={"label": f"alpha (scale 0 to 1; white = 1/L = {uniform:.3f})\n"
                                       f"here {np.nanmin(alpha):.3f} to {np.nanmax(alpha):.3f}"})
        axes[row][0].collections[0].colorbar.set_ticks([0, uniform, 0.5, 1])
        axes[row][0].collections[0].colorbar.set_ticklabels(["0", "1/L", "0.5", "1"])
        axes[row][0].set_title(backbone)
        axes[row][0].set_xlabel("key hidden state m")
        axes[row][0].set_ylabel("query hidden state l")
        weights = alpha.mean(axis=0)
        ax = axes[row][1]
        ax.bar(np.arange(states), weights, color=["tab:red" if i == states - 1 else "tab:blue" for i in range(states)])
        ax.axhline(uniform, color="0.3", ls="--", lw=1)
        ax.set_ylim(0, max(float(np.nanmax(weights)), uniform) * 1.15)
        ax.set_title("weight in the pooled vector\n(dashed: uniform 1/L)")
        ax.set_xlabel("hidden state (red: last)")
        ax.set_ylabel("weight in a")
        ax.set_xticks(np.arange(states))
        integer_ticks(ax)
    fig.tight_layout()
    return fig


@page_figure
def pooling_ablation_bars(table: pd.DataFrame, metric: str = "stsb", paper_column: str | None = "paper_stsb"):
    """The pooling ablation as horizontal bars, one panel per backbone (stacked): ``metric`` (mean over seeds, the
    sd as an error bar) per trained pooling, the paper's BERT-base figure (where it reports one) as a black diamond.

    ``table``: :func:`bertsent.experiments.attention_pooling.ablation_table` (columns backbone, pooling, metric,
    ``<metric>_sd``, seeds and ``paper_column``)."""
    backbones = list(dict.fromkeys(table["backbone"]))
    panel_height = 0.42 * table.groupby("backbone")["pooling"].nunique().max() + 1.9
    fig, axes = plt.subplots(len(backbones), 1, figsize=(PAGE_WIDTH, panel_height * len(backbones)), squeeze=False)
    for ax, backbone in zip(axes[:, 0], backbones):
        rows = table[table["backbone"] == backbone].reset_index(drop=True)
        y = np.arange(len(rows))
        colours = ["tab:orange" if p.startswith("att") else "tab:blue" for p in rows["pooling"]]
        ax.barh(y, rows[metric], xerr=rows[f"{metric}_sd"].fillna(0), color=colours, alpha=0.85, capsize=3)
        for i, (value, sd, seeds) in enumerate(zip(rows[metric], rows[f"{metric}_sd"].fillna(0), rows["seeds"])):
            if pd.notna(value):
                ax.text(value + sd, i, f" {value:.1f} ({seeds} seed{'s' if seeds != 1 else ''})", va="center")
        if paper_column and paper_column in rows:
            marked = rows[paper_column].notna()
            ax.scatter(rows.loc[marked, paper_column], y[marked], marker="D", color="black", zorder=3)
        ax.set_yticks(y)
        ax.set_yticklabels(rows["pooling"])
        ax.invert_yaxis()
        ax.set_title(backbone)
        ax.set_xlabel({"stsb": "STS-B test Spearman x 100", "avg": "seven-set STS average"}.get(metric, metric)
                      + (" (black diamond: the paper, BERT-base)" if paper_column and paper_column in rows
                         and rows[paper_column].notna().any() else ""))
        finite = pd.concat([rows[metric] + rows[f"{metric}_sd"].fillna(0),
                            rows.get(paper_column, pd.Series(dtype=float))]).dropna()
        # bars from 0: a bar's length is its score (an axis cut at 70 would make a 2-point gap look like a 2x one)
        ax.set_xlim(0, finite.max() + 22 if len(finite) else 100)
    fig.tight_layout()
    return fig


ACL_METHOD_LABELS = {"ce": "CE", "ce_scl": "CE+SCL", "acl_embed": "ACL-Embed", "acl": "ACL (Embed+Grad)"}
ACL_PAIR_LABELS = {"ce_scl": "CE vs SCL", "acl_embed": "CE vs ACL-Embed", "acl": "CE vs ACL-Embed (gated run)"}
EXIT_MODE_LABELS = {"joint": "joint CE", "kd": "logit KD", "acl_cl": "ACL-CL"}


@page_figure
def gradient_angle_histograms(angles: pd.DataFrame, threshold: float = 90.0, bins: int = 24):
    """The per-step angle between the CE gradient and the contrastive term's (degrees), one panel per task (two to
    a row), one histogram per pair, with the threshold (90 degrees) drawn; the share of steps above it in the legend.

    ``angles``: columns task, method, angle (one row per training step)."""
    tasks = list(dict.fromkeys(angles["task"]))
    fig, axes, _ = panel_grid(len(tasks), 2, panel=(3.75, 3.4))
    finite = angles["angle"].dropna()
    low, high = (min(finite.min(), threshold - 15), max(finite.max(), threshold + 15)) if len(finite) else (60, 120)
    edges = np.linspace(low, high, bins + 1)
    for ax, task in zip(axes, tasks):
        rows = angles[angles["task"] == task]
        for method, group in rows.groupby("method", sort=False):
            values = group["angle"].dropna()
            share = (values > threshold).mean() if len(values) else float("nan")
            ax.hist(values, bins=edges, alpha=0.55, label=f"{ACL_PAIR_LABELS.get(method, method)}\n({share:.0%} > {threshold:g})")
        ax.axvline(threshold, color="black", lw=1.2, ls="--")
        ax.set_xlabel("angle between gradients (°)")
        legend_above(ax, title=task)
    for ax in axes[::2]:
        ax.set_ylabel("training steps")
    fig.tight_layout()
    return fig


@page_figure
def lambda_sensitivity(table: pd.DataFrame):
    """Score against lambda with and without ACL-Grad (mean over seeds, error bars one sd), one panel per task (two
    to a row).

    ``table``: columns task, method, weight, mean, sd, metric."""
    def log_lambda_axis(ax, rows):
        weights = sorted(rows["weight"].unique())
        ax.set_xscale("log")
        ax.xaxis.set_minor_locator(plt.NullLocator())
        ax.set_xticks(weights)
        ax.set_xticklabels([f"{w:g}" for w in weights])

    return _task_errorbar_panels(table, "weight", "method", ACL_METHOD_LABELS, "lambda (contrastive weight)",
                                 log_lambda_axis)


@page_figure
def exit_scores(table: pd.DataFrame):
    """Every exit's dev score for each multi-exit training mode (mean over seeds, error bars one sd), one panel
    per task (two to a row). ``table``: columns task, mode, exit, mean, sd, metric."""
    def layer_axis(ax, rows):
        ax.set_xticks(sorted(rows["exit"].unique()))
        integer_ticks(ax)

    return _task_errorbar_panels(table, "exit", "mode", EXIT_MODE_LABELS, "exit (after layer)", layer_axis)


def _task_errorbar_panels(table: pd.DataFrame, x: str, series: str, labels: dict, xlabel: str, style_x):
    """One panel per task (two to a row): ``mean`` against ``x`` with one-sd error bars, a line per ``series``
    value; ``style_x(ax, rows)`` sets the x axis."""
    tasks = list(dict.fromkeys(table["task"]))
    fig, axes, _ = panel_grid(len(tasks), 2, panel=(3.75, 3.4))
    for ax, task in zip(axes, tasks):
        rows = table[table["task"] == task]
        for name, line in rows.groupby(series, sort=False):
            line = line.sort_values(x)
            ax.errorbar(line[x], line["mean"], yerr=line["sd"].fillna(0), marker="o", ms=4, capsize=3,
                        label=labels.get(name, name))
        style_x(ax, rows)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(f"{task} dev {rows['metric'].iloc[0]}")
        ax.set_title(task)
    legend_below(fig, *complete_legend_entries(axes), ncol=4)
    return fig


@page_figure
def quality_speed(curve: pd.DataFrame):
    """Entropy-based early exit: the dev score against the mean layers used (top) and against the measured
    milliseconds per example (bottom, batch of one), one line per mode and task; a point per threshold.

    ``curve``: columns task, mode, threshold, mean_layers, seconds_per_example, score, metric."""
    fig, axes = plt.subplots(2, 1, figsize=(6.8, 6.6))
    for (task, mode), line in curve.groupby(["task", "mode"], sort=False):
        label = f"{task} {EXIT_MODE_LABELS.get(mode, mode)}"
        line = line.sort_values("mean_layers")
        axes[0].plot(line["mean_layers"], line["score"], marker="o", ms=3, label=label)
        timed = line.dropna(subset=["seconds_per_example"]).sort_values("seconds_per_example")
        axes[1].plot(1000 * timed["seconds_per_example"], timed["score"], marker="o", ms=3, label=label)
    metrics = ", ".join(dict.fromkeys(curve["metric"]))
    axes[0].set_xlabel("mean layers used per example")
    axes[1].set_xlabel("measured ms per example (batch of one)")
    for ax in axes:
        ax.set_ylabel(f"dev {metrics}")
    legend_below(fig, *complete_legend_entries(list(axes)), ncol=3)
    return fig


STS_DATASETS = ["stsb", "sickr", "sts12", "sts13", "sts14", "sts15", "sts16"]


def seed_spread(scores: pd.DataFrame, datasets=STS_DATASETS, aggregation: str = "all") -> pd.DataFrame:
    """Per readout (backbone, method, train_data): the mean over seeds of each seed's average over ``datasets``,
    its standard deviation over seeds (blank with one seed) and the number of seeds; a seed missing a dataset is
    left out. ``scores``: columns backbone, method, train_data, seed, dataset, aggregation, spearman."""
    keys = ["backbone", "method", "train_data"]
    rows = scores[(scores["aggregation"] == aggregation) & scores["dataset"].isin(list(datasets))]
    per_seed = rows.groupby(keys + ["seed"], sort=False).agg(avg=("spearman", "mean"), sets=("dataset", "nunique"))
    per_seed = per_seed[per_seed["sets"] == len(datasets)].reset_index()
    return (per_seed.groupby(keys, sort=False)["avg"].agg(avg="mean", sd="std", seeds="size").reset_index())


@page_figure
def sts_main_figure(scores: pd.DataFrame, paper: pd.Series | dict | None = None, datasets=STS_DATASETS,
                    paper_label: str = "the paper (BERT-base)"):
    """The STS page's main result: our seven-set average per readout / method (bars; error bars one standard
    deviation over seeds where there are several, the seed count written beside), one panel per backbone (stacked,
    same scale), and the paper's value for the same method as a black diamond on each bar it has one for.

    ``scores``: ``sts_main.csv`` rows (columns backbone, method, train_data, seed, dataset, aggregation, spearman);
    ``paper``: the paper's average per method (e.g. ``{"cls": 31.40, "sg_opt": 74.62}``; index ``method``).
    """
    table = seed_spread(scores, datasets)
    paper = pd.Series(paper if paper is not None else {}, dtype=float)
    backbones = list(dict.fromkeys(table["backbone"]))
    colours = label_colours(table["method"])
    sizes = table.groupby("backbone", sort=False).size()
    fig, axes = plt.subplots(len(backbones), 1, figsize=(PAGE_WIDTH, sum(0.34 * sizes + 1.0) + 0.9), squeeze=False,
                             sharex=True, gridspec_kw={"height_ratios": list(sizes.reindex(backbones) + 2)})
    axes = axes[:, 0]
    top = np.nanmax([table["avg"].max(), paper.max() if len(paper) else np.nan])
    any_paper = False
    for ax, backbone in zip(axes, backbones):
        rows = table[table["backbone"] == backbone].reset_index(drop=True)
        y = np.arange(len(rows))
        ax.barh(y, rows["avg"], alpha=0.85, color=[colours[m] for m in rows["method"]])
        several = (rows["seeds"] > 1).to_numpy()
        if several.any():
            ax.errorbar(rows["avg"][several], y[several], xerr=rows["sd"][several], fmt="none", ecolor="black",
                        capsize=3)
        for i, row in rows.iterrows():
            seeds = f", {row['seeds']} seeds, sd {row['sd']:.2f}" if row["seeds"] > 1 else ""
            ax.text(row["avg"] + (row["sd"] if row["seeds"] > 1 else 0), i, f" {row['avg']:.1f}{seeds}", va="center")
        marked = rows["method"].map(paper)
        has = marked.notna().to_numpy()
        if has.any():
            ax.scatter(marked[has], y[has], marker="D", s=40, color="black", zorder=3, label=paper_label)
            any_paper = True
        ax.set_yticks(y)
        ax.set_yticklabels([METHOD_LABELS.get(m, m) + ("" if d in ("-", "", None) or pd.isna(d) else f" ({d})")
                            for m, d in zip(rows["method"], rows["train_data"])])
        ax.invert_yaxis()
        ax.set_title(backbone)
    axes[-1].set_xlim(0, min(100, top + 18))
    axes[-1].set_xlabel(f"STS average over {len(datasets)} sets (Spearman x 100; mean over seeds)")
    if any_paper:
        fig.legend(*complete_legend_entries(list(axes)), loc="upper center", frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.35 / fig.get_size_inches()[1]) if any_paper else None)
    return fig


@page_figure
def long_run_curves(history: pd.DataFrame, majority_floor: float, target: float, best_constant: float | None = None,
                    levers: dict[str, tuple[int, pd.DataFrame]] | None = None):
    """The long pre-training run against tokens seen: held-out accuracy at [MASK] positions with the majority word
    piece's floor and the target, the held-out MLM loss, and NSP accuracy with chance (50%). Accuracy axes run
    from 0, so a rise off the floor is not blown up.

    ``history``: the run's ``history.csv``; ``majority_floor``, ``target`` and ``best_constant`` (the one word piece
    right most often on the held-out [MASK] positions, drawn when given): fractions. ``levers``: label -> (branch step,
    history) of short branches of the run (:data:`bertsent.training.long_run.BRANCHES`), drawn from the branch on."""
    fig, axes, _ = panel_grid(3, per_row=3, panel=(2.6, 2.8))
    millions = history["tokens"] / 1e6
    mask, loss, nsp = axes
    colours = iter(["tab:cyan", "tab:brown", "tab:olive", "tab:pink", "tab:gray"])
    for label, (branch_step, lever) in (levers or {}).items():
        own = lever[lever["step"] >= branch_step]  # the rows before are the parent's
        tokens, colour = own["tokens"] / 1e6, next(colours)
        mask.plot(tokens, 100 * own["heldout_mlm_mask_accuracy"], marker="x", ms=4, lw=1, color=colour, label=label)
        loss.plot(tokens, own["heldout_mlm_loss"], marker="x", ms=4, lw=1, color=colour)
        if "heldout_nsp_accuracy" in own:
            nsp.plot(tokens, 100 * own["heldout_nsp_accuracy"], marker="x", ms=4, lw=1, color=colour)
    mask.plot(millions, 100 * history["heldout_mlm_mask_accuracy"], marker=".", label="held-out [MASK] accuracy")
    mask.axhline(100 * majority_floor, color="0.4", ls="--", lw=1, label="always the majority word piece")
    if best_constant is not None:
        mask.axhline(100 * best_constant, color="tab:red", ls="--", lw=1, label="the best constant guess")
    mask.axhline(100 * target, color="tab:green", ls=":", lw=1.2, label=f"target ({100 * target:.0f}%)")
    highest = max([float(history["heldout_mlm_mask_accuracy"].max())]
                  + [float(lever["heldout_mlm_mask_accuracy"].max()) for _, lever in (levers or {}).values()])
    mask.set_ylim(0, max(100 * target, 100 * highest) * 1.15)
    mask.set_ylabel("accuracy at [MASK] (%)")
    loss.plot(millions, history["heldout_mlm_loss"], marker=".", color="tab:orange", label="held-out MLM loss")
    loss.set_ylabel("cross-entropy (nats)")
    if "heldout_nsp_accuracy" in history:
        nsp.plot(millions, 100 * history["heldout_nsp_accuracy"], marker=".", color="tab:purple",
                 label="held-out NSP accuracy")
    nsp.axhline(50, color="0.4", ls="-.", lw=1, label="NSP chance (50%)")
    nsp.set_ylim(0, 100)
    nsp.set_ylabel("NSP accuracy (%)")
    for ax in axes:
        ax.set_xlabel("tokens seen (millions)")
    legend_below(fig, *complete_legend_entries(axes), ncol=3)
    return fig
