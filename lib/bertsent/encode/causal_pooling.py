"""Readouts for a causal (decoder-only) language model such as Gemma 3: one sentence vector per hidden state.

A causal model's token at position t has seen positions 0..t only, so there is no [CLS]: the one position that
has seen the whole sentence is the **last** one. The readouts, each computed for every hidden state
(index 0 = the embedding output, as for BERT):

- ``last``: the last real token's vector, Gemma's analogue of [CLS]: use it wherever a method reads [CLS]
  (:func:`sentence_token_pooling` names the right readout for any backbone). With right padding the last real
  token of a row is its last non-pad position, which is what :func:`last_positions` finds (it finds it with left
  padding too).
- ``mean`` and ``max``: over the sentence's tokens, padding excluded (as :mod:`bertsent.encode.pooling`).
- ``first_last_avg``: BERT-flow's first-last average (first transformer layer and the layer read), from ``mean``.
- ``prompt``: the last token's vector after the sentence is wrapped as
  ``This sentence : "{sentence}" means in one word:"`` (:data:`PROMPT_TEMPLATE`, PromptEOL's template, Jiang
  et al. 2023): the model is asked to compress the sentence into the next word, and the state that predicts it is
  the sentence vector. Computed on a second forward pass, over the prompts.

**The BOS token in mean and max pooling: left out.** The book's BERT mean pooling counts [CLS] and [SEP] as tokens
(as sentence-transformers and SimCSE do) because in a bidirectional encoder their states are functions of the
whole sentence, like every other token's. The analogous set in a causal model is the positions whose state depends
on the sentence, and the BOS token is not one of them: it sits at position 0 and attends only to itself, so its
state is one constant vector, the same for every sentence, at every layer. Averaging it in would only shrink each
sentence vector towards that constant, and in Gemma 3 it is also the attention sink: its vector's norm is 10 to
25 times the other tokens' (median) in hidden states 1-15, which would dominate ``mean`` and decide ``max``
outright. So ``mean`` and ``max`` read positions 1..n-1 (the first real position is dropped when the tokenizer
adds a BOS token, ``skip_bos=True``); a row whose only real token is BOS (the empty sentence) keeps it. ``last``
and ``prompt`` are unaffected (the last token is never the BOS of a non-empty sentence).
"""
from __future__ import annotations

import torch

from .pooling import first_last_avg_from_means, max_pooling, mean_pooling

METHOD_VERSION = 1  # bump when the maths changes

TOKEN_POOLINGS = ("last", "mean", "max", "first_last_avg")  # read from the sentence's own forward pass
CAUSAL_POOLINGS = TOKEN_POOLINGS + ("prompt",)  # "prompt": a second pass over the wrapped sentence
PROMPT_TEMPLATE = 'This sentence : "{sentence}" means in one word:"'


def sentence_token_pooling(backbone) -> str:
    """The readout that stands for [CLS]: ``"last"`` for a causal backbone, ``"cls"`` for an encoder."""
    return getattr(backbone, "sentence_pooling", "cls")


def last_positions(mask: torch.Tensor) -> torch.Tensor:
    """Index of each row's last real (mask 1) position: ``(batch,)``. Right padding: the last non-pad position."""
    positions = torch.arange(1, mask.shape[1] + 1, device=mask.device)
    return (mask.bool() * positions).argmax(dim=1)


def first_positions(mask: torch.Tensor) -> torch.Tensor:
    """Index of each row's first real position (0 with right padding): ``(batch,)``."""
    return mask.bool().to(torch.int8).argmax(dim=1)


def sentence_mask(mask: torch.Tensor, skip_bos: bool = True) -> torch.Tensor:
    """The positions mean and max pooling read: the real tokens less each row's first one (its BOS token) where
    ``skip_bos``; a row with a single real token keeps it."""
    if not skip_bos:
        return mask
    keep = mask.clone()
    rows = torch.arange(mask.shape[0], device=mask.device)
    several = mask.bool().sum(dim=1) > 1
    keep[rows[several], first_positions(mask)[several]] = 0
    return keep


def last_token_pooling(h: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The last real token's vector of each row: ``(batch, dim)``."""
    return h[torch.arange(h.shape[0], device=h.device), last_positions(mask).to(h.device)]


def causal_mean_pooling(h: torch.Tensor, mask: torch.Tensor, skip_bos: bool = True) -> torch.Tensor:
    """Average of the sentence's tokens (BOS left out, see the module's docstring)."""
    return mean_pooling(h, sentence_mask(mask, skip_bos))


def causal_max_pooling(h: torch.Tensor, mask: torch.Tensor, skip_bos: bool = True) -> torch.Tensor:
    """Element-wise maximum over the sentence's tokens (BOS left out, see the module's docstring)."""
    return max_pooling(h, sentence_mask(mask, skip_bos))


def pool_all_layers_causal(hidden_states: tuple[torch.Tensor, ...], mask: torch.Tensor, poolings=TOKEN_POOLINGS,
                           skip_bos: bool = True) -> dict[str, torch.Tensor]:
    """Pool every hidden state of a causal model: ``{pooling: tensor (layers, batch, dim)}``. ``prompt`` is not
    computed here (it needs its own forward pass: the encoder reads ``last`` of the prompts)."""
    unknown = set(poolings) - set(TOKEN_POOLINGS)
    if unknown:
        raise ValueError(f"Unknown causal pooling(s) {sorted(unknown)}. Known here: {', '.join(TOKEN_POOLINGS)} "
                         "(prompt is read by the encoder from a second pass).")
    out = {}
    if "last" in poolings:
        out["last"] = torch.stack([last_token_pooling(h, mask) for h in hidden_states])
    inner = sentence_mask(mask, skip_bos)
    if "mean" in poolings or "first_last_avg" in poolings:
        means = torch.stack([mean_pooling(h, inner) for h in hidden_states])
        if "mean" in poolings:
            out["mean"] = means
        if "first_last_avg" in poolings:
            out["first_last_avg"] = first_last_avg_from_means(means)
    if "max" in poolings:
        out["max"] = torch.stack([max_pooling(h, inner) for h in hidden_states])
    return {name: out[name] for name in poolings}


def prompt_text(sentence: str, template: str = PROMPT_TEMPLATE) -> str:
    """The sentence wrapped in the prompt: ``This sentence : "<sentence>" means in one word:"``."""
    return template.format(sentence=sentence)


def prompt_token_ids(tokenizer, sentences: list[str], max_length: int, template: str = PROMPT_TEMPLATE) -> list[list[int]]:
    """Token ids of each sentence's prompt. A prompt longer than ``max_length`` tokens keeps the whole template
    and shortens the sentence inside it (a plain right truncation would cut off the question, whose last token is
    the readout)."""
    ids = tokenizer([prompt_text(s, template) for s in sentences])["input_ids"]
    for i, sentence in enumerate(sentences):
        excess = len(ids[i]) - max_length
        if excess <= 0:
            continue
        own = tokenizer(sentence, add_special_tokens=False)["input_ids"]
        keep = max(len(own) - excess - 1, 0)  # one spare token: re-tokenising at the cut may merge differently
        while True:
            shortened = tokenizer.decode(own[:keep], skip_special_tokens=True)
            ids[i] = tokenizer(prompt_text(shortened, template))["input_ids"]
            if len(ids[i]) <= max_length or keep == 0:
                break
            keep -= 1
    return ids
