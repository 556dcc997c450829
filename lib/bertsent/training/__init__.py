"""Trainers of the book's methods."""
from .self_guided import SelfGuidedConfig, TrainResult, train_self_guided

__all__ = ["SelfGuidedConfig", "TrainResult", "train_self_guided"]
