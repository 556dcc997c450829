"""The one training loop of the book: every trainer (SG / SG-OPT, GLUE fine-tuning, BERT pre-training) is a
small adapter over it, and so is any new method (a pooler trained with a contrastive loss, GLUE fine-tuning
with an extra loss term or extra heads).

What the loop does, at each step ``s`` from the saved step to ``settings.total_steps``:

1. ``torch.manual_seed(step_seed * 1_000_003 + s)`` when ``settings.step_seed`` is set (this step's dropout and
   other draws, so a resumed run makes exactly the updates of an uninterrupted one);
2. ``batch = method.batches(s)``; ``losses = method.loss(model, batch)``: a dict of named loss terms whose
   ``"loss"`` entry is what is backpropagated (the others are kept for hooks and error messages);
3. stops with :class:`TrainingDivergedError` (naming the step, the learning rate and the last good checkpoint)
   when ``losses["loss"]`` is not finite, or (after the step) when the median loss of the last
   ``settings.divergence_window`` steps has grown past ``settings.divergence_factor`` times the running loss's
   lowest value so far (:func:`check_divergence`); the checkpoint on disk
   is then the last one written before, never one of the diverged model;
4. ``method.backward(model, losses)`` (``accelerator.backward(losses["loss"])`` unless overridden),
   ``method.before_optimizer_step(model, losses)`` (gradients are there: record or change them), gradient
   clipping at ``settings.max_grad_norm``, the optimizer and scheduler steps;
5. at step 0 (``evaluate_at_start``), every ``eval_every`` steps and at the last step: ``method.evaluate(model)``
   (a dev score, higher is better, or None), a history row (``method.record``), best-checkpoint selection
   (``best_step``, ``best_dev``; ``best.pt`` under ``output_dir``), ``method.after_evaluation`` and, at steps
   after 0 that are multiples of ``checkpoint_every`` and at the end (``checkpoint_at_end``), an atomic resumable
   checkpoint (``checkpoint.pt``: weights, optimizer, scheduler, loop state, the configuration that wrote it);
6. a tqdm progress bar; everything runs under ``accelerate``: one process, or several (``accelerate launch
   --multi_gpu``, ``torchrun --nproc_per_node N``) that share each step's batch (:meth:`Method.shard`), with
   the model wrapped for data parallelism (averaged gradients) and the schedule advancing once per step.

At the end the best checkpoint's weights are put back into the model (``settings.restore_best``).

The shared parts are also usable on their own: :func:`seed_everything`, :func:`seed_step`,
:func:`decay_parameter_groups`, :func:`adamw`, :func:`warmup_schedule`, :func:`clip_gradients`,
:func:`check_finite`, :func:`check_divergence`, :class:`Checkpoint`, :func:`smoothed`.

A method plugs in by subclassing :class:`Method` (only ``batches`` and ``loss`` are required)::

    class PoolerMethod(Method):
        def __init__(self, pairs, dev):
            self.pairs, self.dev = pairs, dev
        def batches(self, step):
            return self.to_device(self.shard(self.pairs.batch(step)))
        def loss(self, model, batch):
            a, b = model(batch["a"]), model(batch["b"])
            return {"loss": info_nce(a, b, temperature=0.05)}
        def evaluate(self, model):
            return stsb_dev_spearman(model, self.dev)

    optimizer = adamw(decay_parameter_groups(pooler, 0.01), 1e-3)
    result = train_loop(PoolerMethod(pairs, dev), pooler, optimizer, warmup_schedule(optimizer, 50, 500),
                        LoopSettings(total_steps=500, eval_every=50, output_dir=run_dir, config=asdict(config)))
    result.best_step, result.best_dev, result.start_dev, result.history

An extra loss term is one more entry of the dict (``{"loss": ce + lam * cl, "ce": ce, "contrastive": cl}``);
a gradient check between two terms overrides ``backward`` (``torch.autograd.grad`` of each term with
``retain_graph=True``, then ``super().backward(model, losses)``); gradient surgery overrides
``before_optimizer_step``; extra heads are modules of the trained model (the optimizer gets their parameters).
"""
from __future__ import annotations

import collections
import math
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from tqdm import tqdm

from ..report.io import atomic_torch_save

METHOD_VERSION = 1  # bump when the maths changes

STEP_SEED_STRIDE = 1_000_003  # step s of a run seeded with `seed` draws from torch.manual_seed(seed * stride + s)


