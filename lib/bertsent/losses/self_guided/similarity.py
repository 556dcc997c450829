import torch
import torch.nn.functional as F

METHOD_VERSION = 1  # bump when the maths changes


def cosine_logits(a: torch.Tensor, b: torch.Tensor, temperature: float) -> torch.Tensor:
    """All pairwise log phi: ``cos(a[i], b[j]) / temperature`` for ``a`` (n, d) and ``b`` (m, d) -> (n, m)."""
    return F.normalize(a, dim=-1) @ F.normalize(b, dim=-1).T / temperature
