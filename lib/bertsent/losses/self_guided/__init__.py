"""The contrastive objectives of self-guided contrastive learning (Kim, Yoo and Lee, ACL-IJCNLP 2021).

Notation shared by every loss in this package: a batch of b sentences; ``c[i]`` is the projected sentence
vector of sentence i (f applied to the trained BERT's last-layer [CLS]); ``h[i, k]`` is the projected,
pooled hidden state k = 0..l of the frozen BERT for the same sentence; phi(u, v) = exp(cos(u, v) / tau).
The projection head f is applied before the loss; the losses see projected vectors only.

| loss | anchors | positive | negatives | views |
|---|---|---|---|---|
| :func:`sg_base_loss` (SG, NT-Xent) | every c_i and every h_i | the partner | all other 2b - 2 vectors | one sampled layer |
| :func:`sg_opt1_loss` | c_i | h_i | c_j and h_j, j != i | one sampled layer |
| :func:`sg_opt2_loss` | c_i | h_i | h_j, j != i | one sampled layer |
| :func:`sg_opt3_loss` (SG-OPT) | c_i | h_ik, each k | h_mn, m != i, every n | all layers |
"""
from .opt1 import sg_opt1_loss
from .opt2 import sg_opt2_loss
from .opt3 import sg_opt3_loss
from .regularizer import weight_distance_regularizer
from .sg_base import sg_base_loss
from .similarity import cosine_logits

METHOD_VERSION = 1  # bump when the maths changes

LOSSES = {"base": sg_base_loss, "opt1": sg_opt1_loss, "opt2": sg_opt2_loss, "opt3": sg_opt3_loss}

__all__ = ["LOSSES", "cosine_logits", "sg_base_loss", "sg_opt1_loss", "sg_opt2_loss", "sg_opt3_loss",
           "weight_distance_regularizer"]