class TrainingDivergedError(FloatingPointError):
    """A loss that is not finite; the message names the step, the learning rate and the last good checkpoint."""


# --- the shared parts ---------------------------------------------------------------------------------------

def seed_everything(seed: int) -> None:
    """Seed torch's global generator: the model's initialisation, and every draw of a run without per-step seeds.

    The library's other draws (sentence orders, masks, subsamples) use their own seeded generators
    (``np.random.default_rng([seed, epoch])``), so nothing else needs seeding.
    """
    torch.manual_seed(seed)


def seed_step(seed: int, step: int) -> None:
    """Seed the draws of one training step (dropout, sampled views) from ``(seed, step)`` alone."""
    torch.manual_seed(seed * STEP_SEED_STRIDE + step)


def decay_parameter_groups(model: torch.nn.Module, weight_decay: float,
                           head_learning_rate: float | None = None) -> list[dict]:
    """AdamW's two parameter groups as in BERT: weight decay on the weights, none on biases and LayerNorm.

    Only parameters that require gradients; the decayed group comes first. ``head_learning_rate``: the parameters
    outside the pre-trained encoder (the module named by ``model.base_model_prefix``, as transformers' models name
    it: every newly initialised head) form two more groups, the same split, at that learning rate.
    """
    def split(named, **group) -> list[dict]:
        no_decay = [p for n, p in named if n.endswith("bias") or "LayerNorm" in n]
        decay = [p for n, p in named if not (n.endswith("bias") or "LayerNorm" in n)]
        return [{"params": decay, "weight_decay": weight_decay, **group},
                {"params": no_decay, "weight_decay": 0.0, **group}]

    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    if head_learning_rate is None:
        return split(named)
    prefix = getattr(model, "base_model_prefix", None)
    if not prefix or not isinstance(getattr(model, prefix, None), torch.nn.Module):
        raise ValueError(f"{type(model).__name__} names no pre-trained encoder (base_model_prefix), so its heads "
                         f"cannot be told apart. Fix: set base_model_prefix to the encoder's attribute name, or "
                         f"leave head_learning_rate unset.")
    encoder = [(n, p) for n, p in named if n.startswith(prefix + ".")]
    heads = [(n, p) for n, p in named if not n.startswith(prefix + ".")]
    return split(encoder) + split(heads, lr=head_learning_rate)


def adamw(parameters, learning_rate: float, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0.0,
          fused: bool | None = None) -> torch.optim.AdamW:
    """``torch.optim.AdamW`` over ``parameters`` (a list of tensors, or groups from :func:`decay_parameter_groups`,
    whose own ``weight_decay`` wins over the argument). ``fused=True``: one kernel for every parameter (on a
    2-core CPU a third of the unfused step time)."""
    return torch.optim.AdamW(parameters, lr=learning_rate, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                             fused=fused)


def warmup_schedule(optimizer, warmup_steps: int, total_steps: int, shape: str = "linear"):
    """Linear warm-up over ``warmup_steps``, then linear decay to 0 at ``total_steps`` (``shape="linear"``, BERT's)
    or a constant rate (``shape="constant"``). Each trainer rounds its own warm-up steps (SG: the released
    code's ``ceil(ratio * total)``; BERT pre-training and fine-tuning: ``int(ratio * total)``)."""
    from transformers import get_constant_schedule_with_warmup, get_linear_schedule_with_warmup

    if shape == "linear":
        return get_linear_schedule_with_warmup(optimizer, warmup_steps, total_steps)
    if shape == "constant":
        return get_constant_schedule_with_warmup(optimizer, warmup_steps)
    raise ValueError(f"schedule shape must be 'linear' or 'constant', not {shape!r}")


