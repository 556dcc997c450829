"""Long pre-training runs in stretches (``bertsent.training.long_run``), the warmup-stable-decay schedule
(``bertsent.training.loop.WarmupStableDecay``) and the loop's time-based checkpoints and stops."""
import json
import shutil
from dataclasses import replace

import pandas as pd
import pytest
import torch

from bertsent.training.long_run import REWARM_STEPS, main, run_config, train_stretch
from bertsent.training.loop import WarmupStableDecay
from bertsent.training.pretraining import PretrainingConfig, pretrain


def rates(scheduler, steps):
    seen = []
    for _ in range(steps):
        seen.append(scheduler.get_last_lr()[0])
        scheduler.optimizer.step()
        scheduler.step()
    return seen


def sgd(rate=1.0):
    return torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=rate)


def test_schedule_warms_up_holds_then_decays_only_once_started():
    assert rates(WarmupStableDecay(sgd(2.0), 4), 8) == [0.0, 0.5, 1.0, 1.5, 2.0, 2.0, 2.0, 2.0]
    held = rates(WarmupStableDecay(sgd(), 2), 50)
    assert held[2:] == [1.0] * 48  # no decay until one is started
    decayed = rates(WarmupStableDecay(sgd(), 2, decay_start=6, decay_steps=4), 12)
    assert decayed == [0.0, 0.5, 1.0, 1.0, 1.0, 1.0, 1.0, 0.75, 0.5, 0.25, 0.0, 0.0]


def test_schedule_rewarms_after_a_restart_with_a_fresh_optimizer():
    restarted = WarmupStableDecay(sgd(), 2, rewarm_from=100, rewarm_steps=4)
    assert restarted.last_epoch == 100
    assert rates(restarted, 5) == [0.25, 0.5, 0.75, 1.0, 1.0]


def test_schedule_state_keeps_the_step_and_rewarm_but_not_the_decay():
    first = WarmupStableDecay(sgd(), 2, rewarm_from=10, rewarm_steps=4)
    rates(first, 3)
    later = WarmupStableDecay(sgd(), 2, decay_start=14, decay_steps=2)  # the run's decay was started since
    later.load_state_dict(first.state_dict())
    assert later.last_epoch == 13 and later.rewarm_from == 10
    assert rates(later, 4) == [1.0, 1.0, 0.5, 0.0]


SMOKE_WSD = dict(size="tiny", batch_size=8, max_length=64, eval_every=4, eval_instances=32, mixed_precision="no",
                 corpus_files=("enwiki-2018.txt.xz",), learning_rate=1e-3, schedule="wsd", warmup_steps=2)


def test_a_wsd_run_interrupted_and_resumed_equals_an_uninterrupted_one(tmp_path):
    config = PretrainingConfig(max_steps=8, **SMOKE_WSD)
    pretrain(tmp_path / "whole", config, show_progress=False)
    pretrain(tmp_path / "split", replace(config, max_steps=5), show_progress=False, stop_after=3)
    # continued with a longer run (the recipe may be extended) to the same step
    pretrain(tmp_path / "split", config, show_progress=False)
    whole = torch.load(tmp_path / "whole" / "checkpoint.pt", weights_only=False)
    split = torch.load(tmp_path / "split" / "checkpoint.pt", weights_only=False)
    assert whole["state"]["step"] == split["state"]["step"] == 8
    assert whole["state"]["tokens"] == split["state"]["tokens"]
    for name, tensor in whole["model"].items():
        assert torch.equal(tensor, split["model"][name]), name
    with pytest.raises(ValueError, match="different configuration"):  # the recipe itself is fixed
        pretrain(tmp_path / "split", replace(config, learning_rate=2e-3), show_progress=False)


def test_the_loop_checkpoints_by_the_clock_and_stops_after_its_time(tmp_path):
    config = PretrainingConfig(max_steps=400, **{**SMOKE_WSD, "eval_every": 1000})
    result = pretrain(tmp_path / "run", config, show_progress=False, stop_after_seconds=0.0, checkpoint_minutes=1e-6)
    saved = torch.load(tmp_path / "run" / "checkpoint.pt", weights_only=False)
    assert result.steps == saved["state"]["step"] < 400  # left at once, with a checkpoint of where it stood


def test_wsd_settings_are_checked():
    with pytest.raises(ValueError, match="runs past the end of the decay"):
        PretrainingConfig(**{**SMOKE_WSD, "max_steps": 20, "decay_start": 10, "decay_steps": 5})
    with pytest.raises(ValueError, match="two phases"):
        PretrainingConfig(**{**SMOKE_WSD, "short_length": 32})
    with pytest.raises(ValueError, match="belong to schedule 'wsd'"):
        PretrainingConfig(decay_start=5, decay_steps=5)
    with pytest.raises(ValueError, match="recipe is fixed"):
        run_config("smoke", learning_rate=1.0)


