"""Masked-LM accuracy by position type, its floors, and the probe table."""
import numpy as np
import pandas as pd
import pytest
import torch

from bertsent.evaluation.mlm import (
    accuracy_by_position_type,
    majority_token,
    position_types,
    probe_predictions,
    sentence_batches,
)

MASK = 103


def test_position_types_on_a_hand_made_batch():
    shown = torch.tensor([MASK, 2000, 3000, MASK, 4000])
    target = torch.tensor([1000, 2000, 3001, 1001, 4000])
    assert position_types(shown, target, MASK).tolist() == [0, 2, 1, 0, 2]


def test_accuracy_split_by_position_type():
    # 4 [MASK] positions (1 right), 2 random (1 right), 2 unchanged (2 right: copied)
    shown = torch.tensor([MASK, MASK, MASK, MASK, 5000, 5001, 2000, 2001])
    target = torch.tensor([1996, 1997, 1998, 1999, 3000, 3001, 2000, 2001])
    predicted = torch.tensor([1996, 1996, 1996, 1996, 3000, 1996, 2000, 2001])
    table = accuracy_by_position_type(predicted, shown, target, MASK, majority_token=1996).set_index("positions")
    assert table.loc["mask", "count"] == 4 and table.loc["mask", "accuracy"] == pytest.approx(0.25)
    assert table.loc["random", "accuracy"] == pytest.approx(0.5)
    assert table.loc["unchanged", "accuracy"] == pytest.approx(1.0)
    assert table.loc["all", "accuracy"] == pytest.approx(4 / 8)
    # floors: always "1996" is right once among the [MASK] targets; copying is right only where unchanged
    assert table.loc["mask", "majority_floor"] == pytest.approx(0.25)
    assert table.loc["mask", "copy_floor"] == 0.0
    assert table.loc["unchanged", "copy_floor"] == 1.0
    assert table.loc["all", "copy_floor"] == pytest.approx(2 / 8)
    # every target differs: the best constant guess is right once in each type
    assert table.loc["mask", "best_constant_floor"] == pytest.approx(0.25)
    assert table.loc["random", "best_constant_floor"] == pytest.approx(0.5)


def test_majority_token_on_a_toy_corpus_ignores_special_ids():
    tokens = np.array([0, 0, 0, 0, 0, 101, 102, 2000, 2000, 1012, 2000, 1012, 1012, 1012])
    assert majority_token(tokens, first_word_piece=999) == 1012
    assert majority_token(tokens) == 0


def test_sentence_batches_mask_only_word_pieces(minilm):
    batches = sentence_batches(["The cat sat on the mat.", "A dog."] * 20, minilm.tokenizer, seed=1)
    for batch in batches:
        chosen = batch["labels"] != -100
        assert chosen.any(dim=1).all()  # every sentence predicts at least one word piece
        assert (batch["labels"][chosen] >= 999).all()
        assert (batch["attention_mask"][chosen] == 1).all()


def test_probe_table_from_a_tiny_checkpoint(tmp_path, minilm):
    from transformers import AutoModelForPreTraining

    from bertsent.models.bert_pretraining import new_pretraining_model

    new_pretraining_model("tiny", len(minilm.tokenizer), seed=0).save_pretrained(tmp_path)
    model = AutoModelForPreTraining.from_pretrained(tmp_path)
    table = probe_predictions(model, minilm.tokenizer, ["The capital of France is [MASK].", "A [MASK] b [MASK]."], k=3)
    assert list(table["sentence"]) == ["The capital of France is [MASK].", "A [MASK] b [MASK].", "A [MASK] b [MASK]."]
    assert all(len(top.split()) == 3 for top in table["top_predictions"])


def test_floors_alone_leave_accuracy_empty():
    shown = torch.tensor([MASK, 2000])
    target = torch.tensor([1996, 2000])
    table = accuracy_by_position_type(None, shown, target, MASK, majority_token=1996).set_index("positions")
    assert table["accuracy"].isna().all()
    assert table.loc["mask", "majority_floor"] == 1.0 and table.loc["unchanged", "copy_floor"] == 1.0


def test_word_order_use_tells_a_bag_of_words_model_from_one_that_reads_positions(minilm):
    from bertsent.evaluation.mlm import word_order_use
    from bertsent.models.bert_pretraining import new_pretraining_model

    sentences = ["the cat sat on the mat while the dog slept by the warm fire in the hall",
                 "a man is playing a guitar on the stage in front of a large crowd tonight"]
    model = new_pretraining_model("tiny", len(minilm.tokenizer), seed=0, dropout=0.0, attention="eager")
    with torch.no_grad():
        model.bert.embeddings.position_embeddings.weight.mul_(50.0)  # positions that dominate the states
    reads_positions = word_order_use(model, minilm.tokenizer, sentences)
    with torch.no_grad():
        model.bert.embeddings.position_embeddings.weight.zero_()  # no position at all: a bag of words
    bag_of_words = word_order_use(model, minilm.tokenizer, sentences)
    assert bag_of_words["shuffled_state_cosine"] == pytest.approx(1.0, abs=1e-5)
    assert reads_positions["shuffled_state_cosine"] < 0.9
    assert bag_of_words["sentences"] == 2 and len(bag_of_words["neighbour_attention"]) == 2  # tiny: 2 layers
    assert bag_of_words["uniform_attention"] == pytest.approx(1 / np.mean(
        [len(minilm.tokenizer(s)["input_ids"]) for s in sentences]))
    with pytest.raises(ValueError, match="longer sentences"):
        word_order_use(model, minilm.tokenizer, ["too short"])
