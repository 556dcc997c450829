"""BERT's masked-LM corruption, next-token labels and the pair batch layout (``bertsent.data.masking``)."""
import numpy as np
import pytest
import torch

from bertsent.data.masking import IGNORE_INDEX, mask_tokens, next_token_labels, pair_batch


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
