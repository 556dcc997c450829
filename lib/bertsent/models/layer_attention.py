r"""Layer-wise attention pooling (Oh, Kim, Lee, Huang and Lim, COLING 2022, "Don't Judge a Language Model by Its
Last Layer"): a sentence vector read from every hidden state of the encoder, weighted by learned attention.

Notation: a sentence's hidden states h^(0) .. h^(L-1) (index 0 = the embedding output, so L = 13 for BERT-base,
``L`` is the **number of hidden states**, not of transformer layers), d the hidden size.

- s_l: the sentence-token readout of hidden state l: the [CLS] vector for an encoder, the last real token's
  vector for a causal model (:func:`bertsent.encode.causal_pooling.last_token_pooling`);
- t_l: the mean of the token vectors of hidden state l (padding excluded; for a causal model the BOS token is
  left out too, as in :mod:`bertsent.encode.causal_pooling`).

The pooler (``pooling="att_both_cls"``, the paper's LayerAttPooler):

.. math::

    q_l = \mathrm{RReLU}(W_Q s_l), \quad k_m = \mathrm{RReLU}(W_K t_m), \quad v_m = \mathrm{RReLU}(W_V t_m)
    \qquad (W_Q, W_K, W_V \in \mathbb{R}^{d \times d}, \text{ no biases})

    \alpha_{l,m} = \operatorname{softmax}_m\!\Big(\frac{k_m \cdot q_l}{L}\Big)
    \qquad (\textstyle\sum_m \alpha_{l,m} = 1 \text{ for every } l)

    a = \frac{1}{L} \sum_{l=0}^{L-1} \sum_{m=0}^{L-1} \alpha_{l,m} v_m

    z = \tanh\big(W_o [s_{L-1} ; a] + b_o\big) \qquad (W_o \in \mathbb{R}^{d \times 2d})

The scores are divided by L, not by sqrt(d) (the released code's choice). The output layer has a bias (the
released code's ``nn.Linear``); the three projections have none.

**RReLU is random in training mode**: its negative slope is drawn uniformly from [1/8, 1/3] for every element at
every forward pass (PyTorch's defaults), so the pooler is itself a source of noise during training, like
dropout; in eval mode the slope is fixed at (1/8 + 1/3) / 2 = 11/48 and the pooler is deterministic. Call
``model.eval()`` before encoding.

The pooling ablation of the paper, as named options (:data:`POOLINGS`):

| name | sentence vector | learned parameters |
|---|---|---|
| ``cls_last`` | s_{L-1} | none |
| ``mean_last`` | t_{L-1} | none |
| ``cls_mean_last`` | [s_{L-1} ; t_{L-1}] (2d, fixed concatenation) | none |
| ``att_cls`` | tanh(W_o a + b_o), queries, keys and values all from the s_l | W_Q, W_K, W_V, W_o |
| ``att_mean`` | tanh(W_o a + b_o), queries, keys and values all from the t_l | W_Q, W_K, W_V, W_o |
| ``att_both`` | tanh(W_o a + b_o), queries from s_l, keys and values from t_l | W_Q, W_K, W_V, W_o |
| ``att_both_cls`` | tanh(W_o [s_{L-1} ; a] + b_o): the LayerAttPooler | W_Q, W_K, W_V, W_o (d x 2d) |

For the attention variants without the concatenation the output layer is d x d (our reading: the paper's ablation
rows keep the MLP of eqs. 4-5 and drop only the [CLS] input).
"""
from __future__ import annotations

import numpy as np
import torch
from torch import nn

from ..encode.causal_pooling import causal_mean_pooling, last_token_pooling
from ..encode.pooling import cls_pooling, mean_pooling

METHOD_VERSION = 1  # bump when the maths changes

POOLINGS = {
    "cls_last": "last hidden state's [CLS] (causal: last token) vector; no parameters",
    "mean_last": "last hidden state's token mean; no parameters",
    "cls_mean_last": "[CLS]-last and mean-last concatenated (2d); no parameters",
    "att_cls": "attention over every hidden state's [CLS]: queries, keys and values from s_l; tanh(W a)",
    "att_mean": "attention over every hidden state's mean: queries, keys and values from t_l; tanh(W a)",
    "att_both": "queries from [CLS] s_l, keys and values from means t_l; tanh(W a)",
    "att_both_cls": "the LayerAttPooler: att_both, then tanh(W [s_last ; a])",
}
FIXED_POOLINGS = ("cls_last", "mean_last", "cls_mean_last")
ATTENTION_POOLINGS = ("att_cls", "att_mean", "att_both", "att_both_cls")
DEFAULT_POOLING = "att_both_cls"


