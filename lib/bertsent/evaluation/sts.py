"""STS evaluation: Spearman x 100 between cosine similarity and the gold score, no regressor.

Two aggregations of a multi-subset dataset (STS12-16), both reported because papers mix them:

- ``all``: one Spearman over the concatenation of every subset (SimCSE's and SBERT's protocol);
- ``wmean``: the subsets' Spearman scores averaged with weights equal to their sizes
  (SentEval's "all" weighted mean, used by BERT-flow and LayerAttPooler).

For a single-subset dataset (STS-B, SICK-R) the two are equal.

A similarity that is constant over a dataset (for example layer-0 [CLS]: token, position and segment
embeddings only, the same vector for every sentence) has no ranking, so its Spearman correlation is
undefined: it is returned as NaN, never as 0. Only an exactly constant similarity counts: some readouts
(MiniLM's [CLS] at layers 1-3) vary by as little as 1e-6 in cosine, yet do vary, and are scored.

Two deterministic readouts (no training seed) compared on the same test pairs still differ by chance: the pairs are a
sample. :func:`paired_bootstrap_se` measures that noise by resampling the pairs (the same resample for both readouts),
and :func:`average_difference_se` combines the seven sets' into the noise of a difference of averages.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.stats import rankdata, spearmanr

from ..data.sts import STSDataset

METHOD_VERSION = 1  # bump when the maths changes

AGGREGATIONS = ("all", "wmean")
BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_CHUNK = 100  # resamples ranked at once: bounds the memory to a few hundred rows of one set's pairs
# Identical vectors give cosines equal to the last bit; this only absorbs float64 summation order.
CONSTANT_TOLERANCE = 1e-12


def cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine similarity of ``a[i]`` and ``b[i]`` for every row i; a zero vector gives similarity 0."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    dots = np.einsum("ij,ij->i", a, b)
    return np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)


def spearman_x100(predicted: np.ndarray, gold: np.ndarray) -> float:
    """Spearman's rho x 100; NaN when the prediction is constant (the correlation is undefined)."""
    predicted = np.asarray(predicted, dtype=np.float64)
    if len(predicted) < 2 or np.ptp(predicted) <= CONSTANT_TOLERANCE:
        return float("nan")
    return float(spearmanr(predicted, gold).statistic * 100)


def aggregate(subset_scores: dict[str, float], subset_sizes: dict[str, int], all_score: float) -> dict[str, float]:
    """Both aggregations from per-subset scores and the concatenated score (NaN if any subset is NaN)."""
    sizes = np.array([subset_sizes[k] for k in subset_scores], dtype=np.float64)
    scores = np.array(list(subset_scores.values()), dtype=np.float64)
    return {"all": all_score, "wmean": float((scores * sizes).sum() / sizes.sum())}


@dataclass
class StsScores:
    dataset: str
    subsets: dict[str, float]
    sizes: dict[str, int]
    aggregations: dict[str, float] = field(default_factory=dict)

    def __getitem__(self, aggregation: str) -> float:
        return self.aggregations[aggregation]


def evaluate_sts(dataset: STSDataset, similarity) -> StsScores:
    """Score a similarity function on a dataset.

    ``similarity(sentences1, sentences2) -> np.ndarray`` returns one score per pair.
    """
    predicted, gold, subset_scores, sizes = [], [], {}, {}
    for name, pairs in dataset.subsets.items():
        scores = np.asarray(similarity(pairs.sentences1, pairs.sentences2))
        subset_scores[name] = spearman_x100(scores, pairs.scores)
        sizes[name] = len(pairs)
        predicted.append(scores)
        gold.append(pairs.scores)
    all_score = spearman_x100(np.concatenate(predicted), np.concatenate(gold))
    return StsScores(dataset.name, subset_scores, sizes, aggregate(subset_scores, sizes, all_score))


def _spearman_per_row(predicted: np.ndarray, gold: np.ndarray) -> np.ndarray:
    """Spearman's rho of every row of ``predicted`` with the same row of ``gold`` (ties get average ranks)."""
    a, b = rankdata(predicted, axis=1), rankdata(gold, axis=1)
    a -= a.mean(axis=1, keepdims=True)
    b -= b.mean(axis=1, keepdims=True)
    return (a * b).sum(axis=1) / np.sqrt((a * a).sum(axis=1) * (b * b).sum(axis=1))


def paired_bootstrap_se(gold: np.ndarray, predicted_a: np.ndarray, predicted_b: np.ndarray,
                        resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0) -> float:
    """Standard error (Spearman x 100 points) of ``spearman(a, gold) - spearman(b, gold)`` due to the sample of pairs.

    A paired bootstrap: draw ``n`` of the ``n`` pairs with replacement, score both readouts on that same draw, take the
    difference; the standard error is the standard deviation of the difference over ``resamples`` draws::

        SE = sd_r [ rho(a[I_r], gold[I_r]) - rho(b[I_r], gold[I_r]) ],   I_r ~ Uniform{1..n}^n

    Pairing matters: both readouts are scored on the same pairs, so what makes a pair easy for both cancels, and the
    SE of the difference is far below what two independent SEs would add to.

    >>> rng = np.random.default_rng(0); gold = rng.normal(size=500)
    >>> good, bad = gold + rng.normal(size=500), gold + 3 * rng.normal(size=500)
    >>> 0 < paired_bootstrap_se(gold, good, bad) < 10
    True
    """
    gold, predicted_a, predicted_b = (np.asarray(x, dtype=np.float64) for x in (gold, predicted_a, predicted_b))
    if not len(gold) == len(predicted_a) == len(predicted_b):
        raise ValueError(f"paired_bootstrap_se: {len(gold)} gold scores, {len(predicted_a)} and {len(predicted_b)} "
                         "predictions; the two readouts must be scored on the same pairs.")
    rng = np.random.default_rng(seed)
    differences = []
    for start in range(0, resamples, BOOTSTRAP_CHUNK):
        draws = rng.integers(0, len(gold), size=(min(BOOTSTRAP_CHUNK, resamples - start), len(gold)))
        differences.append(_spearman_per_row(predicted_a[draws], gold[draws])
                           - _spearman_per_row(predicted_b[draws], gold[draws]))
    return float(np.nanstd(np.concatenate(differences), ddof=1) * 100)


def average_difference_se(standard_errors: list[float]) -> float:
    """Standard error of a difference of averages over independent test sets (the papers' seven-set "avg"):
    ``sqrt(sum SE_i^2) / k`` for the ``k`` sets' paired-bootstrap SEs."""
    return float(np.sqrt(np.sum(np.square(standard_errors))) / len(standard_errors))
