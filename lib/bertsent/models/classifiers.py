"""Classifier heads on a BERT for GLUE fine-tuning (:mod:`bertsent.training.glue`).

A bidirectional BERT is classified the BERT paper's way: the final hidden state of [CLS], through BERT's pooler,
feeds one linear layer (``AutoModelForSequenceClassification``).

A left-to-right model (the pre-training ablation, ``config.is_decoder``) keeps its causal attention when
fine-tuned, as in the paper; its [CLS] state has seen nothing but itself, so the classifier reads the last
token's state instead ([SEP], which has seen the whole input), as left-to-right models such as GPT do.
"""
from __future__ import annotations

import torch

METHOD_VERSION = 1  # bump when the maths changes


class LastTokenClassifier(torch.nn.Module):
    """A causal BERT with a linear classifier on the state of each input's last token (see the module docstring)."""

    def __init__(self, model_path: str, num_labels: int = 2):
        from transformers import AutoModel

        super().__init__()
        self.bert = AutoModel.from_pretrained(model_path, add_pooling_layer=False)
        self.dropout = torch.nn.Dropout(self.bert.config.hidden_dropout_prob)
        self.classifier = torch.nn.Linear(self.bert.config.hidden_size, num_labels)
        self.classifier.weight.data.normal_(0.0, self.bert.config.initializer_range)
        self.classifier.bias.data.zero_()

    def forward(self, input_ids, attention_mask, token_type_ids=None, labels=None):
        from types import SimpleNamespace

        states = self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids,
                           use_cache=False).last_hidden_state
        last = attention_mask.sum(dim=1) - 1
        logits = self.classifier(self.dropout(states[torch.arange(len(states)), last]))
        loss = torch.nn.functional.cross_entropy(logits, labels) if labels is not None else None
        return SimpleNamespace(loss=loss, logits=logits)


def sequence_classifier(model_path: str, num_labels: int = 2) -> torch.nn.Module:
    """BERT's classifier ([CLS] -> pooler -> linear), or :class:`LastTokenClassifier` for a left-to-right model."""
    from transformers import AutoConfig, AutoModelForSequenceClassification

    if AutoConfig.from_pretrained(model_path).is_decoder:
        return LastTokenClassifier(model_path, num_labels)
    return AutoModelForSequenceClassification.from_pretrained(model_path, num_labels=num_labels)