def check_pooling(pooling: str) -> str:
    """``pooling`` if it is a known option; otherwise a ValueError listing the known ones."""
    if pooling not in POOLINGS:
        raise ValueError(f"Unknown pooling {pooling!r}. Known: {', '.join(POOLINGS)}. "
                         f"Fix: pass one of those (the paper's pooler is {DEFAULT_POOLING!r}).")
    return pooling


def layer_readouts(hidden_states, mask: torch.Tensor, causal: bool = False,
                   skip_bos: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """``(s, t)``, each ``(batch, L, d)``: every hidden state's sentence-token vector (s_l: [CLS], or the last
    real token when ``causal``) and token mean (t_l; a causal model's BOS left out when ``skip_bos``)."""
    if causal:
        s = [last_token_pooling(h, mask) for h in hidden_states]
        t = [causal_mean_pooling(h, mask, skip_bos) for h in hidden_states]
    else:
        s = [cls_pooling(h, mask) for h in hidden_states]
        t = [mean_pooling(h, mask) for h in hidden_states]
    return torch.stack(s, dim=1), torch.stack(t, dim=1)


def fixed_pooling(s: torch.Tensor, t: torch.Tensor, which: str) -> torch.Tensor:
    """A fixed readout of the last hidden state from ``(batch, L, d)`` readouts: ``cls_last`` s_{L-1},
    ``mean_last`` t_{L-1}, ``cls_mean_last`` [s_{L-1} ; t_{L-1}]."""
    if which == "cls_last":
        return s[:, -1]
    if which == "mean_last":
        return t[:, -1]
    if which == "cls_mean_last":
        return torch.cat([s[:, -1], t[:, -1]], dim=-1)
    raise ValueError(f"Unknown fixed readout {which!r}. Known: {', '.join(FIXED_POOLINGS)}.")


class LayerAttentionPooler(nn.Module):
    """The pooler of the module docstring over precomputed readouts ``s``, ``t`` of shape ``(batch, L, d)``.

    Args:
        dim: hidden size d.
        n_states: L, the number of hidden states (embedding output included); the scores are divided by it.
        pooling: one of :data:`POOLINGS` (the fixed ones have no parameters).

    ``forward(s, t)`` returns the sentence vectors ``z`` ``(batch, d)`` (``(batch, 2d)`` for ``cls_mean_last``)
    and keeps the attention weights of the last call in ``self.alpha`` ``(batch, L, L)``, rows l = queries,
    columns m = keys (None for the fixed poolings).
    """

    def __init__(self, dim: int, n_states: int, pooling: str = DEFAULT_POOLING):
        super().__init__()
        self.dim, self.n_states, self.pooling = int(dim), int(n_states), check_pooling(pooling)
        if self.n_states < 1:
            raise ValueError(f"n_states must be the number of hidden states (>= 1), not {n_states}.")
        self.alpha: torch.Tensor | None = None
        if pooling in ATTENTION_POOLINGS:
            self.query = nn.Linear(dim, dim, bias=False)
            self.key = nn.Linear(dim, dim, bias=False)
            self.value = nn.Linear(dim, dim, bias=False)
            self.activation = nn.RReLU()  # random negative slope in training mode, 11/48 in eval mode
            self.output = nn.Linear(2 * dim if pooling == "att_both_cls" else dim, dim)

    @property
    def output_dim(self) -> int:
        return 2 * self.dim if self.pooling == "cls_mean_last" else self.dim

    def attend(self, queries: torch.Tensor, keys: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(a, alpha)``: a = (1/L) sum_l sum_m alpha_lm v_m, alpha_lm = softmax_m(k_m . q_l / L)."""
        q = self.activation(self.query(queries))
        k = self.activation(self.key(keys))
        v = self.activation(self.value(keys))
        alpha = torch.softmax(q @ k.transpose(1, 2) / self.n_states, dim=-1)  # (b, L queries, L keys)
        a = (alpha @ v).mean(dim=1)
        return a, alpha

    def forward(self, s: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        if s.shape != t.shape or s.dim() != 3:
            raise ValueError(f"s and t must both be (batch, L, d); got {tuple(s.shape)} and {tuple(t.shape)}.")
        if s.shape[1] != self.n_states or s.shape[2] != self.dim:
            raise ValueError(f"This pooler was built for L={self.n_states} hidden states of size {self.dim}, got "
                             f"L={s.shape[1]}, d={s.shape[2]}. Fix: build it with the encoder's "
                             "num_hidden_layers + 1 and hidden_size.")
        self.alpha = None
        if self.pooling in FIXED_POOLINGS:
            return fixed_pooling(s, t, self.pooling)
        queries, keys = {"att_cls": (s, s), "att_mean": (t, t)}.get(self.pooling, (s, t))
        a, self.alpha = self.attend(queries, keys)
        if self.pooling == "att_both_cls":
            a = torch.cat([s[:, -1], a], dim=-1)
        return torch.tanh(self.output(a))


class LayerAttentionModel(nn.Module):
    """An encoder (Hugging Face ``AutoModel``, encoder or causal) and a :class:`LayerAttentionPooler`.

    ``forward(input_ids, attention_mask)`` returns the sentence vectors; ``self.alpha`` holds the last call's
    attention weights ``(batch, L, L)``. :meth:`fixed_readout` gives the trained encoder's [CLS]-last or mean-last
    vectors with the pooler removed (the paper's RQ4).

    Args:
        encoder: the backbone model (all its hidden states are read, ``output_hidden_states=True``).
        pooling: one of :data:`POOLINGS`.
        causal: read s_l as the last real token (a causal LM such as Gemma) instead of [CLS].
        skip_bos: for a causal model whose tokenizer adds BOS: leave it out of the means.
    """

    def __init__(self, encoder: nn.Module, pooling: str = DEFAULT_POOLING, causal: bool = False,
                 skip_bos: bool = True):
        super().__init__()
        config = encoder.config
        text_config = getattr(config, "text_config", None) or config
        self.encoder = encoder
        self.causal, self.skip_bos = bool(causal), bool(skip_bos)
        self.pooler = LayerAttentionPooler(text_config.hidden_size, text_config.num_hidden_layers + 1, pooling)

    @classmethod
    def on_backbone(cls, source, pooling: str = DEFAULT_POOLING) -> "LayerAttentionModel":
        """The model on a loaded backbone (:func:`bertsent.encode.backbones.load_backbone`'s result): a causal one
        (``source.kind == "causal"``) reads its last token, and leaves BOS out of the means where its tokenizer
        adds one (``source.adds_bos``)."""
        return cls(source.model, pooling, causal=getattr(source, "kind", "transformer") == "causal",
                   skip_bos=getattr(source, "adds_bos", False))

    @property
    def pooling(self) -> str:
        return self.pooler.pooling

    @property
    def alpha(self) -> torch.Tensor | None:
        return self.pooler.alpha

    def readouts(self, input_ids, attention_mask) -> tuple[torch.Tensor, torch.Tensor]:
        """``(s, t)`` of every hidden state, each ``(batch, L, d)``."""
        kwargs = {"use_cache": False} if self.causal else {}
        out = self.encoder(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=True, **kwargs)
        return layer_readouts(out.hidden_states, attention_mask, self.causal, self.skip_bos)

    def forward(self, input_ids, attention_mask) -> torch.Tensor:
        s, t = self.readouts(input_ids, attention_mask)
        return self.pooler(s, t)

    def fixed_readout(self, input_ids, attention_mask, which: str = "cls_last") -> torch.Tensor:
        """The encoder's own ``cls_last``, ``mean_last`` or ``cls_mean_last`` vector, the pooler bypassed."""
        if which not in FIXED_POOLINGS:
            raise ValueError(f"Unknown fixed readout {which!r}. Known: {', '.join(FIXED_POOLINGS)}.")
        s, t = self.readouts(input_ids, attention_mask)
        return fixed_pooling(s, t, which)


@torch.no_grad()
def encode_sentences(model: LayerAttentionModel, tokenizer, sentences: list[str], batch_size: int = 64,
                     max_length: int = 64, readout: str | None = None):
    """Sentence vectors (numpy, float32) of ``model`` in eval mode, in input order (its mode is restored).
    ``readout``: ``None`` the pooler's output; ``cls_last`` / ``mean_last`` / ``cls_mean_last`` the encoder's
    fixed readout with the pooler removed."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    order = np.argsort([-len(s) for s in sentences], kind="stable")  # similar lengths together: less padding
    out = [None] * len(sentences)
    for start in range(0, len(sentences), batch_size):
        ids = order[start:start + batch_size]
        batch = tokenizer([sentences[i] for i in ids], padding=True, truncation=True, max_length=max_length,
                          return_tensors="pt").to(device)
        if readout is None:
            vectors = model(batch["input_ids"], batch["attention_mask"])
        else:
            vectors = model.fixed_readout(batch["input_ids"], batch["attention_mask"], readout)
        for i, row in zip(ids, vectors.float().cpu().numpy()):
            out[i] = row
    model.train(was_training)
    if not sentences:
        return np.zeros((0, model.pooler.output_dim), dtype=np.float32)
    return np.stack(out).astype(np.float32)
