"""The BERT paper's pre-training ablations in miniature: one pre-training run per row, every row with the
same number of steps of the same batch size (so about the same number of tokens), then GLUE fine-tuning.

Rows of the paper's Table 5: ``mlm_nsp`` (BERT), ``mlm`` (no NSP), ``ltr`` (left-to-right LM, no NSP); and its
model-size table: the same objective at several sizes. Each run lives in ``<root>/ablation-<size>-<objective>-<steps>``
and is reused when finished.
"""
from __future__ import annotations


import pandas as pd

from ..report.claims import Side, binomial_evaluation, claims_table, dev_set_noise, floor_sides, judge, seed_noise
from ..training.glue import TASK_METRICS
from ..training.pretraining import PROFILES, PretrainingConfig

METHOD_VERSION = 2  # bump when the maths changes (2: a win over a run at the majority class is *against a floor*)


def ablation_config(size: str, objective: str, steps: int, profile: str = "cpu", evaluations: int = 5,
                    **overrides) -> PretrainingConfig:
    """``profile``'s configuration with ``size``, ``objective`` and ``steps`` (``evaluations`` held-out
    evaluations spread over the run); ``overrides`` change any other field."""
    return PretrainingConfig(**{**PROFILES[profile], "size": size, "objective": objective, "max_steps": steps,
                                "eval_every": max(1, steps // evaluations), **overrides})


def run_label(size: str, objective: str) -> str:
    """The name of an ablation row in the page's tables, e.g. ``tiny mlm_nsp``."""
    return f"{size} {objective}"





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


def compare_rows(scores: pd.DataFrame, searches: pd.DataFrame, better: str, worse: str) -> pd.DataFrame:
    """For each task, the claim "``better`` scores above ``worse``" as a claims table
    (:func:`bertsent.report.claims.claims_table`, with ``task``, ``score`` and ``compared_with``).

    The paper's size and objective claims are directions ("A beats B") without a number, so the verdict comes from
    the sign of our difference beyond the noise; the noise is :func:`bertsent.report.claims.dev_set_noise`, two
    standard errors of a difference of two dev scores (one fine-tuning each, no seeds). A task where either model
    has no score is left out. Where ``searches`` marks the runs that predict one class (``at_majority_class``, from
    :func:`~bertsent.evaluation.glue.mark_majority_class`) and both chosen runs of a task are at that floor, the
    verdict is ``at floor``: their difference measures no learning.
    """
    rows = []
    for task in [t for t in scores.columns if t in TASK_METRICS]:
        score, compared_with = scores.loc[better, task], scores.loc[worse, task]
        if pd.isna(score) or pd.isna(compared_with):
            continue
        chosen = searches[searches["chosen"] & (searches["task"] == task)]
        noise = dev_set_noise(int(chosen["dev_examples"].iloc[0]), scores.loc[[better, worse], task].mean(),
                              TASK_METRICS[task][1])
        at_floor = (chosen.set_index("model").loc[[better, worse], "at_majority_class"].astype(bool).tolist()
                    if "at_majority_class" in chosen else [False, False])
        rows.append(judge(f"{better} > {worse}", score - compared_with, None, noise,
                          **floor_sides(*at_floor, "majority class"),
                          task=task, score=score, compared_with=compared_with))
    return claims_table(rows)


def compare_seeded(seeded: pd.DataFrame, better: str, worse: str) -> pd.DataFrame:
    """For each task, the claim "``better`` scores above ``worse``" on the mean over fine-tuning seeds
    (:func:`~bertsent.experiments.runs.glue_seeded`'s table: one row per model, task and seed), as a claims table
    with ``task``, ``score`` and ``compared_with`` (the two means) and ``score_sd`` / ``compared_with_sd``.

    The noise is :func:`bertsent.report.claims.seed_noise`: Student's t at the Welch degrees of freedom of the two
    seed spreads, times the standard error of the difference of means, the dev set's own binomial (MCC: 1/sqrt(n))
    noise included. A side is at the majority class when every one of its seeds is; both at it: ``at floor``.
    """
    rows = []
    for task in [t for t in dict.fromkeys(seeded["task"]) if t in TASK_METRICS]:
        metric = TASK_METRICS[task][1]
        runs = seeded[seeded["task"] == task]
        sides = [runs[runs["model"] == label] for label in (better, worse)]
        if any(side.empty for side in sides):
            continue
        means = [float(side[metric].mean()) for side in sides]
        evaluation = binomial_evaluation(int(runs["dev_examples"].iloc[0]), sum(means) / 2, metric)
        noise = seed_noise(*(Side(float(side[metric].std(ddof=1)) if len(side) > 1 else 0.0, len(side))
                             for side in sides), evaluation=evaluation)
        at_floor = [bool(side["at_majority_class"].all()) if "at_majority_class" in side else False
                    for side in sides]
        rows.append(judge(f"{better} > {worse}", means[0] - means[1], None, noise,
                          **floor_sides(*at_floor, "majority class"), task=task, score=means[0],
                          compared_with=means[1], score_sd=float(sides[0][metric].std(ddof=1)),
                          compared_with_sd=float(sides[1][metric].std(ddof=1))))
    return claims_table(rows)


def seeded_means(seeded: pd.DataFrame) -> pd.DataFrame:
    """:func:`~bertsent.experiments.runs.glue_seeded`'s fine-tunings summarised per model and task: the mean of each
    metric over the seeds, the main metric's standard deviation (``sd``), the number of ``seeds``, the learning rate,
    the mean training seconds, and ``at_majority_class`` where every seed predicts one class."""
    metrics = [m for m in ("mcc", "accuracy", "f1") if m in seeded]
    rows = []
    for (model, task), runs in seeded.groupby(["model", "task"], sort=False):
        main = TASK_METRICS[task][1]
        rows.append({"model": model, "task": task, **{m: runs[m].mean() for m in metrics if runs[m].notna().any()},
                     "sd": runs[main].std(ddof=1), "seeds": len(runs), "learning_rate": runs["learning_rate"].iloc[0],
                     "at_majority_class": bool(runs["at_majority_class"].all()),
                     "train_seconds": runs["train_seconds"].mean()})
    return pd.DataFrame(rows)
