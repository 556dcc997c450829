"""Why pre-training stalls at the unigram stage: short, controlled pre-training runs at one token budget.

Each recipe changes one or two settings of the published model's recipe (learning rate, batch size, dropout,
next-sentence prediction, sequence length) and trains a ``mini`` BERT from the same initialisation on the same
text for the same number of tokens; the study compares held-out masked-LM loss and accuracy at [MASK]
positions against tokens seen. The runs go through the committed run store
(:func:`bertsent.experiments.runs.pretraining_run`), so the page re-renders without training them again.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from ..report.claims import accuracy_noise, claims_table, judge
from ..training.pretraining import PretrainingConfig, heldout_floors
from .runs import pretraining_run, pretraining_run_dir

METHOD_VERSION = 2  # bump when the maths changes (2: floor claims on the CSVs' 0.01-point rates)

STUDY_TOKENS = 1_600_000  # nominal budget per run; the steps assume 118 tokens a pair (60 at length 64)
STUDY_BASE = dict(size="mini", objective="mlm_nsp", max_length=128, corpus_files=("enwiki-2018.txt.xz",),
                  eval_instances=1024)
# recipe -> (what it changes, the PretrainingConfig fields it sets); "baseline" is the published model's recipe
RECIPES = {
    "baseline": ("published recipe: lr 5e-4, batch 64, dropout 0.1",
                 dict(batch_size=64, learning_rate=5e-4, warmup_ratio=0.06, dropout=0.1)),
    "lr5e-4_b32_nodrop": ("batch 32, dropout off",
                          dict(batch_size=32, learning_rate=5e-4, warmup_ratio=0.06, dropout=0.0)),
    "lr1e-3_b32_drop": ("lr 1e-3, batch 32",
                        dict(batch_size=32, learning_rate=1e-3, warmup_ratio=0.06, dropout=0.1)),
    "lr1e-3_b32_nodrop": ("lr 1e-3, batch 32, dropout off",
                          dict(batch_size=32, learning_rate=1e-3, warmup_ratio=0.06, dropout=0.0)),
    "lr2e-3_b32_nodrop": ("lr 2e-3, batch 32, dropout off",
                          dict(batch_size=32, learning_rate=2e-3, warmup_ratio=0.06, dropout=0.0)),
    "lr1e-3_b16_nodrop": ("lr 1e-3, batch 16, dropout off",
                          dict(batch_size=16, learning_rate=1e-3, warmup_ratio=0.06, dropout=0.0)),
    "lr1e-3_b32_nodrop_mlm": ("lr 1e-3, batch 32, dropout off, no NSP",
                              dict(batch_size=32, learning_rate=1e-3, warmup_ratio=0.06, dropout=0.0, objective="mlm")),
    "lr1e-3_b32_nodrop_L64": ("lr 1e-3, dropout off, length 64 (batch 64: same tokens a step)",
                              dict(batch_size=64, learning_rate=1e-3, warmup_ratio=0.06, dropout=0.0, max_length=64)),
    "continued_lr1e-3_b32_nodrop": ("the published model continued: lr 1e-3, batch 32, dropout off",
                                    dict(batch_size=32, learning_rate=1e-3, warmup_ratio=0.06, dropout=0.0,
                                         init_from="models/bert-mini-wiki")),
}


def recipe_config(name: str, tokens: int = STUDY_TOKENS, base_overrides: dict | None = None) -> PretrainingConfig:
    """The configuration of one recipe at a token budget: ``ceil(tokens / tokens a step)`` steps, 8 evaluations."""
    if name not in RECIPES:
        raise ValueError(f"Unknown recipe {name!r}; choose from {', '.join(RECIPES)}")
    values = {**STUDY_BASE, **RECIPES[name][1], **(base_overrides or {})}
    per_step = values["batch_size"] * (118 if values["max_length"] >= 128 else values["max_length"] - 4)
    steps = math.ceil(tokens / per_step)
    return PretrainingConfig(**{**values, "max_steps": steps, "eval_every": max(1, steps // 8)})


def study_runs(recipes, runs_dir, tokens: int = STUDY_TOKENS, base_overrides: dict | None = None,
               corpus_dir=None, results_dir=None, cache_dir=None) -> pd.DataFrame:
    """Every recipe's held-out history (committed, or trained now in ``runs_dir/<run key>``), one ``run`` column."""
    histories = []
    for name in recipes:
        config = recipe_config(name, tokens, base_overrides)
        run = pretraining_run(pretraining_run_dir(runs_dir, config), config, corpus_dir, results_dir, cache_dir)
        histories.append(run.history.assign(run=name, change=RECIPES[name][0], run_seconds=run.seconds))
    return pd.concat(histories, ignore_index=True)


