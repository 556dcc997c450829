import torch

from .supervised import supervised_contrastive_loss

METHOD_VERSION = 1  # bump when the maths changes


def scl_loss(features: torch.Tensor, labels: torch.Tensor, temperature: float = 0.3) -> torch.Tensor:
    r"""SCL (Gunel et al. 2021): the supervised contrastive loss over a batch's N sample representations.

    .. math::

        L_{SCL} = \frac{1}{|A'|} \sum_{i \in A'} \frac{-1}{N_{y_i} - 1} \sum_{j \ne i} 1[y_j = y_i]
            \log \frac{\exp(s(h_i, h_j))}{\sum_{k \ne i} \exp(s(h_i, h_k))}

    s(u, v) = cos(u, v) / tau; A' = the samples with at least one other sample of their class in the batch.
    Open choices: cosine (Gunel et al. normalise), tau = 0.3, the mean over A' rather than Gunel et al.'s sum
    over the batch; the fine-tuning objective is CE + lambda * L_SCL (not their (1 - lambda) CE + lambda L_SCL).

    Args:
        features: (N, d) [CLS] representations; labels: (N,) classes.
    """
    return supervised_contrastive_loss(features, labels, temperature)
