"""BERT's masked-language-model corruption and the batch layout of a pre-training pair."""
from __future__ import annotations

import numpy as np
import torch

METHOD_VERSION = 1  # bump when the maths changes

# ids below are [PAD], [unusedN], [UNK], [CLS], [SEP], [MASK] in the bert-base-uncased vocabulary: never a
# prediction target, never a random replacement
FIRST_WORD_PIECE = 999
IGNORE_INDEX = -100  # label of a position that is not predicted (PyTorch's cross-entropy default)


def mask_tokens(input_ids: torch.Tensor, candidates: torch.Tensor, mask_token_id: int, random_token_range: tuple[int, int],
                generator: torch.Generator, mask_fraction: float = 0.15, mask_rate: float = 0.8,
                random_rate: float = 0.1) -> tuple[torch.Tensor, torch.Tensor]:
    """Choose and corrupt the positions the masked LM must predict (Devlin et al. 2019, section 3.1).

    In every sequence, ``round(mask_fraction * n)`` of its ``n`` candidate positions (never [CLS], [SEP]
    or padding), at least one, are chosen uniformly at random. A chosen token is replaced by [MASK] with
    probability ``mask_rate`` (80%), by a random word piece with probability ``random_rate`` (10%, drawn
    from ``random_token_range``: the vocabulary without special and unused entries), and kept unchanged
    otherwise (10%). Labels hold the original id at chosen positions and :data:`IGNORE_INDEX` elsewhere.

    Args:
        input_ids: (batch, length) token ids.
        candidates: (batch, length) bool, True where a token may be chosen.
        generator: the random source (seeded by the caller, so a batch is reproducible).
    Returns:
        (corrupted ids, labels), both (batch, length).

    Example::

        ids, labels = mask_tokens(batch_ids, batch_ids > 103, 103, (999, 30522), torch.Generator().manual_seed(0))
    """
    n_candidates = candidates.sum(dim=1)
    n_chosen = torch.clamp(torch.round(n_candidates * mask_fraction), min=1).minimum(n_candidates)
    # rank the candidates of each row in a random order; non-candidates rank last
    scores = torch.rand(input_ids.shape, generator=generator).masked_fill(~candidates, -1.0)
    ranks = scores.argsort(dim=1, descending=True).argsort(dim=1)
    chosen = ranks < n_chosen.unsqueeze(1)
    labels = torch.where(chosen, input_ids, torch.full_like(input_ids, IGNORE_INDEX))
    action = torch.rand(input_ids.shape, generator=generator)
    corrupted = input_ids.clone()
    corrupted[chosen & (action < mask_rate)] = mask_token_id
    use_random = chosen & (action >= mask_rate) & (action < mask_rate + random_rate)
    random_ids = torch.randint(*random_token_range, input_ids.shape, generator=generator, dtype=input_ids.dtype)
    corrupted[use_random] = random_ids[use_random]
    return corrupted, labels


def next_token_labels(input_ids: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
    """Labels of a left-to-right language model: position t is labelled with token t+1 where that token is a
    candidate word piece (never [CLS], [SEP] or padding), :data:`IGNORE_INDEX` elsewhere.

    Predicting only word pieces keeps the targets those the masked LM is scored on, so the two accuracies
    count the same kind of token.
    """
    labels = torch.full_like(input_ids, IGNORE_INDEX)
    follows = candidates[:, 1:]
    labels[:, :-1][follows] = input_ids[:, 1:][follows]
    return labels


def pair_batch(pairs: list[tuple[np.ndarray, np.ndarray]], cls_id: int, sep_id: int, pad_id: int = 0) -> dict:
    """Lay out pairs as ``[CLS] A [SEP] B [SEP]``, padded to the longest; segment ids 0 for A, 1 for B."""
    length = max(len(a) + len(b) + 3 for a, b in pairs)
    input_ids = torch.full((len(pairs), length), pad_id, dtype=torch.long)
    token_type_ids = torch.zeros((len(pairs), length), dtype=torch.long)
    attention_mask = torch.zeros((len(pairs), length), dtype=torch.long)
    candidates = torch.zeros((len(pairs), length), dtype=torch.bool)
    for row, (a, b) in enumerate(pairs):
        ids = np.concatenate([[cls_id], a, [sep_id], b, [sep_id]]).astype(np.int64)
        input_ids[row, :len(ids)] = torch.from_numpy(ids)
        token_type_ids[row, len(a) + 2:len(ids)] = 1
        attention_mask[row, :len(ids)] = 1
        candidates[row, 1:len(a) + 1] = True
        candidates[row, len(a) + 2:len(ids) - 1] = True
    return {"input_ids": input_ids, "token_type_ids": token_type_ids, "attention_mask": attention_mask,
            "candidates": candidates}
