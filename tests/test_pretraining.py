"""Pre-training BERT: corpus reading, sentence pairs, masking, the model's heads, the resumable trainer."""
import lzma

import numpy as np
import pytest
import torch

from bertsent.pretraining.corpus import (
    CorpusChecksumError, CorpusNotFoundError, corpus_file, corpus_root, held_out_documents, iter_documents,
    split_sentences,
)
from bertsent.pretraining.instances import (
    Instances, TokenizedShard, create_instances, majority_baseline, tokenize_documents,
)
from bertsent.pretraining.masking import IGNORE_INDEX, mask_tokens, next_token_labels, pair_batch
from bertsent.pretraining.model import (
    BertForLeftToRightPretraining,
    BertForMaskedPretraining,
    bert_config,
    new_pretraining_model,
)
from bertsent.pretraining.trainer import PretrainingConfig, pretrain


def synthetic_shard(n_documents=40, seed=0):
    """Documents whose tokens name their document and position: id = 1000 * (doc + 1) + position."""
    rng = np.random.default_rng(seed)
    tokens, sentence_lengths, sizes = [], [], []
    for doc in range(n_documents):
        lengths = rng.integers(3, 30, size=int(rng.integers(2, 25)))
        position = 0
        for length in lengths:
            tokens.extend(1000 * (doc + 1) + position + np.arange(length))
            position += length
            sentence_lengths.append(length)
        sizes.append(len(lengths))
    return TokenizedShard(np.array(tokens, dtype=np.int64), np.concatenate([[0], np.cumsum(sentence_lengths)]),
                          np.concatenate([[0], np.cumsum(sizes)]), np.arange(n_documents))


def test_corpus_documents_are_separated_by_blank_lines(tmp_path):
    path = tmp_path / "tiny.txt.xz"
    with lzma.open(path, "wt", encoding="utf-8") as handle:
        handle.write("First doc, para one.\nPara two.\n\nSecond doc.\n\n\nThird doc.\n")
    assert list(iter_documents(path)) == [["First doc, para one.", "Para two."], ["Second doc."], ["Third doc."]]


def test_sentence_split():
    assert split_sentences('He said "Go." Then he left. Why? 3 cats came.') == [
        'He said "Go."', "Then he left.", "Why?", "3 cats came."]
    assert split_sentences("no end mark here") == ["no end mark here"]


def test_held_out_documents_are_one_percent_and_at_least_two():
    flags = held_out_documents(np.arange(10_000))
    assert flags.sum() == 100
    few = held_out_documents(np.array([57, 3, 99, 12, 45, 78, 31]))
    assert few.sum() == 2 and few[1] and few[3]


def test_missing_or_damaged_corpus_gives_a_clear_error(tmp_path, monkeypatch):
    with pytest.raises(CorpusNotFoundError, match="BERTSENT_CORPUS"):
        corpus_root(tmp_path)
    (tmp_path / "enwiki-2018.txt.xz").write_bytes(b"not the corpus")
    with pytest.raises(CorpusChecksumError, match="sha256"):
        corpus_file("enwiki-2018.txt.xz", tmp_path)
    with pytest.raises(ValueError, match="Unknown corpus file"):
        corpus_file("books.txt", tmp_path)


