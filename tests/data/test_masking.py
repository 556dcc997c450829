"""BERT's masked-LM corruption, next-token labels and the pair batch layout (``bertsent.data.masking``)."""
import numpy as np
import pytest
import torch

from bertsent.data.masking import FIRST_WORD_PIECE, IGNORE_INDEX, mask_tokens, next_token_labels, pair_batch


def test_masking_statistics_follow_bert():
    generator = torch.Generator().manual_seed(0)
    input_ids = torch.randint(999, 30522, (4000, 128), generator=generator)
    candidates = torch.ones_like(input_ids, dtype=torch.bool)
    candidates[:, 0] = candidates[:, -1] = False  # [CLS] and [SEP]
    candidates[::2, 100:] = False  # padding in half of the rows
    corrupted, labels = mask_tokens(input_ids, candidates, 103, (999, 30522), generator)
    chosen = labels != IGNORE_INDEX
    assert not (chosen & ~candidates).any()
    assert torch.equal(chosen.sum(1), torch.round(candidates.sum(1) * 0.15).long())
    assert torch.equal(labels[chosen], input_ids[chosen])
    assert torch.equal(corrupted[~chosen], input_ids[~chosen])
    n = chosen.sum().item()
    as_mask = (corrupted[chosen] == 103).sum().item() / n
    unchanged = (corrupted[chosen] == input_ids[chosen]).sum().item() / n
    replaced = 1 - as_mask - unchanged
    assert as_mask == pytest.approx(0.8, abs=0.01)
    assert replaced == pytest.approx(0.1, abs=0.01)  # a random draw equal to the original counts as unchanged
    assert unchanged == pytest.approx(0.1, abs=0.01)


def test_pair_batch_layout():
    batch = pair_batch([(np.array([5, 6]), np.array([7])), (np.array([8]), np.array([9, 10, 11]))], 101, 102)
    assert batch["input_ids"].tolist() == [[101, 5, 6, 102, 7, 102, 0], [101, 8, 102, 9, 10, 11, 102]]
    assert batch["token_type_ids"].tolist() == [[0, 0, 0, 0, 1, 1, 0], [0, 0, 0, 1, 1, 1, 1]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1, 1, 1, 1, 0], [1] * 7]
    assert batch["candidates"].tolist() == [[False, True, True, False, True, False, False],
                                            [False, True, False, True, True, True, False]]


def test_next_token_labels_point_at_the_following_word_piece():
    batch = pair_batch([(np.array([5, 6]), np.array([7])), (np.array([8]), np.array([9, 10, 11]))], 101, 102)
    labels = next_token_labels(batch["input_ids"], batch["candidates"])
    x = IGNORE_INDEX
    # [CLS] 5 6 [SEP] 7 [SEP] pad: [CLS] predicts 5, 5 predicts 6, [SEP] predicts 7; special tokens never targets
    assert labels.tolist() == [[5, 6, x, 7, x, x, x], [8, x, 9, 10, 11, x, x]]


def random_replacements(corrupted, labels, mask_id):
    """Ids put in by a random draw: chosen positions that hold neither [MASK] nor the original token."""
    replaced = (labels != IGNORE_INDEX) & (corrupted != mask_id) & (corrupted != labels)
    return corrupted[replaced]


def test_random_replacements_come_from_the_word_piece_range_only():
    generator = torch.Generator().manual_seed(0)
    vocab_size = 30522
    input_ids = torch.randint(FIRST_WORD_PIECE, vocab_size, (4000, 128), generator=generator)
    candidates = torch.ones_like(input_ids, dtype=torch.bool)
    candidates[:, 0] = candidates[:, -1] = False  # [CLS] and [SEP]
    drawn = random_replacements(*mask_tokens(input_ids, candidates, 103, (FIRST_WORD_PIECE, vocab_size), generator),
                                103)
    assert len(drawn) > 7000
    assert drawn.min() >= FIRST_WORD_PIECE and drawn.max() < vocab_size, \
        f"random replacements outside the word pieces [{FIRST_WORD_PIECE}, {vocab_size}): {drawn.min()}..{drawn.max()}"
    assert drawn.min() < FIRST_WORD_PIECE + 100 and drawn.max() >= vocab_size - 100, "the range's ends are not reached"
    # a range of four ids: both ends drawn, nothing outside (the upper bound is exclusive)
    input_ids = torch.full((200, 20), 5000)
    corrupted, labels = mask_tokens(input_ids, torch.ones_like(input_ids, dtype=torch.bool), 103,
                                    (FIRST_WORD_PIECE, FIRST_WORD_PIECE + 4), generator, mask_rate=0.0, random_rate=1.0)
    assert set(corrupted[labels != IGNORE_INDEX].tolist()) == set(range(FIRST_WORD_PIECE, FIRST_WORD_PIECE + 4))
