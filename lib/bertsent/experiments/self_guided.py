"""SG / SG-OPT experiments: train (or reuse) a run, then score it like every other row of the book; the
ablations, the paper's claims read against ours, and the tables built from per-seed scores.

Runs are trained, cached and reused by :mod:`bertsent.experiments.runs`.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..data.sts import STSDataset
from ..encode.encoder import Encoder
from ..encode.whitening import Whitening
from ..training.self_guided import SelfGuidedConfig
from .runs import train_or_reuse
from .sts_tables import layer_pooling_scores

METHOD_LOSSES = {"sg": "base", "sg_opt": "opt3"}

# The paper's ablations of SG-OPT, plus two choices where the paper and the released code differ:
# variant -> (SelfGuidedConfig fields changed from SG-OPT's, what the variant is)
ABLATIONS = {
    "sg_opt": ({}, "SG-OPT: L^opt3, every layer a view, only c anchors"),
    "opt2": ({"loss": "opt2"}, "L^opt2: one sampled view instead of all layers"),
    "opt1": ({"loss": "opt1"}, "L^opt1: keeps the c_i - c_j repulsion"),
    "sg": ({"loss": "base"}, "SG: L^base, NT-Xent unmodified"),
    "tau_0.1": ({"temperature": 0.1}, "tau = 0.1 instead of 0.01"),
    "lambda_0": ({"reg_weight": 0.0}, "lambda = 0: no regulariser"),
    "lambda_1": ({"reg_weight": 1.0}, "lambda = 1"),
    "no_head": ({"projection": False}, "no projection head f"),
    "mean_views": ({"view_pooling": "mean"}, "views mean-pooled (released code) instead of max-pooled (paper)"),
    "frozen_dropout": ({"frozen_dropout": True}, "BERT_F with dropout on (released code)"),
    "lr_5e-4": ({"learning_rate": 5e-4}, "lr 5e-4 instead of 5e-5 (not in the paper: larger steps for a small model)"),
}


def ablation_config(variant: str, seed: int, **base) -> SelfGuidedConfig:
    """The configuration of one ablation ``variant`` (see :data:`ABLATIONS`) on top of SG-OPT's (and ``base``)."""
    if variant not in ABLATIONS:
        raise ValueError(f"Unknown ablation {variant!r}. Known: {', '.join(ABLATIONS)}.")
    return SelfGuidedConfig(**{**base, **ABLATIONS[variant][0], "seed": seed})


def trained_scores(backbone: str, train_data: str, config: SelfGuidedConfig, datasets: dict[str, STSDataset],
                   dev: STSDataset | None = None, data_dir=None, runs_dir: Path | None = None,
                   **encoder_options) -> pd.DataFrame:
    """Train (or reuse) one run and score its last-layer [CLS] on every dataset and aggregation."""
    run = train_or_reuse(backbone, train_data, config, data_dir, dev, runs_dir, show_progress=False)
    from ..encode.backbones import load_backbone
    return score_encoder(Encoder(load_backbone(str(run / "model")), **encoder_options), datasets, "cls")


def score_encoder(encoder: Encoder, datasets: dict[str, STSDataset], pooling: str = "cls", layer: int = -1,
                  transform=None) -> pd.DataFrame:
    """Spearman x 100 of one readout (pooling, layer, optional vector transform) on every dataset and aggregation."""
    table, _ = layer_pooling_scores(encoder, datasets, [pooling], [layer], transform)
    return table[["dataset", "aggregation", "spearman"]].reset_index(drop=True)


def whitening_scores(encoder: Encoder, datasets: dict[str, STSDataset], fit_sentences: list[str]) -> pd.DataFrame:
    """Last-layer mean vectors whitened with statistics fitted on ``fit_sentences`` (no labels)."""
    fitted = encoder.encode(fit_sentences, ["mean"])
    whitening = Whitening.fit(fitted.vectors["mean"][-1])
    return score_encoder(encoder, datasets, "mean", -1, whitening.transform)


# Below this many Spearman points a one-seed difference is not read as evidence either way.
INCONCLUSIVE_BELOW = 0.5


def verdict(ours: float, paper: float, tolerance: float = INCONCLUSIVE_BELOW) -> str:
    """Does our difference between two rows support the paper's difference between the same rows?

    "reproduced": same sign and at least ``tolerance`` points; "not reproduced": the opposite sign by at least
    ``tolerance``; "inconclusive": smaller than ``tolerance``, or the paper reports no difference.
    """
    if abs(ours) < tolerance or paper == 0:
        return "inconclusive"
    return "reproduced" if (ours > 0) == (paper > 0) else "not reproduced"


def claim_checks(ours: pd.Series, paper: pd.Series, claims: list[tuple[str, str]]) -> pd.DataFrame:
    """For each claim "row A beats row B", our and the paper's difference A - B and the :func:`verdict`.

    ``ours`` and ``paper``: STS averages indexed by method name (ours for one backbone and training set).
    """
    rows = []
    for better, worse in claims:
        if better in ours and worse in ours:
            delta, reported_delta = ours[better] - ours[worse], paper[better] - paper[worse]
            rows.append((f"{better} > {worse}", round(reported_delta, 2), round(delta, 2), verdict(delta, reported_delta)))
    return pd.DataFrame(rows, columns=["claim", "paper (BERT-base)", "ours", "verdict"])


