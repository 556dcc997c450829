"""Trainers of the book's methods: SG / SG-OPT (``self_guided``, re-exported here), BERT pre-training
(``pretraining``; ``python -m bertsent.training.pretraining``) and GLUE fine-tuning (``glue``), each a small
adapter (a :class:`~bertsent.training.loop.Method`) over the one training loop, ``loop``. Aligned contrastive
learning (``aligned_contrastive``: CE + SCL, ACL-Embed, ACL-Grad, multi-exit ACL-CL) plugs into GLUE fine-tuning
as objectives (:class:`~bertsent.training.glue.GlueObjective`)."""
from .self_guided import SelfGuidedConfig, TrainResult, train_self_guided

__all__ = ["SelfGuidedConfig", "TrainResult", "train_self_guided"]
