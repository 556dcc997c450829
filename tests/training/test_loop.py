"""The shared training loop (``bertsent.training.loop``) on a toy regression: selection, resumption, divergence,
the hooks a new method plugs in (extra loss terms, gradient checks, gradient surgery), the shared parts."""
import math

import pytest
import torch
from torch import nn

from bertsent.training.loop import (Checkpoint, LoopSettings, Method, TrainingDivergedError, adamw,
                                   decay_parameter_groups, smoothed, train_loop, warmup_schedule)


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.dense = nn.Linear(4, 8)
        self.LayerNorm = nn.LayerNorm(8)
        self.out = nn.Linear(8, 1)

    def forward(self, x):
        return self.out(torch.relu(self.LayerNorm(self.dense(x)))).squeeze(-1)


class Toy(Method):
    """y = x . w + noise; batches of 8 rows, seeded by step; dev score = -MSE on a fixed set."""

    def __init__(self, nan_at: int | None = None):
        generator = torch.Generator().manual_seed(0)
        self.w = torch.randn(4, generator=generator)
        self.dev_x = torch.randn(64, 4, generator=generator)
        self.nan_at = nan_at
        self.calls = []

    def batches(self, step):
        x = torch.randn(8, 4, generator=torch.Generator().manual_seed(1000 + step))
        return self.to_device({"x": x, "y": x @ self.w})

    def loss(self, model, batch):
        error = model(batch["x"]) - batch["y"]
        mse = (error ** 2).mean()
        if len(self.calls) == self.nan_at:
            mse = mse * float("nan")
        self.calls.append("loss")
        return {"loss": mse + 0.01 * error.abs().mean(), "mse": mse, "l1": error.abs().mean()}

    def evaluate(self, model):
        with torch.no_grad():
            return -float(((model(self.dev_x) - self.dev_x @ self.w) ** 2).mean())


def build(seed=0, lr=1e-2, total=12):
    torch.manual_seed(seed)
    model = Regressor()
    optimizer = adamw(decay_parameter_groups(model, 0.01), lr)
    return model, optimizer, warmup_schedule(optimizer, 2, total)


def settings(tmp_path, **overrides):
    base = dict(total_steps=12, output_dir=tmp_path, config={"lr": 1e-2}, eval_every=3, step_seed=0,
                show_progress=False)
    return LoopSettings(**{**base, **overrides})


def test_selection_keeps_the_best_step_and_restores_its_weights(tmp_path):
    model, optimizer, scheduler = build(lr=0.3)  # a rate high enough to overshoot now and then
    result = train_loop(Toy(), model, optimizer, scheduler, settings(tmp_path, eval_every=1))
    scores = [row["dev"] for row in result.history]
    assert [row["step"] for row in result.history] == list(range(13))
    assert result.best_dev == max(scores) and result.history[scores.index(max(scores))]["step"] == result.best_step
    assert result.start_dev == scores[0] and result.history[0]["loss"] is None
    assert Toy().evaluate(model) == result.best_dev  # the selected model is in memory at the end, not the last
    best = torch.load(tmp_path / "best.pt")
    assert all(torch.equal(value, best[name]) for name, value in model.state_dict().items())


def test_resumed_run_makes_the_updates_of_an_uninterrupted_one(tmp_path):
    model, optimizer, scheduler = build()
    straight = train_loop(Toy(), model, optimizer, scheduler, settings(tmp_path / "straight"))
    model, optimizer, scheduler = build()
    first = train_loop(Toy(), model, optimizer, scheduler, settings(tmp_path / "split", stop_after=5))
    assert first.steps == 5 and torch.load(tmp_path / "split" / "checkpoint.pt", weights_only=False)["state"]["step"] == 5
    model, optimizer, scheduler = build(seed=1)  # other initial weights: the checkpoint must replace them
    resumed = train_loop(Toy(), model, optimizer, scheduler, settings(tmp_path / "split"))
    assert resumed.steps == 12 and resumed.steps_this_call == 7
    a = torch.load(tmp_path / "straight" / "checkpoint.pt", weights_only=False)
    b = torch.load(tmp_path / "split" / "checkpoint.pt", weights_only=False)
    for name, value in a["model"].items():
        assert torch.equal(value, b["model"][name]), name
    assert resumed.best_dev == straight.best_dev and resumed.best_step == straight.best_step
    with pytest.raises(ValueError, match="different configuration"):
        train_loop(Toy(), *build(), settings(tmp_path / "split", config={"lr": 2e-2}))


