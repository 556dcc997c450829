import torch

from .similarity import cosine_logits

METHOD_VERSION = 1  # bump when the maths changes


def sg_opt3_loss(c: torch.Tensor, h: torch.Tensor, temperature: float = 0.01) -> torch.Tensor:
    r"""L^opt3 (SG-OPT): c_i against every layer's view of itself; other sentences' views of every layer repel.

    .. math::

        L^{opt} = \frac{1}{b(l+1)} \sum_{i=1}^{b} \sum_{k=0}^{l} -\log
            \frac{\phi(c_i, h_{ik})}{\phi(c_i, h_{ik}) + \sum_{m \ne i} \sum_{n=0}^{l} \phi(c_i, h_{mn})}

    The other layers of the same sentence are neither positives nor negatives of a term.

    Args:
        c: (b, d) projected sentence vectors.
        h: (b, l + 1, d) projected views of every hidden state of the frozen model.

    Example::

        loss = sg_opt3_loss(torch.randn(16, 4096), torch.randn(16, 13, 4096))
    """
    b, n_views, _ = h.shape
    logits = cosine_logits(c, h.reshape(b * n_views, -1), temperature).view(b, b, n_views)  # [i, m, n]
    own = torch.eye(b, dtype=torch.bool, device=c.device)
    positives = logits[own]  # (b, l + 1): log phi(c_i, h_ik)
    negatives = logits.masked_fill(own.unsqueeze(-1), float("-inf")).flatten(1).logsumexp(dim=1)  # (b,)
    denominators = torch.logaddexp(positives, negatives.unsqueeze(1))
    return (denominators - positives).mean()
