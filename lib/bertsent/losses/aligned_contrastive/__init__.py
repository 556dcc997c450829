"""The contrastive objectives of aligned contrastive learning (ACL; Zhu, arXiv 2602.03563) and its baseline,
supervised contrastive learning (SCL; Gunel et al., ICLR 2021), for fine-tuning a classifier.

Notation shared by every loss in this package: a batch of N examples with labels y_i in {0..K-1}; ``h[i]`` is the
representation the classifier reads (the pooled [CLS] state); ``l[k]`` is the label embedding of class k, the k-th
row of the classifier's weight matrix (``torch.nn.Linear.weight``, shape (K, d): the paper's "columns" of W in
the h W convention); every member is L2-normalised and s(u, v) = cos(u, v) / tau.

Every loss is the same supervised contrastive sum (:func:`supervised_contrastive_loss`) over a different set of
members:

| loss | members | anchors | positives of an anchor | negatives |
|---|---|---|---|---|
| :func:`scl_loss` (SCL) | h_1..h_N | every h_i | same-label samples | every other member |
| :func:`acl_embed_loss` (ACL-Embed) | h_1..h_N, l_1..l_K | every member | same-label members (h_i: l_{y_i} always) | every other member |
| :func:`acl_cl_loss` (ACL-CL) | h^s, l^s of a shallow exit, h^T, l^T of the last | the shallow exit's members | same-label members of both layers | every other member |

Choices the paper leaves open (each loss repeats its own): cosine similarity (normalised members); tau = 0.3 by
default (Gunel et al.'s best value in their sweep); the mean over anchors that have a positive (Gunel et al. sum
over anchors; the mean keeps the scale independent of the batch size); an anchor without a positive is left out.
"""
from .acl_cl import acl_cl_loss
from .acl_embed import acl_embed_loss
from .cross_layer_batch import cross_layer_batch
from .scl import scl_loss
from .supervised import supervised_contrastive_loss

METHOD_VERSION = 1  # bump when the maths changes

LOSSES = {"scl": scl_loss, "acl_embed": acl_embed_loss}

__all__ = ["LOSSES", "acl_cl_loss", "acl_embed_loss", "cross_layer_batch", "scl_loss", "supervised_contrastive_loss"]