@pytest.mark.parametrize("at_end, written", [(True, [6, 12]), (False, [6])])
def test_checkpoints_skip_step_0_and_the_end_when_asked(tmp_path, monkeypatch, at_end, written):
    """A checkpoint at step 0 holds nothing a fresh start does not recompute, and one at the last step is wasted
    where the trainer deletes it as the run finishes (``checkpoint_at_end=False``): neither is written."""
    saved = []
    monkeypatch.setattr(Checkpoint, "save", lambda self, weights, optimizer, scheduler, state: saved.append(state["step"]))
    train_loop(Toy(), *build(), settings(tmp_path, checkpoint_every=6, checkpoint_at_end=at_end))
    assert saved == written


def test_divergence_names_the_step_the_learning_rate_and_the_last_good_checkpoint(tmp_path):
    with pytest.raises(TrainingDivergedError) as caught:
        train_loop(Toy(nan_at=7), *build(), settings(tmp_path, checkpoint_every=3))
    message = str(caught.value)
    assert "at step 7" in message and "learning rate 0.005" in message  # 1e-2 decayed linearly: (12 - 7) / (12 - 2)
    assert f"{tmp_path / 'checkpoint.pt'} (step 6)" in message and "mse nan" in message and "lower the learning rate" in message


def test_a_method_without_checkpoints_says_so_when_it_diverges():
    with pytest.raises(TrainingDivergedError, match=r"none \(this trainer keeps none\)"):
        train_loop(Toy(nan_at=2), *build(), LoopSettings(total_steps=5, show_progress=False))


class GradientCheck(Toy):
    """An ACL-style method: the angle between two terms' gradients at every step, then gradient surgery."""

    def __init__(self):
        super().__init__()
        self.cosines, self.order = [], []

    def backward(self, model, losses):
        params = [p for p in model.parameters() if p.requires_grad]
        g1 = torch.autograd.grad(losses["mse"], params, retain_graph=True)
        g2 = torch.autograd.grad(losses["l1"], params, retain_graph=True)
        flat1, flat2 = torch.cat([g.flatten() for g in g1]), torch.cat([g.flatten() for g in g2])
        self.cosines.append(float(torch.nn.functional.cosine_similarity(flat1, flat2, dim=0)))
        self.order.append("backward")
        super().backward(model, losses)

    def before_optimizer_step(self, model, losses):
        assert all(p.grad is not None for p in model.parameters())
        self.order.append("before_optimizer_step")
        model.out.weight.grad.zero_()  # surgery: the output layer's weights must not move


def test_hooks_see_every_term_and_can_change_the_gradients(tmp_path):
    model, optimizer, scheduler = build(total=4)
    method = GradientCheck()
    frozen_before = model.out.weight.detach().clone()
    result = train_loop(method, model, optimizer, scheduler, settings(tmp_path, total_steps=4, config=None))
    assert len(method.cosines) == 4 and all(-1 <= c <= 1 for c in method.cosines)
    assert method.order == ["backward", "before_optimizer_step"] * 4
    # zero gradients; AdamW's decoupled weight decay alone moves the weights: w * (1 - lr * wd) each step
    assert torch.allclose(model.out.weight, frozen_before * math.prod(1 - lr * 0.01 for lr in
                                                                         [0.0, 0.005, 0.01, 0.005]), atol=1e-7)
    assert result.steps == 4


def test_log_rows_fall_between_evaluations():
    class Logged(Toy):
        def record(self, state, score, running_loss):
            return {"step": state["step"], "dev": score, "loss": running_loss}

    result = train_loop(Logged(), *build(), LoopSettings(total_steps=12, log_every=5, evaluate_at_start=False,
                                                          show_progress=False))
    assert [(row["step"], row["dev"] is None) for row in result.history] == [(5, True), (10, True), (12, False)]
    assert result.start_dev is None


