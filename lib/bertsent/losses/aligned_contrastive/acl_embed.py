import torch

from .supervised import supervised_contrastive_loss

METHOD_VERSION = 1  # bump when the maths changes


def acl_embed_loss(features: torch.Tensor, labels: torch.Tensor, label_embeddings: torch.Tensor,
                   temperature: float = 0.3) -> torch.Tensor:
    r"""ACL-Embed: SCL over the batch enlarged by the K label embeddings, each labelled with its own class.

    Members X = {h_1..h_N} U {l_1..l_K} with labels (y_1..y_N, 0..K-1); every member is an anchor:

    .. math::

        L_{ACL} = \frac{1}{|A'|} \sum_{a \in A'} \frac{-1}{|P(a)|} \sum_{p \in P(a)}
            \log \frac{\exp(s(x_a, x_p))}{\sum_{m \ne a} \exp(s(x_a, x_m))}

    So h_i is pulled to l_{y_i} (always a positive: no sample is left out) and to same-class samples, and pushed
    from the other l_k and other-class samples; l_k is pulled to the samples of class k in the batch (left out
    as an anchor when the batch has none) and pushed from the other labels' embeddings and samples.
    Open choices: l_k = row k of the classifier's weight (the very tensor, not a copy: the loss trains the
    classifier too); cosine similarity (the label embeddings' norms are the classifier's business); label
    embeddings are anchors too; tau = 0.3; mean over anchors.

    Args:
        features: (N, d) [CLS] representations; labels: (N,) classes in 0..K-1;
        label_embeddings: (K, d) the classifier's weight (``classifier.weight``).
    """
    if label_embeddings.dim() != 2 or label_embeddings.shape[1] != features.shape[1]:
        raise ValueError(f"label_embeddings must be (K, {features.shape[1]}) like the features' width; got "
                         f"{tuple(label_embeddings.shape)}. Fix: pass the classifier's weight (K classes x d).")
    classes = label_embeddings.shape[0]
    if labels.numel() and (labels.min() < 0 or labels.max() >= classes):
        raise ValueError(f"labels must lie in 0..{classes - 1} (one label embedding per class); got "
                         f"{labels.min().item()}..{labels.max().item()}. Fix: map the labels to 0..K-1.")
    members = torch.cat([features, label_embeddings.to(features.dtype)])
    member_labels = torch.cat([labels, torch.arange(classes, device=labels.device)])
    return supervised_contrastive_loss(members, member_labels, temperature)
