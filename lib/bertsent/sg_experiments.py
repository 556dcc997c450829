"""SG / SG-OPT experiments: train (or reuse) a run, then score it like every other row of the book.

A run is identified by its backbone, training sentences and full configuration (seed included); its
files live in ``.cache/runs/<id>/`` (checkpoints and the trained model are large and stay out of git;
the scores go to ``results/``). Asking again for a finished run reuses it; an interrupted one resumes.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path

import pandas as pd

from .data.sts import STSDataset, load_stsb
from .encoder import Encoder
from .paths import CACHE_DIR
from .sts_tables import layer_pooling_scores
from .training.self_guided import SelfGuidedConfig, train_self_guided
from .training.sentences import training_sentences
from .whitening import Whitening

METHOD_LOSSES = {"sg": "base", "sg_opt": "opt3"}


def run_id(backbone: str, train_data: str, config: SelfGuidedConfig) -> str:
    key = json.dumps({"backbone": backbone, "train_data": train_data, **asdict(config)}, sort_keys=True)
    return f"{backbone.replace('/', '_')}-{config.loss}-{train_data}-s{config.seed}-{hashlib.sha256(key.encode()).hexdigest()[:10]}"


def train_or_reuse(backbone: str, train_data: str, config: SelfGuidedConfig, data_dir=None,
                   dev: STSDataset | None = None, root: Path | None = None, show_progress: bool = True) -> Path:
    """The directory of a finished run (trained now, resumed, or reused); its model is in ``<dir>/model``."""
    directory = Path(root or CACHE_DIR / "runs") / run_id(backbone, train_data, config)
    if (directory / "train.json").is_file() and (directory / "model").is_dir():
        return directory
    dev = dev if dev is not None else load_stsb("dev", data_dir)
    train_self_guided(backbone, training_sentences(train_data, data_dir), dev, directory, config,
                      show_progress=show_progress)
    return directory


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


def averages_for_claims(table: pd.DataFrame, backbone: str, train_data: str) -> pd.Series:
    """STS averages by method for one backbone, with the trained rows of one training set: the untrained
    rows (train_data "-"), whitening (fitted on ``stsb_all``) and SG / SG-OPT trained on ``train_data``."""
    rows = table.loc[backbone]["avg"]
    return pd.Series({method: value for (method, data), value in rows.items()
                      if (data == train_data if method in METHOD_LOSSES else data in ("-", "stsb_all"))})
