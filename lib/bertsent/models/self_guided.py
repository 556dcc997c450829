"""Self-guided contrastive learning: a trained copy of BERT guided by a frozen copy of itself.

``SelfGuidedModel`` holds BERT_T (trained; its embedding layer frozen), BERT_F (frozen: no gradients),
and the projection head f shared by both branches. For a batch it returns

- ``c``: f(last-layer sentence token of BERT_T), before BERT's pooler: (b, d');
- ``h``: f(pooled hidden state k of BERT_F) for every k = 0..l: (b, l + 1, d').

The head is discarded after training: the sentence embedding is BERT_T's last-layer sentence-token vector.

**The sentence token** (``readout``): ``"cls"`` reads position 0, BERT's [CLS] (the paper). A causal LM (Gemma 3)
has no [CLS]: its only position that has seen the whole sentence is the last real one, so ``"last"`` reads each
row's last real token (:func:`~bertsent.encode.causal_pooling.last_positions`; the batches are right-padded, and
attention being causal no real token sees the padding). The same readout gives ``c`` and
:meth:`SelfGuidedModel.sentence_vectors`, so what is trained is what is evaluated and saved.

**BOS in BERT_F's views** (``skip_bos``): a causal model's BOS state is one constant vector for every sentence (and
Gemma's attention sink, with a norm 10-25 times the other tokens'), so mean / max views leave it out as
:mod:`bertsent.encode.causal_pooling` does (:func:`~bertsent.encode.causal_pooling.sentence_mask`); BERT's views
keep every real token, [CLS] and [SEP] included (``skip_bos=False``, the default: unchanged numbers).

**One embedding table.** BERT_F is a deep copy of BERT_T except for the input embedding layer's parameters
(BERT: the ``embeddings`` module, token / position / segment tables and their LayerNorm; otherwise
``get_input_embeddings()``), which both copies share: they are frozen in both (layer 0 of BERT_T is frozen, as in
the paper), so two copies would always hold the same values. For Gemma 3 270M the table is 168M of the 268M
parameters, so sharing it saves about 670 MB of float32. Each copy keeps its own modules (BERT_F can be in eval
mode while BERT_T trains) and every other weight (BERT_T's transformer layers move away from BERT_F's).
"""
from __future__ import annotations

import copy

import torch
from torch import nn

from ..encode.causal_pooling import last_positions, sentence_mask
from ..encode.pooling import max_pooling, mean_pooling
from ..quiet import quiet_transformers

METHOD_VERSION = 1  # bump when the maths changes

VIEW_POOLINGS = {"max": max_pooling, "mean": mean_pooling}
READOUTS = ("cls", "last")  # the sentence token: position 0 (BERT's [CLS]) or each row's last real token (causal LM)


def input_embedding_module(encoder: nn.Module) -> nn.Module:
    """Layer 0 of an encoder, the part SG freezes and the two copies share: BERT's ``embeddings`` module (token,
    position and segment tables, LayerNorm), else the input embedding table."""
    module = getattr(encoder, "embeddings", None)
    return module if isinstance(module, nn.Module) else encoder.get_input_embeddings()


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
        encoder: a Hugging Face encoder (``AutoModel``) to start from; it becomes BERT_T and a deep copy BERT_F
            (sharing BERT_T's frozen input embedding parameters).
        view_pooling: how BERT_F's hidden states are pooled into views: ``"max"`` (the paper) or ``"mean"``
            (the released code).
        frozen_dropout: run BERT_F with dropout active (the released code did: its frozen copy stayed in
            training mode) or not (deterministic views).
        projection: use the head f; ``False`` is the paper's "no head" ablation (identity).
        readout: the sentence token read for ``c`` and :meth:`sentence_vectors`: ``"cls"`` (position 0) or
            ``"last"`` (each row's last real token: a causal LM, right-padded batches).
        skip_bos: leave each row's first real token (a causal LM's BOS) out of BERT_F's pooled views.
    """

    def __init__(self, encoder: nn.Module, view_pooling: str = "max", frozen_dropout: bool = False,
                 projection: bool = True, head_dim: int = 4096, readout: str = "cls", skip_bos: bool = False):
        super().__init__()
        if view_pooling not in VIEW_POOLINGS:
            raise ValueError(f"Unknown view pooling {view_pooling!r}. Known: {', '.join(VIEW_POOLINGS)}.")
        if readout not in READOUTS:
            raise ValueError(f"Unknown readout {readout!r}. Known: {', '.join(READOUTS)} (\"last\" for a causal LM).")
        # layer 0 of BERT_T (token, position and segment embeddings) is frozen, as in the paper; BERT_F shares its
        # parameters (the memo makes deepcopy reuse them) and copies everything else
        embeddings = input_embedding_module(encoder)
        embeddings.requires_grad_(False)
        self.trained = encoder
        self.frozen = copy.deepcopy(encoder, memo={id(p): p for p in embeddings.parameters()})
        self.frozen.requires_grad_(False)
        self.readout = readout
        self.skip_bos = skip_bos
        # a causal LM would otherwise build a key/value cache it never reads
        self.forward_kwargs = {"use_cache": False} if readout == "last" else {}
        self.view_pooling = view_pooling
        self.frozen_dropout = frozen_dropout
        dim = encoder.config.hidden_size
        self.head = ProjectionHead(dim, head_dim) if projection else nn.Identity()

    def train(self, mode: bool = True):
        super().train(mode)
        self.frozen.train(mode and self.frozen_dropout)
        return self

    def sentence_vectors(self, input_ids, attention_mask) -> torch.Tensor:
        """BERT_T's last-layer sentence-token vector (no pooler, no head): the sentence embedding. [CLS] (position
        0) for ``readout="cls"``, each row's last real token for ``readout="last"``."""
        hidden = self.trained(input_ids=input_ids, attention_mask=attention_mask,
                              **self.forward_kwargs).last_hidden_state
        if self.readout == "cls":
            return hidden[:, 0]
        rows = torch.arange(hidden.shape[0], device=hidden.device)
        return hidden[rows, last_positions(attention_mask).to(hidden.device)]

    def views(self, input_ids, attention_mask) -> torch.Tensor:
        """BERT_F's pooled hidden states, every layer: (b, l + 1, d); no gradient. With ``skip_bos`` each row's
        first real token (BOS) is left out of the pooling."""
        with torch.no_grad():
            hidden = self.frozen(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=True,
                                 **self.forward_kwargs).hidden_states
            pool = VIEW_POOLINGS[self.view_pooling]
            mask = sentence_mask(attention_mask, self.skip_bos)
            return torch.stack([pool(h, mask) for h in hidden], dim=1)

    def forward(self, input_ids, attention_mask) -> tuple[torch.Tensor, torch.Tensor]:
        """Projected ``c`` (b, d') and projected views ``h`` (b, l + 1, d')."""
        c = self.head(self.sentence_vectors(input_ids, attention_mask))
        h = self.head(self.views(input_ids, attention_mask))
        return c, h
