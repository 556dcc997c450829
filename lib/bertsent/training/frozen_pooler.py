r"""Training a layer-wise attention pooler on a frozen encoder's cached layer readouts (Oh et al., COLING 2022,
the "frozen encoder" arm).

The encoder is frozen (eval mode, no dropout), so the pooler's inputs are the stored readouts ``(s, t)`` of every
hidden state (:mod:`bertsent.experiments.layer_states`) and a training step never runs the encoder. The pooler
(:class:`~bertsent.models.layer_attention.LayerAttentionPooler`) maps them to z; a step is the chapter's
``supervised`` objective (:func:`~bertsent.losses.attention_pooling.supervised_infonce_loss`) on a batch of NLI
triplets (premise z_i, entailment z_i^+, contradiction z_i^-):

.. math::

    \ell_i = -\log \frac{e^{\cos(z_i, z_i^+)/\tau}}
        {\sum_{j=1}^{b} \big( e^{\cos(z_i, z_j^+)/\tau} + e^{\cos(z_i, z_j^-)/\tau + w\,[j = i]} \big)},
    \qquad L = \frac{1}{b}\sum_i \ell_i ,

with the anchors, positives and negatives pooled in one call (as the full model's trainer encodes them in one
forward pass, so RReLU's random slopes are drawn in the same order). AdamW, linear decay without warm-up, gradient
clipping at 1.0, STS-B dev Spearman ("all") of the pooled vectors every ``eval_every`` steps, the best step's
weights kept (the released script's selection).

Initialisation (``init``): ``"release"`` draws every weight of the pooler from normal(0, 0.02) and sets the output
bias to zero, as the released LayerAttPooler code does; ``"default"`` keeps PyTorch's ``nn.Linear`` draw (what the
chapter's fine-tuning arm uses).

Also recorded: the layer weights w_m = mean_l alpha_{l,m} (the weight of v_m in a, averaged over sentences) and
their entropy ratio H(w) / log L (1 = uniform over the L hidden states), and how far the weights moved,
||theta - theta_0|| / ||theta_0|| over the pooler's matrices.

Determinism and resumption: each epoch's batches are seeded from ``(seed, epoch)`` and each step's RReLU draws from
``(seed, step)``; a checkpoint every ``checkpoint_every`` steps holds the pooler, optimizer, scheduler, history and
best weights, so a resumed run makes the updates of an uninterrupted one.
"""
from __future__ import annotations

import copy
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from ..losses.attention_pooling import supervised_infonce_loss
from ..models.layer_attention import ATTENTION_POOLINGS, LayerAttentionPooler, check_pooling, fixed_pooling
from ..report.io import atomic_torch_save
from .attention_pooling import epoch_batches
from .loop import adamw, seed_everything, seed_step, warmup_schedule

METHOD_VERSION = 1  # bump when the maths changes

INITS = ("release", "default")
# parameter-free readouts scored beside the trained poolers: the chapter's three and two over every hidden state
EXTRA_FIXED = {"mean_layers": "uniform average over hidden states of the token means t_l (the L-uniform weights)",
               "concat_layers": "concatenation of every hidden state's token mean [t_0 ; ... ; t_{L-1}]"}


@dataclass
class FrozenPoolerConfig:
    pooling: str = "att_both_cls"
    temperature: float = 0.05
    hard_negative_weight: float = 0.0  # the chapter's supervised objective (SimCSE's); the release used 1.0
    # the paper's batch per device; the released run gathered 64 x 4 GPUs = 256 rows of negatives, which costs 3.2x
    # the time of a step here (0.59 s against 0.18 s on all-MiniLM-L6-v2's readouts, one loaded core, 2026-12-04)
    batch_size: int = 64
    learning_rate: float = 2e-5
    steps: int = 3000
    warmup_ratio: float = 0.0
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0
    eval_every: int = 100
    init: str = "release"
    seed: int = 42

    def __post_init__(self):
        if self.pooling not in EXTRA_FIXED:
            check_pooling(self.pooling)
        if self.init not in INITS:
            raise ValueError(f"Unknown init {self.init!r}. Known: {', '.join(INITS)}.")
        if self.batch_size < 2:
            raise ValueError(f"batch_size {self.batch_size}: a contrastive batch needs at least 2 rows.")

    @property
    def trainable(self) -> bool:
        return self.pooling in ATTENTION_POOLINGS


@dataclass
class FrozenPoolerResult:
    pooler: LayerAttentionPooler  # the selected weights, eval mode
    steps: int
    best_step: int
    best_dev: float
    seconds: float
    history: list[dict] = field(default_factory=list)
    initial: dict = field(default_factory=dict)  # the step-0 weights


def release_initialisation(pooler: LayerAttentionPooler, std: float = 0.02) -> LayerAttentionPooler:
    """The released code's draw: every linear weight normal(0, ``std``), every bias zero (in place)."""
    with torch.no_grad():
        for module in pooler.modules():
            if isinstance(module, torch.nn.Linear):
                module.weight.normal_(0.0, std)
                if module.bias is not None:
                    module.bias.zero_()
    return pooler


