"""Models of the book's methods."""
from .self_guided import ProjectionHead, SelfGuidedModel, load_encoder

__all__ = ["ProjectionHead", "SelfGuidedModel", "load_encoder"]