class WarmupStableDecay(torch.optim.lr_scheduler.LRScheduler):
    """Warm-up, stable, decay: a learning-rate schedule for a run of open length (Hägele et al. 2024; Hu et al. 2024,
    MiniCPM). The multiplier of the base rate at step ``s`` is

        f(s) = s / W                                  for s < W               (linear warm-up over W steps)
             = 1                                      until the decay starts  (stable)
             = max(0, 1 - (s - D) / N)                for s >= D              (linear decay to 0 over N steps)

    times ``min(1, (s - R + 1) / M)`` for ``s >= R`` when the run was restarted at step ``R`` with a fresh optimizer
    (a re-warm-up over ``M`` steps, so Adam's new moment estimates do not meet the full rate at once).

    The decay is started on purpose: ``decay_start`` None keeps the rate constant, so a run can be continued for as
    long as it needs and its decay set once its curve says so. Only the step and the re-warm-up are saved in
    :meth:`state_dict`: the warm-up and decay come from the configuration each time, so a continued run may move its
    decay (a later ``decay_start``) without meeting a stale one from its checkpoint.
    """

    def __init__(self, optimizer, warmup_steps: int, decay_start: int | None = None, decay_steps: int = 0,
                 rewarm_from: int | None = None, rewarm_steps: int = 0):
        if decay_start is not None and decay_steps < 1:
            raise ValueError(f"A decay phase needs decay_steps >= 1, not {decay_steps!r}")
        self.warmup_steps, self.decay_start, self.decay_steps = warmup_steps, decay_start, decay_steps
        self.rewarm_from, self.rewarm_steps = rewarm_from, rewarm_steps
        super().__init__(optimizer)
        if rewarm_from:  # a run continued from saved weights at step rewarm_from: its schedule is there already
            self.last_epoch = rewarm_from
            self._set_rates()

    def factor(self, step: int) -> float:
        value = step / self.warmup_steps if step < self.warmup_steps else 1.0
        if self.decay_start is not None and step >= self.decay_start:
            value *= max(0.0, 1.0 - (step - self.decay_start) / self.decay_steps)
        if self.rewarm_from is not None and self.rewarm_steps and step >= self.rewarm_from:
            value *= min(1.0, (step - self.rewarm_from + 1) / self.rewarm_steps)
        return value

    def get_lr(self) -> list[float]:
        return [base * self.factor(self.last_epoch) for base in self.base_lrs]

    def _set_rates(self) -> None:
        for group, rate in zip(self.optimizer.param_groups, self.get_lr()):
            group["lr"] = rate
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self) -> dict:
        return {"last_epoch": self.last_epoch, "base_lrs": self.base_lrs, "rewarm_from": self.rewarm_from,
                "rewarm_steps": self.rewarm_steps}

    def load_state_dict(self, state_dict: dict) -> None:
        self.last_epoch, self.base_lrs = state_dict["last_epoch"], list(state_dict["base_lrs"])
        self.rewarm_from, self.rewarm_steps = state_dict["rewarm_from"], state_dict["rewarm_steps"]
        self._set_rates()


def clip_gradients(accelerator, parameters, max_norm: float | None):
    """Clip the gradients' global norm at ``max_norm`` (None: no clipping); returns the norm before clipping."""
    if max_norm is None:
        return None
    return accelerator.clip_grad_norm_(parameters, max_norm)


def smoothed(previous: float, value: float, weight: float) -> float:
    """An exponential moving average: ``value`` at first (``previous`` NaN), then ``(1 - weight) * previous +
    weight * value``."""
    return value if math.isnan(previous) else (1 - weight) * previous + weight * value


def check_finite(losses: dict, step: int, learning_rate: float, checkpoint: str, advice: str = "",
                 error: type[Exception] = TrainingDivergedError, what: str = "Loss") -> None:
    """Raise ``error`` when ``losses["loss"]`` is NaN or infinite, naming the step, the learning rate, every
    named term, and ``checkpoint`` (where the last good state is)."""
    total = losses["loss"]
    if torch.isfinite(total):
        return
    terms = "".join(f"; {name} {float(torch.as_tensor(value).detach()):.6g}"
                    for name, value in losses.items() if name != "loss")
    raise error(f"{what} became {total.item()} at step {step} (learning rate {learning_rate:.3g}{terms}). "
                f"{advice + ' ' if advice else ''}The last good checkpoint: {checkpoint}.")