def study_table(history: pd.DataFrame, reference: str = "baseline") -> pd.DataFrame:
    """Each recipe's last evaluation, its held-out MLM loss against the reference recipe's, and for a recipe that
    continues a trained model (``from_scratch`` False) its change from its own first evaluation. Rows from
    random initialisation come first, ordered by loss; the continued ones after them."""
    ordered = history.sort_values("step")
    last = ordered.groupby("run", sort=False).tail(1).set_index("run")
    first = ordered.groupby("run", sort=False).head(1).set_index("run")
    columns = ["change", "tokens", "heldout_mlm_loss", "heldout_mlm_mask_accuracy", "heldout_mlm_unchanged_accuracy",
               "heldout_mlm_accuracy", "heldout_nsp_accuracy", "run_seconds"]
    table = last.reindex(columns=columns)
    table["from_scratch"] = [not RECIPES.get(run, ("", {}))[1].get("init_from") for run in table.index]
    if reference in table.index:
        table["loss_vs_reference"] = table["heldout_mlm_loss"] - table.loc[reference, "heldout_mlm_loss"]
    change = table["heldout_mlm_loss"] - first["heldout_mlm_loss"].reindex(table.index)
    table["loss_change_from_start"] = change.where(~table["from_scratch"])
    return (table.sort_values(["from_scratch", "heldout_mlm_loss"], ascending=[False, True]).reset_index())


def recipe_floors(recipes, tokens: int = STUDY_TOKENS, base_overrides: dict | None = None, corpus_dir=None,
                  cache_dir=None) -> pd.DataFrame:
    """Each recipe's [MASK]-position floor on its own held-out evaluation batches (the sequence length and the
    objective change them): the number of [MASK] positions, the majority word piece and the accuracy of always
    predicting it there (:func:`~bertsent.training.pretraining.heldout_floors`; nothing is trained)."""
    rows = []
    for name in recipes:
        floors = heldout_floors(recipe_config(name, tokens, base_overrides), corpus_dir, cache_dir)
        rows.append({"run": name, "mask_positions": floors["mask"]["count"],
                     "majority_token": floors["majority_token"], "majority_floor": floors["mask"]["majority"]})
    return pd.DataFrame(rows)


def floor_claims(table: pd.DataFrame, floors: pd.DataFrame) -> pd.DataFrame:
    """Has a recipe left the unigram stage? Per run of :func:`study_table`: its held-out accuracy at [MASK]
    positions minus the accuracy of always predicting the majority word piece there (points; :func:`recipe_floors`),
    judged against the binomial noise of the run's accuracy on that many positions
    (:func:`~bertsent.report.claims.accuracy_noise`). No paper number: a trained BERT is far above this floor, so
    the direction is "above"; *within noise* means the run has not measurably left the floor.

    Both rates are judged in points rounded to 0.01, the precision the page's CSVs keep (four decimals of a
    fraction), so that the page and the chapter's claims overview, which reads those CSVs, judge the same numbers."""
    by_run = floors.set_index("run")
    rows = []
    for row in table.itertuples():
        floor = by_run.loc[row.run]
        accuracy = round(100 * float(row.heldout_mlm_mask_accuracy), 2)
        majority = round(100 * float(floor["majority_floor"]), 2)
        rows.append(judge("[MASK] accuracy > always the majority word piece", accuracy - majority, None,
                          accuracy_noise(int(floor["mask_positions"]), accuracy, "held-out [MASK] positions"),
                          run=row.run, tokens=int(row.tokens), mask_accuracy=accuracy, majority_floor=majority))
    return claims_table(rows)


def unigram_entropy(token_ids: np.ndarray, first_word_piece: int = 0) -> float:
    """Entropy (nats) of the word-piece distribution: the masked-LM loss of a model that ignores context."""
    counts = np.bincount(np.asarray(token_ids, dtype=np.int64))[first_word_piece:]
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log(p)).sum())
