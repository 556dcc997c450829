"""Models of the book's methods: SG / SG-OPT (``self_guided``, re-exported here), BERT for pre-training
(``bert_pretraining``), the classifiers fine-tuned on GLUE (``classifiers``) and the layer-wise attention pooler
(``layer_attention``, re-exported here; its sentence-transformers export: ``layer_attention_export``)."""
from .layer_attention import LayerAttentionModel, LayerAttentionPooler
from .self_guided import ProjectionHead, SelfGuidedModel, load_encoder

__all__ = ["LayerAttentionModel", "LayerAttentionPooler", "ProjectionHead", "SelfGuidedModel", "load_encoder"]
