"""Trainers of the book's methods: SG / SG-OPT (``self_guided``, re-exported here), BERT pre-training
(``pretraining``; ``python -m bertsent.training.pretraining``) and GLUE fine-tuning (``glue``), each a small
adapter (a :class:`~bertsent.training.loop.Method`) over the one training loop, ``loop``. Aligned contrastive
learning (``aligned_contrastive``: CE + SCL, ACL-Embed, ACL-Grad, multi-exit ACL-CL) plugs into GLUE fine-tuning
as objectives (:class:`~bertsent.training.glue.GlueObjective`). Layer-wise attention pooling
(``attention_pooling``, re-exported here; ``python -m bertsent.training.attention_pooling``): an encoder and its
pooler trained with supervised, unsupervised or hybrid InfoNCE."""
from .attention_pooling import AttentionPoolingConfig, train_attention_pooling
from .self_guided import SelfGuidedConfig, TrainResult, train_self_guided

__all__ = ["AttentionPoolingConfig", "SelfGuidedConfig", "TrainResult", "train_attention_pooling", "train_self_guided"]
