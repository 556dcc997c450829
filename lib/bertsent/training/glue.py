"""Fine-tune a BERT on a GLUE task the way the BERT paper does, and score it on the dev set.

Recipe (Devlin et al. 2019, section 4.1 and appendix A.3): the final hidden state of [CLS] (through BERT's
pooler) feeds one linear layer; batch 32, 3 epochs, learning rate chosen on dev from {5e-5, 4e-5, 3e-5, 2e-5};
AdamW with 10% linear warm-up then linear decay, as BERT's released fine-tuning code. Metrics as GLUE:
Matthews correlation for CoLA, accuracy and F1 for MRPC, accuracy otherwise. The public test sets have no
labels, so the dev set is both where the learning rate is chosen and where the score is read (as in the
paper's dev-set tables); say so wherever a score is shown.

The classifier on top of BERT is :func:`bertsent.models.classifiers.sequence_classifier` (a left-to-right
model reads its last token instead of [CLS]; see that module).

What is trained beyond the recipe plugs in as a :class:`GlueObjective` (``finetune_glue(..., objective=...)``):
extra loss terms, extra heads (the objective builds the model), its own backward pass (a gradient check between
terms) and per-step history columns. Without one, fine-tuning is the recipe, number for number.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from sklearn.metrics import accuracy_score, f1_score, matthews_corrcoef

from ..data.glue import load_glue
from ..models.classifiers import sequence_classifier
from ..quiet import quiet_transformers
from .loop import (LoopSettings, Method, TrainingDivergedError, adamw, decay_parameter_groups, make_accelerator,
                   seed_everything, train_loop, warmup_schedule)

METHOD_VERSION = 1  # bump when the maths changes

LEARNING_RATES = (5e-5, 4e-5, 3e-5, 2e-5)
# task -> (metrics, the one that chooses the learning rate)
TASK_METRICS = {"CoLA": (("mcc",), "mcc"), "SST-2": (("accuracy",), "accuracy"),
                "MRPC": (("accuracy", "f1"), "accuracy"), "RTE": (("accuracy",), "accuracy"),
                "QNLI": (("accuracy",), "accuracy")}


class FineTuningDivergedError(TrainingDivergedError):
    pass


class FineTuningStopped(RuntimeError):
    """A fine-tuning left before its last step (``stop_after``); its checkpoint in ``run_dir`` resumes it."""


# a resumable checkpoint at least this often (minutes) when a run directory is given: an interrupted run loses at
# most that much
CHECKPOINT_MINUTES = 3.0


@dataclass
class GlueConfig:
    learning_rate: float = 2e-5
    batch_size: int = 32
    epochs: int = 3
    warmup_ratio: float = 0.1
    weight_decay: float = 0.01
    max_length: int = 128
    seed: int = 0
    max_train_examples: int | None = None  # a seeded subsample of the training set (say so when used)
    # a seeded subsample of the dev set, scored instead of all of it: for smoke runs only (the result then says
    # ``max_dev_examples`` and a smaller ``dev_examples``; never a score to compare with a full-dev one)
    max_dev_examples: int | None = None
    # the newly initialised heads' learning rate (a classifier, every exit of a multi-exit model); None: the
    # encoder's. Not in BERT's recipe; in cache keys and results only when set
    head_learning_rate: float | None = None


DEV_SUBSET_SEED = 0  # the dev subsample is the same for every run (seed, learning rate, objective)


def config_identity(config: GlueConfig) -> dict:
    """``config``'s fields as they enter cache keys and results: ``max_dev_examples`` and ``head_learning_rate``
    only when set, so that the keys and results of runs without them are those from before the fields existed."""
    fields = asdict(config)
    for optional in ("max_dev_examples", "head_learning_rate"):
        if fields.get(optional) is None:
            fields.pop(optional, None)
    return fields


def training_rows(task: str, max_train_examples: int | None, seed: int, data_dir=None) -> pd.DataFrame:
    """The training rows a fine-tuning with ``seed`` sees: the whole training set, or a subsample of
    ``max_train_examples`` rows drawn with that seed (each seed its own subsample)."""
    train = load_glue(task, "train", data_dir)
    if max_train_examples and max_train_examples < len(train):
        train = train.sample(max_train_examples, random_state=seed).reset_index(drop=True)
    return train


def dev_subset(dev: pd.DataFrame, max_dev_examples: int | None) -> pd.DataFrame:
    """The dev set scored: all of it, or ``max_dev_examples`` rows drawn with :data:`DEV_SUBSET_SEED` (in the dev
    set's order)."""
    if not max_dev_examples or max_dev_examples >= len(dev):
        return dev
    rows = np.sort(np.random.default_rng(DEV_SUBSET_SEED).choice(len(dev), int(max_dev_examples), replace=False))
    return dev.iloc[rows].reset_index(drop=True)


def glue_metrics(task: str, labels, predictions) -> dict[str, float]:
    """GLUE's metrics for ``task``, x 100."""
    names, _ = TASK_METRICS[task]
    functions = {"mcc": matthews_corrcoef, "accuracy": accuracy_score, "f1": f1_score}
    return {name: 100 * float(functions[name](labels, predictions)) for name in names}


def _encode(rows: pd.DataFrame, tokenizer, max_length: int):
    """One batch of rows: the tokenized sentence (pairs) and the labels."""
    pair = rows["sentence2"].tolist() if rows["sentence2"].notna().all() else None
    encoded = tokenizer(rows["sentence1"].tolist(), pair, padding=True, truncation=True,
                        max_length=max_length, return_tensors="pt")
    return encoded, torch.tensor(rows["label"].to_numpy(dtype=np.int64))


def _batches(frame: pd.DataFrame, tokenizer, batch_size: int, max_length: int, order=None):
    order = np.arange(len(frame)) if order is None else order
    for start in range(0, len(order), batch_size):
        yield _encode(frame.iloc[order[start:start + batch_size]], tokenizer, max_length)


def _model_digest(model_path: str) -> str:
    """sha256 of a local model's weights (a cache key that changes when the checkpoint does)."""
    digest = hashlib.sha256()
    for weights in sorted(Path(model_path).glob("*.safetensors")) or sorted(Path(model_path).glob("*.bin")):
        with open(weights, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()[:16]


def finetune_glue(model_path: str, task: str, config: GlueConfig | None = None, data_dir=None,
                  show_progress: bool = False, cache_dir: str | Path | None = None,
                  history: list | None = None, objective: GlueObjective | None = None,
                  run_dir: str | Path | None = None, checkpoint_minutes: float | None = CHECKPOINT_MINUTES,
                  stop_after: int | None = None) -> dict:
    """Fine-tune the BERT at ``model_path`` on ``task``'s training set; return its dev metrics and costs.

    ``cache_dir``: keep each result as JSON keyed by the weights' sha256, the task and the configuration,
    and return it instead of fine-tuning again. ``history``: a list that receives ``{"step", "loss", "dev"}``
    rows: the dev metric before training (step 0) and after it, the running training loss every 10 steps
    (the dev pass at step 0 uses no random number, so the fine-tuning is the same with or without it).
    ``objective``: what is trained beyond the recipe (:class:`GlueObjective`); its name and configuration join
    the cache key and the result (every step gets a history row when it asks for one).

    ``run_dir``: a folder of this run alone (keyed by the model, the task, the configuration and the objective,
    as :func:`bertsent.experiments.runs.glue_run`'s ``.cache/runs/glue/<key>/``): a resumable checkpoint is written
    there every ``checkpoint_minutes``, and a call that finds one resumes from it (saying from which step) and ends
    with the numbers of an uninterrupted run (the weights, the random state, the history and the objective's log
    are in it); a checkpoint of another configuration is refused. ``stop_after``: leave after this many steps of
    this call with a checkpoint (:class:`FineTuningStopped`; needs ``run_dir``), as an interruption would.
    """
    config = config or GlueConfig()
    if task not in TASK_METRICS:
        raise ValueError(f"Unknown task {task!r}; fine-tuning supports {', '.join(TASK_METRICS)}")
    cached = None
    if cache_dir is not None:
        identity = {"model": _model_digest(model_path), "task": task, **config_identity(config)}
        if objective is not None:
            identity["objective"] = {"name": objective.name, **objective.describe()}
        key = json.dumps(identity, sort_keys=True)
        cached = Path(cache_dir) / f"{task}-{hashlib.sha256(key.encode()).hexdigest()[:16]}.json"
        if cached.is_file():
            return json.loads(cached.read_text())
    if stop_after is not None and run_dir is None:
        raise ValueError("stop_after leaves a checkpoint to resume from, so it needs a run_dir")
    result = _finetune(model_path, task, config, data_dir, show_progress, history, objective, run_dir,
                       checkpoint_minutes, stop_after)
    if cached is not None:
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_suffix(".tmp")
        tmp.write_text(json.dumps(result, indent=2) + "\n")
        os.replace(tmp, cached)
    return result


def glue_logits(model, frame: pd.DataFrame, tokenizer, max_length: int) -> np.ndarray:
    """The classifier's logits on every row of ``frame`` (N, K), in eval mode (no dropout), without gradients."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    logits = []
    with torch.no_grad():
        for encoded, _ in _batches(frame, tokenizer, 128, max_length):
            logits.append(model(**encoded.to(device)).logits.float().cpu().numpy())
    model.train(was_training)
    return np.concatenate(logits)


def _dev_predictions(model, dev: pd.DataFrame, tokenizer, max_length: int) -> np.ndarray:
    return glue_logits(model, dev, tokenizer, max_length).argmax(-1)


class GlueObjective:
    """What a GLUE fine-tuning trains: this base class is the recipe (the classifier's cross-entropy).

    A subclass overrides what it changes: :meth:`build_model` (extra heads), :meth:`loss` (named terms,
    ``"loss"`` backpropagated), :meth:`backward` (e.g. take each term's gradients first; it may replace
    ``losses["loss"]`` with what it backpropagated, which the running loss then shows), :meth:`step_log` (columns
    added to every history row; ``log_every_step``: a history row after every step), :meth:`describe` (its
    configuration: part of the cache key and of the result) and :meth:`result` (result columns after training).
    """

    name = "ce"
    log_every_step = False

    def describe(self) -> dict:
        return {}

    def log_state(self) -> dict:
        """What the objective keeps across steps for :meth:`result` (kept in the run's checkpoints; the same
        objects, so that each checkpoint holds the log so far)."""
        return {}

    def load_log_state(self, state: dict) -> None:
        """Take back :meth:`log_state` from a checkpoint when a run resumes."""

    def build_model(self, model_path: str, num_labels: int = 2) -> torch.nn.Module:
        return sequence_classifier(model_path, num_labels)

    def loss(self, model, batch) -> dict:
        return {"loss": model(**batch).loss}

    def backward(self, method: "GlueMethod", model, losses: dict) -> None:
        method.accelerator.backward(losses["loss"])

    def step_log(self) -> dict:
        return {}

    def result(self, method: "GlueMethod", model) -> dict:
        return {}


class GlueMethod(Method):
    """Fine-tuning on a GLUE task as a :class:`~bertsent.training.loop.Method`: the training rows in a seeded
    order per epoch (the last batch of an epoch may be short), the classifier's cross-entropy, the dev metric
    that chooses the learning rate (``metrics`` keeps every metric of the last evaluation). No dev selection
    of steps: the fine-tuned model is the last one, as in the paper."""

    diverged_error = FineTuningDivergedError

    def __init__(self, task: str, train: pd.DataFrame, dev: pd.DataFrame, tokenizer, config: GlueConfig,
                 objective: GlueObjective | None = None):
        self.task, self.train, self.dev, self.tokenizer, self.config = task, train, dev, tokenizer, config
        self.objective = objective or GlueObjective()
        self.steps_per_epoch = math.ceil(len(train) / config.batch_size)
        self.labels_dev = dev["label"].to_numpy(dtype=np.int64)
        self.metrics: dict[str, float] = {}
        self._order = (None, None)
        self.divergence_advice = f"Fix ({task}): lower the learning rate (now {config.learning_rate})."

    def batches(self, step: int):
        epoch, position = divmod(step, self.steps_per_epoch)
        if self._order[0] != epoch:
            self._order = (epoch, np.random.default_rng([self.config.seed, epoch]).permutation(len(self.train)))
        rows = self._order[1][position * self.config.batch_size:(position + 1) * self.config.batch_size]
        encoded, labels = _encode(self.train.iloc[self.shard(rows.tolist())], self.tokenizer, self.config.max_length)
        return self.to_device({**encoded, "labels": labels})

    def initial_state(self) -> dict:
        return {**super().initial_state(), "objective": self.objective.log_state()}

    def resumed(self, state: dict) -> None:
        self.objective.load_log_state(state.setdefault("objective", {}))

    def loss(self, model, batch) -> dict:
        return self.objective.loss(model, batch)

    def backward(self, model, losses: dict) -> None:
        self.objective.backward(self, model, losses)

    def evaluate(self, model) -> float:
        self.metrics = glue_metrics(self.task, self.labels_dev,
                                    _dev_predictions(model, self.dev, self.tokenizer, self.config.max_length))
        return self.metrics[TASK_METRICS[self.task][1]]

    def record(self, state: dict, score: float | None, running_loss: float) -> dict:
        return {"step": state["step"], "loss": None if math.isnan(running_loss) else running_loss, "dev": score,
                **self.objective.step_log()}


def _finetune(model_path: str, task: str, config: GlueConfig, data_dir, show_progress: bool,
              history: list | None = None, objective: GlueObjective | None = None, run_dir=None,
              checkpoint_minutes: float | None = CHECKPOINT_MINUTES, stop_after: int | None = None) -> dict:
    from transformers import AutoTokenizer

    train = training_rows(task, config.max_train_examples, config.seed, data_dir)
    dev = dev_subset(load_glue(task, "dev", data_dir), config.max_dev_examples)
    accelerator = make_accelerator()
    seed_everything(config.seed)
    with quiet_transformers():  # "newly initialised classifier" is the point of fine-tuning
        tokenizer = AutoTokenizer.from_pretrained(model_path)
        model = (objective or GlueObjective()).build_model(model_path)
    method = GlueMethod(task, train, dev, tokenizer, config, objective)
    total = method.steps_per_epoch * config.epochs
    # fused: one kernel for every parameter (the 30k-word embedding dominates)
    optimizer = adamw(decay_parameter_groups(model, config.weight_decay, config.head_learning_rate),
                      config.learning_rate, fused=True)
    scheduler = warmup_schedule(optimizer, int(config.warmup_ratio * total), total)
    # what a checkpoint in run_dir must have been written by (the folder itself is keyed by the model)
    identity = {"task": task, "config": config_identity(config), "train_examples": len(train),
                "dev_examples": len(dev), "total_steps": total, "history": history is not None}
    if objective is not None:
        identity["objective"] = {"name": objective.name, **objective.describe()}
    # the dev pass at step 0 (eval mode: no dropout) uses no random number: the same fine-tuning with or without it.
    # No selection (the fine-tuned model is the last one), so no best.pt; no checkpoint at the end either (the
    # caller records the run, then removes the folder)
    run = train_loop(method, model, optimizer, scheduler, LoopSettings(
        total_steps=total, evaluate_at_start=history is not None,
        log_every=(1 if method.objective.log_every_step else 10) if history is not None else None,
        max_grad_norm=1.0, show_progress=show_progress,
        description=Path(run_dir).name if run_dir is not None else f"{task} lr={config.learning_rate:g}",
        output_dir=run_dir, config=identity, checkpoint_at_end=False, write_best=False, restore_best=False,
        evaluate_at_stop=False, stop_after=stop_after,
        checkpoint_minutes=checkpoint_minutes if run_dir is not None else None), accelerator)
    if run.steps < total:
        raise FineTuningStopped(f"{task}: stopped at step {run.steps} of {total}; {run.checkpoint} resumes it")
    if history is not None:
        history.extend(run.history)
    extra = {} if objective is None else {"objective": objective.name, **objective.describe(),
                                          **objective.result(method, model)}
    return {"task": task, **config_identity(config), "train_examples": len(train), "dev_examples": len(dev),
            "train_seconds": round(run.seconds, 1), **method.metrics, **extra}


def glue_learning_rate_search(model_path: str, task: str, learning_rates=LEARNING_RATES, data_dir=None,
                              cache_dir=None, **config) -> pd.DataFrame:
    """Fine-tune once per learning rate; one row each, with ``chosen`` marking the best on the dev metric."""
    rows = [finetune_glue(model_path, task, GlueConfig(learning_rate=float(lr), **config), data_dir, cache_dir=cache_dir)
            for lr in learning_rates]
    return mark_chosen(pd.DataFrame(rows), task)


def mark_chosen(table: pd.DataFrame, task: str) -> pd.DataFrame:
    """Add ``chosen``: True on the row (one fine-tuning per learning rate) best on the task's dev metric."""
    key = TASK_METRICS[task][1]
    table["chosen"] = False
    table.loc[table[key].idxmax(), "chosen"] = True
    return table
