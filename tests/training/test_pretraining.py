"""The resumable BERT pre-training trainer (``bertsent.training.pretraining``) and its command line."""
import subprocess
import sys

import numpy as np
import pytest
import torch

from bertsent.data.masking import FIRST_WORD_PIECE, IGNORE_INDEX
from bertsent.data.pretraining_pairs import Instances
from bertsent.training.pretraining import (
    MASK_ID,
    PairBatches,
    PretrainingConfig,
    PretrainingMethod,
    heldout_floors,
    load_tokenizer,
    pretrain,
    short_phase_steps,
)


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


def test_asking_again_for_a_finished_run_keeps_its_summary(tmp_path):
    config = PretrainingConfig(max_steps=2, **SMOKE)
    pretrain(tmp_path / "run", config, show_progress=False)
    summary = tmp_path / "run" / "train.json"
    summary.write_text(summary.read_text().replace('"processes": 1', '"processes": 7'))
    result = pretrain(tmp_path / "run", config, show_progress=False)
    assert result.steps == 2 and '"processes": 7' in summary.read_text()


def test_smoke_left_to_right_pretraining_lowers_the_heldout_loss(tmp_path):
    # every position is scored on the whole vocabulary (not 15% of them): shorter pairs, three evaluations
    ltr = {**SMOKE, "max_length": 32, "eval_every": 20}
    result = pretrain(tmp_path / "run", PretrainingConfig(max_steps=40, objective="ltr", **ltr), show_progress=False)
    first, last = result.history[0], result.history[-1]
    assert "heldout_mlm_loss" not in last and "heldout_nsp_loss" not in last
    assert last["heldout_ltr_loss"] < first["heldout_ltr_loss"] - 1.0
    from transformers import AutoModel
    assert AutoModel.from_pretrained(tmp_path / "run" / "model").config.is_decoder  # stays left-to-right