def test_shared_parts():
    model = Regressor()
    decay, no_decay = decay_parameter_groups(model, 0.01)
    names = {id(p): n for n, p in model.named_parameters()}
    assert sorted(names[id(p)] for p in decay["params"]) == ["dense.weight", "out.weight"]
    assert sorted(names[id(p)] for p in no_decay["params"]) == ["LayerNorm.bias", "LayerNorm.weight", "dense.bias",
                                                                "out.bias"]
    assert (decay["weight_decay"], no_decay["weight_decay"]) == (0.01, 0.0)
    optimizer = adamw(model.parameters(), 1.0)
    linear = warmup_schedule(optimizer, 2, 6)
    rates = []
    for _ in range(6):
        rates.append(linear.get_last_lr()[0])
        optimizer.step()
        linear.step()
    assert rates == [0.0, 0.5, 1.0, 0.75, 0.5, 0.25]
    optimizer = adamw(model.parameters(), 1.0)
    constant = warmup_schedule(optimizer, 2, 6, "constant")
    for _ in range(4):
        optimizer.step()
        constant.step()
    assert constant.get_last_lr()[0] == 1.0
    with pytest.raises(ValueError, match="shape"):
        warmup_schedule(optimizer, 2, 6, "cosine")
    assert math.isnan(smoothed(float("nan"), float("nan"), 0.1))
    assert smoothed(float("nan"), 2.0, 0.1) == 2.0 and smoothed(2.0, 4.0, 0.1) == 0.9 * 2.0 + 0.1 * 4.0


def test_checkpoint_is_written_atomically_and_checked(tmp_path):
    model = Regressor()
    optimizer = adamw(model.parameters(), 1.0)
    scheduler = warmup_schedule(optimizer, 1, 2)
    Checkpoint(tmp_path / "c.pt", {"a": 1}).save(model.state_dict(), optimizer, scheduler, {"step": 3})
    assert [p.name for p in tmp_path.iterdir()] == ["c.pt"]  # no temporary file left behind
    assert Checkpoint(tmp_path / "c.pt", {"a": 1}).load()["state"] == {"step": 3}
    assert Checkpoint(tmp_path / "missing.pt", {"a": 1}).load() is None
    with pytest.raises(ValueError, match="different configuration"):
        Checkpoint(tmp_path / "c.pt", {"a": 2}).load()


TWO_PROCESS_SCRIPT = '''
import json, sys
import torch
from torch import nn
from bertsent.training.loop import LoopSettings, Method, adamw, make_accelerator, train_loop, warmup_schedule

class Halves(Method):
    def batches(self, step):
        x = torch.randn(8, 4, generator=torch.Generator().manual_seed(step))
        return self.to_device(self.shard({"x": x, "y": x.sum(-1)}))
    def loss(self, model, batch):
        return {"loss": ((model(batch["x"]).squeeze(-1) - batch["y"]) ** 2).mean()}
    def after_step(self, state, batch, losses):
        state.setdefault("rates", []).append(self.scheduler.get_last_lr()[0])
        state.setdefault("rows", []).append(len(batch["x"]))

accelerator = make_accelerator()
torch.manual_seed(0)
model = nn.Linear(4, 1)
optimizer = adamw(model.parameters(), 0.1)
method = Halves()
method.scheduler = warmup_schedule(optimizer, 2, 10)
result = train_loop(method, model, optimizer, method.scheduler,
                    LoopSettings(total_steps=10, show_progress=False, evaluate_at_start=False), accelerator)
if accelerator.is_main_process:
    json.dump({"processes": accelerator.num_processes, "rates": result.state["rates"], "rows": result.state["rows"],
               "weights": [p.detach().flatten().tolist() for p in model.parameters()]}, open(sys.argv[1], "w"))
'''


