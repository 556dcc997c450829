r"""Semantic search scored by rank: MRR@10 and recall@1/10 for query -> partner retrieval.

The layer-wise attention pooling paper scores semantic search on Quora duplicate questions, which are **not
available here**; this stands in for it with pairs the book has: each sentence that has a partner (an STS-B or
SICK pair with gold >= 4, a MRPC pair labelled paraphrase) is a query, its partners are the relevant items, and
the candidates are **every distinct sentence of the set** (every pair, whatever its score), the query itself
left out.

For query q with relevant set R_q and cosine scores s_c over the candidates C \ {q}, the rank of the first
relevant item is

.. math::

    r_q = 1 + \big|\{c \in C \setminus (R_q \cup \{q\}) : s_c \ge \max_{p \in R_q} s_p\}\big|

(ties count against the query, so a model that gives every sentence the same vector ranks last, not first);
MRR@k = mean_q 1/r_q over queries with r_q <= k (0 otherwise), recall@k = mean_q [r_q <= k].
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..data.sts import load_sickr, load_stsb
from ..data.transfer import load_transfer

METHOD_VERSION = 1  # bump when the maths changes

GOLD_THRESHOLD = 4.0
RETRIEVAL_SETS = ("stsb", "sickr", "mrpc")


@dataclass(frozen=True)
class RetrievalSet:
    """``sentences``: the candidates (every distinct sentence of the set); ``queries[i]``: a sentence index;
    ``relevant[i]``: the indices of its partners."""

    name: str
    sentences: list[str]
    queries: np.ndarray
    relevant: list[np.ndarray]

    def __len__(self) -> int:
        return len(self.queries)


def retrieval_set_from_pairs(name: str, sentences1, sentences2, positive) -> RetrievalSet:
    """A retrieval set from sentence pairs: ``positive[i]`` true makes ``(sentences1[i], sentences2[i])`` partners
    (both ways); every sentence of every pair is a candidate. Pairs of a sentence with itself are skipped."""
    if not len(sentences1) == len(sentences2) == len(positive):
        raise ValueError("sentences1, sentences2 and positive must have the same length.")
    index = {s: i for i, s in enumerate(dict.fromkeys([*sentences1, *sentences2]))}
    partners: dict[int, set[int]] = {}
    for a, b, keep in zip(sentences1, sentences2, positive):
        if keep and a != b:
            partners.setdefault(index[a], set()).add(index[b])
            partners.setdefault(index[b], set()).add(index[a])
    queries = np.array(sorted(partners), dtype=np.int64)
    return RetrievalSet(name, list(index), queries, [np.array(sorted(partners[q]), dtype=np.int64) for q in queries])


def load_retrieval_set(name: str, split: str = "test", threshold: float = GOLD_THRESHOLD, data_dir=None) -> RetrievalSet:
    """``stsb`` / ``sickr``: pairs with gold >= ``threshold``; ``mrpc``: pairs labelled paraphrase (1); of one
    split (MRPC has train and test)."""
    if name in ("stsb", "sickr"):
        dataset = (load_stsb if name == "stsb" else load_sickr)(split, data_dir)
        pairs = dataset.subsets[split]
        return retrieval_set_from_pairs(f"{name}-{split}", pairs.sentences1, pairs.sentences2,
                                        pairs.scores >= threshold)
    if name == "mrpc":
        task = load_transfer("mrpc", data_dir)
        if split not in task.splits:
            raise ValueError(f"MRPC has splits {', '.join(task.splits)}, not {split!r}.")
        examples = task.splits[split]
        first, second = zip(*examples.inputs)
        return retrieval_set_from_pairs(f"mrpc-{split}", list(first), list(second), examples.labels == 1)
    raise ValueError(f"Unknown retrieval set {name!r}. Known: {', '.join(RETRIEVAL_SETS)}.")


def _unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)


def first_relevant_ranks(embeddings: np.ndarray, queries: np.ndarray, relevant: list[np.ndarray],
                         chunk: int = 1024) -> np.ndarray:
    """r_q (see the module docstring) for each query, from one vector per candidate sentence."""
    embeddings = np.asarray(embeddings)
    if embeddings.ndim != 2:
        raise ValueError(f"embeddings must be (n_sentences, dim), got shape {embeddings.shape}.")
    if len(queries) != len(relevant):
        raise ValueError("queries and relevant must have the same length.")
    unit = _unit(embeddings)
    ranks = np.empty(len(queries), dtype=np.int64)
    for start in range(0, len(queries), chunk):
        block = queries[start:start + chunk]
        scores = unit[block] @ unit.T  # (chunk, n)
        for row, (q, rel) in enumerate(zip(block, relevant[start:start + chunk])):
            if len(rel) == 0:
                raise ValueError(f"query {q} has no relevant sentence.")
            s = scores[row]
            best = s[rel].max()
            others = s >= best
            others[rel] = False
            others[q] = False
            ranks[start + row] = 1 + int(others.sum())
    return ranks


def retrieval_metrics(ranks: np.ndarray, mrr_at: int = 10, recall_at=(1, 10)) -> dict[str, float]:
    """``{"mrr@10", "recall@1", "recall@10"}`` (x 100) from the first-relevant ranks."""
    ranks = np.asarray(ranks)
    if len(ranks) == 0:
        raise ValueError("No queries: the retrieval set has no positive pair.")
    out = {f"mrr@{mrr_at}": float(np.where(ranks <= mrr_at, 1.0 / ranks, 0.0).mean() * 100)}
    out.update({f"recall@{k}": float((ranks <= k).mean() * 100) for k in recall_at})
    return out


def evaluate_retrieval(retrieval_set: RetrievalSet, embed) -> dict[str, float]:
    """Score an encoder: ``embed(sentences) -> (n, dim) array``; metrics plus the set's sizes."""
    embeddings = np.asarray(embed(retrieval_set.sentences))
    if len(embeddings) != len(retrieval_set.sentences):
        raise ValueError(f"embed returned {len(embeddings)} vectors for {len(retrieval_set.sentences)} sentences.")
    ranks = first_relevant_ranks(embeddings, retrieval_set.queries, retrieval_set.relevant)
    return {**retrieval_metrics(ranks), "queries": len(retrieval_set), "candidates": len(retrieval_set.sentences)}