def build_pooler(dim: int, n_states: int, config: FrozenPoolerConfig) -> LayerAttentionPooler:
    """The pooler of ``config`` (seeded from ``config.seed``), initialised as ``config.init`` says."""
    seed_everything(config.seed)
    pooler = LayerAttentionPooler(dim, n_states, config.pooling)
    return release_initialisation(pooler) if config.init == "release" else pooler


def pooled(pooler_or_name, s, t) -> torch.Tensor:
    """Sentence vectors from readouts ``(b, L, d)``: a pooler module, or a parameter-free readout's name
    (the chapter's fixed ones, or :data:`EXTRA_FIXED`)."""
    if isinstance(pooler_or_name, str):
        if pooler_or_name == "mean_layers":
            return t.mean(dim=1)
        if pooler_or_name == "concat_layers":
            return t.flatten(1)
        return fixed_pooling(s, t, pooler_or_name)
    return pooler_or_name(s, t)


def _tensor(array, rows) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(array[rows], dtype=np.float32))


def triplet_loss(pooler: LayerAttentionPooler, s, t, anchor_rows, positive_rows, negative_rows,
                 config: FrozenPoolerConfig) -> torch.Tensor:
    """The supervised loss of one batch of triplets, their readouts read from the arrays ``s``, ``t`` at the rows
    given: anchors, positives and negatives stacked in one pooler call."""
    rows = np.concatenate([anchor_rows, positive_rows, negative_rows])
    z = pooler(_tensor(s, rows), _tensor(t, rows))
    anchor, positive, negative = z.chunk(3)
    return supervised_infonce_loss(anchor, positive, negative, config.temperature, config.hard_negative_weight)


@torch.no_grad()
def encode_states(pooler_or_name, s, t, rows=None, chunk: int = 2048) -> tuple[np.ndarray, np.ndarray | None]:
    """``(vectors, mean alpha)``: pooled vectors of the given rows (all when None) in eval mode, and the attention
    weights (L x L) averaged over them (None for a parameter-free readout)."""
    rows = np.arange(len(s)) if rows is None else np.asarray(rows)
    module = not isinstance(pooler_or_name, str)
    if module:
        was_training = pooler_or_name.training
        pooler_or_name.eval()
    out, alpha_sum = [], None
    for start in range(0, len(rows), chunk):
        ids = rows[start:start + chunk]
        out.append(pooled(pooler_or_name, _tensor(s, ids), _tensor(t, ids)).numpy())
        alpha = getattr(pooler_or_name, "alpha", None) if module else None
        if alpha is not None:
            part = alpha.double().sum(dim=0)
            alpha_sum = part if alpha_sum is None else alpha_sum + part
    if module:
        pooler_or_name.train(was_training)
    vectors = np.concatenate(out) if out else np.zeros((0, 0), dtype=np.float32)
    return vectors, None if alpha_sum is None else (alpha_sum / len(rows)).numpy()


def layer_weights(alpha: np.ndarray) -> np.ndarray:
    """w_m = mean_l alpha_{l,m}: the weight of hidden state m's value in the pooled vector; sums to one."""
    return np.asarray(alpha, dtype=np.float64).mean(axis=0)


def entropy_ratio(weights: np.ndarray) -> float:
    """H(w) / log L: 1 for uniform weights over the L hidden states, 0 for all weight on one."""
    w = np.asarray(weights, dtype=np.float64)
    w = w / w.sum()
    nonzero = w[w > 0]
    return float(-(nonzero * np.log(nonzero)).sum() / np.log(len(w))) if len(w) > 1 else 0.0


def weight_change(pooler: torch.nn.Module, initial: dict) -> float:
    """||theta - theta_0|| / ||theta_0|| over the pooler's weight matrices (biases left out: they start at 0)."""
    moved = base = 0.0
    for name, p in pooler.state_dict().items():
        if name.endswith("weight"):
            moved += float(((p - initial[name]) ** 2).sum())
            base += float((initial[name] ** 2).sum())
    return float(np.sqrt(moved / base)) if base else float("nan")


