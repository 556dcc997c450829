"""Aligned contrastive learning (ACL; Zhu, arXiv 2602.03563) on GLUE: the runs of the chapter's pages and the
tables, noise and verdicts built from them.

Every fine-tuning goes through the run cache (:func:`bertsent.experiments.runs.glue_run`: committed results under
``results/runs/glue/<key>/``, trained only when absent), so the three pages share their runs: the CE + SCL and
ACL-Embed rows of the main table are the runs whose per-step gradient angles the angle page reads, and the
lambda = 0.5 points of the sensitivity curve are the main table's runs.

Methods (:data:`METHODS`): ``ce`` (the book's GLUE recipe, no objective), ``ce_scl`` (CE + lambda SCL),
``acl_embed`` (CE + lambda ACL-Embed), ``acl`` (ACL-Embed + ACL-Grad). The angle is measured every step of the
three contrastive methods (:class:`bertsent.training.aligned_contrastive.AclConfig`, ``measure_angle``).
Multi-exit modes (:data:`EXIT_MODES`): ``joint`` (every exit's CE), ``kd`` (+ logit KD from the last exit),
``acl_cl`` (+ ACL-CL); their runs also time entropy-based early exiting (:class:`TimedMultiExitObjective`).

Verdicts: one rule (:mod:`bertsent.report.claims`), with the seed noise of the compared means
(:func:`bertsent.report.claims.seed_noise`). The paper gives directions, no numbers (see
:mod:`bertsent.report.reported`), so every verdict is reproduced / not reproduced / within noise, *at floor* or
*against a floor*: a run that predicts one class for every dev example scores the majority-class accuracy (an MCC of
0 on CoLA), and where every seed of both compared methods does that (``at_floor``), their difference says nothing
about the methods; where only the method the claim says is worse does, a clear win is *against a floor* (a win over
a constant predictor), not *reproduced*.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pandas as pd
from ..evaluation.glue import MAJORITY_LABEL, majority_class_scores, mark_majority_class
from ..report.claims import (AT_FLOOR, REPRODUCED, Control, Side, Spread, binomial_evaluation, claims_table,
                             floor_sides, judge, seed_noise)
from ..training.aligned_contrastive import AclConfig, ContrastiveObjective, MultiExitConfig, MultiExitObjective
from ..training.glue import TASK_METRICS, GlueConfig, _encode

# bump when the maths of TimedMultiExitObjective's latency measurement changes: this version keys every stored
# multi-exit run as well as the pages, so a change to the verdicts alone (e.g. *against a floor*, 2026-12-03) is
# not a bump (it would retrain every multi-exit run); re-execute the chapter's pages with --force instead
# (2: cells and claims at the majority class are marked and get no verdict)
METHOD_VERSION = 2

METHODS = ("ce", "ce_scl", "acl_embed", "acl", "scl_grad")
METHOD_LABELS = {"ce": "CE", "ce_scl": "CE+SCL", "acl_embed": "ACL-Embed", "acl": "ACL (Embed+Grad)",
                 "scl_grad": "CE+SCL+Grad"}
# the component ablation: (component, the method with it, the same method without it). ACL-CL, the multi-exit
# component, is judged on the multi-exit page (ACL-CL against joint CE at every exit).
COMPONENTS = (("ACL-Grad", "acl", "acl_embed"),
              ("ACL-Embed", "acl_embed", "ce_scl"),
              ("ACL-Embed, gate on", "acl", "scl_grad"))
EXIT_MODES = ("joint", "kd", "acl_cl")
EXIT_LABELS = {"joint": "joint CE", "kd": "logit KD", "acl_cl": "ACL-CL"}
# GLUE tasks of the paper with no training data in this repository (data/manifest.csv: no MNLI or QQP at all, QNLI
# dev only)
MISSING_TASKS = ("MNLI", "QNLI", "QQP")
ANGLE_PAIRS = {"ce_scl": "CE vs SCL", "acl_embed": "CE vs ACL-Embed", "acl": "CE vs ACL-Embed (ACL, gated)",
               "scl_grad": "CE vs SCL (gated)"}


def acl_config(method: str, weight: float = 0.5, temperature: float = 0.3, angle_every: int = 1,
               diagnose: bool = False) -> AclConfig | None:
    """The ACL configuration of a method of :data:`METHODS` (``ce``: None, the recipe itself; ``scl_grad``: SCL
    under ACL-Grad's gate, ACL without its label embeddings, for the component ablation). ``angle_every``: an
    ungated method measures the angle on every so-many-th step only (the gated ones need it every step).
    ``diagnose``: the run's result also diagnoses the final model's decisions (:class:`AclConfig`)."""
    if method not in METHODS:
        raise ValueError(f"Unknown method {method!r}; known: {', '.join(METHODS)}.")
    if method == "ce":
        return None
    loss = "scl" if method in ("ce_scl", "scl_grad") else "acl_embed"
    gated = method in ("acl", "scl_grad")
    return AclConfig(loss=loss, weight=float(weight), temperature=float(temperature), gradient_gate=gated,
                     measure_angle=True, angle_every=1 if gated else int(angle_every), diagnose=bool(diagnose))


def method_objective(method: str, weight: float = 0.5, temperature: float = 0.3,
                     angle_every: int = 1, diagnose: bool = False) -> ContrastiveObjective | None:
    """The fine-tuning objective of a method of :data:`METHODS` (``ce``: None, the plain recipe)."""
    config = acl_config(method, weight, temperature, angle_every, diagnose)
    return None if config is None else ContrastiveObjective(config)


def exit_objective(mode: str, weight: float = 0.5, temperature: float = 0.3, thresholds=None,
                   latency_examples: int = 64) -> "TimedMultiExitObjective":
    """The multi-exit objective of a mode of :data:`EXIT_MODES`, timing early exits at ``thresholds``."""
    if mode not in EXIT_MODES:
        raise ValueError(f"Unknown multi-exit mode {mode!r}; known: {', '.join(EXIT_MODES)}.")
    config = MultiExitConfig(mode=mode, weight=float(weight), temperature=float(temperature),
                             **({} if thresholds is None else {"exit_thresholds": tuple(thresholds)}))
    return TimedMultiExitObjective(config, latency_examples)


def task_metric(task: str) -> str:
    """The metric of ``task`` the tables and claims read (MCC for CoLA, accuracy otherwise)."""
    return TASK_METRICS[task][1]


def per_task(value, task: str):
    """A setting that is either one value for every task or a dict task -> value (e.g. a learning rate per task)."""
    if isinstance(value, dict):
        if task not in value:
            raise ValueError(f"No value for {task} in {value}: a per-task setting needs every task of the run.")
        return value[task]
    return value


def seeds_of(seeds, task: str) -> list[int]:
    """The seeds a task is fine-tuned with: ``seeds`` is one list for every task or a dict task -> list (the noisy
    small tasks may take more seeds than SST-2)."""
    return [int(seed) for seed in per_task(seeds, task)]


def seeds_phrase(seeds, tasks) -> str:
    """``seeds`` in words: "3 seed(s) (1, 2, 3)", or per task when they differ ("SST-2: 3 seed(s) (1, 2, 3);
    CoLA: 5 seed(s) (1, 2, 3, 4, 5)")."""
    def one(values):
        return f"{len(values)} seed(s) ({', '.join(map(str, values))})"

    per = {task: seeds_of(seeds, task) for task in tasks}
    if len({tuple(v) for v in per.values()}) <= 1:
        return one(next(iter(per.values()), []))
    return "; ".join(f"{task}: {one(values)}" for task, values in per.items())


def glue_config(task: str, seed: int, max_train_examples: dict | None = None, **settings) -> GlueConfig:
    """The fine-tuning recipe for one run: ``settings`` (GlueConfig fields; a field given as a dict task -> value
    takes the task's value), the task's training subsample."""
    chosen = {name: per_task(value, task) for name, value in settings.items()}
    return GlueConfig(seed=int(seed), max_train_examples=(max_train_examples or {}).get(task), **chosen)


def recipe_sentence(backbone: str, seeds, tasks, epochs, learning_rate, batch_size: int, max_length: int,
                    max_train_examples: dict | None = None, max_dev_examples: int | None = None) -> str:
    """The fine-tuning recipe of a page in one paragraph (per-task epochs and learning rates spelled out)."""
    def spelled(value):
        if isinstance(value, dict):
            return ", ".join(f"{task} {per_task(value, task):g}" for task in tasks)
        return f"{value:g}"

    subsample = ", ".join(f"{t} {max_train_examples[t]:,}" for t in tasks if (max_train_examples or {}).get(t))
    return (f"Backbone `{backbone}`; {seeds_phrase(seeds, tasks)}; epochs: {spelled(epochs)}; "
            f"learning rate: {spelled(learning_rate)}; batch {batch_size}, max length {max_length}; training "
            f"examples: {subsample + ' (seeded subsamples), the others all' if subsample else 'all'}. "
            + missing_tasks_sentence(tasks)
            + (f" Dev sets: a seeded subsample of at most {max_dev_examples:,} examples each (a smoke run: these "
               "scores are not GLUE dev scores)." if max_dev_examples else ""))


def _run_row(stored, method: str, task: str, seed: int, weight: float | None,
             temperature: float | None = None) -> dict:
    result = stored.train()["result"]
    row = {"method": method, "task": task, "seed": seed, "weight": weight, "temperature": temperature,
           "metric": task_metric(task), "score": result[task_metric(task)],
           **{m: result.get(m) for m in ("accuracy", "f1", "mcc")},
           "train_examples": result["train_examples"], "dev_examples": result["dev_examples"],
           "train_seconds": result["train_seconds"]}
    for key in ("angle_mean", "angle_above_threshold_share", "dropped_steps", "measured_steps"):
        row[key] = result.get(key)
    return row


def run_grid(model, tasks, methods, seeds, max_train_examples: dict | None = None, weight: float = 0.5,
             temperature: float = 0.3, data_dir=None, results_dir=None, terms: pd.DataFrame | None = None,
             angle_every: int = 1, kept_tasks=None, **settings) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Fine-tune (or reuse) every method x task x seed; returns (runs, angles).

    ``runs``: one row per fine-tuning (method, task, seed, weight, temperature, metric, score, accuracy / f1 / mcc,
    the training and dev sizes, train_seconds, ``at_majority_class`` (the run predicts one class: see
    :func:`~bertsent.evaluation.glue.mark_majority_class`) and, for the contrastive methods, the angle summary of
    the run).
    ``angles``: one row per training step of the contrastive methods (method, task, seed, weight, step, angle,
    dropped). ``settings``: :class:`~bertsent.training.glue.GlueConfig` fields shared by every run. ``terms``
    (:func:`chosen_terms`): a method's weight and temperature chosen on dev per task, where it has them (the gated
    method takes its ungated one's, :data:`TUNED_AS`); else ``weight`` and ``temperature``. ``angle_every``: the
    ungated methods measure the angle on every so-many-th step only (:class:`AclConfig`); ``angles`` holds the
    measured steps. ``kept_tasks`` (:attr:`TunedRecipe.kept`): where given, every method but CE is fine-tuned on
    these tasks only (:func:`trained_on`).
    """
    from .runs import glue_run

    rows, angles = [], []
    for task in tasks:
        for method in methods:
            if not trained_on(method, task, kept_tasks):
                continue
            for seed in seeds_of(seeds, task):
                config = glue_config(task, seed, max_train_examples, **settings)
                run_weight, run_temperature = term_of(terms, method, task, weight, temperature)
                objective = method_objective(method, run_weight, run_temperature, angle_every)
                stored = glue_run(model, task, config, data_dir, results_dir, objective)
                rows.append(_run_row(stored, method, task, int(seed),
                                     *((None, None) if objective is None else (run_weight, run_temperature))))
                if objective is not None:
                    history = stored.history()
                    # a measured step logs whether it dropped the term; a step left unmeasured logs neither
                    steps = (history[(history["step"] > 0) & history["dropped"].notna()] if "angle" in history
                             else history.iloc[0:0])
                    if len(steps):
                        angles.append(pd.DataFrame({
                            "method": method, "task": task, "seed": int(seed), "weight": run_weight,
                            "step": steps["step"].astype(int).to_numpy(),
                            "angle": pd.to_numeric(steps["angle"], errors="coerce").to_numpy(),
                            "dropped": steps["dropped"].astype(str).str.lower().eq("true").to_numpy()}))
    columns = ["method", "task", "seed", "weight", "step", "angle", "dropped"]
    runs = mark_majority_class(pd.DataFrame(rows), data_dir) if rows else pd.DataFrame(rows)
    return runs, (pd.concat(angles, ignore_index=True) if angles else pd.DataFrame(columns=columns))


def lambda_grid(model, task: str, weights, seeds, methods=("acl_embed", "acl"), max_train_examples=None,
                temperature: float = 0.3, data_dir=None, results_dir=None, angle_every: int = 1,
                kept_tasks=None, **settings) -> pd.DataFrame:
    """The runs of the lambda-sensitivity table: ``methods`` (with and without ACL-Grad) at every ``weight``.
    ``kept_tasks`` (:attr:`TunedRecipe.kept`): where given, ``task`` must be one of them (a curve on a task CE has
    not learned would measure nothing), else a ValueError names the kept ones."""
    if kept_tasks is not None and task not in kept_tasks:
        raise ValueError(f"lambda_task {task!r} is left out of the contrastive runs (CE has not learned it beyond the "
                         f"majority class), so its lambda curve would measure nothing; choose one of the kept tasks "
                         f"({', '.join(kept_tasks) or 'none'})")
    parts = [run_grid(model, [task], methods, seeds, max_train_examples, w, temperature, data_dir, results_dir,
                      angle_every=angle_every, **settings)[0] for w in weights]
    return pd.concat(parts, ignore_index=True)


def recipe_grid(model, tasks, learning_rates, epoch_counts, seeds, max_train_examples: dict | None = None, data_dir=None,
                results_dir=None, **settings) -> pd.DataFrame:
    """CE fine-tuned (or reused) at every learning rate x number of epochs on each task, with the grid's own
    ``seeds`` (kept apart from the main table's, so that the run a recipe was chosen on is not also scored in the
    table): one row per run as :func:`run_grid` gives it, with its ``learning_rate`` and ``epochs``.
    :func:`chosen_recipes` picks each task's recipe from it, and every method then uses that recipe."""
    parts = []
    for task in tasks:
        for rate in learning_rates:
            for count in epoch_counts:
                runs, _ = run_grid(model, [task], ["ce"], seeds, max_train_examples, data_dir=data_dir,
                                   results_dir=results_dir, **{**settings, "learning_rate": float(rate),
                                                               "epochs": int(count)})
                parts.append(runs.assign(learning_rate=float(rate), epochs=int(count)))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def chosen_recipes(grid: pd.DataFrame) -> pd.DataFrame:
    """Per task and recipe (learning rate, epochs) of :func:`recipe_grid`: CE's mean dev score over the grid's seeds,
    and ``chosen`` for the highest of each task. A tie goes to fewer epochs, then to the smaller rate (the cheaper,
    gentler recipe). Rows at the majority class (``at_majority_class``, where the grid has it) are counted in
    ``at_majority_class`` (how many of the recipe's runs predict one class)."""
    grid = grid.assign(at_majority_class=grid["at_majority_class"] if "at_majority_class" in grid else False)
    table = (grid.groupby(["task", "learning_rate", "epochs"], sort=False)
             .agg(metric=("metric", "first"), score=("score", "mean"), seeds=("seed", "size"),
                  at_majority_class=("at_majority_class", "sum"), train_seconds=("train_seconds", "mean"))
             .reset_index())
    best = (table.sort_values(["score", "epochs", "learning_rate"], ascending=[False, True, True], kind="stable")
            .groupby("task", sort=False).head(1).index)
    return table.assign(chosen=table.index.isin(best), at_majority_class=table["at_majority_class"].astype(int))


def with_chosen_recipes(settings: dict, recipes: pd.DataFrame, tasks) -> dict:
    """``settings`` (:class:`~bertsent.training.glue.GlueConfig` fields, as the page passes them to
    :func:`run_grid`) with each of ``tasks``' chosen learning rate and epochs (``recipes``: :func:`chosen_recipes`);
    a task the grid did not cover keeps its value from ``settings``."""
    chosen = recipes[recipes["chosen"]].set_index("task")
    learning_rate = {task: float(chosen.loc[task, "learning_rate"]) if task in chosen.index
                     else per_task(settings["learning_rate"], task) for task in tasks}
    epochs = {task: int(chosen.loc[task, "epochs"]) if task in chosen.index else per_task(settings["epochs"], task)
              for task in tasks}
    return {**settings, "learning_rate": learning_rate, "epochs": epochs}


# the gated method is tuned as its ungated one: the gate changes which steps the term is applied at, not the term
TUNED_AS = {"ce_scl": "ce_scl", "scl_grad": "ce_scl", "acl_embed": "acl_embed", "acl": "acl_embed"}


def grid_diagnosis(model, points, seeds, max_train_examples: dict | None = None, data_dir=None, results_dir=None,
                   angle_every: int = 1, **settings) -> pd.DataFrame:
    """Contrastive-grid points fine-tuned again with the final model's decisions diagnosed (CE+SCL; ``points``: a
    list of [task, temperature, weight], each with the grid's ``seeds`` and the task's recipe in ``settings``).

    A grid point that ends at the majority class has either lost the classes or ranks them behind a misplaced
    threshold; the runs store only the dev score, so each such point is trained again, number for number (the same
    recipe, seed and term; only the diagnosis, :class:`AclConfig`'s ``diagnose``, is added, a stored run of its own),
    and its final model is read on the training set and on dev
    (:func:`~bertsent.evaluation.glue.decision_diagnosis`). One row per run and split: the score at the argmax, the
    share predicted as class 1, the AUC of the logit margin, the best score over thresholds (chosen on the same
    examples: an upper bound), and per true class the mean probability of class 1 and the mean cross-entropy."""
    from .runs import glue_run

    rows = []
    for task, temperature, weight in points:
        for seed in seeds_of(seeds, task):
            config = glue_config(task, seed, max_train_examples, **settings)
            objective = method_objective("ce_scl", weight, temperature, angle_every, diagnose=True)
            result = glue_run(model, task, config, data_dir, results_dir, objective).train()["result"]
            for split in ("train", "dev"):
                found = result["diagnosis"][split]
                rows.append({"task": task, "temperature": float(temperature), "weight": float(weight),
                             "seed": int(seed), "split": split, "examples": found["examples"],
                             "metric": found["metric"], "score": found["score"],
                             "predicted_class_1": found["predicted_share"][1], "auc": found["auc"],
                             "best_threshold_score": found["best_threshold_score"],
                             **{f"probability_of_class_1_when_{label}": value
                                for label, value in found["probability_of_class_1"].items()},
                             **{f"cross_entropy_when_{label}": value
                                for label, value in found["cross_entropy"].items()}})
    return pd.DataFrame(rows)


def check_tunable(methods) -> list[str]:
    """``methods`` as a list, each an ungated contrastive method (the ones a contrastive grid tunes), or a
    ValueError naming the stray one and the choices."""
    tunable = sorted(set(TUNED_AS.values()), key=list(TUNED_AS.values()).index)
    stray = [method for method in methods if method not in tunable]
    if stray:
        raise ValueError(f"contrastive_grid_methods: {stray[0]!r} is not tuned on its own (a gated method takes its "
                         f"ungated one's temperature and weight); choose from {', '.join(tunable)}")
    return list(methods)


def contrastive_grid(model, tasks, methods, temperatures, weights, seeds, max_train_examples: dict | None = None,
                     data_dir=None, results_dir=None, angle_every: int = 1, **settings) -> pd.DataFrame:
    """Each of ``methods`` (ungated: ``ce_scl``, ``acl_embed``) fine-tuned (or reused) at every temperature x weight
    on each task, with the grid's own ``seeds`` and the task's recipe in ``settings`` (the one CE's grid chose):
    one row per run as :func:`run_grid` gives it. :func:`chosen_terms` picks each method's temperature and weight
    per task from it (Gunel et al. 2021 tune SCL's this way, on dev)."""
    parts = [run_grid(model, tasks, [method], seeds, max_train_examples, float(weight), float(temperature),
                      data_dir, results_dir, angle_every=angle_every, **settings)[0]
             for method in check_tunable(methods) for temperature in temperatures for weight in weights]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def chosen_terms(grid: pd.DataFrame) -> pd.DataFrame:
    """Per task, method and (temperature, weight) of :func:`contrastive_grid`: the mean dev score over the grid's
    seeds, and ``chosen`` for the highest of each task and method. A tie goes to the smaller weight (the run
    closer to CE), then to the smaller temperature."""
    grid = grid.assign(at_majority_class=grid["at_majority_class"] if "at_majority_class" in grid else False)
    table = (grid.groupby(["task", "method", "temperature", "weight"], sort=False)
             .agg(metric=("metric", "first"), score=("score", "mean"), seeds=("seed", "size"),
                  at_majority_class=("at_majority_class", "sum"), train_seconds=("train_seconds", "mean"))
             .reset_index())
    best = (table.sort_values(["score", "weight", "temperature"], ascending=[False, True, True], kind="stable")
            .groupby(["task", "method"], sort=False).head(1).index)
    return table.assign(chosen=table.index.isin(best), at_majority_class=table["at_majority_class"].astype(int))


def term_of(terms: pd.DataFrame | None, method: str, task: str, weight: float, temperature: float
            ) -> tuple[float, float]:
    """(weight, temperature) ``method`` is fine-tuned with on ``task``: those :func:`chosen_terms` chose for it (or
    for the ungated method it is tuned as, :data:`TUNED_AS`) where ``terms`` has them, else the given ones."""
    if terms is not None and len(terms):
        row = terms[terms["chosen"] & (terms["task"] == task) & (terms["method"] == TUNED_AS.get(method, method))]
        if len(row):
            return float(row["weight"].iloc[0]), float(row["temperature"].iloc[0])
    return float(weight), float(temperature)


def trained_on(method: str, task: str, kept_tasks=None) -> bool:
    """Whether ``method`` is fine-tuned on ``task``: CE on every task; the other methods on every task, or where
    the page gates them on CE's baseline check (``kept_tasks``, :attr:`TunedRecipe.kept`), on the kept ones only."""
    return method == "ce" or kept_tasks is None or task in kept_tasks


@dataclass
class TunedRecipe:
    """What the chapter's pages fine-tune with: ``settings`` (GlueConfig fields, each task's learning rate and
    epochs as CE's grid chose them, where there is one) and ``terms`` (:func:`chosen_terms`, or None), with the grid
    runs and tables they were chosen from (None where the page has no such grid). Where the page gates the
    contrastive methods on CE (``baseline_gate``): ``baseline_runs`` (CE over the table's seeds at that recipe),
    their :func:`baseline_check` and ``kept``, the tasks CE learned beyond the majority class, the only ones the
    contrastive grid and methods are fine-tuned on; None without the gate (every task)."""

    settings: dict
    recipe_runs: pd.DataFrame | None = None
    recipes: pd.DataFrame | None = None
    term_runs: pd.DataFrame | None = None
    terms: pd.DataFrame | None = None
    baseline_runs: pd.DataFrame | None = None
    check: pd.DataFrame | None = None
    kept: list[str] | None = None


def tuned_recipe(model, tasks, settings: dict, max_train_examples: dict | None = None, grid_learning_rates=(),
                 grid_epochs=(), grid_seeds=(0,), contrastive_grid_temperatures=(), contrastive_grid_weights=(),
                 contrastive_grid_methods=("ce_scl",), data_dir=None, results_dir=None, also_tasks=(),
                 angle_every: int = 1, seeds=None, baseline_gate: bool = False) -> TunedRecipe:
    """The recipe every page of the chapter fine-tunes with, so that they read the same runs: CE's learning rate and
    epochs chosen on dev per task (:func:`recipe_grid`, where ``grid_learning_rates`` and ``grid_epochs`` are
    given; ``also_tasks``, e.g. the lambda curve's, get theirs too); with ``baseline_gate``, CE over the table's
    ``seeds`` at that recipe and the tasks it learned beyond the majority class (:func:`baseline_check`; only
    those get contrastive runs, so no hours go to methods compared against a baseline that learned nothing); then
    the contrastive term's temperature and weight for ``contrastive_grid_methods`` at that recipe
    (:func:`contrastive_grid`, where both of its lists are given). Both grids use ``grid_seeds``, apart from the
    table's."""
    tuned = TunedRecipe(dict(settings))
    if grid_learning_rates and grid_epochs:
        tuned.recipe_runs = recipe_grid(model, tasks, grid_learning_rates, grid_epochs, grid_seeds,
                                        max_train_examples, data_dir, results_dir, **settings)
        tuned.recipes = chosen_recipes(tuned.recipe_runs)
        tuned.settings = with_chosen_recipes(settings, tuned.recipes, list(dict.fromkeys([*tasks, *also_tasks])))
    if baseline_gate:
        if seeds is None:
            raise ValueError("baseline_gate needs the table's seeds (CE is judged over them)")
        tuned.baseline_runs, _ = run_grid(model, tasks, ["ce"], seeds, max_train_examples, data_dir=data_dir,
                                          results_dir=results_dir, **tuned.settings)
        tuned.check = baseline_check(score_table(tuned.baseline_runs, data_dir))
        tuned.kept = tasks_kept(tuned.check)
    grid_tasks = [task for task in tasks if tuned.kept is None or task in tuned.kept]
    if contrastive_grid_temperatures and contrastive_grid_weights and grid_tasks:
        tuned.term_runs = contrastive_grid(model, grid_tasks, contrastive_grid_methods,
                                           contrastive_grid_temperatures, contrastive_grid_weights, grid_seeds,
                                           max_train_examples, data_dir, results_dir, angle_every, **tuned.settings)
        tuned.terms = chosen_terms(tuned.term_runs)
    return tuned


def tasks_kept(check: pd.DataFrame) -> list[str]:
    """The tasks of :func:`baseline_check`'s table that CE learned beyond the majority class, in its order."""
    return [str(task) for task in check.loc[check["kept"].astype(bool), "task"]]


def _ordered(values, order) -> list:
    present = list(dict.fromkeys(values))
    return [v for v in order if v in present] + [v for v in present if v not in order]


def all_at_floor(rows: pd.DataFrame) -> bool:
    """True when ``rows`` (runs or exits marked by :func:`~bertsent.evaluation.glue.mark_majority_class`) are all
    at the majority class: every seed predicts one class."""
    return bool(len(rows)) and "at_majority_class" in rows and bool(rows["at_majority_class"].astype(bool).all())


def score_table(runs: pd.DataFrame, data_dir=None) -> pd.DataFrame:
    """Mean and standard deviation over seeds of every (task, metric, method): columns task, metric, method,
    mean, sd (NaN with one seed), seeds, ``at_floor`` (every seed at the majority class), dev_examples and
    ``majority``, the metric of always predicting the training set's most frequent label on the same dev examples
    (what :func:`baseline_check` holds CE against). MRPC contributes two metrics (accuracy, then F1)."""
    rows, floors = [], {}
    for task in _ordered(runs["task"], list(TASK_METRICS)):
        metrics = TASK_METRICS[task][0]
        for metric in metrics:
            for method in _ordered(runs.loc[runs["task"] == task, "method"], METHODS):
                chosen = runs[(runs["task"] == task) & (runs["method"] == method)]
                values = chosen[metric].astype(float).dropna()
                dev = _dev_examples(chosen)
                key = (task, None if pd.isna(dev) else int(dev))
                if key not in floors:
                    floors[key] = majority_class_scores(task, data_dir, key[1])
                rows.append({"task": task, "metric": metric, "method": method, "mean": values.mean(),
                             "sd": values.std(ddof=1) if len(values) > 1 else float("nan"), "seeds": len(values),
                             "at_floor": all_at_floor(chosen), "dev_examples": dev,
                             "majority": float(floors[key][metric])})
    return pd.DataFrame(rows, columns=["task", "metric", "method", "mean", "sd", "seeds", "at_floor", "dev_examples",
                                       "majority"])


def baseline_check(scores: pd.DataFrame, baseline: str = "ce") -> pd.DataFrame:
    """Whether ``baseline`` (CE) has learned each task: its mean over seeds against the majority class's score on
    the task's selection metric, judged by :func:`~bertsent.report.claims.judge` like any claim (the seed spread and
    the dev set's own noise; the majority class is a fixed predictor, no seed). A task is ``kept`` only where CE is
    above the majority class beyond that tolerance: a method effect of a point or two cannot show against a baseline
    that has not learned the task, so the claims of a task left out read *not testable here*
    (:func:`left_out_tasks`). Columns: task, metric, ce, majority, difference, tolerance, noise_source, kept.
    Empty for scores without a ``majority`` column (pages run before it)."""
    columns = ["task", "metric", baseline, "majority", "difference", "tolerance", "noise_source", "kept"]
    if "majority" not in scores:
        return pd.DataFrame(columns=columns)
    rows = []
    for task in dict.fromkeys(scores["task"]):
        metric = task_metric(task)
        chosen = scores[(scores["task"] == task) & (scores["metric"] == metric) & (scores["method"] == baseline)]
        if not len(chosen):
            continue
        row = chosen.iloc[0]
        noise = seed_noise(Side(0.0 if pd.isna(row["sd"]) else float(row["sd"]), int(row["seeds"])), Side(0.0, 0),
                           evaluation=dev_evaluation(row.get("dev_examples"), [row["mean"]], metric, 1))
        judged = judge(f"{baseline} > majority class", float(row["mean"] - row["majority"]), None, noise, task=task)
        rows.append({"task": task, "metric": metric, baseline: float(row["mean"]), "majority": float(row["majority"]),
                     "difference": judged["our_effect"], "tolerance": judged["tolerance"],
                     "noise_source": judged["noise_source"], "kept": judged["verdict"] == REPRODUCED})
    return pd.DataFrame(rows, columns=columns)


def left_out_tasks(scores: pd.DataFrame, baseline: str = "ce") -> dict[str, str]:
    """Task -> why its claims are not testable here, for every task :func:`baseline_check` leaves out."""
    check = baseline_check(scores, baseline)
    label = METHOD_LABELS.get(baseline, baseline)
    def noise(tolerance: float) -> str:
        return "its noise not measured (one seed)" if pd.isna(tolerance) else f"tolerance {tolerance:.2f}"

    return {row.task: (f"{label} has not learned {row.task} beyond the majority class ({row.metric} "
                       f"{getattr(row, baseline):.2f} against {row.majority:.2f}: {row.difference:+.2f}, "
                       f"{noise(row.tolerance)}), so no method effect can show against it")
            for row in check.itertuples() if not row.kept}


def _dev_examples(runs: pd.DataFrame):
    """How many dev examples the runs were scored on (the test set's noise rests on it); NaN where not stored."""
    if "dev_examples" not in runs or runs["dev_examples"].isna().all():
        return float("nan")
    return int(runs["dev_examples"].max())


def dev_evaluation(count, scores, metric: str, sides: int = 2):
    """The dev set's own sampling noise of a difference of ``sides`` scores (``scores``: their means), each on
    ``count`` dev examples (:func:`~bertsent.report.claims.binomial_evaluation`; 1/sqrt(n) for an MCC); None where
    the count is not stored."""
    if count is None or pd.isna(count):
        return None
    return binomial_evaluation(int(count), float(np.mean(scores)), "mcc" if metric == "mcc" else "accuracy", sides)


def main_table(scores: pd.DataFrame, decimals: int = 2) -> pd.DataFrame:
    """The paper's table shape: one row per method, one column per task metric, cells "mean ± sd", and
    "(majority class)" after a cell whose every seed predicts one class."""
    scores = scores.assign(column=scores["task"] + " " + scores["metric"])
    cell = scores.apply(lambda r: f"{r['mean']:.{decimals}f}"
                        + ("" if pd.isna(r["sd"]) else f" ± {r['sd']:.{decimals}f}")
                        + (f" ({MAJORITY_LABEL})" if r.get("at_floor", False) else ""), axis=1)
    table = scores.assign(cell=cell).pivot(index="method", columns="column", values="cell")
    table = table.loc[_ordered(scores["method"], METHODS), list(dict.fromkeys(scores["column"]))]
    return table.rename(index=METHOD_LABELS).rename_axis(index="method", columns=None)


def cost_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Mean fine-tuning wall time per (task, method) and its ratio to CE's on the task (the extra backward passes
    of the angle measurement; the times include the two dev passes every run makes)."""
    table = runs.groupby(["task", "method"], sort=False)["train_seconds"].mean().rename("train_seconds").reset_index()
    ce = table[table["method"] == "ce"].set_index("task")["train_seconds"]
    table["seconds_ratio_to_ce"] = table["train_seconds"] / table["task"].map(ce)
    return table


STEP_OBJECTIVES = {  # benchmarks/acl_step.py's objectives, in words
    "ce": "CE: one backward pass",
    "ce_scl": "CE+SCL: one backward pass, no angle",
    "acl_embed": "ACL-Embed: one backward pass, no angle",
    "acl_embed_measured": "ACL-Embed with the angle logged: two gradient passes (as the chapter's CE+SCL and "
                          "ACL-Embed runs)",
    "acl": "ACL (Embed + Grad): two gradient passes, angle, gate",
    "plain_transformers": "CE in a plain transformers loop (the reference for the library's CE step)",
}


def step_cost_table(benchmark: dict) -> pd.DataFrame:
    """The step time of each ACL objective as a ratio to CE's, from ``benchmarks/acl_step.py``'s JSON (steps of
    every objective interleaved in one process, so a busy machine slows them alike): objective, what the step
    does, the median milliseconds per step and the ratio to CE."""
    medians = benchmark["median_step_seconds"]
    return pd.DataFrame([{"objective": name, "step": STEP_OBJECTIVES.get(name, name),
                          "ms_per_step": 1000 * seconds, "ratio_to_ce": seconds / medians["ce"]}
                         for name, seconds in medians.items()])


def angle_table(angles: pd.DataFrame, threshold: float = 90.0) -> pd.DataFrame:
    """The distribution of the per-step angle (degrees) per task and pair (CE vs SCL, CE vs ACL-Embed), pooled
    over seeds: steps, mean, median, 10th / 90th percentile, min, max, and the share of steps strictly above
    ``threshold`` (as a fraction). Undefined angles (NaN: a zero gradient) are left out and counted apart."""
    rows = []
    for (task, method), group in angles.groupby(["task", "method"], sort=False):
        values = group["angle"].astype(float)
        measured = values.dropna().to_numpy()
        row = {"task": task, "method": method, "pair": ANGLE_PAIRS.get(method, method), "steps": len(measured),
               "undefined": int(values.isna().sum()), "seeds": group["seed"].nunique()}
        if len(measured):
            row.update(mean=measured.mean(), median=float(np.median(measured)), p10=np.percentile(measured, 10),
                       p90=np.percentile(measured, 90), min=measured.min(), max=measured.max(),
                       share_above=float((measured > threshold).mean()))
        rows.append(row)
    columns = ["task", "method", "pair", "steps", "undefined", "seeds", "mean", "median", "p10", "p90", "min", "max",
               "share_above"]
    return pd.DataFrame(rows).reindex(columns=columns)


def angle_claims(angles: pd.DataFrame, threshold: float = 90.0, methods=("ce_scl", "acl_embed"),
                 range_methods=("ce_scl",)) -> pd.DataFrame:
    """The paper's motivating observation, judged per task and pair at the operational thresholds of
    :data:`bertsent.report.reported.ACL_THRESHOLDS`:

    * "the CE and contrastive gradients often point more than ``threshold`` degrees apart": our effect is the share of
      steps above the threshold (percent, pooled over seeds) minus the share that "often" is read as (25%), so the
      claim holds when the share is above it beyond the noise;
    * "the CE-SCL angle ranges roughly from 75 to 105 degrees" (the pairs of ``range_methods``): the 10th and 90th
      percentiles of the per-step angles (means over seeds), each judged by
      :func:`~bertsent.report.claims.judge_range` to lie within 10 degrees of the paper's end.

    A run's steps are not independent draws (neighbouring steps see similar weights), so the unit of noise is the
    seed: the tolerance is the t quantile times the SE of the mean of the per-seed values
    (:func:`~bertsent.report.claims.seed_noise`; each seed's steps are its own sample of the training, so the seed
    spread holds the steps' sampling noise too); with one seed there is no verdict."""
    from ..report.claims import judge_range
    from ..report.reported import ACL_THRESHOLDS

    often = ACL_THRESHOLDS["often"]
    (low_end, high_end), slack = ACL_THRESHOLDS["angle_range"], ACL_THRESHOLDS["roughly"]
    percentiles = ACL_THRESHOLDS["range_percentiles"]
    rows = []
    measured = angles.dropna(subset=["angle"])
    for (task, method), group in measured.groupby(["task", "method"], sort=False):
        if method not in methods:
            continue
        other = ANGLE_PAIRS.get(method, method).split(" vs ")[-1]
        per_seed = group.groupby("seed")["angle"].apply(lambda a: 100 * float((a > threshold).mean()))
        spread = float(per_seed.std(ddof=1)) if len(per_seed) > 1 else 0.0
        rows.append(judge(f"CE and {other} gradients > {threshold:g} degrees apart in >= {often:g}% of steps "
                          f"('often'; % of steps - {often:g})",
                          100 * float((group["angle"] > threshold).mean()) - often, None,
                          seed_noise(Side(spread, len(per_seed))), task=task))
        if method not in range_methods:
            continue
        for q, end in zip(percentiles, (low_end, high_end)):
            values = group.groupby("seed")["angle"].apply(lambda a: float(np.percentile(a, q)))
            noise = seed_noise(Side(float(values.std(ddof=1)) if len(values) > 1 else 0.0, len(values)))
            rows.append(judge_range(f"CE-{other} angle roughly {low_end:g}-{high_end:g} degrees: {q}th percentile "
                                    f"in [{end - slack:g}, {end + slack:g}]", float(values.mean()), end - slack,
                                    end + slack, noise, task=task))
    return claims_table(rows)


def lambda_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Score against lambda: mean, sd and seeds per (method, weight), and ``at_floor`` (every seed at the majority
    class); rows ordered by method then weight."""
    grouped = runs.groupby(["task", "method", "weight"], sort=False)
    table = (grouped["score"]
             .agg(mean="mean", sd=lambda s: s.std(ddof=1) if len(s) > 1 else float("nan"), seeds="count")
             .reset_index())
    table["at_floor"] = [all_at_floor(group) for _, group in grouped]
    table["metric"] = table["task"].map(task_metric)
    table["dev_examples"] = [_dev_examples(group) for _, group in grouped]
    return table.sort_values(["method", "weight"], key=lambda c: c.map(
        {m: i for i, m in enumerate(METHODS)}) if c.name == "method" else c).reset_index(drop=True)


def lambda_spread(table: pd.DataFrame) -> pd.DataFrame:
    """Per method: the range (max - min) and standard deviation across lambdas of the mean score, and the
    lambdas of the best and worst mean."""
    rows = []
    for method, group in table.groupby("method", sort=False):
        best, worst = group.loc[group["mean"].idxmax()], group.loc[group["mean"].idxmin()]
        rows.append({"method": method, "weights": len(group), "range": best["mean"] - worst["mean"],
                     "sd_across_weights": group["mean"].std(ddof=1) if len(group) > 1 else float("nan"),
                     "best_weight": best["weight"], "worst_weight": worst["weight"]})
    return pd.DataFrame(rows)


# --- claims ----------------------------------------------------------------------------------------------------

def _side(scores: pd.DataFrame, task: str, metric: str, method: str) -> tuple[float, Side, bool]:
    row = scores[(scores["task"] == task) & (scores["metric"] == metric) & (scores["method"] == method)].iloc[0]
    return (float(row["mean"]), Side(0.0 if pd.isna(row["sd"]) else float(row["sd"]), int(row["seeds"])),
            bool(row.get("at_floor", False)))


def _dev_count(scores: pd.DataFrame, task: str):
    rows = scores[scores["task"] == task]
    return rows["dev_examples"].max() if "dev_examples" in rows else None


def _floor(*at_floor: bool) -> str | None:
    """The floor for :func:`~bertsent.report.claims.judge`: the majority class when every side sits at it."""
    return MAJORITY_LABEL if at_floor and all(at_floor) else None


def main_claims(scores: pd.DataFrame, better: str = "acl", against=("ce", "ce_scl"),
                reference: Spread | None = None) -> pd.DataFrame:
    """For every task (its selection metric) and every method in ``against``: the claim "``better`` scores above
    it", our difference of means over seeds against the seed noise of the two means. The paper gives a direction
    (no table values could be recovered), so ``paper_effect`` is blank. Where both methods sit at the majority class
    on every seed the verdict is *at floor*; on a task where CE has not learned beyond the majority class
    (:func:`left_out_tasks`) it is *not testable here*."""
    rows, left_out = [], left_out_tasks(scores)
    for task in list(dict.fromkeys(scores["task"])):
        metric = task_metric(task)
        present = set(scores.loc[scores["task"] == task, "method"])
        if better not in present:
            continue
        ours, side, floored = _side(scores, task, metric, better)
        for other in against:
            if other not in present:
                continue
            theirs, other_side, other_floored = _side(scores, task, metric, other)
            noise = seed_noise(side, other_side, reference=reference,
                               evaluation=dev_evaluation(_dev_count(scores, task), [ours, theirs], metric))
            rows.append(judge(f"{better} > {other}", ours - theirs, None, noise,
                              **floor_sides(floored, other_floored, MAJORITY_LABEL), untestable=left_out.get(task),
                              task=task, metric=metric, score=ours, compared_with=theirs))
    return claims_table(rows)


def component_claims(scores: pd.DataFrame, reference: Spread | None = None) -> pd.DataFrame:
    """The component ablation (the paper: each of ACL-Embed, ACL-Grad and ACL-CL contributes): for each component
    of :data:`COMPONENTS` whose two methods were both trained, :func:`main_claims`' "with it > without it" per task,
    with a ``component`` column. Removing ACL-Grad from ACL leaves ACL-Embed; removing the label embeddings leaves
    SCL, without the gate (ACL-Embed against CE+SCL) and, where ``scl_grad`` was trained, with it."""
    parts = [main_claims(scores, with_it, (without,), reference).assign(component=component)
             for component, with_it, without in COMPONENTS]
    parts = [part for part in parts if len(part)]
    if not parts:
        return claims_table([])
    table = pd.concat(parts, ignore_index=True)
    table.insert(1, "component", table.pop("component"))  # after the claim, as claims_table puts context
    return table


def majority_count(claims: pd.DataFrame, better: str = "acl", against=("ce", "ce_scl")) -> dict:
    """How many tasks ``better`` beats every method of ``against`` on: beyond the noise (verdict reproduced on
    every comparison of the task) and by the sign alone; the number of tasks; and ``at_floor``, the tasks where a
    comparison has both methods at the majority class (no evidence either way)."""
    tasks = list(dict.fromkeys(claims["task"]))
    wanted = {f"{better} > {o}" for o in against}
    beyond = sign = floored = 0
    for task in tasks:
        rows = claims[(claims["task"] == task) & claims["claim"].isin(wanted)]
        floored += int((rows["verdict"] == AT_FLOOR).any())
        if len(rows) < len(wanted):
            continue
        beyond += int((rows["verdict"] == "reproduced").all())
        sign += int((rows["our_effect"] > 0).all())
    return {"tasks": len(tasks), "beyond_noise": beyond, "by_sign": sign, "at_floor": floored}


def floor_phrase(scores: pd.DataFrame) -> str:
    """The methods that sit at the majority class on every seed, per task, in words ("" when none): a win over
    such a method is a win over a constant predictor, which the verdicts do not say by themselves.

    ``scores``: :func:`score_table`'s long form (``glue_scores.csv``: task, metric, method, ..., at_floor); a task
    counts once, from its first metric."""
    first = scores.drop_duplicates(["task", "method"])
    floored = first[first["at_floor"].astype(bool)]
    if not len(floored):
        return ""
    by_method = floored.groupby("method", sort=False)["task"].agg(list)
    parts = [f"{METHOD_LABELS.get(method, method)} on {_and(tasks)}" for method, tasks in by_method.items()]
    return (f"At the majority class on every seed: {'; '.join(parts)}. Beating a method there means beating a "
            "constant predictor, not a trained one.")


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def lambda_claim(table: pd.DataFrame, gated: str = "acl", ungated: str = "acl_embed",
                 reference: Spread | None = None, left_out: dict[str, str] | None = None) -> pd.DataFrame:
    """The claim "ACL-Grad makes the score less sensitive to lambda": ours = the range of the mean score across
    lambdas without the gate minus the range with it (positive: the gate flattens the curve). Each range is a
    difference of two means, so the noise has four sides (the best and worst lambda of each method); *at floor*
    when all four sit at the majority class; *not testable here* on a task of ``left_out`` (task -> why:
    :func:`left_out_tasks` of the main table's scores)."""
    rows = []
    for task, group in table.groupby("task", sort=False):
        sides, ranges, floors, means = [], {}, [], []
        for method in (ungated, gated):
            part = group[group["method"] == method]
            if len(part) < 2:
                break
            best, worst = part.loc[part["mean"].idxmax()], part.loc[part["mean"].idxmin()]
            ranges[method] = best["mean"] - worst["mean"]
            sides += [Side(0.0 if pd.isna(r["sd"]) else float(r["sd"]), int(r["seeds"])) for r in (best, worst)]
            floors += [bool(r.get("at_floor", False)) for r in (best, worst)]
            means += [best["mean"], worst["mean"]]
        if len(ranges) < 2:
            continue
        noise = seed_noise(*sides, reference=reference,
                           evaluation=dev_evaluation(_dev_count(group, task), means, task_metric(task), 4))
        rows.append(judge(f"less sensitive to lambda (range of the score over lambda: {ungated} > {gated}, beyond "
                          f"the noise)", ranges[ungated] - ranges[gated], None, noise,
                          floor=_floor(*floors), untestable=(left_out or {}).get(task), task=task,
                          metric=task_metric(task),
                          range_without_grad=ranges[ungated], range_with_grad=ranges[gated]))
    return claims_table(rows)


# --- multi-exit --------------------------------------------------------------------------------------------------

class TimedMultiExitObjective(MultiExitObjective):
    """:class:`~bertsent.training.aligned_contrastive.MultiExitObjective` whose result also times entropy-based
    early exiting on the trained model: for each threshold, the first ``latency_examples`` dev examples run one at
    a time through :meth:`~bertsent.models.multi_exit.MultiExitClassifier.early_exit` (eval mode, no gradient,
    batch of one, so an example pays only for the layers it uses); ``exit_latency`` holds the threshold, the mean
    layers used on those examples and the wall seconds per example (one warm-up example first, not counted)."""

    def __init__(self, config: MultiExitConfig | None = None, latency_examples: int = 64):
        super().__init__(config)
        self.latency_examples = int(latency_examples)

    def describe(self) -> dict:
        return {**super().describe(), "latency_examples": self.latency_examples}

    def result(self, method, model) -> dict:
        result = super().result(method, model)
        inner = getattr(model, "module", model)
        rows = method.dev.iloc[:self.latency_examples]
        if not len(rows) or not inner._layerwise():
            return {**result, "exit_latency": []}
        was_training = inner.training
        inner.eval()
        device = next(inner.parameters()).device
        encoded = [_encode(rows.iloc[i:i + 1], method.tokenizer, method.config.max_length)[0].to(device)
                   for i in range(len(rows))]
        inner.early_exit(**encoded[0], threshold=0.0)  # warm-up
        latency = []
        for threshold in self.config.exit_thresholds:
            layers, start = [], time.perf_counter()
            for batch in encoded:
                layers.append(int(inner.early_exit(**batch, threshold=threshold)[1][0]))
            seconds = time.perf_counter() - start
            latency.append({"threshold": threshold, "mean_layers_timed": float(np.mean(layers)),
                            "seconds_per_example": seconds / len(encoded)})
        inner.train(was_training)
        return {**result, "exit_latency": latency}


def exit_grid(model, tasks, modes, seeds, max_train_examples: dict | None = None, weight: float = 0.5,
              temperature: float = 0.3, thresholds=None, latency_examples: int = 64, data_dir=None,
              results_dir=None, **settings) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Fine-tune (or reuse) a multi-exit model per mode x task x seed; returns (exits, curve).

    ``exits``: one row per exit (mode, task, seed, exit (1-based), metric, score, accuracy / f1 / mcc, dev_examples,
    at_majority_class);
    ``curve``: one row per early-exit threshold (mode, task, seed, threshold, mean_layers and the task metric on
    the whole dev set; mean_layers_timed and seconds_per_example on the timed examples)."""
    from .runs import glue_run

    exits, curves = [], []
    for task in tasks:
        metric = task_metric(task)
        for mode in modes:
            for seed in seeds_of(seeds, task):
                objective = exit_objective(mode, weight, temperature, thresholds, latency_examples)
                result = glue_run(model, task, glue_config(task, seed, max_train_examples, **settings), data_dir,
                                  results_dir, objective).train()["result"]
                for index, scores in enumerate(result["exit_metrics"], start=1):
                    exits.append({"mode": mode, "task": task, "seed": int(seed), "exit": index, "metric": metric,
                                  "score": scores[metric], **scores, "dev_examples": result.get("dev_examples")})
                timed = {row["threshold"]: row for row in result.get("exit_latency", [])}
                for point in result["exit_curve"]:
                    extra = timed.get(point["threshold"], {})
                    curves.append({"mode": mode, "task": task, "seed": int(seed), "threshold": point["threshold"],
                                   "mean_layers": point["mean_layers"], "metric": metric, "score": point[metric],
                                   "mean_layers_timed": extra.get("mean_layers_timed"),
                                   "seconds_per_example": extra.get("seconds_per_example")})
    exits = mark_majority_class(pd.DataFrame(exits), data_dir) if exits else pd.DataFrame(exits)
    return exits, pd.DataFrame(curves)


def exit_table(exits: pd.DataFrame) -> pd.DataFrame:
    """Per (task, mode, exit): mean and sd over seeds of the task metric, ``at_floor`` (every seed at the majority
    class) and the gain over joint CE's mean."""
    grouped = exits.groupby(["task", "mode", "exit"], sort=False)
    table = (grouped["score"]
             .agg(mean="mean", sd=lambda s: s.std(ddof=1) if len(s) > 1 else float("nan"), seeds="count")
             .reset_index())
    table["at_floor"] = [all_at_floor(group) for _, group in grouped]
    table["dev_examples"] = [_dev_examples(group) for _, group in grouped]
    joint = table[table["mode"] == "joint"].set_index(["task", "exit"])["mean"]
    table["gain_over_joint"] = [row["mean"] - joint.get((row["task"], row["exit"]), float("nan"))
                                for _, row in table.iterrows()]
    table["metric"] = table["task"].map(task_metric)
    return table


def exit_curve_table(curve: pd.DataFrame) -> pd.DataFrame:
    """The quality-speed curve per (task, mode, threshold), averaged over seeds: mean layers used, seconds per
    example (timed examples), the metric (mean and sd over seeds)."""
    grouped = curve.groupby(["task", "mode", "threshold"], sort=False)
    table = grouped.agg(mean_layers=("mean_layers", "mean"), seconds_per_example=("seconds_per_example", "mean"),
                        score=("score", "mean"), seeds=("seed", "nunique")).reset_index()
    table["score_sd"] = grouped["score"].std(ddof=1).to_numpy()
    table["metric"] = table["task"].map(task_metric)
    return table


def shallow_gain_claim(exits: pd.DataFrame, mode: str = "acl_cl", baseline: str = "joint") -> pd.DataFrame:
    """The claim "shallow exits gain more from ACL-CL than deep ones": per task, the gain of ``mode`` over
    ``baseline`` averaged over the shallow half of the exits minus that over the deep half (the last exit
    included). Per seed, each mode's shallow-minus-deep difference is one number, so the noise is the seed
    noise of the difference of the two modes' means of it; *at floor* when every exit of both modes sits at the
    majority class."""
    rows = []
    for task, group in exits.groupby("task", sort=False):
        count = int(group["exit"].max())
        if count < 2:
            continue
        shallow = group["exit"] <= count // 2
        per_seed = {}
        for which in (mode, baseline):
            part = group[group["mode"] == which]
            if not len(part):
                break
            values = (part[shallow[part.index]].groupby("seed")["score"].mean()
                      - part[~shallow[part.index]].groupby("seed")["score"].mean())
            per_seed[which] = values.dropna()
        if len(per_seed) < 2:
            continue
        a, b = per_seed[mode], per_seed[baseline]
        noise = seed_noise(Side(float(a.std(ddof=1)) if len(a) > 1 else 0.0, len(a)),
                           Side(float(b.std(ddof=1)) if len(b) > 1 else 0.0, len(b)))
        both = group[group["mode"].isin([mode, baseline])]
        rows.append(judge(f"gain of {mode} over {baseline}: shallow half > deep half", a.mean() - b.mean(), None,
                          noise, floor=_floor(all_at_floor(both)), task=task, metric=task_metric(task), exits=count))
    return claims_table(rows)


def _exit_scores(exits: pd.DataFrame, task: str, mode: str, exit_: int) -> pd.DataFrame:
    return exits[(exits["task"] == task) & (exits["mode"] == mode) & (exits["exit"] == exit_)]


def depth_table(deep_exits: pd.DataFrame, shallow_exits: pd.DataFrame, deep_exit: int = 6,
                deep_backbone: str = "deep", shallow_backbone: str = "shallow") -> pd.DataFrame:
    """The paper's comparison of a 12-layer multi-exit BERT's 6th exit with 6-layer distilled models, as far as the
    backbones here allow: per task and mode, the deep backbone's exit ``deep_exit`` (the layers it runs) beside the
    shallow backbone's last exit (its full depth), mean and sd over seeds. ``*_exits``: :func:`exit_grid`'s rows."""
    rows = []
    for backbone, exits, which in ((deep_backbone, deep_exits, lambda g: deep_exit),
                                   (shallow_backbone, shallow_exits, lambda g: int(g["exit"].max()))):
        for (task, mode), group in exits.groupby(["task", "mode"], sort=False):
            exit_ = which(group)
            scores = _exit_scores(group, task, mode, exit_)["score"]
            if not len(scores):
                continue
            rows.append({"task": task, "backbone": backbone, "mode": mode, "exit": exit_, "layers_run": exit_,
                         "of_layers": int(group["exit"].max()), "metric": task_metric(task), "mean": scores.mean(),
                         "sd": scores.std(ddof=1) if len(scores) > 1 else float("nan"), "seeds": len(scores)})
    return pd.DataFrame(rows)


def depth_claims(deep_exits: pd.DataFrame, shallow_exits: pd.DataFrame, deep_exit: int = 6,
                 deep_mode: str = "acl_cl", shallow_mode: str = "joint", deep_backbone: str = "deep",
                 shallow_backbone: str = "shallow", control_mode: str | None = "joint") -> pd.DataFrame:
    """The claim "the 6th exit of a 12-layer multi-exit model trained with ACL-CL matches or beats a 6-layer model":
    per task, the deep backbone's exit ``deep_exit`` under ``deep_mode`` minus the shallow backbone's last exit under
    ``shallow_mode``, against the seed noise of the two means. "Matches or beats": *reproduced* (beyond the noise,
    above) or *within noise* (matches) both agree with the paper; *not reproduced* means the exit is worse. The
    control (``control_mode`` on the deep backbone at the same exit, where it was run) says how much of that lead is
    ACL-CL's: where ACL-CL adds nothing beyond the noise over it, the verdict is *explained by the control*
    (:class:`~bertsent.report.claims.Control`), and the row carries the control's score."""
    rows = []
    for task in list(dict.fromkeys(deep_exits["task"])):
        deep = _exit_scores(deep_exits, task, deep_mode, deep_exit)
        shallow_rows = shallow_exits[(shallow_exits["task"] == task) & (shallow_exits["mode"] == shallow_mode)]
        if not len(deep) or not len(shallow_rows):
            continue
        shallow = _exit_scores(shallow_rows, task, shallow_mode, int(shallow_rows["exit"].max()))
        metric = task_metric(task)

        def side(part):
            return Side(float(part["score"].std(ddof=1)) if len(part) > 1 else 0.0, len(part))

        def evaluation(*parts):
            counts = [part["dev_examples"].max() for part in parts if "dev_examples" in part]
            return dev_evaluation(max(counts) if counts else None, [p["score"].mean() for p in parts], metric)

        # the control: the deep backbone at the same exit without ACL-CL, which says how much of the lead is
        # ACL-CL's and how much the deeper backbone's
        control_rows = _exit_scores(deep_exits, task, control_mode, deep_exit) if control_mode else deep.iloc[:0]
        control = None
        if len(control_rows) and control_mode != deep_mode:
            control = Control(f"{deep_backbone} exit {deep_exit} with {control_mode}: "
                              f"{control_rows['score'].mean():.2f}",
                              deep["score"].mean() - control_rows["score"].mean(),
                              seed_noise(side(deep), side(control_rows), evaluation=evaluation(deep, control_rows)))
        rows.append(judge(f"{deep_backbone} exit {deep_exit} ({deep_mode}) >= {shallow_backbone} "
                          f"({int(shallow_rows['exit'].max())} layers, {shallow_mode})",
                          deep["score"].mean() - shallow["score"].mean(), None,
                          seed_noise(side(deep), side(shallow), evaluation=evaluation(deep, shallow)),
                          **floor_sides(all_at_floor(deep), all_at_floor(shallow), MAJORITY_LABEL), control=control,
                          task=task, metric=metric, score=deep["score"].mean(), compared_with=shallow["score"].mean()))
    return claims_table(rows)


def exit_probe(backbone: str, task: str, seed: int, max_train_examples: dict | None = None, max_length: int = 128,
               readouts=("cls", "mean"), data_dir=None, cache: bool = False) -> pd.DataFrame:
    """What each exit could read before any fine-tuning: for layer l = 1..L of the frozen ``backbone``, a logistic
    regression (:func:`bertsent.evaluation.transfer.fit_frozen_probe`) on layer l's [CLS] state (exit l's input) and
    on its token mean, fitted on the training rows of the run with ``seed`` (the same subsample) and scored on the
    whole dev set with the task's metric; on the raw states and on standardised ones. ``spread``
    (:func:`bertsent.evaluation.geometry.relative_spread`, on the training rows) says how much of the readout's
    size differs between sentences. Single-sentence tasks only (the encoder reads one sentence at a time)."""
    from ..data.glue import load_glue
    from ..encode.backbones import load_backbone
    from ..encode.encoder import Encoder
    from ..evaluation.geometry import relative_spread
    from ..evaluation.transfer import fit_frozen_probe
    from ..training.glue import glue_metrics, training_rows

    train = training_rows(task, (max_train_examples or {}).get(task), seed, data_dir)
    dev = load_glue(task, "dev", data_dir)
    if train["sentence2"].notna().any():
        raise ValueError(f"{task} pairs two sentences; the probe encodes one sentence per example. Fix: probe a "
                         f"single-sentence task (SST-2, CoLA).")
    encoder = Encoder(load_backbone(backbone), max_length=max_length, cache=cache, show_progress=False)
    pooled = encoder.encode(train["sentence1"].tolist() + dev["sentence1"].tolist(), list(readouts))
    metric = task_metric(task)
    floor = majority_class_scores(task, data_dir)[metric]
    rows = []
    for layer in range(1, pooled.n_layers):
        for readout in readouts:
            x_train = pooled.lookup(train["sentence1"].tolist(), readout, layer)
            x_dev = pooled.lookup(dev["sentence1"].tolist(), readout, layer)
            row = {"backbone": backbone, "task": task, "layer": layer, "readout": readout,
                   "spread": relative_spread(x_train)}
            for scaling, standardize in (("raw", False), ("standardised", True)):
                probe = fit_frozen_probe(x_train, train["label"].to_numpy(), standardize, seed)
                row[f"probe_{scaling}"] = glue_metrics(task, dev["label"], probe.predict(x_dev))[metric]
            rows.append({**row, "metric": metric, "majority_class": floor, "train_examples": len(train),
                         "dev_examples": len(dev), "seed": seed})
    return pd.DataFrame(rows)


def exit_claims(table: pd.DataFrame, mode: str = "acl_cl", against=("joint", "kd")) -> pd.DataFrame:
    """Per task and exit: "``mode`` > each of ``against``" at that exit, seed noise of the two means."""
    rows = []
    for (task, exit_), group in table.groupby(["task", "exit"], sort=False):
        modes = group.set_index("mode")
        if mode not in modes.index:
            continue
        for other in against:
            if other not in modes.index:
                continue
            a, b = modes.loc[mode], modes.loc[other]
            noise = seed_noise(Side(0.0 if pd.isna(a["sd"]) else a["sd"], int(a["seeds"])),
                               Side(0.0 if pd.isna(b["sd"]) else b["sd"], int(b["seeds"])),
                               evaluation=dev_evaluation(a.get("dev_examples"), [a["mean"], b["mean"]],
                                                         task_metric(task)))
            floors = bool(a.get("at_floor", False)), bool(b.get("at_floor", False))
            rows.append(judge(f"{mode} > {other}", a["mean"] - b["mean"], None, noise,
                              **floor_sides(*floors, MAJORITY_LABEL), task=task, exit=int(exit_),
                              metric=task_metric(task)))
    return claims_table(rows)


def multi_exit_claims(per_exit: pd.DataFrame, exits: pd.DataFrame, mode: str = "acl_cl",
                      against=("joint", "kd")) -> pd.DataFrame:
    """The multi-exit page's claims in one table: :func:`exit_claims` on ``per_exit`` (:func:`exit_table`) and
    :func:`shallow_gain_claim` on ``exits`` (the per-run rows), with ``exit`` an integer column (blank on the
    shallow-gain rows, which span every exit)."""
    return joined_exit_claims(exit_claims(per_exit, mode, against), shallow_gain_claim(exits, mode, against[0]))


def deep_exit_claims(deep_exits: pd.DataFrame, deep_backbone: str, mode: str = "acl_cl",
                     baseline: str = "joint") -> pd.DataFrame:
    """:func:`multi_exit_claims` on the deep backbone's runs (``mode`` against ``baseline`` only: the deep model is
    not trained with every mode), each claim named with ``deep_backbone``, e.g. ``all-mpnet-base-v2: acl_cl >
    joint``, and the backbone in a ``model`` column. Empty unless both modes were run on it."""
    if not len(deep_exits) or not {mode, baseline} <= set(deep_exits["mode"]):
        return pd.DataFrame()
    claims = multi_exit_claims(exit_table(deep_exits), deep_exits, mode, (baseline,))
    return claims.assign(claim=f"{deep_backbone}: " + claims["claim"], model=deep_backbone)


def joined_exit_claims(per_exit_claims: pd.DataFrame, shallow_claims: pd.DataFrame) -> pd.DataFrame:
    """:func:`multi_exit_claims` from claims already computed (the page shows both parts before writing them)."""
    table = pd.concat([per_exit_claims, shallow_claims], ignore_index=True)
    if "exit" in table:
        table["exit"] = table["exit"].astype("Int64")
    return table


# --- words built from the numbers ------------------------------------------------------------------------------

def missing_tasks_sentence(tasks) -> str:
    """Which of the paper's seven GLUE tasks this build has, and which it cannot have."""
    return (f"The paper reports seven GLUE tasks (CoLA, MNLI, MRPC, QNLI, QQP, RTE, SST-2). This build fine-tunes "
            f"{', '.join(tasks)}; {', '.join(MISSING_TASKS)} are missing: they have no training data in this "
            f"repository's data manifest (MNLI and QQP are absent altogether; QNLI has a dev set only).")


def angle_sentence(table: pd.DataFrame, threshold: float = 90.0) -> str:
    """One line per task and pair: the share of steps above the threshold and the angles' range."""
    lines = []
    for _, row in table.iterrows():
        if pd.isna(row.get("mean")):
            lines.append(f"- {row['task']}, {row['pair']}: no measured angle.")
            continue
        lines.append(f"- {row['task']}, {row['pair']}: {row['share_above']:.0%} of {row['steps']} steps above "
                     f"{threshold:g} degrees (median {row['median']:.1f}, 10th-90th percentile {row['p10']:.1f}-"
                     f"{row['p90']:.1f}, min {row['min']:.1f}, max {row['max']:.1f}).")
    return "\n".join(lines)


PROBE_MARGIN = 10.0  # points above the majority class at which a frozen probe counts as reading the label


def probe_table(probe: pd.DataFrame, exits: dict | None = None, modes=("joint", "acl_cl", "kd"),
                fast_heads: dict | None = None) -> pd.DataFrame:
    """:func:`exit_probe`'s rows side by side, one row per backbone, task and layer: the [CLS] state's spread and
    the probes on it (raw and standardised), the standardised probe on the token mean, and exit l's fine-tuned
    score (``exit_score``, mean over seeds) where ``exits`` (backbone -> :func:`exit_table`'s rows) has it, under
    the first of ``modes`` that backbone was trained with (``exit_mode``). ``fast_heads`` (backbone ->
    :func:`exit_table`'s rows of joint-CE runs whose exit heads had their own learning rate,
    ``GlueConfig.head_learning_rate``) adds their mean as ``exit_score_fast_heads``."""
    wide = probe.pivot_table(index=["backbone", "task", "layer"], columns="readout",
                             values=["spread", "probe_raw", "probe_standardised"], sort=False)
    table = pd.DataFrame({"cls_spread": wide[("spread", "cls")], "cls_probe_raw": wide[("probe_raw", "cls")],
                          "cls_probe_standardised": wide[("probe_standardised", "cls")]})
    if ("probe_standardised", "mean") in wide:
        table["mean_probe_standardised"] = wide[("probe_standardised", "mean")]
    table = table.reset_index()
    table["majority_class"] = table["task"].map(probe.groupby("task")["majority_class"].first())
    chosen = [pd.DataFrame(columns=["backbone", "task", "exit", "mode", "mean"])]
    for backbone, rows in (exits or {}).items():
        trained = [m for m in modes if rows is not None and m in set(rows["mode"])]
        if trained:
            chosen.append(rows[rows["mode"] == trained[0]].assign(backbone=backbone))
    fine_tuned = pd.concat(chosen, ignore_index=True).rename(
        columns={"exit": "layer", "mode": "exit_mode", "mean": "exit_score"})
    fine_tuned = fine_tuned.astype({"layer": int, "exit_score": float})
    table = table.merge(fine_tuned[["backbone", "task", "layer", "exit_mode", "exit_score"]],
                        on=["backbone", "task", "layer"], how="left")
    checks = [rows[rows["mode"] == "joint"].assign(backbone=backbone) for backbone, rows in (fast_heads or {}).items()
              if rows is not None and len(rows)]
    if checks:
        fast = pd.concat(checks, ignore_index=True).rename(columns={"exit": "layer", "mean": "exit_score_fast_heads"})
        table = table.merge(fast.astype({"layer": int})[["backbone", "task", "layer", "exit_score_fast_heads"]],
                            on=["backbone", "task", "layer"], how="left")
    return table


def _span(word: str, numbers: list[int]) -> str:
    """``layer 3``, ``layers 1-4`` or ``layers 1, 3 and 4``: ascending ``numbers`` in words."""
    if len(numbers) == 1:
        return f"{word} {numbers[0]}"
    if numbers == list(range(numbers[0], numbers[-1] + 1)):
        return f"{word}s {numbers[0]}-{numbers[-1]}"
    return f"{word}s {_and([str(n) for n in numbers])}"


def floor_sentence(exits_by_backbone: dict) -> str:
    """Which exits score the majority class in every mode and on every seed, per backbone and task, in words.

    ``exits_by_backbone``: backbone -> :func:`exit_grid`'s ``exits`` (one row per mode, seed and exit, marked
    ``at_majority_class``); a backbone whose value is ``None`` or empty is left out."""
    lines = []
    for backbone, exits in exits_by_backbone.items():
        if exits is None or not len(exits):
            continue
        for task, rows in exits.groupby("task", sort=False):
            floor = sorted(int(e) for e, runs in rows.groupby("exit") if all_at_floor(runs))
            labels = [EXIT_LABELS.get(mode, mode) for mode in rows["mode"].unique()]
            modes = f"in the one mode run ({labels[0]})" if len(labels) == 1 else f"in every mode ({_and(labels)})"
            seeds = rows["seed"].nunique()
            runs = "on its one seed" if seeds == 1 else f"on each of its {seeds} seeds"
            lines.append(f"- {backbone}, {task}: " + (
                f"{_span('exit', floor)} of {rows['exit'].max()} {'scores' if len(floor) == 1 else 'score'} the "
                f"majority class {modes} {runs}." if floor else
                f"no exit scores the majority class {modes} {runs}."))
    return "\n".join(lines)


def deep_exit_sentence(claims: pd.DataFrame, deep_exit: int = 6) -> str:
    """What :func:`deep_exit_claims` says, in words, per task: the exits whose comparison is *at floor*, ACL-CL's
    effect over joint CE at ``deep_exit`` and at the last exit with their verdicts, and the shallow-half claim."""
    lines = []
    for task, rows in claims.groupby("task", sort=False):
        model = rows["model"].iloc[0]
        per_exit = rows[rows["exit"].notna()].astype({"exit": int}).set_index("exit")
        floor = sorted(int(e) for e in per_exit.index[per_exit["verdict"] == "at floor"])
        last = int(per_exit.index.max())
        said = [f"{_span('exit', floor)} {'sits' if len(floor) == 1 else 'sit'} at the majority class in both modes"
                if floor else "no exit sits at the majority class in both modes"]
        for exit_ in dict.fromkeys(e for e in (deep_exit, last) if e in per_exit.index):
            row = per_exit.loc[exit_]
            said.append(f"at exit {exit_} ACL-CL minus joint CE is {row['our_effect']:+.2f} "
                        f"(tolerance {row['tolerance']:.2f}: {row['verdict']})")
        shallow = rows[rows["exit"].isna()]
        if len(shallow):
            row = shallow.iloc[0]
            said.append(f"the shallow-half gain minus the deep-half gain is {row['our_effect']:+.2f} "
                        f"({row['verdict']})")
        lines.append(f"- {model}, {task}: " + "; ".join(said) + ".")
    return "\n".join(lines)


def probe_sentence(table: pd.DataFrame) -> str:
    """What :func:`probe_table` says about the exits at the majority class, in words, per backbone and task (where
    a backbone has no fine-tuned exits: the layers whose raw probe is within half a point of that class)."""
    lines = []
    for (backbone, task), rows in table.groupby(["backbone", "task"], sort=False):
        floor = rows["majority_class"].iloc[0]
        trained = rows["exit_score"].notna().any()
        if trained:
            at_floor = rows[np.isclose(rows["exit_score"], floor, rtol=0, atol=1e-3)]  # CSVs: 4 decimals
        else:
            at_floor = rows[np.isclose(rows["cls_probe_raw"], floor, rtol=0, atol=0.5)]
        if not len(at_floor):
            lines.append(f"- {backbone}, {task}: no exit sits at the majority class ({floor:.2f}).")
            continue
        span = _span("layer", [int(layer) for layer in at_floor["layer"]])
        mode = EXIT_LABELS.get(rows["exit_mode"].dropna().iloc[0], "") if trained else ""
        lines.append(
            f"- {backbone}, {task}: at {span}, where "
            + (f"the fine-tuned {mode} exits score the majority class ({floor:.2f}), " if trained
               else f"the raw probe is within half a point of the majority class ({floor:.2f}), ")
            + f"the frozen [CLS] state differs between sentences by {at_floor['cls_spread'].min():.2%}-"
              f"{at_floor['cls_spread'].max():.2%} of its size; a logistic regression on it reads "
              f"{at_floor['cls_probe_raw'].min():.2f}-{at_floor['cls_probe_raw'].max():.2f} raw and "
              f"{at_floor['cls_probe_standardised'].min():.2f}-{at_floor['cls_probe_standardised'].max():.2f} "
              f"standardised"
            + (": the label is in these states before any fine-tuning, and the exits do not read it."
               if at_floor["cls_probe_standardised"].min() >= floor + PROBE_MARGIN else
               f": at some of these layers even the standardised probe is within {PROBE_MARGIN:g} points of the "
               f"majority class, so the states themselves hold little of the label.")
            + _fast_heads_clause(at_floor, floor))
    return "\n".join(lines)


def _fast_heads_clause(at_floor: pd.DataFrame, floor: float) -> str:
    if "exit_score_fast_heads" not in at_floor or at_floor["exit_score_fast_heads"].isna().all():
        return ""
    scores = at_floor["exit_score_fast_heads"].dropna()
    still = np.isclose(scores, floor, rtol=0, atol=1e-3)
    if still.all():
        return (" With the exit heads at their own, larger learning rate, joint CE leaves these exits at the majority "
                "class all the same: the heads' learning rate is not what holds them there.")
    return (f" With the exit heads at their own, larger learning rate, joint CE lifts {int((~still).sum())} of these "
            f"{len(scores)} exits off the majority class ({scores.min():.2f}-{scores.max():.2f}).")


def with_reference(scores: pd.DataFrame, method: str = "acl") -> Spread | None:
    """A seed spread to lend to one-seed sides: the mean sd over tasks of ``method`` in ``scores`` (None when no
    task has two seeds)."""
    part = scores[(scores["method"] == method) & scores["sd"].notna()]
    if not len(part):
        return None
    return Spread(float(part["sd"].mean()), int(part["seeds"].min()),
                  f"{method}'s mean sd over {len(part)} task metrics of the main table")


__all__ = ["METHODS", "EXIT_MODES", "MISSING_TASKS", "acl_config", "per_task", "glue_config", "recipe_sentence",
           "run_grid", "lambda_grid", "all_at_floor", "score_table", "baseline_check", "left_out_tasks",
           "recipe_grid", "chosen_recipes", "with_chosen_recipes", "TUNED_AS", "contrastive_grid", "chosen_terms",
           "term_of", "check_tunable", "TunedRecipe", "tuned_recipe", "trained_on", "tasks_kept",
           "main_table", "cost_table", "angle_table", "lambda_table", "lambda_spread", "main_claims",
           "majority_count", "lambda_claim", "TimedMultiExitObjective", "exit_grid", "exit_table",
           "exit_curve_table", "shallow_gain_claim", "exit_claims", "multi_exit_claims", "joined_exit_claims",
           "component_claims", "depth_table", "depth_claims", "deep_exit_claims", "deep_exit_sentence",
           "exit_probe", "probe_table", "probe_sentence",
           "missing_tasks_sentence", "angle_sentence", "with_reference", "tolerance_phrase"]


def tolerance_phrase(claims: pd.DataFrame) -> str:
    """The tolerances of a claims table in words: "2.1-5.3 points", or that none could be measured (one seed)."""
    measured = claims["tolerance"].dropna() if "tolerance" in claims else pd.Series(dtype=float)
    if not len(measured):
        return "an unmeasured amount (one seed: no seed noise could be measured, so no verdict beyond the sign)"
    low, high = measured.min(), measured.max()
    return f"{low:.1f} points" if np.isclose(low, high) else f"{low:.1f}-{high:.1f} points"
