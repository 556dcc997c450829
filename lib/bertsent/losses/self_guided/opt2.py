import torch
import torch.nn.functional as F

from .similarity import cosine_logits

METHOD_VERSION = 1  # bump when the maths changes


def sg_opt2_loss(c: torch.Tensor, h: torch.Tensor, temperature: float = 0.01) -> torch.Tensor:
    r"""L^opt2: c_i is the only anchor and sentence vectors do not repel each other; one sampled view.

    .. math::

        L^{opt2} = \frac{1}{b} \sum_{i=1}^{b} -\log
            \frac{\phi(c_i, h_i)}{\phi(c_i, h_i) + \sum_{j \ne i} \phi(c_i, h_j)}

    Args:
        c: (b, d) projected sentence vectors; h: (b, d) one sampled projected view per sentence.
    """
    logits = cosine_logits(c, h, temperature)
    return F.cross_entropy(logits, torch.arange(c.shape[0], device=c.device))
