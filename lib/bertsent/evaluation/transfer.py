"""SentEval-style transfer evaluation: logistic regression on frozen sentence embeddings (scikit-learn).

- Tasks without a given split (MR, CR, SUBJ, MPQA): 10-fold stratified cross-validation; the
  regularisation strength C is chosen inside each training fold by 5-fold cross-validation.
- Tasks with splits: C is chosen on the dev split when there is one (SST-2), otherwise by 5-fold
  cross-validation on train (TREC, MRPC); the chosen model is scored once on test.
- Sentence pairs (MRPC) are represented as SentEval does: [|u - v|, u * v].

C is searched over 2^-2 ... 2^3, SentEval's grid for its logistic-regression classifier.

:func:`fit_frozen_probe` is the same classifier as a probe of one layer's frozen states (the multi-exit page asks
what a shallow exit could read), optionally on standardised features.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from sklearn.linear_model import LogisticRegression, LogisticRegressionCV
from sklearn.model_selection import StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from ..data.transfer import ClassificationTask

METHOD_VERSION = 1  # bump when the maths changes

C_GRID = [2.0 ** t for t in range(-2, 4)]


def features(task: ClassificationTask, split: str, embed: Callable[[list[str]], np.ndarray]) -> np.ndarray:
    inputs = task.splits[split].inputs
    if inputs and isinstance(inputs[0], tuple):
        u = embed([a for a, _ in inputs])
        v = embed([b for _, b in inputs])
        return np.hstack([np.abs(u - v), u * v])
    return embed(inputs)


def _select_and_fit(x, y, seed, x_dev=None, y_dev=None):
    if x_dev is None:
        model = LogisticRegressionCV(Cs=C_GRID, cv=5, max_iter=2000, random_state=seed, scoring="accuracy",
                                     l1_ratios=(0,), use_legacy_attributes=False)
        return model.fit(x, y)
    best = max(C_GRID, key=lambda c: LogisticRegression(C=c, max_iter=2000, random_state=seed).fit(x, y).score(x_dev, y_dev))
    return LogisticRegression(C=best, max_iter=2000, random_state=seed).fit(x, y)


def evaluate_transfer(task: ClassificationTask, embed: Callable[[list[str]], np.ndarray], seed: int = 1111) -> float:
    """Test accuracy x 100 (mean over the 10 folds for cross-validated tasks)."""
    if task.cross_validated:
        x, y = features(task, "all", embed), task.splits["all"].labels
        folds = StratifiedKFold(n_splits=10, shuffle=True, random_state=seed)
        return float(np.mean([_select_and_fit(x[train], y[train], seed).score(x[test], y[test])
                              for train, test in folds.split(x, y)]) * 100)
    x, y = features(task, "train", embed), task.splits["train"].labels
    dev = (features(task, "dev", embed), task.splits["dev"].labels) if "dev" in task.splits else (None, None)
    model = _select_and_fit(x, y, seed, *dev)
    return float(model.score(features(task, "test", embed), task.splits["test"].labels) * 100)


def fit_frozen_probe(x: np.ndarray, y: np.ndarray, standardize: bool = False, seed: int = 1111):
    """A logistic regression on frozen features ``x`` (n, d) with labels ``y``, C chosen by 5-fold
    cross-validation on these rows (SentEval's grid); returns the fitted scikit-learn estimator.

    ``standardize``: first scale every feature to zero mean and unit variance over these rows
    (:class:`~sklearn.preprocessing.StandardScaler`, fitted on them alone). A feature whose value barely moves
    from one example to the next then weighs as much as one that moves a lot: the probe on raw features asks what
    a classifier reads at the features' own scale (a freshly initialised exit head's situation), the standardised
    one what the features hold at all.
    """
    x, y = np.asarray(x), np.asarray(y)
    if x.ndim != 2 or len(x) != len(y):
        raise ValueError(f"x must be (examples, features) with one label per row; got x {x.shape}, y {y.shape}. "
                         f"Fix: pass one layer's states, one row per labelled example.")
    if not standardize:
        return _select_and_fit(x, y, seed)
    scaler = StandardScaler().fit(x)
    return make_pipeline(scaler, _select_and_fit(scaler.transform(x), y, seed))