def check_divergence(recent, lowest: float, first: float, step: int, learning_rate: float, checkpoint: str,
                     advice: str = "", error: type[Exception] = TrainingDivergedError, factor: float | None = 10.0,
                     window: int = 10) -> None:
    """Raise ``error`` when the median of the ``recent`` losses (the last ``window`` steps'; fewer: no check) is
    above ``factor`` times ``lowest``, the running (smoothed) loss's lowest value so far. The median over a window
    lets one outlier batch pass; the bound is at least ``factor`` times a tenth of ``first`` (the running loss at
    the first step), so a loss that falls near zero does not turn noise into a divergence, and a loss at or below
    zero never trips it. One line: the step, the loss, its lowest, the learning rate, the likely cause and
    ``checkpoint``. ``factor`` None: no check."""
    if factor is None or len(recent) < window:
        return
    median = sorted(recent)[len(recent) // 2]
    bound = factor * max(lowest, abs(first) / 10)
    if bound <= 0 or not median > bound:  # NaN is check_finite's
        return
    raise error(f"Loss diverged at step {step}: its median over the last {len(recent)} steps, {median:.6g}, is over "
                f"{factor:g} times its lowest running average {lowest:.6g} (learning rate {learning_rate:.3g}); the "
                f"likely cause is a learning rate too high for this model. {advice + ' ' if advice else ''}"
                f"The last good checkpoint: {checkpoint}.")


class Checkpoint:
    """A run's resumable checkpoint file, written atomically (the old file or the new one, never half).

    It holds ``{"model", "optimizer", "scheduler", "state", "config"}``; :meth:`load` refuses a file that another
    configuration wrote.
    """

    def __init__(self, path: Path | None, config: dict | None):
        self.path, self.config = (Path(path) if path is not None else None), config

    def load(self) -> dict | None:
        if self.path is None or not self.path.is_file():
            return None
        checkpoint = torch.load(self.path, map_location="cpu", weights_only=False)
        if checkpoint["config"] != self.config:
            raise ValueError(f"{self.path} was written with a different configuration; "
                             f"use another output directory or resume=False.")
        return checkpoint

    def save(self, weights: dict, optimizer, scheduler, state: dict) -> None:
        atomic_torch_save({"model": weights, "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                           "state": state, "config": self.config}, self.path)


# --- the adapter --------------------------------------------------------------------------------------------

class Method:
    """What a training method gives the loop. Override :meth:`batches` and :meth:`loss`; the rest has defaults.

    ``self.accelerator`` is set by the loop before anything is called (:meth:`shard` and :meth:`to_device` use it).
    ``model`` arguments: :meth:`loss` gets the prepared model (wrapped for data parallelism under several
    processes; call it, do not reach into it); every other hook gets the unwrapped module.
    """

    accelerator = None
    diverged_error: type[Exception] = TrainingDivergedError
    divergence_advice = "Fix: lower the learning rate."

    # required
    def batches(self, step: int) -> Any:
        """The batch of training step ``step`` (this process's share of it, on ``self.accelerator.device``)."""
        raise NotImplementedError

    def loss(self, model, batch) -> dict[str, torch.Tensor]:
        """Named loss terms; ``"loss"`` is backpropagated."""
        raise NotImplementedError

    # optional
    def evaluate(self, model) -> float | None:
        """The dev score that selects the best checkpoint (higher is better), or None: no selection."""
        return None

    def initial_state(self) -> dict:
        """The loop state of a new run (step, selection, history, seconds; a method may add counters)."""
        return {"step": 0, "best_dev": -math.inf, "best_step": -1, "history": [], "seconds": 0.0}

    def record(self, state: dict, score: float | None, running_loss: float) -> dict:
        """The history row of an evaluation (``score`` None: a row between evaluations, see ``log_every``)."""
        return {"step": state["step"], "dev": score, "loss": None if math.isnan(running_loss) else running_loss}

    def after_evaluation(self, state: dict, model) -> None:
        """Called at every evaluation, after the selection and before the checkpoint."""

    def backward(self, model, losses: dict) -> None:
        """Backpropagate ``losses["loss"]`` (override to take each term's gradients first)."""
        self.accelerator.backward(losses["loss"])

    def before_optimizer_step(self, model, losses: dict) -> None:
        """Gradients are in ``.grad`` (not clipped yet): record them, or change them (gradient surgery)."""

    def resumed(self, state: dict) -> None:
        """Called once when a checkpoint was loaded, with its loop state: take back what the method keeps there
        (e.g. a per-step log that the result summarises)."""

    def after_step(self, state: dict, batch, losses: dict) -> None:
        """After the update (``state["step"]`` counts it): counters such as tokens seen."""

    def progress(self, state: dict, running_loss: float) -> dict | None:
        """The progress bar's postfix after a step (None: leave it)."""
        postfix = {"loss": f"{running_loss:.3f}"}
        if state.get("best_step", -1) >= 0:
            postfix["best_dev"] = f"{state['best_dev']:.2f}"
        return postfix

    def trainable_parameters(self, model) -> list:
        return [p for p in model.parameters() if p.requires_grad]

    def checkpoint_weights(self, model) -> dict:
        """The weights a resumable checkpoint keeps."""
        return model.state_dict()

    def load_checkpoint_weights(self, model, weights: dict) -> None:
        model.load_state_dict(weights)

    def best_weights(self, model) -> dict:
        """The weights ``best.pt`` keeps (the model that is selected and, at the end, restored)."""
        return model.state_dict()

    def load_best_weights(self, model, weights: dict) -> None:
        model.load_state_dict(weights)

    # helpers for batches()
    def shard(self, rows):
        """This process's share of a batch: every ``num_processes``-th row from ``process_index`` (a list, or a
        dict of tensors / a tokenizer output); the whole batch under one process."""
        accelerator = self.accelerator
        if accelerator is None or accelerator.num_processes == 1:
            return rows
        part = slice(accelerator.process_index, None, accelerator.num_processes)
        if isinstance(rows, list):
            return rows[part] or rows
        return {key: value[part] for key, value in rows.items()}

    def to_device(self, batch):
        return batch.to(self.accelerator.device) if hasattr(batch, "to") else {
            key: value.to(self.accelerator.device) for key, value in batch.items()}


# --- the loop -----------------------------------------------------------------------------------------------

@dataclass
class LoopSettings:
    """How the loop runs (the method's maths lives in the :class:`Method`)."""
    total_steps: int
    output_dir: Path | None = None  # checkpoint.pt and best.pt; None: neither (no resumption)
    config: dict | None = None  # written into checkpoints; resuming refuses a checkpoint of another one
    eval_every: int | None = None  # None: evaluate only at the start (evaluate_at_start) and at the last step
    evaluate_at_start: bool = True  # the untrained model is a candidate too (step 0)
    checkpoint_every: int = 1  # a checkpoint at evaluations whose step is a multiple of this, and at the last
    # also at the last step; False for a trainer that deletes its checkpoint when the run finishes (writing it
    # would only cost the time: for a short run most of it)
    checkpoint_at_end: bool = True
    log_every: int | None = None  # history rows of the running loss alone between evaluations
    max_grad_norm: float | None = 1.0
    step_seed: int | None = None  # seed each step from (step_seed, step); None: one global stream
    loss_smoothing: float = 0.1  # running loss: (1 - w) * running + w * loss
    # stop when the loss exceeds this many times the running loss's lowest (check_divergence); None: NaN/inf only
    divergence_factor: float | None = 10.0
    divergence_window: int = 10  # ... the median of the last this many steps' losses does
    resume: bool = True
    restore_best: bool = True  # put best.pt's weights back at the end (when one was written)
    stop_after: int | None = None  # leave after this many steps of this call, as if interrupted (a checkpoint is written)
    # evaluate (a history row, a selection) before leaving at stop_after / stop_after_seconds; False: only the
    # checkpoint, so that the resumed run's history is the uninterrupted one's
    evaluate_at_stop: bool = True
    write_best: bool = True  # keep best.pt (and restore it, restore_best); False for a trainer without selection
    # also a checkpoint whenever this many minutes of wall time have passed since the last one (None: only at
    # evaluations), so an interruption loses at most that much of a long run
    checkpoint_minutes: float | None = None
    # leave (after an evaluation and a checkpoint) once this call has run this many seconds: one stretch of a run
    # that is continued later; every process leaves at the same step
    stop_after_seconds: float | None = None
    show_progress: bool = True
    description: str = ""


@dataclass
class LoopResult:
    state: dict  # the loop state: step, history, seconds, best_dev / best_step (with selection), method counters
    steps_this_call: int
    checkpoint: Path | None = None

    @property
    def steps(self) -> int:
        return self.state["step"]

    @property
    def history(self) -> list[dict]:
        return self.state["history"]

    @property
    def seconds(self) -> float:
        return self.state["seconds"]

    @property
    def best_step(self) -> int:
        return self.state.get("best_step", -1)

    @property
    def best_dev(self) -> float:
        return self.state.get("best_dev", -math.inf)

    @property
    def start_dev(self) -> float | None:
        """The dev score at step 0 (None: not evaluated there)."""
        first = self.state["history"][0] if self.state["history"] else {}
        return first.get("dev") if first.get("step") == 0 else None


def cpu_runs_bf16_fast() -> bool:
    """Whether this CPU has native bfloat16 matrix products (oneDNN: AVX-512 BF16 or AMX).

    Without them PyTorch computes a bf16 matmul in a scalar reference loop, measured 40x slower than float32 on an
    AVX2-only AMD EPYC: bf16 autocast is a speed-up on one CPU and a trap on the next.
    """
    return bool(torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported())


def effective_precision(mixed_precision: str) -> str:
    """The autocast this machine should use for a requested ``mixed_precision``: ``"bf16"`` falls back to ``"no"``
    (float32) on a CPU without native bf16 products (:func:`cpu_runs_bf16_fast`); a GPU gets what was asked."""
    if mixed_precision == "bf16" and not torch.cuda.is_available() and not cpu_runs_bf16_fast():
        return "no"
    return mixed_precision


def make_accelerator(mixed_precision: str = "no"):
    """An ``accelerate.Accelerator`` on the GPU when there is one (``accelerate launch``: one per process).

    ``mixed_precision`` is what the recipe asks; what runs is :func:`effective_precision` (said in one line when the
    two differ). The precision is a kernel choice, not part of a run's identity, so a run can move between machines.
    """
    from accelerate import Accelerator

    used = effective_precision(mixed_precision)
    if used != mixed_precision and int(os.environ.get("RANK", "0")) == 0:
        print(f"this CPU has no native bfloat16 matrix products: computing in float32 instead of {mixed_precision} "
              "autocast (bf16 would run about 40x slower here)", flush=True)
    return Accelerator(cpu=not torch.cuda.is_available(), mixed_precision=used)


def train_loop(method: Method, model: torch.nn.Module, optimizer, scheduler, settings: LoopSettings,
               accelerator=None) -> LoopResult:
    """Train ``model`` with ``method`` (see the module docstring); resumes from ``output_dir/checkpoint.pt``.

    ``model``, ``optimizer`` and ``scheduler`` are the unprepared objects (the loop loads the checkpoint into them,
    then prepares the model and optimizer with ``accelerator``, by default :func:`make_accelerator`; the scheduler
    steps once per step whatever the number of processes).
    """
    accelerator = accelerator or make_accelerator()
    method.accelerator = accelerator
    output_dir = Path(settings.output_dir) if settings.output_dir is not None else None
    if output_dir is not None:
        output_dir.mkdir(parents=True, exist_ok=True)
    checkpoint = Checkpoint(output_dir / "checkpoint.pt" if output_dir is not None else None, settings.config)
    best_path = output_dir / "best.pt" if output_dir is not None and settings.write_best else None

    state = method.initial_state()
    saved = checkpoint.load() if settings.resume else None
    if saved is not None:
        method.load_checkpoint_weights(model, saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        scheduler.load_state_dict(saved["scheduler"])
        state = saved["state"]
        resumed = state.pop("_loop", None) or {}  # the running loss and random state (older checkpoints: none)
        if accelerator.is_main_process:
            print(f"resuming {settings.description or output_dir.name} from step {state['step']} "
                  f"(checkpoint {checkpoint.path})", file=sys.stderr, flush=True)
        method.resumed(state)
    else:
        resumed = {}
    last_good = {"step": state["step"] if saved is not None else None}
    # Not the scheduler: accelerate steps a prepared one num_processes times per step (it assumes every process
    # reads a batch of its own); here the processes share one batch (Method.shard), so one step is one step.
    model, optimizer = accelerator.prepare(model, optimizer)
    unwrapped = accelerator.unwrap_model(model)
    trainable = method.trainable_parameters(unwrapped)
    running = resumed.get("running", float("nan"))  # a resumed run's history goes on as the uninterrupted one's
    lowest = first = float("nan")  # the running loss's lowest and first values in this call (check_divergence)
    recent = collections.deque(maxlen=settings.divergence_window)  # the last steps' losses (check_divergence)
    total = settings.total_steps

    def last_checkpoint() -> str:
        if last_good["step"] is None:
            return "none written yet" if checkpoint.path is not None else "none (this trainer keeps none)"
        return f"{checkpoint.path} (step {last_good['step']})"

    saved_at = {"time": time.time()}

    def save_checkpoint() -> None:
        if accelerator.is_main_process:
            # with the running loss and, without per-step seeds, the random state: the resumed run's next step
            # draws what the uninterrupted run's did
            extra = {"running": running}
            if settings.step_seed is None:
                extra["rng"] = torch.get_rng_state()
                extra["cuda_rng"] = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None
            checkpoint.save(method.checkpoint_weights(unwrapped), optimizer, scheduler, {**state, "_loop": extra})
        last_good["step"] = state["step"]
        saved_at["time"] = time.time()

    def out_of_time() -> bool:
        """Whether this call's time is up, as every process agrees (the main process's clock decides)."""
        if settings.stop_after_seconds is None:
            return False
        late = torch.tensor([float(time.time() - call_started >= settings.stop_after_seconds)])
        if accelerator.num_processes > 1:
            torch.distributed.broadcast(late, src=0)
        return bool(late.item())

    def evaluate(force_checkpoint: bool = False) -> None:
        score = method.evaluate(unwrapped)
        state["history"].append(method.record(state, score, running))
        if score is not None and score > state["best_dev"]:
            state["best_dev"], state["best_step"] = score, state["step"]
            if best_path is not None and accelerator.is_main_process:
                atomic_torch_save(method.best_weights(unwrapped), best_path)
        method.after_evaluation(state, unwrapped)
        # none at step 0: it would hold nothing a fresh start does not recompute (batches are seeded per step)
        at_end = state["step"] >= total
        due = (settings.checkpoint_at_end if at_end
               else state["step"] > 0 and state["step"] % settings.checkpoint_every == 0)
        if checkpoint.path is not None and (due or force_checkpoint):
            save_checkpoint()

    model.train()
    progress = tqdm(total=total, initial=state["step"], unit="step", desc=settings.description,
                    disable=not settings.show_progress or not accelerator.is_main_process)
    started = time.time() - state["seconds"]
    call_started = time.time()
    if settings.evaluate_at_start and state["step"] == 0 and not state["history"]:
        evaluate()
    steps_this_call = 0
    if settings.step_seed is None and resumed.get("rng") is not None:
        torch.set_rng_state(resumed["rng"])
        if resumed.get("cuda_rng") is not None and len(resumed["cuda_rng"]) == torch.cuda.device_count():
            torch.cuda.set_rng_state_all(resumed["cuda_rng"])
    while state["step"] < total:
        if (settings.stop_after is not None and steps_this_call >= settings.stop_after) or out_of_time():
            if settings.evaluate_at_stop:
                evaluate(force_checkpoint=True)
            elif checkpoint.path is not None:
                save_checkpoint()
            break
        if settings.step_seed is not None:
            seed_step(settings.step_seed, state["step"])
        batch = method.batches(state["step"])
        losses = method.loss(model, batch)
        check_finite(losses, state["step"], scheduler.get_last_lr()[0], last_checkpoint(), method.divergence_advice,
                     method.diverged_error)
        method.backward(unwrapped, losses)
        method.before_optimizer_step(unwrapped, losses)
        clip_gradients(accelerator, trainable, settings.max_grad_norm)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        state["step"] += 1
        steps_this_call += 1
        running = smoothed(running, losses["loss"].item(), settings.loss_smoothing)
        first = running if math.isnan(first) else first
        lowest = running if math.isnan(lowest) else min(lowest, running)
        recent.append(losses["loss"].item())
        check_divergence(recent, lowest, first, state["step"], scheduler.get_last_lr()[0], last_checkpoint(),
                         method.divergence_advice, method.diverged_error, settings.divergence_factor,
                         settings.divergence_window)
        method.after_step(state, batch, losses)
        state["seconds"] = time.time() - started
        progress.update(1)
        postfix = method.progress(state, running)
        if postfix:
            progress.set_postfix(postfix)
        if (settings.eval_every and state["step"] % settings.eval_every == 0) or state["step"] == total:
            evaluate()
        elif settings.log_every and state["step"] % settings.log_every == 0:
            state["history"].append(method.record(state, None, running))
        if (checkpoint.path is not None and settings.checkpoint_minutes is not None and state["step"] < total
                and time.time() - saved_at["time"] >= 60 * settings.checkpoint_minutes):
            save_checkpoint()
    progress.close()

    if settings.restore_best and best_path is not None and state.get("best_step", -1) >= 0:
        accelerator.wait_for_everyone()  # best.pt is written by the main process
        method.load_best_weights(unwrapped, torch.load(best_path, map_location="cpu"))
    return LoopResult(state, steps_this_call, checkpoint.path)
