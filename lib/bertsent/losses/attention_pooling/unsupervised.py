import torch

from .supervised import supervised_infonce_loss

METHOD_VERSION = 1  # bump when the maths changes


def dropout_infonce_loss(view1: torch.Tensor, view2: torch.Tensor, temperature: float = 0.05) -> torch.Tensor:
    r"""Unsupervised SimCSE's InfoNCE: two encodings of the same sentences, differing only by their dropout
    (and, with the layer-wise pooler, RReLU) noise, are each other's positive; the other rows are negatives.

    .. math::

        \ell_i = -\log \frac{e^{\cos(z_i, z_i')/\tau}}{\sum_{j=1}^{b} e^{\cos(z_i, z_j')/\tau}},
        \qquad L = \frac{1}{b} \sum_i \ell_i

    Args:
        view1, view2: (b, d) the two views (two forward passes in training mode). Identical views are refused:
            they mean dropout was off and the positive is trivial.
    """
    if view1.shape[0] > 0 and torch.equal(view1, view2):
        raise ValueError("The two views are identical: the encoder ran without dropout noise. Fix: encode the "
                         "batch twice with the model in training mode (model.train()).")
    return supervised_infonce_loss(view1, view2, None, temperature)