def test_command_line_runs_as_a_module():
    done = subprocess.run([sys.executable, "-m", "bertsent.training.pretraining", "--help"], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "--profile" in done.stdout and "--output" in done.stdout


def random_replacements(batch):
    """Ids put in by a random draw: predicted positions that hold neither [MASK] nor the original token."""
    ids, labels = batch["input_ids"], batch["labels"]
    return ids[(labels != IGNORE_INDEX) & (ids != MASK_ID) & (ids != labels)]


class SmallVocabulary:
    """A stand-in tokenizer: the uncased vocabulary's special ids, ``size`` entries in all."""
    cls_token_id, sep_token_id, pad_token_id, mask_token_id = 101, 102, 0, MASK_ID

    def __init__(self, size: int):
        self.vocab_size = size

    def __len__(self) -> int:
        return self.vocab_size


def test_pair_batches_replace_tokens_with_word_pieces_only():
    """The batches the trainer masks draw random replacements from the word pieces, never from the special and
    [unusedN] ids below FIRST_WORD_PIECE (the arguments PairBatches gives mask_tokens)."""
    tokenizer = load_tokenizer()
    vocabulary = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
    # below FIRST_WORD_PIECE: [PAD], [unusedN], [UNK], [CLS], [SEP], [MASK]; from it on, word pieces
    assert all(t.startswith("[") and t.endswith("]") for t in vocabulary[:FIRST_WORD_PIECE])
    assert vocabulary[FIRST_WORD_PIECE] == "!" and tokenizer.mask_token_id == MASK_ID
    rng = np.random.default_rng(0)
    n, length = 640, 120
    instances = Instances(rng.integers(FIRST_WORD_PIECE, len(tokenizer), n * length).astype(np.uint16),
                          np.arange(0, n * length + 1, length), rng.integers(10, length - 10, n), rng.random(n) < 0.5)
    batches = PairBatches(instances, tokenizer, batch_size=64, seed=0, next_sentence=True)
    drawn = torch.cat([random_replacements(batches.batch(step)) for step in range(40)])
    assert len(drawn) > 3000
    assert drawn.min() >= FIRST_WORD_PIECE and drawn.max() < len(tokenizer), \
        f"random replacements outside the word pieces: {drawn.min()}..{drawn.max()}"
    span = len(tokenizer) - FIRST_WORD_PIECE
    assert drawn.min() < FIRST_WORD_PIECE + span // 100 and drawn.max() >= len(tokenizer) - span // 100, \
        "the word-piece range's ends are not reached"
    # a vocabulary with four word pieces: both ends of the range drawn, nothing outside (exact bounds)
    small = SmallVocabulary(FIRST_WORD_PIECE + 4)
    instances = Instances(rng.integers(FIRST_WORD_PIECE, len(small), n * length).astype(np.uint16),
                          instances.starts, instances.a_lengths, instances.is_next)
    batches = PairBatches(instances, small, batch_size=64, seed=0, next_sentence=True)
    drawn = torch.cat([random_replacements(batches.batch(step)) for step in range(10)])
    assert set(drawn.tolist()) == set(range(FIRST_WORD_PIECE, len(small))), "not exactly the range's four ids"


def test_heldout_accuracy_is_split_by_position_type_with_floors(tmp_path):
    import json

    pretrain(tmp_path / "run", PretrainingConfig(max_steps=4, **SMOKE), show_progress=False)
    last = pretrain(tmp_path / "run", PretrainingConfig(max_steps=4, **SMOKE), show_progress=False).history[-1]
    for kind in ("mask", "random", "unchanged"):
        assert 0.0 <= last[f"heldout_mlm_{kind}_accuracy"] <= 1.0
    floors = json.loads((tmp_path / "run" / "train.json").read_text())["mlm_floors"]
    assert floors["unchanged"]["copy"] == 1.0 and floors["mask"]["copy"] == 0.0
    assert floors["mask"]["count"] > floors["random"]["count"] > 0
    assert 0.0 < floors["mask"]["majority"] < 0.2
    assert heldout_floors(PretrainingConfig(max_steps=4, **SMOKE)) == floors  # the same batches, without training


def test_continued_pretraining_starts_from_the_given_weights(tmp_path):
    first = pretrain(tmp_path / "first", PretrainingConfig(max_steps=20, **SMOKE), show_progress=False)
    continued = pretrain(tmp_path / "continued",
                         PretrainingConfig(max_steps=4, init_from=str(tmp_path / "first" / "model"), dropout=0.0,
                                           **SMOKE), show_progress=False)
    assert continued.history[0]["heldout_mlm_loss"] == pytest.approx(first.history[-1]["heldout_mlm_loss"], rel=1e-4)
    with pytest.raises(ValueError, match="schedule"):
        PretrainingConfig(schedule="cosine")


def test_two_phase_pretraining_trains_on_short_pairs_first_then_at_max_length():
    """BERT's two phases: the first short_fraction of the steps draw from the short pairs, the rest from the long."""
    tokenizer = load_tokenizer()
    rng = np.random.default_rng(0)

    def instances(length, n=64):
        return Instances(rng.integers(FIRST_WORD_PIECE, len(tokenizer), n * length).astype(np.uint16),
                         np.arange(0, n * length + 1, length), np.full(n, length // 2), rng.random(n) < 0.5)

    config = PretrainingConfig(max_length=64, short_length=24, short_fraction=0.6, max_steps=10, batch_size=4)
    assert short_phase_steps(config) == 6 and short_phase_steps(PretrainingConfig(max_steps=10)) == 0
    long, short = (PairBatches(instances(n), tokenizer, 4, seed=0, next_sentence=True) for n in (61, 21))
    method = PretrainingMethod(long, [], 0, config, scheduler=None, output_dir=None, short_train=short)
    from bertsent.training.loop import make_accelerator
    method.accelerator = make_accelerator("no")
    lengths = [method.batches(step)["input_ids"].shape[1] for step in range(10)]
    assert lengths == [24] * 6 + [64] * 4, lengths


def test_two_phase_settings_are_checked():
    with pytest.raises(ValueError, match="short_length"):
        PretrainingConfig(max_length=64, short_length=64)
    with pytest.raises(ValueError, match="short_fraction"):
        PretrainingConfig(short_length=32, short_fraction=1.0)


def test_one_phase_run_keys_do_not_change_with_the_two_phase_option():
    """Runs committed before the two-phase option keep their keys (their results are reused, not recomputed)."""
    from bertsent.experiments.runs import pretraining_identity
    one_phase = pretraining_identity(PretrainingConfig(max_steps=10))["config"]
    assert "short_length" not in one_phase and "short_fraction" not in one_phase
    two_phase = pretraining_identity(PretrainingConfig(max_steps=10, short_length=64))["config"]
    assert two_phase["short_length"] == 64 and two_phase["short_fraction"] == 0.9


def test_the_model_learns_masked_words_from_context_on_memorisable_pairs():
    """A wiring check that the unigram plateau of the real runs is not a bug: eight fixed pairs of random word
    pieces, every pair the same length, so a position says nothing about which pair it is in; only the unmasked
    words around a [MASK] do (without them the best guess is right about one time in eight). After 300 steps the
    model gets most [MASK]s right. Batches, masking, labels and the sparse MLM head are the trainer's own."""
    from bertsent.models.bert_pretraining import new_pretraining_model

    tokenizer = load_tokenizer()
    rng = np.random.default_rng(0)
    tokens = rng.integers(FIRST_WORD_PIECE, FIRST_WORD_PIECE + 2000, 8 * 20).astype(np.uint16)
    instances = Instances(tokens, np.arange(0, 8 * 20 + 1, 20), np.full(8, 10), np.ones(8, dtype=bool))
    batches = PairBatches(instances, tokenizer, batch_size=8, seed=0, next_sentence=True)
    torch.manual_seed(0)
    model = new_pretraining_model("tiny", dropout=0.0)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for step in range(300):
        model(**batches.batch(step))["loss"].backward()
        optimizer.step()
        optimizer.zero_grad()
    model.eval()
    with torch.no_grad():
        outputs = [model(**batches.batch(step)) for step in range(1000, 1020)]  # masks never trained on
    accuracy = sum(int(o["mlm_correct"]) for o in outputs) / sum(o["mlm_count"] for o in outputs)
    assert accuracy > 0.5, f"{accuracy:.1%} at [MASK] on eight memorisable pairs: the context does not reach the head"
