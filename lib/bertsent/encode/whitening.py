"""Whitening of sentence embeddings (Su et al. 2021, "Whitening sentence representations for better
semantics and faster retrieval"): a standard post-processing peer of SG-OPT.

Fit on a set of embeddings X (n, d): mu = mean(X), Sigma = cov(X) = U diag(s) U^T, W = U diag(1 / sqrt(s)).
Transform: (x - mu) W, optionally keeping the first k columns (dimension reduction).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

METHOD_VERSION = 1  # bump when the maths changes


@dataclass
class Whitening:
    mean: np.ndarray
    matrix: np.ndarray

    @classmethod
    def fit(cls, embeddings: np.ndarray, n_components: int | None = None, eps: float = 1e-9) -> "Whitening":
        x = np.asarray(embeddings, dtype=np.float64)
        mean = x.mean(axis=0, keepdims=True)
        u, s, _ = np.linalg.svd(np.cov((x - mean).T))
        matrix = u / np.sqrt(s + eps)
        return cls(mean, matrix[:, :n_components] if n_components else matrix)

    def transform(self, embeddings: np.ndarray) -> np.ndarray:
        return (np.asarray(embeddings, dtype=np.float64) - self.mean) @ self.matrix
