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


METHOD_LABELS = {"cls": "[CLS]", "mean": "mean", "whitening": "whitening", "sg": "SG", "sg_opt": "SG-OPT",
                 "glove_mean": "GloVe mean"}


def anisotropy_curves(table: pd.DataFrame):
    """Anisotropy against layer, one panel per backbone, one line per pooling.

    ``table``: columns backbone, pooling, layer, anisotropy.
    """
    backbones = list(dict.fromkeys(table["backbone"]))
    fig, axes = plt.subplots(1, len(backbones), figsize=(4.6 * len(backbones), 3.6), squeeze=False, sharey=True)
    for ax, backbone in zip(axes[0], backbones):
        rows = table[table["backbone"] == backbone]
        for pooling, line in rows.groupby("pooling", sort=False):
            ax.plot(line["layer"], line["anisotropy"], marker="o", ms=3, label=POOLING_LABELS.get(pooling, pooling))
        ax.set_title(backbone)
        ax.set_xlabel("layer (0 = embeddings)")
        ax.axhline(0, color="0.7", lw=0.8)
    axes[0][0].set_ylabel("mean cosine of random pairs")
    axes[0][-1].legend(title="pooling", fontsize=8)
    fig.tight_layout()
    return fig


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
                    textcoords="offset points", xytext=(5, 4), fontsize=8)
    if trajectory is not None and len(trajectory):
        ax.plot(trajectory["uniformity"], trajectory["alignment"], color="tab:red", lw=1, marker=".", ms=4,
                zorder=2, label=trajectory_label)
        first, last = trajectory.iloc[0], trajectory.iloc[-1]
        ax.annotate(f"step {int(first['step'])}", (first["uniformity"], first["alignment"]), fontsize=7,
                    color="tab:red", xytext=(-10, -12), textcoords="offset points")
        ax.annotate(f"step {int(last['step'])}", (last["uniformity"], last["alignment"]), fontsize=7,
                    color="tab:red", xytext=(-10, 6), textcoords="offset points")
    for backbone, marker in markers.items():
        ax.scatter([], [], marker=marker, color="0.5", label=backbone)
    fig.colorbar(plt.cm.ScalarMappable(norm=norm, cmap="viridis"), ax=ax, label="STS average (Spearman x 100)")
    ax.set_xlabel("uniformity (log E exp(-2||x-y||²), lower = more uniform)")
    ax.set_ylabel("alignment (E||x-y||² over gold >= 4 pairs, lower = closer)")
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    return fig


def cosine_band_histograms(bands: pd.DataFrame, readouts: list[tuple[str, str]]):
    """Densities of pair cosine by gold-score band, one panel per (backbone, method) readout.

    ``bands``: columns backbone, method, cosine, band (as from ``cosine_by_gold_band``).
    """
    fig, axes = plt.subplots(1, len(readouts), figsize=(4.2 * len(readouts), 3.4), squeeze=False)
    palette = sns.color_palette("coolwarm", n_colors=bands["band"].nunique())
    for ax, (backbone, method) in zip(axes[0], readouts):
        rows = bands[(bands["backbone"] == backbone) & (bands["method"] == method)]
        sns.kdeplot(data=rows, x="cosine", hue="band", common_norm=False, palette=palette, ax=ax, fill=True,
                    alpha=0.25, lw=1, warn_singular=False)
        ax.set_title(f"{backbone}: {METHOD_LABELS.get(method, method)}", fontsize=10)
        ax.set_xlim(-0.3, 1.0)
    fig.tight_layout()
    return fig


def spectra_plot(spectra: pd.DataFrame):
    """Normalised singular values (log scale) of each readout's sentence-vector matrix: a flat spectrum
    spreads the vectors over many directions, a steep one crowds them into a few."""
    backbones = list(dict.fromkeys(spectra["backbone"]))
    fig, axes = plt.subplots(1, len(backbones), figsize=(4.6 * len(backbones), 3.4), squeeze=False, sharey=True)
    for ax, backbone in zip(axes[0], backbones):
        rows = spectra[spectra["backbone"] == backbone]
        for method, line in rows.groupby("method", sort=False):
            ax.plot(line["index"], line["singular_value"], label=METHOD_LABELS.get(method, method))
        ax.set_yscale("log")
        ax.set_title(backbone)
        ax.set_xlabel("component")
    axes[0][0].set_ylabel("singular value / largest")
    axes[0][-1].legend(fontsize=8)
    fig.tight_layout()
    return fig


