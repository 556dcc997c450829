"""Training objectives. ``self_guided``: the losses of self-guided contrastive learning (SG, SG-OPT; Kim, Yoo
and Lee, ACL-IJCNLP 2021), re-exported here. ``attention_pooling``: the InfoNCE objectives of layer-wise
attention pooling (Oh et al., COLING 2022), re-exported here. ``aligned_contrastive``: SCL (Gunel et al. 2021)
and aligned contrastive learning's ACL-Embed and ACL-CL (Zhu, arXiv 2602.03563), re-exported here."""
from .attention_pooling import dropout_infonce_loss, hybrid_infonce_loss, supervised_infonce_loss
from .aligned_contrastive import acl_cl_loss, acl_embed_loss, cross_layer_batch, scl_loss, supervised_contrastive_loss
from .self_guided import (
    LOSSES,
    cosine_logits,
    sg_base_loss,
    sg_opt1_loss,
    sg_opt2_loss,
    sg_opt3_loss,
    weight_distance_regularizer,
)

__all__ = ["LOSSES", "acl_cl_loss", "acl_embed_loss", "cosine_logits", "cross_layer_batch", "scl_loss",
           "supervised_contrastive_loss", "dropout_infonce_loss", "hybrid_infonce_loss", "sg_base_loss", "sg_opt1_loss",
           "sg_opt2_loss", "sg_opt3_loss", "supervised_infonce_loss", "weight_distance_regularizer"]
