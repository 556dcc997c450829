"""Models of the book's methods: SG / SG-OPT (``self_guided``, re-exported here), BERT for pre-training
(``bert_pretraining``) and the classifiers fine-tuned on GLUE (``classifiers``)."""
from .self_guided import ProjectionHead, SelfGuidedModel, load_encoder

__all__ = ["ProjectionHead", "SelfGuidedModel", "load_encoder"]