def train_frozen_pooler(config: FrozenPoolerConfig, s, t, anchor_rows, positive_rows, negative_rows,
                        dev_score: Callable[[LayerAttentionPooler], tuple[float, float | None]] | None = None,
                        checkpoint: Path | None = None, checkpoint_every: int = 500,
                        stop_after: int | None = None, log=None) -> FrozenPoolerResult | None:
    """Train ``config.pooling`` on cached readouts ``s``, ``t`` (``(n, L, d)``; memory maps are fine) with the
    triplets given as row indices into them.

    ``dev_score(pooler) -> (spearman, entropy ratio or None)``: the selection score (evaluated at step 0, every
    ``eval_every`` steps and at the end); None: the last step is kept. ``checkpoint``: a file to resume from and save
    to every ``checkpoint_every`` steps (deleted by the caller once the run is recorded). ``stop_after``: leave after
    that many steps of this call, with a checkpoint written (tests of resumption); returns None then.
    """
    if not config.trainable:
        raise ValueError(f"pooling {config.pooling!r} has no parameters to train. Fix: score it without training.")
    anchor_rows, positive_rows, negative_rows = (np.asarray(r, dtype=np.int64)
                                                 for r in (anchor_rows, positive_rows, negative_rows))
    n_states, dim = s.shape[1], s.shape[2]
    pooler = build_pooler(dim, n_states, config)
    initial = copy.deepcopy(pooler.state_dict())
    optimizer = adamw(list(pooler.parameters()), config.learning_rate, weight_decay=config.weight_decay)
    scheduler = warmup_schedule(optimizer, int(config.warmup_ratio * config.steps), config.steps)
    steps_per_epoch = len(epoch_batches(len(anchor_rows), config.batch_size, config.seed, 0))
    if steps_per_epoch == 0:
        raise ValueError(f"{len(anchor_rows)} triplets make no batch of at least 2.")
    state = {"step": 0, "seconds": 0.0, "history": [], "best_step": 0, "best_dev": float("-inf"),
             "best": copy.deepcopy(pooler.state_dict()), "loss_sum": 0.0, "loss_count": 0}
    if checkpoint is not None and Path(checkpoint).is_file():
        saved = torch.load(checkpoint, map_location="cpu", weights_only=False)
        if saved["config"] != asdict(config):
            raise ValueError(f"{checkpoint} belongs to another configuration. Fix: delete it.")
        pooler.load_state_dict(saved["pooler"])
        optimizer.load_state_dict(saved["optimizer"])
        scheduler.load_state_dict(saved["scheduler"])
        initial = saved["initial"]
        state = saved["state"]
        if log:
            log(f"resuming at step {state['step']} from {checkpoint}")

    def evaluate(step: int) -> None:
        entry = {"step": step, "loss": state["loss_sum"] / state["loss_count"] if state["loss_count"] else None,
                 "learning_rate": scheduler.get_last_lr()[0], "weight_change": weight_change(pooler, initial)}
        if dev_score is not None:
            dev, entropy = dev_score(pooler)
            entry.update(dev=dev, dev_entropy_ratio=entropy)
            if dev > state["best_dev"]:
                state["best_dev"], state["best_step"] = dev, step
                state["best"] = copy.deepcopy(pooler.state_dict())
        state["history"].append(entry)
        state["loss_sum"], state["loss_count"] = 0.0, 0

    def save() -> None:
        if checkpoint is not None:
            Path(checkpoint).parent.mkdir(parents=True, exist_ok=True)
            atomic_torch_save({"config": asdict(config), "pooler": pooler.state_dict(),
                               "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                               "initial": initial, "state": state}, Path(checkpoint))

    start = time.perf_counter()
    if state["step"] == 0 and not state["history"]:
        evaluate(0)
    pooler.train()
    done_here = 0
    while state["step"] < config.steps:
        step = state["step"]
        epoch, position = divmod(step, steps_per_epoch)
        ids = np.asarray(epoch_batches(len(anchor_rows), config.batch_size, config.seed, epoch)[position])
        seed_step(config.seed, step)
        loss = triplet_loss(pooler, s, t, anchor_rows[ids], positive_rows[ids], negative_rows[ids], config)
        if not torch.isfinite(loss):
            raise FloatingPointError(f"loss {loss.item()} at step {step}. Fix: lower the learning rate.")
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if config.max_grad_norm:
            torch.nn.utils.clip_grad_norm_(pooler.parameters(), config.max_grad_norm)
        optimizer.step()
        scheduler.step()
        state["loss_sum"] += float(loss.detach())
        state["loss_count"] += 1
        state["step"] = step + 1
        done_here += 1
        if state["step"] % config.eval_every == 0 or state["step"] == config.steps:
            pooler.eval()
            evaluate(state["step"])
            pooler.train()
        if stop_after and done_here >= stop_after and state["step"] < config.steps:
            state["seconds"] += time.perf_counter() - start
            save()
            return None
        if checkpoint is not None and state["step"] % checkpoint_every == 0 and state["step"] < config.steps:
            state["seconds"] += time.perf_counter() - start
            start = time.perf_counter()
            save()
    state["seconds"] += time.perf_counter() - start
    if dev_score is None:
        state["best_step"], state["best"] = state["step"], copy.deepcopy(pooler.state_dict())
        state["best_dev"] = float("nan")
    pooler.load_state_dict(state["best"])
    pooler.eval()
    return FrozenPoolerResult(pooler, state["step"], state["best_step"], float(state["best_dev"]),
                              float(state["seconds"]), state["history"], initial)