def seed_mean_table(scores: pd.DataFrame, aggregation: str, datasets: list[str]) -> pd.DataFrame:
    """The main STS table from per-seed rows: one row per (backbone, method, train_data), each dataset's
    Spearman and the seven-set ``avg`` averaged over seeds, and the number of ``seeds``.

    ``scores``: columns backbone, method, train_data, seed, dataset, aggregation, spearman (``sts_main.csv``).
    The average of each seed is taken first, then the mean over seeds (the paper's "mean of 8 runs").
    """
    rows = scores[scores["aggregation"] == aggregation]
    per_seed = rows.pivot_table(index=["backbone", "method", "train_data", "seed"], columns="dataset",
                                values="spearman", sort=False)[list(datasets)]
    if len(datasets) == 7:
        per_seed["avg"] = per_seed.mean(axis=1)
    grouped = per_seed.groupby(level=["backbone", "method", "train_data"], sort=False)
    table = grouped.mean()
    table["seeds"] = grouped.size()
    return table


def seed_averages(scores: pd.DataFrame, by: list[str], aggregation: str = "all") -> pd.DataFrame:
    """The seven-set STS average of each seed, one row per (``by`` ..., seed).

    ``scores``: per-seed rows with columns ``by``, seed, dataset, aggregation, spearman. A seed missing a
    dataset gets NaN, never a partial average.
    """
    from .sts_tables import sts_average

    return sts_average(scores[scores["aggregation"] == aggregation], by + ["seed"]).rename(columns={"spearman": "avg"})


def ablation_table(scores: pd.DataFrame, reference: str = "sg_opt", aggregation: str = "all") -> pd.DataFrame:
    """Our ablations beside the paper's: per (backbone, variant) the mean and standard deviation over seeds of the
    STS average, the number of seeds, the ``change`` from ``reference``, the paper's average and change, and the
    :func:`verdict` on "the variant is worse than SG-OPT" with a tolerance of the larger of
    :data:`INCONCLUSIVE_BELOW` and two standard deviations of the reference over its seeds.

    ``scores``: columns backbone, variant, train_data, seed, dataset, aggregation, spearman.
    """
    from ..report.reported import sg_opt_ablation_table

    per_seed = seed_averages(scores, ["backbone", "variant"], aggregation)
    grouped = per_seed.groupby(["backbone", "variant"], sort=False)["avg"]
    table = pd.DataFrame({"avg": grouped.mean(), "std": grouped.std(ddof=1), "seeds": grouped.size()}).reset_index()
    paper = sg_opt_ablation_table()
    rows = []
    for backbone, group in table.groupby("backbone", sort=False):
        base = group.set_index("variant").loc[reference]
        tolerance = max(INCONCLUSIVE_BELOW, 2 * base["std"]) if base["seeds"] > 1 else INCONCLUSIVE_BELOW
        for _, row in group.iterrows():
            change = row["avg"] - base["avg"]
            reported_change = paper["change"].get(row["variant"], float("nan"))
            rows.append({**row, "change": change, "paper_avg": paper["avg"].get(row["variant"], float("nan")),
                         "paper_change": reported_change,
                         "verdict": "-" if row["variant"] == reference or pd.isna(reported_change)
                         else verdict(change, reported_change, tolerance)})
    return pd.DataFrame(rows)


def averages_for_claims(table: pd.DataFrame, backbone: str, train_data: str) -> pd.Series:
    """STS averages by method for one backbone, with the trained rows of one training set: the untrained
    rows (train_data "-"), whitening (fitted on ``stsb_all``) and SG / SG-OPT trained on ``train_data``."""
    rows = table.loc[backbone]["avg"]
    return pd.Series({method: value for (method, data), value in rows.items()
                      if (data == train_data if method in METHOD_LOSSES else data in ("-", "stsb_all"))})


def domain_table(scores: pd.DataFrame, aggregation: str = "all") -> pd.DataFrame:
    """STS-B test and, where all seven datasets are present, the seven-set ``avg`` per (backbone, method,
    train_data), each the mean over seeds.

    ``scores``: columns backbone, method, train_data, seed, dataset, aggregation, spearman (``sg_domain.csv``).
    """
    keys = ["backbone", "method", "train_data"]
    rows = scores[scores["aggregation"] == aggregation]
    table = pd.DataFrame({"stsb": rows[rows["dataset"] == "stsb"].groupby(keys, sort=False)["spearman"].mean()})
    if rows["dataset"].nunique() == 7:
        table["avg"] = seed_averages(scores, keys, aggregation).groupby(keys, sort=False)["avg"].mean()
    return table


def domain_changes(table: pd.DataFrame, paper: pd.DataFrame, source: str = "snli",
                   reference: str = "stsb_all") -> pd.DataFrame:
    """What training (or fitting) on ``source`` sentences instead of ``reference`` sentences changes, per
    backbone, method and score column of :func:`domain_table`, beside the paper's change.

    ``paper``: the paper's changes indexed by method, one column per score (:func:`bertsent.report.reported.sg_opt_domain_changes`,
    with flow renamed to the method that stands in for it). Methods trained on only one of the two sets are left out.
    """
    rows = []
    for (backbone, method), group in table.groupby(level=["backbone", "method"], sort=False):
        group = group.droplevel(["backbone", "method"])
        if not {source, reference} <= set(group.index):
            continue
        for column in table.columns:
            rows.append({"backbone": backbone, "method": method, "score": column,
                         source: group.loc[source, column], reference: group.loc[reference, column],
                         "change": group.loc[source, column] - group.loc[reference, column],
                         "paper_change": paper.loc[method, column] if method in paper.index else float("nan")})
    return pd.DataFrame(rows, columns=["backbone", "method", "score", source, reference, "change", "paper_change"])
