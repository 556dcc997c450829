"""GLUE dev scores beside the trivial classifier: a fine-tuned model that predicts one class everywhere scores the
majority-class accuracy (MRPC 68.38, RTE 52.71 here) and an MCC of 0 on CoLA; such a cell is not a result.
:func:`decision_diagnosis` tells apart the two ways a model lands there: it has lost the classes (its scores no
longer rank them), or it ranks them and only its decision threshold is misplaced.
"""
from __future__ import annotations

import numpy as np
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


def _best_threshold_score(metric: str, labels: np.ndarray, margin: np.ndarray) -> float:
    """The best ``metric`` (x 100) over every threshold on ``margin`` (predict class 1 above it): the counts for
    "the k highest margins are class 1", at each k where the margin changes (tied margins fall on one side)."""
    order = np.argsort(-margin, kind="stable")
    ranked, sorted_margin = labels[order], margin[order]
    cuts = np.concatenate([[0], np.flatnonzero(sorted_margin[1:] < sorted_margin[:-1]) + 1, [len(labels)]])
    tp = np.concatenate([[0], np.cumsum(ranked)])[cuts].astype(float)
    fp = cuts - tp
    positives = float(labels.sum())
    fn, tn = positives - tp, (len(labels) - positives) - fp
    if metric == "accuracy":
        return float(100 * ((tp + tn) / len(labels)).max())
    if metric == "mcc":  # 0 where a factor of the denominator is 0 (one class predicted or present), as scikit-learn
        denominator = np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
        mcc = np.divide(tp * tn - fp * fn, denominator, out=np.zeros_like(tp), where=denominator > 0)
        return float(100 * mcc.max())
    raise ValueError(f"No best-threshold score for metric {metric!r}; known: accuracy, mcc.")


def decision_diagnosis(task: str, labels, logits) -> dict:
    """How a two-class model's predictions on ``labels`` (N,) come from its ``logits`` (N, 2).

    - ``score``: the task's metric at the argmax, as the dev score is taken (x 100);
    - ``predicted_share``: the share of the examples predicted as each class;
    - ``auc``: the ROC AUC of the margin z_1 - z_0 against the labels (0.5: the margin does not rank the classes);
    - ``best_threshold_score``: the metric at the best threshold on the margin, chosen on these same examples (an
      upper bound: what a re-placed threshold could reach, not a held-out score);
    - ``probability_of_class_1``, ``cross_entropy``: their means over the examples of each true class ("0", "1").

    A model at the majority class with ``auc`` near 0.5 has lost the classes; one with a high ``auc`` ranks them and
    puts its threshold in the wrong place (one class's examples sit on the wrong side of it)."""
    from scipy.special import log_softmax
    from sklearn.metrics import roc_auc_score

    labels, logits = np.asarray(labels, dtype=np.int64), np.asarray(logits, dtype=np.float64)
    if logits.ndim != 2 or logits.shape != (len(labels), 2):
        raise ValueError(f"decision_diagnosis needs (N, 2) logits for N = {len(labels)} labels, got {logits.shape}: "
                         f"it reads two-class tasks only.")
    metric = TASK_METRICS[task][1]
    margin = logits[:, 1] - logits[:, 0]
    log_probability = log_softmax(logits, axis=1)
    cross_entropy = -log_probability[np.arange(len(labels)), labels]
    by_label = {str(label): labels == label for label in (0, 1)}  # string keys: the same after a JSON round trip
    predictions = logits.argmax(1)
    return {"examples": int(len(labels)), "metric": metric,
            "score": glue_metrics(task, labels, predictions)[metric],
            "predicted_share": [float((predictions == label).mean()) for label in (0, 1)],
            "auc": float(roc_auc_score(labels, margin)) if len(set(labels.tolist())) == 2 else None,
            "best_threshold_score": _best_threshold_score(metric, labels, margin),
            "probability_of_class_1": {label: float(np.exp(log_probability[mask, 1]).mean())
                                       for label, mask in by_label.items() if mask.any()},
            "cross_entropy": {label: float(cross_entropy[mask].mean()) for label, mask in by_label.items()
                              if mask.any()}}
