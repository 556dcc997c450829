"""Training objectives. ``self_guided``: the losses of self-guided contrastive learning (SG, SG-OPT; Kim, Yoo
and Lee, ACL-IJCNLP 2021), re-exported here."""
from .self_guided import (
    LOSSES,
    cosine_logits,
    sg_base_loss,
    sg_opt1_loss,
    sg_opt2_loss,
    sg_opt3_loss,
    weight_distance_regularizer,
)

__all__ = ["LOSSES", "cosine_logits", "sg_base_loss", "sg_opt1_loss", "sg_opt2_loss", "sg_opt3_loss",
           "weight_distance_regularizer"]
