"""Poolings: turn one layer's token vectors into one sentence vector.

Every pooling takes hidden states ``h`` of shape ``(batch, tokens, dim)`` and the attention mask
``mask`` of shape ``(batch, tokens)`` (1 for real tokens, 0 for padding) and never lets a padding
position influence the result. Special tokens ([CLS], [SEP]) count as tokens, as in
sentence-transformers' and SimCSE's mean pooling.

``first_last_avg`` follows BERT-flow: the token-wise average of the *first transformer layer*
(hidden state 1; hidden state 0 is the embedding output) and the layer being read, then mean
pooling. Because mean pooling is linear, it equals ``(mean(h_1) + mean(h_k)) / 2``, which is how
:func:`first_last_avg_from_means` computes it for every layer at once.
"""
from __future__ import annotations

import torch

METHOD_VERSION = 1  # bump when the maths changes

POOLINGS = ("cls", "mean", "max", "first_last_avg")
FIRST_LAYER = 1  # the "first" of first-last average: the first transformer layer, not the embeddings


def cls_pooling(h: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The first token's vector ([CLS] for BERT, <s> for MPNet)."""
    return h[:, 0]


def mean_pooling(h: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Average of the real tokens' vectors: sum_t m_t h_t / sum_t m_t."""
    weights = mask.to(h.dtype).unsqueeze(-1)
    return (h * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1.0)


def max_pooling(h: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Element-wise maximum over the real tokens (padding set to -inf first)."""
    return h.masked_fill(~mask.bool().unsqueeze(-1), float("-inf")).max(dim=1).values


def first_last_avg_from_means(layer_means: torch.Tensor) -> torch.Tensor:
    """First-last average for every layer k, from mean-pooled layers of shape ``(layers, batch, dim)``."""
    return (layer_means[FIRST_LAYER].unsqueeze(0) + layer_means) / 2


def first_last_avg_pooling(h_first: torch.Tensor, h_last: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean pooling of the token-wise average of two layers (BERT-flow's "first-last avg")."""
    return mean_pooling((h_first + h_last) / 2, mask)


def pool_all_layers(hidden_states: tuple[torch.Tensor, ...], mask: torch.Tensor, poolings=POOLINGS) -> dict[str, torch.Tensor]:
    """Pool every hidden state: returns ``{pooling: tensor (layers, batch, dim)}``."""
    unknown = set(poolings) - set(POOLINGS)
    if unknown:
        raise ValueError(f"Unknown pooling(s) {sorted(unknown)}. Known: {', '.join(POOLINGS)}.")
    out = {}
    if "cls" in poolings:
        out["cls"] = torch.stack([cls_pooling(h, mask) for h in hidden_states])
    if "mean" in poolings or "first_last_avg" in poolings:
        means = torch.stack([mean_pooling(h, mask) for h in hidden_states])
        if "mean" in poolings:
            out["mean"] = means
        if "first_last_avg" in poolings:
            out["first_last_avg"] = first_last_avg_from_means(means)
    if "max" in poolings:
        out["max"] = torch.stack([max_pooling(h, mask) for h in hidden_states])
    return {name: out[name] for name in poolings}
