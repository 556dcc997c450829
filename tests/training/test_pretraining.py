"""The resumable BERT pre-training trainer (``bertsent.training.pretraining``) and its command line."""
import subprocess
import sys

import pytest
import torch

from bertsent.training.pretraining import PretrainingConfig, pretrain


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
    result = pretrain(tmp_path / "run", PretrainingConfig(max_steps=40, objective="ltr", **SMOKE), show_progress=False)
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