def pretraining_curves(history: pd.DataFrame, title: str = ""):
    """Loss (training and held-out MLM) and held-out MLM / NSP accuracy against tokens seen.

    ``history``: a pre-training run's ``history.csv`` (columns tokens, train_loss, heldout_mlm_loss,
    heldout_mlm_accuracy and, with NSP, heldout_nsp_accuracy).
    """
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
    millions = history["tokens"] / 1e6
    left.plot(millions, history["train_loss"], marker=".", label="training loss (MLM + NSP, running mean)")
    left.plot(millions, history["heldout_mlm_loss"], marker=".", label="held-out MLM loss")
    left.set_xlabel("tokens seen (millions)")
    left.set_ylabel("cross-entropy")
    left.legend(fontsize=8)
    right.plot(millions, 100 * history["heldout_mlm_accuracy"], marker=".", label="held-out MLM accuracy")
    if "heldout_nsp_accuracy" in history:
        right.plot(millions, 100 * history["heldout_nsp_accuracy"], marker=".", label="held-out NSP accuracy")
    right.axhline(50, color="0.7", lw=0.8, ls="--")
    right.set_xlabel("tokens seen (millions)")
    right.set_ylabel("accuracy (%)")
    right.legend(fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


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
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    return fig


def pretraining_comparison(history: pd.DataFrame):
    """Held-out loss and accuracy against tokens seen for several pre-training runs (one line per ``run``).

    ``history``: rows of several runs' ``history.csv`` with a ``run`` column. Masked-LM and left-to-right
    losses predict different things (a hidden token from both sides; the next token from the left), so each
    objective gets its own panels.
    """
    metrics = [m for m in ("mlm", "ltr", "nsp") if f"heldout_{m}_loss" in history and history[f"heldout_{m}_loss"].notna().any()]
    fig, axes = plt.subplots(2, len(metrics), figsize=(4.2 * len(metrics), 6.5), squeeze=False)
    for column, metric in enumerate(metrics):
        for run, rows in history.dropna(subset=[f"heldout_{metric}_loss"]).groupby("run", sort=False):
            millions = rows["tokens"] / 1e6
            axes[0, column].plot(millions, rows[f"heldout_{metric}_loss"], marker=".", label=run)
            axes[1, column].plot(millions, 100 * rows[f"heldout_{metric}_accuracy"], marker=".", label=run)
        axes[0, column].set_title(f"held-out {metric.upper()}")
        axes[0, column].set_ylabel("loss (nats)")
        axes[1, column].set_ylabel("accuracy (%)")
        axes[1, column].set_xlabel("tokens seen (millions)")
        axes[0, column].legend(fontsize=8)
    fig.tight_layout()
    return fig


def selection_curves(history: pd.DataFrame, title: str = ""):
    """STS-B dev Spearman of [CLS] (left) and the training loss (right) at every evaluation of several SG / SG-OPT
    runs (one line per ``run``); the kept checkpoint of each run is circled.

    ``history``: rows of :func:`bertsent.experiments.runs.run_history` with a ``run`` column.
    """
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8))
    runs = history.groupby("run", sort=False)
    # one distinct colour per run: the default 10-colour cycle repeats from the eleventh run on
    colours = sns.color_palette("tab10" if runs.ngroups <= 10 else "tab20", runs.ngroups)
    for colour, (run, rows) in zip(colours, runs):
        left.plot(rows["step"], rows["dev"], marker=".", color=colour, label=run)
        best = rows[rows["best"]]
        left.scatter(best["step"], best["dev"], s=80, facecolors="none", edgecolors=[colour])
        trained = rows[rows["step"] > 0]
        right.plot(trained["step"], trained["loss"], color=colour, label=run)
    left.set_xlabel("step")
    left.set_ylabel("STS-B dev Spearman x 100 ([CLS])")
    right.set_xlabel("step")
    right.set_ylabel("running training loss")
    right.set_yscale("log")
    left.legend(fontsize=7, ncol=2)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


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
    axes[0].legend(fontsize=8, ncol=2)
    axes[1].legend(handles=[h for h in axes[1].get_lines() if h.get_label() == "always the majority token"],
                   fontsize=8, loc="upper left")
    axes[-1].set_xlabel("tokens seen (millions)")
    fig.tight_layout()
    return fig


