import torch
import torch.nn.functional as F

from ..self_guided.similarity import cosine_logits

METHOD_VERSION = 1  # bump when the maths changes


def supervised_infonce_loss(anchor: torch.Tensor, positive: torch.Tensor, negative: torch.Tensor | None = None,
                            temperature: float = 0.05, hard_negative_weight: float = 0.0) -> torch.Tensor:
    r"""Supervised SimCSE's InfoNCE: in-batch negatives plus each anchor's contradiction hypothesis.

    .. math::

        \ell_i = -\log \frac{e^{\cos(z_i, z_i^+)/\tau}}
            {\sum_{j=1}^{b} \big( e^{\cos(z_i, z_j^+)/\tau} + e^{\cos(z_i, z_j^-)/\tau + w\,[j = i]} \big)},
        \qquad L = \frac{1}{b} \sum_i \ell_i

    z_i: premise (anchor), z_i^+: its entailment hypothesis, z_i^-: its contradiction hypothesis; every other
    row's positive and hard negative is a negative too. w (``hard_negative_weight``) is added to the anchor's own
    hard-negative logit: 0 in SimCSE, 1.0 in the LayerAttPooler release. ``negative=None``: no hard negatives
    (the in-batch InfoNCE over positives only).

    Args:
        anchor, positive, negative: (b, d) sentence vectors (any norm: cosine similarity is used).
    """
    if anchor.shape != positive.shape or (negative is not None and negative.shape != anchor.shape):
        raise ValueError("anchor, positive and negative must have the same shape (b, d); got "
                         f"{tuple(anchor.shape)}, {tuple(positive.shape)}, "
                         f"{None if negative is None else tuple(negative.shape)}.")
    b = anchor.shape[0]
    logits = cosine_logits(anchor, positive, temperature)
    if negative is not None:
        hard = cosine_logits(anchor, negative, temperature)
        hard = hard + hard_negative_weight * torch.eye(b, dtype=hard.dtype, device=hard.device)
        logits = torch.cat([logits, hard], dim=1)
    return F.cross_entropy(logits, torch.arange(b, device=anchor.device))