def test_two_processes_share_each_step_and_keep_one_schedule(tmp_path):
    """Under two processes (torchrun, gloo on CPU) each takes half of a step's batch, the averaged gradients make
    the single process's updates, and the learning-rate schedule advances once per step (accelerate's prepared
    scheduler would advance twice)."""
    import json
    import subprocess
    import sys

    script = tmp_path / "halves.py"
    script.write_text(TWO_PROCESS_SCRIPT)
    one = subprocess.run([sys.executable, str(script), str(tmp_path / "one.json")], capture_output=True, text=True,
                         timeout=300)
    assert one.returncode == 0, one.stderr[-3000:]
    two = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                          str(script), str(tmp_path / "two.json")], capture_output=True, text=True, timeout=300)
    assert two.returncode == 0, two.stderr[-3000:]
    one, two = (json.loads((tmp_path / f"{n}.json").read_text()) for n in ("one", "two"))
    assert (one["processes"], two["processes"]) == (1, 2)
    assert one["rows"] == [8] * 10 and two["rows"] == [4] * 10
    assert two["rates"] == one["rates"] == pytest.approx([0.05, 0.1, 0.0875, 0.075, 0.0625, 0.05, 0.0375, 0.025,
                                                          0.0125, 0.0])
    for a, b in zip(one["weights"], two["weights"]):
        assert a == pytest.approx(b, abs=1e-5)


def test_heads_may_have_their_own_learning_rate_and_the_encoder_keeps_the_optimizers():
    class WithHead(nn.Module):
        base_model_prefix = "encoder"

        def __init__(self):
            super().__init__()
            self.encoder, self.head = Regressor(), nn.Linear(2, 2)

    model = WithHead()
    names = {id(p): n for n, p in model.named_parameters()}
    groups = decay_parameter_groups(model, 0.01, head_learning_rate=1e-3)
    assert [sorted(names[id(p)] for p in g["params"]) for g in groups] == [
        ["encoder.dense.weight", "encoder.out.weight"],
        ["encoder.LayerNorm.bias", "encoder.LayerNorm.weight", "encoder.dense.bias", "encoder.out.bias"],
        ["head.weight"], ["head.bias"]]
    optimizer = adamw(groups, 5e-5)
    assert [g["lr"] for g in optimizer.param_groups] == [5e-5, 5e-5, 1e-3, 1e-3]
    assert [g["weight_decay"] for g in optimizer.param_groups] == [0.01, 0.0, 0.01, 0.0]
    assert len(decay_parameter_groups(model, 0.01)) == 2  # unset: BERT's two groups over every parameter
    with pytest.raises(ValueError, match="base_model_prefix"):
        decay_parameter_groups(Regressor(), 0.01, head_learning_rate=1e-3)


def test_a_resumed_run_says_from_which_step_and_continues_the_running_loss(tmp_path, capsys):
    """One line when a checkpoint is loaded; with evaluate_at_stop=False the history (running loss included) is the
    uninterrupted run's, and a run without per-step seeds draws what it would have drawn (the random state is in
    the checkpoint)."""
    class Noisy(Toy):  # draws from torch's global stream every step, as dropout does
        def loss(self, model, batch):
            losses = super().loss(model, batch)
            return {**losses, "loss": losses["loss"] * (1 + 0.1 * torch.rand(()))}

    def run(directory, **overrides):
        return train_loop(Noisy(), *build(), settings(directory, step_seed=None, eval_every=3, log_every=1,
                                                      evaluate_at_stop=False, description="toy", **overrides))

    straight = run(tmp_path / "straight")
    run(tmp_path / "split", stop_after=5)
    capsys.readouterr()
    resumed = run(tmp_path / "split")
    err = capsys.readouterr().err
    assert err.count("resuming toy from step 5 (checkpoint ") == 1 and str(tmp_path / "split") in err
    assert resumed.history == straight.history
    a = torch.load(tmp_path / "straight" / "checkpoint.pt", weights_only=False)["model"]
    b = torch.load(tmp_path / "split" / "checkpoint.pt", weights_only=False)["model"]
    assert all(torch.equal(a[name], b[name]) for name in a)


def test_bf16_autocast_falls_back_to_float32_on_a_cpu_without_native_bf16(monkeypatch, capsys):
    from bertsent.training import loop

    monkeypatch.setattr(loop.torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(loop, "cpu_runs_bf16_fast", lambda: False)
    assert loop.effective_precision("bf16") == "no"
    assert loop.make_accelerator("bf16").mixed_precision == "no"
    assert "float32 instead of bf16" in capsys.readouterr().out
    monkeypatch.setattr(loop, "cpu_runs_bf16_fast", lambda: True)
    assert loop.effective_precision("bf16") == "bf16"
    assert loop.effective_precision("no") == "no"
