"""BERT for pre-training (``bertsent.models.bert_pretraining``): the masked-LM head, the left-to-right model."""
import pytest
import torch

from bertsent.data.masking import IGNORE_INDEX, next_token_labels
from bertsent.models.bert_pretraining import (
    BertForLeftToRightPretraining,
    BertForMaskedPretraining,
    bert_config,
    new_pretraining_model,
)
from bertsent.training.pretraining import PretrainingConfig


def test_mlm_head_at_masked_positions_equals_the_full_head():
    torch.manual_seed(0)
    model = BertForMaskedPretraining(bert_config("tiny", vocab_size=200)).eval()
    input_ids = torch.randint(5, 200, (3, 12))
    labels = torch.full_like(input_ids, IGNORE_INDEX)
    labels[:, [2, 5, 7]] = input_ids[:, [2, 5, 7]]
    nsp = torch.tensor([0, 1, 0])
    ours = model(input_ids, labels=labels, next_sentence_label=nsp)
    full = super(BertForMaskedPretraining, model).forward(input_ids=input_ids, labels=labels,
                                                           next_sentence_label=nsp)
    assert ours["loss"].item() == pytest.approx(full.loss.item(), rel=1e-5)


def test_unknown_configuration_values_are_refused():
    with pytest.raises(ValueError, match="objective"):
        PretrainingConfig(objective="rtl")
    with pytest.raises(ValueError, match="causal"):
        BertForLeftToRightPretraining(bert_config("tiny", vocab_size=200))
    with pytest.raises(ValueError, match="size"):
        bert_config("huge")


def test_left_to_right_model_never_looks_ahead():
    torch.manual_seed(0)
    model = new_pretraining_model("tiny", vocab_size=200, objective="ltr").eval()
    input_ids = torch.randint(5, 200, (2, 10))
    changed = input_ids.clone()
    changed[:, 6:] = torch.randint(5, 200, (2, 4))
    with torch.no_grad():
        before = model.bert(input_ids=input_ids).last_hidden_state
        after = model.bert(input_ids=changed).last_hidden_state
    assert torch.allclose(before[:, :6], after[:, :6], atol=1e-6)  # the past does not see the future
    assert not torch.allclose(before[:, 6:], after[:, 6:], atol=1e-3)


def test_left_to_right_loss_is_next_token_cross_entropy():
    torch.manual_seed(0)
    model = new_pretraining_model("tiny", vocab_size=200, objective="ltr").eval()
    input_ids = torch.randint(5, 200, (3, 9))
    labels = next_token_labels(input_ids, torch.ones_like(input_ids, dtype=torch.bool))
    out = model(input_ids, labels=labels)
    with torch.no_grad():
        logits = model.cls.predictions(model.bert(input_ids=input_ids).last_hidden_state)
    by_hand = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, 200), input_ids[:, 1:].reshape(-1))
    assert out["loss"].item() == pytest.approx(by_hand.item(), rel=1e-5)
    assert out["ltr_count"] == 3 * 8
