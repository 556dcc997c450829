import torch
import torch.nn.functional as F

from .similarity import cosine_logits

METHOD_VERSION = 1  # bump when the maths changes


def sg_opt1_loss(c: torch.Tensor, h: torch.Tensor, temperature: float = 0.01) -> torch.Tensor:
    r"""L^opt1: only c_i is an anchor (no h-h repulsion); the c_i - c_j repulsion is kept.

    .. math::

        L^{opt1} = \frac{1}{b} \sum_{i=1}^{b} -\log
            \frac{\phi(c_i, h_i)}{\phi(c_i, h_i) + \sum_{j \ne i} \big(\phi(c_i, c_j) + \phi(c_i, h_j)\big)}

    Args:
        c: (b, d) projected sentence vectors; h: (b, d) one sampled projected view per sentence.
    """
    b = c.shape[0]
    to_views = cosine_logits(c, h, temperature)
    to_sentences = cosine_logits(c, c, temperature).masked_fill(torch.eye(b, dtype=torch.bool, device=c.device), float("-inf"))
    logits = torch.cat([to_views, to_sentences], dim=1)
    return F.cross_entropy(logits, torch.arange(b, device=c.device))
