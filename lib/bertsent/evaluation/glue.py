"""GLUE dev scores beside the trivial classifier: a fine-tuned model that predicts one class everywhere scores the
majority-class accuracy (MRPC 68.38, RTE 52.71 here) and an MCC of 0 on CoLA; such a cell is not a result.
"""
from __future__ import annotations

import pandas as pd

from ..data.glue import load_glue
from ..training.glue import TASK_METRICS, dev_subset, glue_metrics

METHOD_VERSION = 1  # bump when the maths changes
MAJORITY_LABEL = "majority class"


def majority_class_scores(task: str, data_dir=None, dev_examples: int | None = None) -> dict[str, float]:
    """Every metric of ``task`` on its dev set for the classifier that always predicts the training set's most
    frequent label (x 100, as :func:`~bertsent.training.glue.glue_metrics`). ``dev_examples``: score the seeded
    dev subsample of that size that a run with ``max_dev_examples`` scored (smoke runs), not the whole dev set."""
    majority = load_glue(task, "train", data_dir)["label"].value_counts().idxmax()
    labels = dev_subset(load_glue(task, "dev", data_dir), dev_examples)["label"]
    return glue_metrics(task, labels, [majority] * len(labels))


def mark_majority_class(table: pd.DataFrame, data_dir=None, tolerance: float = 1e-6) -> pd.DataFrame:
    """``table`` (one row per fine-tuning: a ``task`` column and metric columns) with a boolean
    ``at_majority_class``: True where the task's main metric equals the majority-class score (within
    ``tolerance``), i.e. the model learned to predict one class. A ``dev_examples`` column, where present, names
    the dev subsample each row was scored on (see :func:`majority_class_scores`)."""
    def dev_size(row) -> int | None:
        value = row.get("dev_examples")
        return None if value is None or pd.isna(value) else int(value)

    floors: dict = {}
    at_floor = []
    for _, row in table.iterrows():
        key = (row["task"], dev_size(row))
        if key not in floors:
            floors[key] = majority_class_scores(key[0], data_dir, key[1])
        metric = TASK_METRICS[row["task"]][1]
        at_floor.append(bool(abs(float(row[metric]) - floors[key][metric]) <= tolerance))
    return table.assign(at_majority_class=at_floor)


def format_glue_cell(value: float, at_majority_class: bool) -> str:
    """A score as the page shows it: ``68.4 (majority class)`` where the model predicts one class."""
    return f"{value:.1f} ({MAJORITY_LABEL})" if at_majority_class else f"{value:.1f}"
