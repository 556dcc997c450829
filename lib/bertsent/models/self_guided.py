"""Self-guided contrastive learning: a trained copy of BERT guided by a frozen copy of itself.

``SelfGuidedModel`` holds BERT_T (trained; its embedding layer frozen), BERT_F (frozen: no gradients),
and the projection head f shared by both branches. For a batch it returns

- ``c``: f(last-layer [CLS] of BERT_T), before BERT's pooler: (b, d');
- ``h``: f(pooled hidden state k of BERT_F) for every k = 0..l: (b, l + 1, d').

The head is discarded after training: the sentence embedding is BERT_T's last-layer [CLS] vector.
"""
from __future__ import annotations

import copy

import torch
from torch import nn

from ..encode.pooling import max_pooling, mean_pooling
from ..quiet import quiet_transformers

METHOD_VERSION = 1  # bump when the maths changes

VIEW_POOLINGS = {"max": max_pooling, "mean": mean_pooling}


def load_encoder(source) -> nn.Module:
    """A Hugging Face encoder without its pooler: SG reads [CLS] before BERT's pooler, which is never trained."""
    from transformers import AutoModel

    with quiet_transformers():  # the checkpoint's pooler weights are dropped on purpose
        try:
            return AutoModel.from_pretrained(source, add_pooling_layer=False)
        except TypeError:  # architectures without a pooler option
            return AutoModel.from_pretrained(source)


class ProjectionHead(nn.Module):
    """f: Linear(d, 4096) - GELU - Linear(4096, 4096) - GELU, as in the paper."""

    def __init__(self, dim: int, hidden: int = 4096):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, hidden), nn.GELU())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class SelfGuidedModel(nn.Module):
    """BERT_T, BERT_F and the projection head f.

    Args:
        encoder: a Hugging Face encoder (``AutoModel``) to start from; it becomes BERT_T and a deep copy BERT_F.
        view_pooling: how BERT_F's hidden states are pooled into views: ``"max"`` (the paper) or ``"mean"``
            (the released code).
        frozen_dropout: run BERT_F with dropout active (the released code did: its frozen copy stayed in
            training mode) or not (deterministic views).
        projection: use the head f; ``False`` is the paper's "no head" ablation (identity).
    """

    def __init__(self, encoder: nn.Module, view_pooling: str = "max", frozen_dropout: bool = False,
                 projection: bool = True, head_dim: int = 4096):
        super().__init__()
        if view_pooling not in VIEW_POOLINGS:
            raise ValueError(f"Unknown view pooling {view_pooling!r}. Known: {', '.join(VIEW_POOLINGS)}.")
        self.trained = encoder
        self.frozen = copy.deepcopy(encoder)
        self.frozen.requires_grad_(False)
        # layer 0 of BERT_T (token, position and segment embeddings) is frozen too, as in the paper
        (getattr(self.trained, "embeddings", None) or self.trained.get_input_embeddings()).requires_grad_(False)
        self.view_pooling = view_pooling
        self.frozen_dropout = frozen_dropout
        dim = encoder.config.hidden_size
        self.head = ProjectionHead(dim, head_dim) if projection else nn.Identity()

    def train(self, mode: bool = True):
        super().train(mode)
        self.frozen.train(mode and self.frozen_dropout)
        return self

    def sentence_vectors(self, input_ids, attention_mask) -> torch.Tensor:
        """BERT_T's last-layer [CLS] vector (no pooler, no head): the sentence embedding."""
        return self.trained(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state[:, 0]

    def views(self, input_ids, attention_mask) -> torch.Tensor:
        """BERT_F's pooled hidden states, every layer: (b, l + 1, d); no gradient."""
        with torch.no_grad():
            hidden = self.frozen(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=True).hidden_states
            pool = VIEW_POOLINGS[self.view_pooling]
            return torch.stack([pool(h, attention_mask) for h in hidden], dim=1)

    def forward(self, input_ids, attention_mask) -> tuple[torch.Tensor, torch.Tensor]:
        """Projected ``c`` (b, d') and projected views ``h`` (b, l + 1, d')."""
        c = self.head(self.sentence_vectors(input_ids, attention_mask))
        h = self.head(self.views(input_ids, attention_mask))
        return c, h