def alpha_heatmaps(alphas: dict[str, np.ndarray]):
    """Layer-wise attention pooling's learned weights, one column per backbone: the mean alpha (rows = query hidden
    state l, columns = key hidden state m, each row sums to one) above the weight each hidden state receives in the
    pooled vector (the column means), with the uniform 1/L dashed."""
    n = len(alphas)
    fig, axes = plt.subplots(2, n, figsize=(max(4.8 * n, 6.0), 7.6), squeeze=False,
                             gridspec_kw={"height_ratios": [3, 1.3]})
    for col, (backbone, alpha) in enumerate(alphas.items()):
        alpha = np.asarray(alpha)
        states = alpha.shape[0]
        sns.heatmap(alpha, ax=axes[0][col], cmap="magma", annot=states <= 8, fmt=".3f", annot_kws={"fontsize": 7},
                    cbar_kws={"label": "alpha"}, square=True)
        axes[0][col].set_title(backbone)
        axes[0][col].set_xlabel("key hidden state m (0 = embeddings)")
        axes[0][col].set_ylabel("query hidden state l")
        weights = alpha.mean(axis=0)
        ax = axes[1][col]
        ax.bar(np.arange(states), weights, color=["tab:red" if i == states - 1 else "tab:blue" for i in range(states)])
        ax.axhline(1 / states, color="0.3", ls="--", lw=1, label="uniform 1/L")
        ax.set_xlabel("hidden state (red: last)")
        ax.set_ylabel("weight in a")
        ax.set_xticks(np.arange(states))
        ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    return fig


def pooling_ablation_bars(table: pd.DataFrame, metric: str = "stsb", paper_column: str | None = "paper_stsb"):
    """The pooling ablation as horizontal bars, one panel per backbone: ``metric`` (mean over seeds, the sd as an
    error bar) per trained pooling, the paper's BERT-base figure (where it reports one) as a black diamond.

    ``table``: :func:`bertsent.experiments.attention_pooling.ablation_table` (columns backbone, pooling, metric,
    ``<metric>_sd``, seeds and ``paper_column``)."""
    backbones = list(dict.fromkeys(table["backbone"]))
    fig, axes = plt.subplots(1, len(backbones), figsize=(max(5.2 * len(backbones), 7.0), 0.5 * table["pooling"].nunique() + 1.6),
                             squeeze=False, sharey=True)
    for ax, backbone in zip(axes[0], backbones):
        rows = table[table["backbone"] == backbone].reset_index(drop=True)
        y = np.arange(len(rows))
        colours = ["tab:orange" if p.startswith("att") else "tab:blue" for p in rows["pooling"]]
        ax.barh(y, rows[metric], xerr=rows[f"{metric}_sd"].fillna(0), color=colours, alpha=0.85, capsize=3)
        for i, (value, sd, seeds) in enumerate(zip(rows[metric], rows[f"{metric}_sd"].fillna(0), rows["seeds"])):
            if pd.notna(value):
                ax.text(value + sd, i, f" {value:.1f} ({seeds} seed{'s' if seeds != 1 else ''})", va="center",
                        fontsize=8)
        if paper_column and paper_column in rows:
            marked = rows[paper_column].notna()
            ax.scatter(rows.loc[marked, paper_column], y[marked], marker="D", color="black", zorder=3)
        ax.set_yticks(y)
        ax.set_yticklabels(rows["pooling"])
        ax.invert_yaxis()
        ax.set_title(backbone)
        ax.set_xlabel({"stsb": "STS-B test Spearman x 100", "avg": "seven-set STS average"}.get(metric, metric)
                      + ("\n(black diamond: the paper, BERT-base)" if paper_column and paper_column in rows
                         and rows[paper_column].notna().any() else ""))
        finite = pd.concat([rows[metric], rows.get(paper_column, pd.Series(dtype=float))]).dropna()
        if len(finite):
            ax.set_xlim(max(0, finite.min() - 10), min(100, finite.max() + 12))
    fig.tight_layout()
    return fig


ACL_METHOD_LABELS = {"ce": "CE", "ce_scl": "CE+SCL", "acl_embed": "ACL-Embed", "acl": "ACL (Embed+Grad)"}
ACL_PAIR_LABELS = {"ce_scl": "CE vs SCL", "acl_embed": "CE vs ACL-Embed", "acl": "CE vs ACL-Embed (gated run)"}
EXIT_MODE_LABELS = {"joint": "joint CE", "kd": "logit KD", "acl_cl": "ACL-CL"}


