import torch
import torch.nn.functional as F

METHOD_VERSION = 1  # bump when the maths changes


def supervised_contrastive_loss(members: torch.Tensor, labels: torch.Tensor, temperature: float = 0.3,
                                anchors: torch.Tensor | None = None) -> torch.Tensor:
    r"""The supervised contrastive sum over a set of M labelled members (Gunel et al. 2021, eq. 2, as a mean).

    .. math::

        L = \frac{1}{|A'|} \sum_{a \in A'} \frac{-1}{|P(a)|} \sum_{p \in P(a)}
            \log \frac{\exp(s(x_a, x_p))}{\sum_{m \ne a} \exp(s(x_a, x_m))}

    with s(u, v) = cos(u, v) / tau, P(a) = {p != a : y_p = y_a} (the positives of anchor a), A the anchors and
    A' = {a in A : P(a) not empty}: an anchor with no positive in the set is left out (Gunel et al.'s
    1 / (N_{y_a} - 1) is undefined there). When no anchor has a positive the loss is 0 (with a graph, so a
    backward pass still runs).

    Args:
        members: (M, d) vectors (normalised here; detach a member before the call to keep gradients off it).
        labels: (M,) integer class of each member.
        temperature: tau > 0.
        anchors: (M,) bool, which members are anchors; None: every member.
    """
    if members.dim() != 2 or labels.shape != members.shape[:1]:
        raise ValueError(f"members must be (M, d) and labels (M,); got {tuple(members.shape)} and "
                         f"{tuple(labels.shape)}. Fix: pass one label per member row.")
    if temperature <= 0:
        raise ValueError(f"temperature must be positive, not {temperature}. Fix: pass e.g. temperature=0.3.")
    size = members.shape[0]
    own = torch.eye(size, dtype=torch.bool, device=members.device)
    normalised = F.normalize(members, dim=-1)
    logits = (normalised @ normalised.T / temperature).masked_fill(own, float("-inf"))
    log_probabilities = logits - logits.logsumexp(dim=1, keepdim=True)
    positives = (labels[:, None] == labels[None, :]) & ~own
    anchors = torch.ones(size, dtype=torch.bool, device=members.device) if anchors is None else anchors.bool()
    counted = anchors & positives.any(dim=1)
    if not counted.any():
        return members.sum() * 0.0
    per_anchor = -log_probabilities.masked_fill(~positives, 0.0).sum(dim=1) / positives.sum(dim=1).clamp(min=1)
    return per_anchor[counted].mean()
