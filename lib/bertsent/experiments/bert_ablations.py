"""The BERT paper's pre-training ablations in miniature: one pre-training run per row, every row with the
same number of steps of the same batch size (so about the same number of tokens), then GLUE fine-tuning.

Rows of the paper's Table 5: ``mlm_nsp`` (BERT), ``mlm`` (no NSP), ``ltr`` (left-to-right LM, no NSP); and its
model-size table: the same objective at several sizes. Each run lives in ``<root>/ablation-<size>-<objective>-<steps>``
and is reused when finished.
"""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from ..training.glue import TASK_METRICS
from ..training.pretraining import PROFILES, PretrainingConfig
from .self_guided import verdict


def ablation_config(size: str, objective: str, steps: int, profile: str = "cpu", evaluations: int = 5,
                    **overrides) -> PretrainingConfig:
    """``profile``'s configuration with ``size``, ``objective`` and ``steps`` (``evaluations`` held-out
    evaluations spread over the run); ``overrides`` change any other field."""
    return PretrainingConfig(**{**PROFILES[profile], "size": size, "objective": objective, "max_steps": steps,
                                "eval_every": max(1, steps // evaluations), **overrides})


def ablation_run_dir(root: str | Path, size: str, objective: str, steps: int) -> Path:
    return Path(root) / f"ablation-{size}-{objective}-{steps}"


def glue_scores(searches: pd.DataFrame) -> pd.DataFrame:
    """The chosen fine-tuning of each (model, task) from :func:`~bertsent.training.glue.glue_learning_rate_search`
    tables (with a ``model`` column): one row per model, one column per task holding the task's selection metric
    (MCC for CoLA, accuracy otherwise), plus MRPC's F1 and the mean over tasks as ``glue``."""
    chosen = searches[searches["chosen"]]
    table = pd.DataFrame({task: chosen[chosen["task"] == task].set_index("model")[TASK_METRICS[task][1]]
                          for task in chosen["task"].unique()})
    table["glue"] = table.mean(axis=1)
    if "f1" in chosen and "MRPC" in set(chosen["task"]):
        table["MRPC F1"] = chosen[chosen["task"] == "MRPC"].set_index("model")["f1"]
    return table.loc[list(dict.fromkeys(chosen["model"]))]


def difference_tolerance(task: str, dev_examples: int, score: float) -> float:
    """Two standard errors of the difference between two models' dev scores (points), from the dev-set size alone.

    Accuracy p on n examples has a standard error sqrt(p(1-p)/n); the difference of two independent ones
    sqrt(2) times that. For a Matthews correlation the standard error is taken as 1/sqrt(n) (that of a
    correlation near zero). Fine-tuning seeds add more spread; this is a floor, not the whole noise.
    """
    if TASK_METRICS[task][1] == "mcc":
        standard_error = 1 / math.sqrt(dev_examples)
    else:
        p = min(max(score / 100, 0.0), 1.0)
        standard_error = math.sqrt(max(p * (1 - p), 1e-4) / dev_examples)
    return 100 * 2 * math.sqrt(2) * standard_error


# The paper's size and objective claims are directions ("A beats B"), not magnitudes: any positive difference.
PAPER_SAYS_BETTER = 1.0


def compare_rows(scores: pd.DataFrame, searches: pd.DataFrame, better: str, worse: str) -> pd.DataFrame:
    """For each task, the claim "``better`` scores above ``worse``": the difference and its :func:`verdict`, with
    :func:`difference_tolerance` as the margin below which the difference is called inconclusive."""
    rows = []
    for task in [t for t in scores.columns if t in TASK_METRICS]:
        chosen = searches[searches["chosen"] & (searches["task"] == task)]
        dev_examples = int(chosen["dev_examples"].iloc[0])
        difference = scores.loc[better, task] - scores.loc[worse, task]
        tolerance = difference_tolerance(task, dev_examples, scores.loc[[better, worse], task].mean())
        rows.append({"claim": f"{better} > {worse}", "task": task, "score": scores.loc[better, task],
                     "compared_with": scores.loc[worse, task], "difference": difference, "tolerance": tolerance,
                     "verdict": verdict(difference, PAPER_SAYS_BETTER, tolerance)})
    return pd.DataFrame(rows)