def gradient_angle_histograms(angles: pd.DataFrame, threshold: float = 90.0, bins: int = 24):
    """The per-step angle between the CE gradient and the contrastive term's (degrees), one panel per task, one
    histogram per pair, with the threshold (90 degrees) drawn; the share of steps above it in the legend.

    ``angles``: columns task, method, angle (one row per training step)."""
    tasks = list(dict.fromkeys(angles["task"]))
    fig, axes = plt.subplots(1, len(tasks), figsize=(min(3.6 * len(tasks), 11), 3.4), squeeze=False, sharey=False)
    finite = angles["angle"].dropna()
    low, high = (min(finite.min(), threshold - 15), max(finite.max(), threshold + 15)) if len(finite) else (60, 120)
    edges = np.linspace(low, high, bins + 1)
    for ax, task in zip(axes[0], tasks):
        rows = angles[angles["task"] == task]
        for method, group in rows.groupby("method", sort=False):
            values = group["angle"].dropna()
            share = (values > threshold).mean() if len(values) else float("nan")
            ax.hist(values, bins=edges, alpha=0.55, label=f"{ACL_PAIR_LABELS.get(method, method)} ({share:.0%} > {threshold:g})")
        ax.axvline(threshold, color="black", lw=1.2, ls="--")
        ax.set_title(task)
        ax.set_xlabel("angle between gradients (degrees)")
        ax.legend(fontsize=7, loc="upper left")
    axes[0][0].set_ylabel("training steps")
    fig.tight_layout()
    return fig


def lambda_sensitivity(table: pd.DataFrame):
    """Score against lambda with and without ACL-Grad (mean over seeds, error bars one sd), one panel per task.

    ``table``: columns task, method, weight, mean, sd, metric."""
    tasks = list(dict.fromkeys(table["task"]))
    fig, axes = plt.subplots(1, len(tasks), figsize=(min(4.6 * len(tasks), 11), 3.4), squeeze=False)
    for ax, task in zip(axes[0], tasks):
        rows = table[table["task"] == task]
        for method, line in rows.groupby("method", sort=False):
            line = line.sort_values("weight")
            ax.errorbar(line["weight"], line["mean"], yerr=line["sd"].fillna(0), marker="o", ms=4, capsize=3,
                        label=ACL_METHOD_LABELS.get(method, method))
        ax.set_xscale("log")
        ax.xaxis.set_minor_locator(plt.NullLocator())
        ax.set_xticks(sorted(rows["weight"].unique()))
        ax.set_xticklabels([f"{w:g}" for w in sorted(rows["weight"].unique())])
        ax.set_xlabel("lambda (weight of the contrastive term)")
        ax.set_ylabel(f"{task} dev {rows['metric'].iloc[0]}")
        ax.set_title(task)
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def exit_scores(table: pd.DataFrame):
    """Every exit's dev score for each multi-exit training mode (mean over seeds, error bars one sd), one panel
    per task. ``table``: columns task, mode, exit, mean, sd, metric."""
    tasks = list(dict.fromkeys(table["task"]))
    fig, axes = plt.subplots(1, len(tasks), figsize=(min(4.6 * len(tasks), 11), 3.4), squeeze=False)
    for ax, task in zip(axes[0], tasks):
        rows = table[table["task"] == task]
        for mode, line in rows.groupby("mode", sort=False):
            ax.errorbar(line["exit"], line["mean"], yerr=line["sd"].fillna(0), marker="o", ms=4, capsize=3,
                        label=EXIT_MODE_LABELS.get(mode, mode))
        ax.set_xticks(sorted(rows["exit"].unique()))
        ax.set_xlabel("exit (after layer)")
        ax.set_ylabel(f"{task} dev {rows['metric'].iloc[0]}")
        ax.set_title(task)
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def quality_speed(curve: pd.DataFrame):
    """Entropy-based early exit: the dev score against the mean layers used (left) and against the measured
    milliseconds per example (right, batch of one), one line per mode and task; a point per threshold.

    ``curve``: columns task, mode, threshold, mean_layers, seconds_per_example, score, metric."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
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
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    return fig
