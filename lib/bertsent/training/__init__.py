"""Trainers of the book's methods: SG / SG-OPT (``self_guided``, re-exported here), BERT pre-training
(``pretraining``; ``python -m bertsent.training.pretraining``) and GLUE fine-tuning (``glue``), each a small
adapter (a :class:`~bertsent.training.loop.Method`) over the one training loop, ``loop``. Aligned contrastive
learning (``aligned_contrastive``: CE + SCL, ACL-Embed, ACL-Grad, multi-exit ACL-CL) plugs into GLUE fine-tuning
as objectives (:class:`~bertsent.training.glue.GlueObjective`). Layer-wise attention pooling
(``attention_pooling``, re-exported here; ``python -m bertsent.training.attention_pooling``): an encoder and its
pooler trained with supervised, unsupervised or hybrid InfoNCE."""

__all__ = ["AttentionPoolingConfig", "SelfGuidedConfig", "TrainResult", "train_attention_pooling", "train_self_guided"]


def __getattr__(name: str):
    # The re-exports load on first use: importing the package then costs nothing, so a command such as
    # `python -m bertsent.training.pretraining` checks its arguments and corpus before torch and transformers load
    # (about 10 s). The import statements stay statements, so the modules a result's key reaches are unchanged
    # (bertsent.versions reads them).
    if name in ("AttentionPoolingConfig", "train_attention_pooling"):
        from . import attention_pooling as module
    elif name in ("SelfGuidedConfig", "TrainResult", "train_self_guided"):
        from . import self_guided as module
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(module, name)
