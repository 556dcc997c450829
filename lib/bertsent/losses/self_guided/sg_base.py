import torch
import torch.nn.functional as F

from .similarity import cosine_logits

METHOD_VERSION = 1  # bump when the maths changes


def sg_base_loss(c: torch.Tensor, h: torch.Tensor, temperature: float = 0.01) -> torch.Tensor:
    r"""L^base (SG): NT-Xent over the 2b vectors X = {c_i} U {h_i}, every vector an anchor.

    .. math::

        L^{base} = \frac{1}{2b} \sum_{m=1}^{2b} -\log
            \frac{\phi(x_m, \mu(x_m))}{\sum_{n \ne m} \phi(x_m, x_n)}

    where mu maps c_i to h_i and h_i to c_i, and phi(u, v) = exp(cos(u, v) / tau).

    Args:
        c: (b, d) projected sentence vectors of the trained model.
        h: (b, d) projected views of the frozen model, one sampled layer per sentence.
        temperature: tau.

    Example::

        loss = sg_base_loss(torch.randn(16, 4096), torch.randn(16, 4096))
    """
    b = c.shape[0]
    x = torch.cat([c, h])
    logits = cosine_logits(x, x, temperature)
    logits = logits.masked_fill(torch.eye(2 * b, dtype=torch.bool, device=x.device), float("-inf"))
    partner = torch.cat([torch.arange(b, 2 * b), torch.arange(0, b)]).to(x.device)
    return F.cross_entropy(logits, partner)
