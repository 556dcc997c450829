"""Pre-training BERT (masked LM + next-sentence prediction) on Wikipedia and novels, at small scale."""
from .model import (
           BERT_SIZES,
           BertForMaskedPretraining,
           bert_config,
           new_pretraining_model,
)
from .trainer import PROFILES, PretrainingConfig, PretrainingResult, pretrain

__all__ = ["BERT_SIZES", "BertForMaskedPretraining", "PROFILES", "PretrainingConfig", "PretrainingResult",
           "bert_config", "new_pretraining_model", "pretrain"]
