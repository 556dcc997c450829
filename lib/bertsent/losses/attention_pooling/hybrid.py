import torch

from .supervised import supervised_infonce_loss
from .unsupervised import dropout_infonce_loss

METHOD_VERSION = 1  # bump when the maths changes


def hybrid_infonce_loss(anchor: torch.Tensor, positive: torch.Tensor, negative: torch.Tensor | None,
                        view1: torch.Tensor, view2: torch.Tensor, temperature: float = 0.05,
                        unsupervised_weight: float = 1.0, hard_negative_weight: float = 0.0) -> torch.Tensor:
    r"""The hybrid design (our reading; the paper's equation could not be read): the supervised NLI objective
    and the unsupervised dropout objective on unlabelled sentences, summed at every step.

    .. math::

        L = L^{sup}(z, z^+, z^-) + \lambda \, L^{unsup}(u, u')

    with :func:`supervised_infonce_loss` on a batch of triplets and :func:`dropout_infonce_loss` on two dropout
    views u, u' of a batch of unlabelled (Wikipedia) sentences; lambda = ``unsupervised_weight``.
    """
    supervised = supervised_infonce_loss(anchor, positive, negative, temperature, hard_negative_weight)
    return supervised + unsupervised_weight * dropout_infonce_loss(view1, view2, temperature)
