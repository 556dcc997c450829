"""The long pre-training run's learning curve, stretches and floor claims, read from what each stretch committed.

:mod:`bertsent.training.long_run` trains the run in stretches and commits, after each, its weights, ``record.json``
(the recipe and every stretch: where it continued from, steps, tokens, wall time, tokens/s) and ``history.csv``
(held-out MLM loss and accuracy by position type, NSP accuracy, training loss and learning rate at every evaluation).
This module turns those into the page's tables; nothing here trains.
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ..paths import REPO_ROOT
from ..report.claims import accuracy_noise, claims_table, judge
from ..training.long_run import COMMITTED_ROOT

METHOD_VERSION = 1  # bump when the maths changes

TARGET_MASK_ACCURACY = 0.25  # what the run is for: a BERT that predicts a quarter of hidden words (held-out)


def load_run(name: str, committed_root: Path | None = None) -> tuple[dict, pd.DataFrame]:
    """The committed record and history of long run ``name`` (``committed_root``: default ``models/training/``; a
    relative path is read from the repository's root, so a profile names the same folder on every machine)."""
    root = Path(committed_root or COMMITTED_ROOT)
    directory = (root if root.is_absolute() else REPO_ROOT / root) / name
    if not (directory / "record.json").is_file():
        raise FileNotFoundError(f"No committed stretch of the long run {name!r} in {directory}. Fix: train one with "
                                f"`python -m bertsent.training.long_run {name} --minutes 60 --processes 2`, or check "
                                f"out the repository's models/training/ folder.")
    record = json.loads((directory / "record.json").read_text(encoding="utf-8"))
    return record, pd.read_csv(directory / "history.csv")


def stretch_table(record: dict) -> pd.DataFrame:
    """One row per stretch: where it continued from, its steps and tokens, wall time and tokens/s."""
    rows = [{"stretch": s["stretch"], "started": s["started"], "continued_from": s["continued_from"],
             "steps": f"{s['start_step']:,}-{s['end_step']:,}", "tokens_millions": (s["end_tokens"] - s["start_tokens"]) / 1e6,
             "wall_minutes": s["wall_seconds"] / 60, "tokens_per_second": s["tokens_per_second"],
             "processes": s["processes"], "cpu": s["cpu"]} for s in record["stretches"]]
    return pd.DataFrame(rows)


def curve_table(history: pd.DataFrame) -> pd.DataFrame:
    """The learning curve at every evaluation: tokens (millions), held-out MLM loss, accuracy at [MASK], random and
    unchanged positions, NSP accuracy, training loss and learning rate."""
    columns = ["step", "tokens", "learning_rate", "train_loss", "heldout_mlm_loss", "heldout_mlm_mask_accuracy",
               "heldout_mlm_random_accuracy", "heldout_mlm_unchanged_accuracy", "heldout_nsp_accuracy"]
    table = history[[c for c in columns if c in history]].copy()
    table.insert(1, "tokens_millions", table.pop("tokens") / 1e6)
    return table


def floor_claims(history: pd.DataFrame, floors: dict) -> pd.DataFrame:
    """At the last evaluation: has the run left the unigram floor at [MASK] positions (beaten every constant guess:
    the majority word piece and the best constant on those positions), reached the target, and is NSP above chance? Each judged against the binomial noise of an accuracy on that many held-out positions/pairs
    (no paper number: the direction is "above")."""
    last = history.iloc[-1]
    positions = int(floors["mask"]["count"])
    accuracy = round(100 * float(last["heldout_mlm_mask_accuracy"]), 2)
    # the harder of the two constant floors: the training text's most frequent word piece, or the one word piece
    # that is right most often on these very positions (an oracle's constant guess)
    constant = round(100 * max(float(floors["mask"]["majority"]), float(floors["mask"]["best_constant"])), 2)
    noise = accuracy_noise(positions, accuracy, "held-out [MASK] positions")
    rows = [judge("[MASK] accuracy > the best constant guess", accuracy - constant, None, noise,
                  tokens=int(last["tokens"]), score=accuracy, reference=constant),
            judge(f"[MASK] accuracy > the target {100 * TARGET_MASK_ACCURACY:.0f}%",
                  accuracy - 100 * TARGET_MASK_ACCURACY, None, noise, tokens=int(last["tokens"]), score=accuracy,
                  reference=100 * TARGET_MASK_ACCURACY)]
    if "heldout_nsp_accuracy" in history and pd.notna(last.get("heldout_nsp_accuracy")):
        nsp = round(100 * float(last["heldout_nsp_accuracy"]), 2)
        pairs = int(floors.get("eval_pairs", 0)) or None
        if pairs:
            rows.append(judge("NSP accuracy > chance (50%)", nsp - 50.0, None,
                              accuracy_noise(pairs, nsp, "held-out pairs"), tokens=int(last["tokens"]), score=nsp,
                              reference=50.0))
    return claims_table(rows)


def run_floors(record: dict, corpus_dir=None, cache_dir=None) -> dict:
    """The floors of the run's held-out evaluation (:func:`~bertsent.training.pretraining.heldout_floors`: per
    position type, the count and the accuracy of always predicting the training text's majority word piece), with
    the number of held-out pairs NSP is scored on. Reads the corpus (tokenised once into the cache); trains nothing."""
    from ..training.pretraining import PretrainingConfig, heldout_floors

    config = PretrainingConfig(**record["config"])
    return {**heldout_floors(config, corpus_dir, cache_dir), "eval_pairs": config.eval_instances}


def floors_table(floors: dict) -> pd.DataFrame:
    """:func:`run_floors` as a table: one row per position type."""
    return pd.DataFrame([{"positions": kind, "count": floors[kind]["count"], "majority_token": floors["majority_token"],
                          "majority_floor": floors[kind]["majority"], "best_constant_floor": floors[kind]["best_constant"],
                          "copy_floor": floors[kind]["copy"]} for kind in ("mask", "random", "unchanged", "all")])