def test_next_sentence_pairs_are_balanced_and_respect_documents():
    shard = synthetic_shard(200)
    made = create_instances(shard, np.arange(200), max_length=64, seed=3)
    assert len(made) > 500
    assert abs(made.is_next.mean() - 0.5) < 0.05
    for i in range(len(made)):
        a, b, is_next = made.pair(i)
        assert 0 < len(a) and 0 < len(b) and len(a) + len(b) <= 64 - 3
        doc_a, doc_b = set(a // 1000), set(b // 1000)
        assert len(doc_a) == 1 and len(doc_b) == 1  # a segment never crosses a document boundary
        assert np.all(np.diff(a) == 1) and np.all(np.diff(b) == 1)  # contiguous text (truncation trims ends only)
        if is_next:
            assert doc_a == doc_b and b[0] > a[-1]  # the continuation comes after A in the same document
        else:
            assert doc_a != doc_b


def test_tokenized_shard_keeps_sentence_and_document_boundaries(minilm):
    documents = [["One sentence. Two sentences here."], ["Another document.", "With two paragraphs!"]]
    shard = tokenize_documents(documents, minilm.tokenizer)
    assert shard.n_documents == 2
    assert [minilm.tokenizer.decode(s) for s in shard.document(0)] == ["one sentence.", "two sentences here."]
    assert [minilm.tokenizer.decode(s) for s in shard.document(1)] == ["another document.", "with two paragraphs!"]


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


SMOKE = dict(size="tiny", batch_size=8, max_length=64, eval_every=4, eval_instances=64, mixed_precision="no",
             corpus_files=("enwiki-2018.txt.xz",), learning_rate=1e-3)


def test_smoke_pretraining_lowers_the_heldout_loss(tmp_path):
    result = pretrain(tmp_path / "run", PretrainingConfig(max_steps=40, **SMOKE), show_progress=False)
    first, last = result.history[0], result.history[-1]
    assert last["step"] == 40 and last["tokens"] > 0
    assert last["heldout_mlm_loss"] < first["heldout_mlm_loss"] - 1.0
    from transformers import AutoModel
    model = AutoModel.from_pretrained(tmp_path / "run" / "model")
    assert model.config.num_hidden_layers == 2


def test_resume_after_interruption_matches_an_uninterrupted_run(tmp_path):
    config = PretrainingConfig(max_steps=8, **SMOKE)
    pretrain(tmp_path / "whole", config, show_progress=False)
    pretrain(tmp_path / "split", config, show_progress=False, stop_after=3)
    assert not (tmp_path / "split" / "model").exists()
    pretrain(tmp_path / "split", config, show_progress=False)
    whole = torch.load(tmp_path / "whole" / "checkpoint.pt", weights_only=False)
    split = torch.load(tmp_path / "split" / "checkpoint.pt", weights_only=False)
    assert whole["state"]["step"] == split["state"]["step"] == 8
    for name, tensor in whole["model"].items():
        assert torch.equal(tensor, split["model"][name]), name
    with pytest.raises(ValueError, match="different configuration"):
        pretrain(tmp_path / "split", PretrainingConfig(max_steps=9, **SMOKE), show_progress=False)


def test_majority_baseline_is_the_share_of_the_most_frequent_token():
    made = Instances(np.array([5, 7, 7, 9, 7, 5], dtype=np.uint16), np.array([0, 3, 6]), np.array([1, 2]),
                     np.array([True, False]))
    assert majority_baseline(made) == (7, 0.5)


def test_asking_again_for_a_finished_run_keeps_its_summary(tmp_path):
    config = PretrainingConfig(max_steps=2, **SMOKE)
    pretrain(tmp_path / "run", config, show_progress=False)
    summary = tmp_path / "run" / "train.json"
    summary.write_text(summary.read_text().replace('"processes": 1', '"processes": 7'))
    result = pretrain(tmp_path / "run", config, show_progress=False)
    assert result.steps == 2 and '"processes": 7' in summary.read_text()


def test_next_token_labels_point_at_the_following_word_piece():
    batch = pair_batch([(np.array([5, 6]), np.array([7])), (np.array([8]), np.array([9, 10, 11]))], 101, 102)
    labels = next_token_labels(batch["input_ids"], batch["candidates"])
    x = IGNORE_INDEX
    # [CLS] 5 6 [SEP] 7 [SEP] pad: [CLS] predicts 5, 5 predicts 6, [SEP] predicts 7; special tokens never targets
    assert labels.tolist() == [[5, 6, x, 7, x, x, x], [8, x, 9, 10, 11, x, x]]


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


def test_smoke_left_to_right_pretraining_lowers_the_heldout_loss(tmp_path):
    result = pretrain(tmp_path / "run", PretrainingConfig(max_steps=40, objective="ltr", **SMOKE), show_progress=False)
    first, last = result.history[0], result.history[-1]
    assert "heldout_mlm_loss" not in last and "heldout_nsp_loss" not in last
    assert last["heldout_ltr_loss"] < first["heldout_ltr_loss"] - 1.0
    from transformers import AutoModel
    assert AutoModel.from_pretrained(tmp_path / "run" / "model").config.is_decoder  # stays left-to-right


def test_ablation_rows_share_everything_but_size_and_objective():
    from dataclasses import asdict

    from bertsent.pretraining.ablations import ablation_config

    a, b = asdict(ablation_config("tiny", "mlm_nsp", 265)), asdict(ablation_config("mini", "ltr", 265))
    assert {k for k in a if a[k] != b[k]} == {"size", "objective"}
    assert a["max_steps"] == 265 and a["eval_every"] == 53


def test_glue_claims_are_read_against_the_dev_set_noise():
    import pandas as pd

    from bertsent.pretraining.ablations import compare_rows, difference_tolerance, glue_scores

    searches = pd.DataFrame([
        {"model": "big", "task": "RTE", "accuracy": 70.0, "dev_examples": 277, "chosen": True},
        {"model": "big", "task": "RTE", "accuracy": 60.0, "dev_examples": 277, "chosen": False},
        {"model": "small", "task": "RTE", "accuracy": 55.0, "dev_examples": 277, "chosen": True},
        {"model": "big", "task": "SST-2", "accuracy": 80.0, "dev_examples": 872, "chosen": True},
        {"model": "small", "task": "SST-2", "accuracy": 79.0, "dev_examples": 872, "chosen": True},
    ])
    scores = glue_scores(searches)
    assert scores.loc["big", "RTE"] == 70.0 and scores.loc["big", "glue"] == 75.0  # the chosen run only
    # two standard errors of a difference of two accuracies near 62.5% on 277 examples
    assert difference_tolerance("RTE", 277, 62.5) == pytest.approx(200 * (2 * 0.625 * 0.375 / 277) ** 0.5)
    checks = compare_rows(scores, searches, "big", "small").set_index("task")
    assert checks.loc["RTE", "verdict"] == "reproduced"        # 15 points > 8.2
    assert checks.loc["SST-2", "verdict"] == "inconclusive"    # 1 point < 3.9
    assert checks.loc["RTE", "difference"] == 15.0
