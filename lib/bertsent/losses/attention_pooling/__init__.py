"""The contrastive objectives of layer-wise attention pooling (Oh et al., COLING 2022): the paper's three
designs, each a SimCSE InfoNCE with cosine similarity and temperature tau (0.05).

| loss | anchors | positive | negatives |
|---|---|---|---|
| :func:`supervised_infonce_loss` | premises z_i | entailment z_i^+ | z_j^+ (j != i) and every z_j^- (contradictions) |
| :func:`dropout_infonce_loss` | first dropout view z_i | second view z_i' | z_j' (j != i) |
| :func:`hybrid_infonce_loss` | both of the above, summed (supervised + lambda x unsupervised) | | |
"""
from .hybrid import hybrid_infonce_loss
from .supervised import supervised_infonce_loss
from .unsupervised import dropout_infonce_loss

METHOD_VERSION = 1  # bump when the maths changes

OBJECTIVES = {
    "supervised": "NLI triplets: InfoNCE, in-batch negatives + contradiction hard negative (supervised SimCSE)",
    "unsupervised": "unlabelled sentences: InfoNCE between two dropout views (unsupervised SimCSE)",
    "hybrid": "both at every step: supervised on triplets + weight x unsupervised on sentences",
}

__all__ = ["OBJECTIVES", "dropout_infonce_loss", "hybrid_infonce_loss", "supervised_infonce_loss"]
