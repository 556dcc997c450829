"""The training loop stops a run whose loss diverges (``bertsent.training.loop.check_divergence``): within a bounded
number of steps, in one line naming the step, the loss and the likely cause, keeping the last good checkpoint; a
healthy run and a single outlier batch do not trip it; the SG and pre-training command lines stop at learning
rate 10 in one line."""
import collections
import math
import subprocess
import sys

import pytest
import torch

from bertsent.training.loop import LoopSettings, TrainingDivergedError, check_divergence, train_loop

from .test_loop import Toy, build


def test_a_diverging_learning_rate_stops_within_a_bounded_number_of_steps_keeping_the_last_good_checkpoint(tmp_path):
    settings = LoopSettings(total_steps=300, output_dir=tmp_path, config={"lr": 10.0}, eval_every=3, step_seed=0,
                            show_progress=False)
    with pytest.raises(TrainingDivergedError) as caught:
        train_loop(Toy(), *build(lr=10.0, total=300), settings)
    message = str(caught.value)
    assert "\n" not in message and message.startswith("Loss diverged at step ")
    assert "learning rate" in message and "likely cause is a learning rate too high" in message
    step = int(message.split("at step ")[1].split(":")[0])
    assert step <= 60, message
    saved = torch.load(tmp_path / "checkpoint.pt", weights_only=False)
    assert saved["state"]["step"] < step and f"(step {saved['state']['step']})" in message
    assert all(torch.isfinite(v).all() for v in saved["model"].values())


def test_a_healthy_run_is_not_stopped(tmp_path):
    settings = LoopSettings(total_steps=150, eval_every=50, step_seed=0, show_progress=False)
    result = train_loop(Toy(), *build(lr=1e-2, total=150), settings)
    assert result.steps == 150


def test_the_check_can_be_turned_off(tmp_path):
    settings = LoopSettings(total_steps=60, step_seed=0, show_progress=False, divergence_factor=None,
                            evaluate_at_start=False)
    assert train_loop(Toy(), *build(lr=10.0, total=60), settings).steps == 60


def test_the_rule():
    def run(losses, window=10, factor=10.0):
        running, lowest, first, recent = math.nan, math.nan, math.nan, collections.deque(maxlen=window)
        for step, loss in enumerate(losses, 1):
            running = loss if math.isnan(running) else 0.9 * running + 0.1 * loss
            first = running if math.isnan(first) else first
            lowest = running if math.isnan(lowest) else min(lowest, running)
            recent.append(loss)
            check_divergence(recent, lowest, first, step, 1e-3, "ckpt", factor=factor, window=window)

    run([2.0] * 20 + [1000.0] + [2.0] * 30)  # one outlier batch, however large, passes
    run([2.0] * 20 + ([1000.0] * 2 + [2.0] * 8) * 3)  # and two in every ten
    with pytest.raises(TrainingDivergedError, match=r"^Loss diverged at step 25: its median over the last 10 steps, "
                                                     r"1000, is over 10 times its lowest running average 2 "):
        run([2.0] * 20 + [1000.0] * 10)
    with pytest.raises(TrainingDivergedError, match="at step 10:"):
        run([2.0] + [50.0] * 20)  # diverging from the first step on: the bound is 10 times the first loss
    run([0.7] + [0.001] * 50 + [0.05] * 50)  # near zero: the bound is at least the first loss
    run([-1.0] * 5 + [-0.1] * 50)  # at or below zero: never a ratio of it
    run([2.0] * 5 + [1e6] * 20, factor=None)
    run([2.0] * 5 + [1e6] * 4, window=10)  # fewer steps than the window: no check yet


def _tail(done):
    return (done.stdout + done.stderr)[-3000:]


def test_the_self_guided_command_line_stops_at_learning_rate_10(tiny_bert, tmp_path):
    done = subprocess.run([sys.executable, "-m", "bertsent.training.self_guided", "--backbone", tiny_bert,
                           "--output", str(tmp_path / "run"), "--dev-pairs", "24", "--learning-rate", "10",
                           "--max-steps", "80", "--eval-every", "20", "--batch-size", "8", "--max-length", "32",
                           "--head-dim", "32", "--warmup-ratio", "0"],
                          capture_output=True, text=True, env={**__import__("os").environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 1, _tail(done)
    assert done.stderr.count("error: Loss diverged at step") == 1 and "Traceback" not in done.stderr, _tail(done)
    assert not (tmp_path / "run" / "model").exists()  # no "best" model exported from a diverged run


def test_the_pretraining_command_line_stops_at_learning_rate_10(tmp_path):
    sets = dict(size="tiny", batch_size=8, max_length=128, eval_every=20, eval_instances=64, mixed_precision="no",
                learning_rate=10, max_steps=80)
    argv = [sys.executable, "-m", "bertsent.training.pretraining", "--output", str(tmp_path / "run")]
    for name, value in sets.items():
        argv += ["--set", name, str(value)]
    done = subprocess.run(argv, capture_output=True, text=True,
                          env={**__import__("os").environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 1, _tail(done)
    assert done.stderr.count("error: Loss diverged at step") == 1 and "Traceback" not in done.stderr, _tail(done)