def test_a_stretch_continues_from_committed_weights_when_the_checkpoint_is_gone(tmp_path):
    roots = dict(runs_root=tmp_path / "runs", committed_root=tmp_path / "committed")
    first = train_stretch("smoke", 10, max_steps=6, **roots)
    committed = tmp_path / "committed" / "smoke"
    record = json.loads((committed / "record.json").read_text())
    assert first["continued_from"] == "new run" and record["step"] == 6 and not first["running"]
    from transformers import AutoModel
    assert AutoModel.from_pretrained(committed).config.num_hidden_layers == 2  # a plain BERT reads it
    exported = {k: v for k, v in torch.load(tmp_path / "runs" / "smoke" / "checkpoint.pt",
                                            weights_only=False)["model"].items()}

    shutil.rmtree(tmp_path / "runs")  # a new machine: only what was committed is left
    second = train_stretch("smoke", 10, max_steps=12, **roots)
    assert second["continued_from"].startswith("committed weights at step 6")
    assert (second["start_step"], second["end_step"]) == (6, 12)
    history = pd.read_csv(committed / "history.csv")
    assert history["step"].tolist()[:3] == [0, 3, 6] and history["step"].iloc[-1] == 12
    # a fresh optimizer meets a re-warmed rate: step 6 + k runs at (k + 1) / REWARM_STEPS of it (the history's
    # rate at step 9 is the one step 9 uses, the fourth after the restart)
    after = history[history["step"] == 9]["learning_rate"].item()
    assert after == pytest.approx(1e-3 * 4 / REWARM_STEPS)
    record = json.loads((committed / "record.json").read_text())
    assert [s["stretch"] for s in record["stretches"]] == [1, 2] and record["tokens"] > first["end_tokens"]
    # it started from the exported (float16) weights, not from a new initialisation
    from safetensors.torch import load_file
    stored = load_file(committed.parent / "smoke" / "model.safetensors")
    assert stored["bert.embeddings.word_embeddings.weight"].dtype == torch.float16
    assert exported["bert.embeddings.word_embeddings.weight"].shape == stored["bert.embeddings.word_embeddings.weight"].shape


def test_another_recipe_does_not_continue_a_committed_run(tmp_path):
    roots = dict(runs_root=tmp_path / "runs", committed_root=tmp_path / "committed")
    train_stretch("smoke", 10, max_steps=3, **roots)
    record_path = tmp_path / "committed" / "smoke" / "record.json"
    record = json.loads(record_path.read_text())
    record["identity"]["learning_rate"] = 5.0
    record_path.write_text(json.dumps(record))
    shutil.rmtree(tmp_path / "runs")
    with pytest.raises(ValueError, match="another recipe"):
        train_stretch("smoke", 10, max_steps=6, **roots)


def test_command_line_checks_its_values():
    with pytest.raises(SystemExit):
        main(["smoke", "--minutes", "0"])
    with pytest.raises(SystemExit):
        main(["no-such-run", "--minutes", "1"])


def test_a_decay_lever_equals_its_parent_decayed_from_the_branch_step(tmp_path):
    roots = dict(runs_root=tmp_path / "runs", committed_root=tmp_path / "committed")
    train_stretch("smoke", 10, max_steps=6, **roots)
    twin = dict(runs_root=tmp_path / "twin", committed_root=tmp_path / "twin_committed")
    shutil.copytree(tmp_path / "runs" / "smoke", tmp_path / "twin" / "smoke")

    lever = train_stretch("smoke-decay", 10, **roots)
    assert lever["continued_from"].startswith("smoke's checkpoint at step 6")
    assert (lever["start_step"], lever["end_step"]) == (6, 10)
    # the parent itself, continued with its decay started at the branch step: the same updates
    train_stretch("smoke", 10, max_steps=10, decay_start=6, decay_steps=4, **twin)
    branched = torch.load(tmp_path / "runs" / "smoke-decay" / "checkpoint.pt", weights_only=False)["model"]
    decayed = torch.load(tmp_path / "twin" / "smoke" / "checkpoint.pt", weights_only=False)["model"]
    for name, tensor in decayed.items():
        assert torch.equal(tensor, branched[name]), name
    assert torch.load(tmp_path / "runs" / "smoke" / "checkpoint.pt", weights_only=False)["state"]["step"] == 6

    committed = tmp_path / "committed" / "smoke-decay"
    record = json.loads((committed / "record.json").read_text())
    assert record["branch"]["parent"] == "smoke" and record["branch"]["branch_step"] == 6
    assert not (committed / "model.safetensors").exists()  # a lever commits its curve, not its weights
    history = pd.read_csv(committed / "history.csv")
    assert history["step"].tolist() == [0, 3, 6, 9, 10]  # the parent's curve up to the branch, then its own


def test_a_lever_changes_one_field_and_keeps_the_parents_optimizer(tmp_path):
    roots = dict(runs_root=tmp_path / "runs", committed_root=tmp_path / "committed")
    train_stretch("smoke", 10, max_steps=6, **roots)
    parent = torch.load(tmp_path / "runs" / "smoke" / "checkpoint.pt", weights_only=False)
    from bertsent.training.long_run import branch_start
    start = branch_start("smoke-mask40", tmp_path / "runs")
    assert start["rewarm_steps"] == 0 and start["state"]["step"] == 6
    moments = start["optimizer"]["state"]
    assert torch.equal(moments[0]["exp_avg_sq"], parent["optimizer"]["state"][0]["exp_avg_sq"])
    train_stretch("smoke-mask40", 10, **roots)
    saved = torch.load(tmp_path / "runs" / "smoke-mask40" / "checkpoint.pt", weights_only=False)
    assert saved["config"]["mask_fraction"] == 0.4 and saved["state"]["step"] == 10
    with pytest.raises(ValueError, match="fixed in BRANCHES"):
        train_stretch("smoke-mask40", 10, max_steps=20, **roots)


def test_a_lever_needs_its_parents_checkpoint(tmp_path):
    with pytest.raises(FileNotFoundError, match="train a stretch of smoke first"):
        train_stretch("smoke-decay", 10, runs_root=tmp_path / "runs", committed_root=tmp_path / "committed")
