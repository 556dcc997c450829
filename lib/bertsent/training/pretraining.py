"""Pre-train BERT (masked LM + next-sentence prediction, or an ablation) on the local corpus, resumably.

``python -m bertsent.training.pretraining --profile cpu --output DIR`` (or ``accelerate launch -m
bertsent.training.pretraining ...``).
A run directory holds ``checkpoint.pt`` (everything needed to resume), ``history.csv`` (held-out MLM and
NSP accuracy and loss at every evaluation, training loss, tokens seen, tokens per second), ``model/``
(the final weights in ``transformers`` format, with the tokenizer) and ``train.json`` (a summary).
The left-to-right ablation (``objective="ltr"``) logs next-word-piece accuracy and loss as ``heldout_ltr_*``.
"""
from __future__ import annotations

if __name__ == "__main__":  # the command's arguments and corpus are checked before torch and transformers load
    from bertsent.training.pretraining_command import main

    raise SystemExit(main())

import json
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from ..data.masking import FIRST_WORD_PIECE, mask_tokens, next_token_labels, pair_batch
from ..data.pretraining_pairs import Instances, corpus_instances
from ..evaluation.mlm import accuracy_by_position_type, majority_token, masked_positions
from ..models.bert_pretraining import ATTENTION_KERNELS, OBJECTIVES, new_pretraining_model
from ..paths import REPO_ROOT
from ..report.tables import write_table
# the profiles and the command line live apart, so that the command checks its corpus before torch loads
from .pretraining_command import PROFILES, main  # noqa: F401 - re-exported
from .loop import (
    LoopSettings,
    Method,
    WarmupStableDecay,
    adamw,
    decay_parameter_groups,
    make_accelerator,
    train_loop,
    warmup_schedule,
)

METHOD_VERSION = 1  # bump when the maths changes

# the uncased WordPiece vocabulary of bert-base-uncased ships inside all-MiniLM-L6-v2 (byte-identical)
TOKENIZER_SOURCE = "all-minilm-l6-v2"
MASK_ID = 103  # [MASK] in the bert-base-uncased vocabulary


SCHEDULES = ("linear", "constant", "wsd")
HELDOUT_MASK_FRACTION = 0.15
# fields added after runs were stored: at these values a run is the one it was before they existed, so they stay out
# of its key (bertsent.experiments.runs.pretraining_identity)
LATER_FIELD_DEFAULTS = {"warmup_steps": None, "decay_start": None, "decay_steps": 0, "mask_fraction": 0.15,
                        "attention": "sdpa"}
# what a warmup-stable-decay run may change between stretches (it extends the run or starts its decay; the
# attention kernel computes the same maths): the rest must equal the checkpoint's
EXTENDABLE_FIELDS = ("max_steps", "decay_start", "decay_steps", "eval_every", "attention")


@dataclass
class PretrainingConfig:
    size: str = "mini"
    objective: str = "mlm_nsp"  # "mlm": the no-NSP ablation; "ltr": left-to-right LM, no NSP
    max_length: int = 128
    # BERT's two phases (Devlin et al. 2019, appendix A.2: 90% of the steps at length 128, the rest at 512, "to learn
    # the positional embeddings"), scaled down: the first ``short_fraction`` of the steps on pairs of at most
    # ``short_length`` tokens, the rest at ``max_length``. None: one phase at max_length.
    short_length: int | None = None
    short_fraction: float = 0.9
    batch_size: int = 64
    learning_rate: float = 5e-4
    warmup_ratio: float = 0.06
    weight_decay: float = 0.01
    betas: tuple[float, float] = (0.9, 0.999)
    adam_epsilon: float = 1e-6
    max_grad_norm: float = 1.0
    max_steps: int = 1000
    eval_every: int = 100
    eval_instances: int = 2048
    mixed_precision: str = "bf16"  # "bf16" autocast (CPU with AVX-512 BF16, or GPU) or "no"
    seed: int = 0
    data_seed: int = 0  # the pairs drawn from the corpus (cached per value)
    corpus_files: tuple[str, ...] | None = None  # None: every file
    dropout: float = 0.1  # hidden and attention dropout during pre-training (BERT: 0.1); the saved model keeps 0.1
    # a saved BertForPreTraining directory to continue from (None: random init); a relative path is read from the
    # repository's root, so a run's configuration (and key) is the same on every machine
    init_from: str | None = None
    schedule: str = "linear"  # "linear" warm-up then linear decay to 0 (BERT); "constant" after warm-up; "wsd"
    # warm-up, stable, decay (WarmupStableDecay): a run that can be continued for as long as it needs, whose decay
    # is started on purpose by setting decay_start. Its fields: warm-up steps (None: warmup_ratio of max_steps), the
    # step the linear decay to 0 starts (None: no decay yet) and its length in steps
    warmup_steps: int | None = None
    decay_start: int | None = None
    decay_steps: int = 0
    mask_fraction: float = 0.15  # the share of word pieces the masked LM predicts (BERT: 15%)
    attention: str = "sdpa"  # transformers' attention kernel: "sdpa" or "eager" (the same maths; see bert_pretraining)

    def __post_init__(self):
        if self.objective not in OBJECTIVES:
            raise ValueError(f"Unknown objective {self.objective!r}; choose one of {', '.join(OBJECTIVES)}")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {', '.join(SCHEDULES)}, not {self.schedule!r}")
        if self.schedule == "wsd" and self.short_length is not None:
            raise ValueError("A warmup-stable-decay run has no fixed length, so it cannot be cut into BERT's two phases "
                             "by a fraction of its steps: leave short_length None.")
        if self.schedule != "wsd" and (self.decay_start is not None or self.decay_steps):
            raise ValueError(f"decay_start and decay_steps belong to schedule 'wsd', not {self.schedule!r}.")
        if self.decay_start is not None and (self.decay_steps < 1 or self.decay_start < 0):
            raise ValueError(f"A decay phase needs decay_start >= 0 and decay_steps >= 1, not {self.decay_start!r} "
                             f"and {self.decay_steps!r}.")
        if self.decay_start is not None and self.max_steps > self.decay_start + self.decay_steps:
            raise ValueError(f"max_steps {self.max_steps} runs past the end of the decay ({self.decay_start} + "
                             f"{self.decay_steps}), where the learning rate is 0: lower max_steps or move the decay.")
        if self.warmup_steps is not None and self.warmup_steps < 0:
            raise ValueError(f"warmup_steps must be >= 0, not {self.warmup_steps!r}")
        if not 0.0 < self.mask_fraction < 1.0:
            raise ValueError(f"mask_fraction must lie in (0, 1), not {self.mask_fraction!r}")
        if self.attention not in ATTENTION_KERNELS:
            raise ValueError(f"attention must be one of {', '.join(ATTENTION_KERNELS)}, not {self.attention!r}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must lie in [0, 1), not {self.dropout!r}")
        if self.short_length is not None and not 8 <= self.short_length < self.max_length:
            raise ValueError(f"short_length must lie in [8, max_length={self.max_length}), not {self.short_length!r}; "
                             "None trains at max_length throughout")
        if not 0.0 < self.short_fraction < 1.0:
            raise ValueError(f"short_fraction must lie in (0, 1), not {self.short_fraction!r}")
        if self.mixed_precision not in ("bf16", "no"):
            raise ValueError(f"mixed_precision must be 'bf16' or 'no', not {self.mixed_precision!r}")
        self.betas = tuple(self.betas)
        self.corpus_files = tuple(self.corpus_files) if self.corpus_files else None


def checkpoint_identity(config: PretrainingConfig) -> dict:
    """What a checkpoint must share with the configuration that resumes it: all of it, except, for a
    warmup-stable-decay run, the fields that extend it or start its decay (:data:`EXTENDABLE_FIELDS`)."""
    settings = asdict(config)
    if config.schedule == "wsd":
        for name in EXTENDABLE_FIELDS:
            settings.pop(name)
    return settings


def short_phase_steps(config: PretrainingConfig) -> int:
    """How many of the first steps train on pairs of at most ``config.short_length`` tokens (0: one phase)."""
    return int(round(config.short_fraction * config.max_steps)) if config.short_length else 0


@dataclass
class PretrainingResult:
    output_dir: Path
    steps: int
    tokens: int
    seconds: float
    history: list[dict] = field(default_factory=list)


def load_tokenizer(source: str = TOKENIZER_SOURCE):
    """The uncased WordPiece tokenizer (bert-base-uncased's vocabulary)."""
    from transformers import AutoTokenizer

    from ..encode.backbones import backbone_path
    return AutoTokenizer.from_pretrained(backbone_path(source))


class PairBatches:
    """Deterministic batches: step ``s`` always gets the same pairs and the same masks (resumption).

    ``left_to_right``: no masking; the labels are the next word pieces (:func:`next_token_labels`).
    """

    def __init__(self, instances: Instances, tokenizer, batch_size: int, seed: int, next_sentence: bool,
                 left_to_right: bool = False, mask_fraction: float = 0.15):
        if left_to_right and next_sentence:
            raise ValueError("The left-to-right ablation has no next-sentence prediction.")
        self.instances, self.batch_size, self.seed, self.next_sentence = instances, batch_size, seed, next_sentence
        self.left_to_right, self.mask_fraction = left_to_right, mask_fraction
        self.cls, self.sep, self.pad, self.mask = (tokenizer.cls_token_id, tokenizer.sep_token_id,
                                                   tokenizer.pad_token_id, tokenizer.mask_token_id)
        self.vocab_size = len(tokenizer)
        self.per_epoch = len(instances) // batch_size
        if self.per_epoch == 0:
            raise ValueError(f"{len(instances)} pre-training pairs cannot fill one batch of {batch_size}.")

    def indices(self, step: int) -> np.ndarray:
        epoch, position = divmod(step, self.per_epoch)
        order = np.random.default_rng([self.seed, epoch]).permutation(len(self.instances))
        return order[position * self.batch_size:(position + 1) * self.batch_size]

    def make(self, indices, mask_seed) -> dict:
        pairs, labels = [], []
        for i in indices:
            a, b, is_next = self.instances.pair(int(i))
            pairs.append((a, b))
            labels.append(int(not is_next))  # BERT's NSP head: class 0 = IsNext, 1 = NotNext
        batch = pair_batch(pairs, self.cls, self.sep, self.pad)
        if self.left_to_right:
            batch["labels"] = next_token_labels(batch["input_ids"], batch.pop("candidates"))
            return batch
        generator = torch.Generator().manual_seed(mask_seed)
        batch["input_ids"], batch["labels"] = mask_tokens(batch["input_ids"], batch.pop("candidates"), self.mask,
                                                          (FIRST_WORD_PIECE, self.vocab_size), generator,
                                                          mask_fraction=self.mask_fraction)
        if self.next_sentence:
            batch["next_sentence_label"] = torch.tensor(labels)
        return batch

    def batch(self, step: int) -> dict:
        return self.make(self.indices(step), self.seed * 1_000_003 + step)

    def evaluation_batches(self, pairs: int, data_seed: int = 0) -> list[dict]:
        """``pairs`` fixed pairs (chosen by ``data_seed``), masked once with fixed seeds: the held-out set."""
        chosen = np.random.default_rng([data_seed, 7]).permutation(len(self.instances))[:pairs]
        return [self.make(chosen[i:i + self.batch_size], 10_000_019 + i) for i in range(0, len(chosen), self.batch_size)]


@torch.no_grad()
def evaluate_heldout(model, batches: list[dict], autocast, majority_token: int | None = None) -> dict:
    """Accuracy and loss of each of the model's objectives (``mlm``, ``nsp``, ``ltr``: whichever its outputs
    carry) on fixed, pre-masked held-out batches, as ``heldout_<objective>_loss`` / ``_accuracy``.

    The masked LM's accuracy is also split by what the model was shown at the predicted position
    (``heldout_mlm_mask_accuracy``, ``_random_accuracy``, ``_unchanged_accuracy``; see
    :mod:`bertsent.evaluation.mlm`): only the [MASK] positions say whether it has learned to predict words.
    """
    was_training = model.training
    model.eval()
    totals: dict[str, list[float]] = {}
    predicted, shown, targets = [], [], []
    device = next(model.parameters()).device
    for batch in batches:
        with autocast():
            out = model(**{k: v.to(device) for k, v in batch.items()})
        if "mlm_predicted" in out:
            predicted.append(out["mlm_predicted"].cpu())
            shown.append(out["mlm_input"].cpu())
            targets.append(out["mlm_target"].cpu())
        for name in ("mlm", "nsp", "ltr"):
            if f"{name}_loss" in out:
                loss, correct, count = totals.setdefault(name, [0.0, 0, 0])
                totals[name] = [loss + out[f"{name}_loss"].item() * out[f"{name}_count"],
                                correct + int(out[f"{name}_correct"]), count + out[f"{name}_count"]]
    model.train(was_training)
    result = {}
    if predicted:
        table = accuracy_by_position_type(torch.cat(predicted), torch.cat(shown), torch.cat(targets), MASK_ID,
                                          -1 if majority_token is None else majority_token)
        for row in table.itertuples():
            if row.positions != "all":
                result[f"heldout_mlm_{row.positions}_accuracy"] = row.accuracy
    for name, (loss, correct, count) in totals.items():
        result.update({f"heldout_{name}_loss": loss / count, f"heldout_{name}_accuracy": correct / count})
    return result


class PretrainingMethod(Method):
    """BERT pre-training as a :class:`~bertsent.training.loop.Method`: the deterministic pair batches of each step,
    the model's own loss (MLM + NSP, or an ablation's), no dev selection; every evaluation records the held-out
    metrics (:func:`evaluate_heldout`), tokens seen and the learning rate, and writes ``history.csv``."""

    def __init__(self, train: PairBatches, eval_batches: list[dict], majority: int, config: PretrainingConfig,
                 scheduler, output_dir: Path, short_train: PairBatches | None = None, start_state: dict | None = None,
                 on_evaluation=None):
        self.train, self.eval_batches, self.majority, self.config = train, eval_batches, majority, config
        self.start_state, self.on_evaluation = start_state, on_evaluation
        self.short_train = short_train
        self.scheduler, self.output_dir = scheduler, output_dir
        self.divergence_advice = f"Fix: lower learning_rate (now {config.learning_rate}) or raise warmup_ratio."
        self.heldout: dict = {}
        self.window = {"tokens": 0, "since": time.time()}  # tokens per second on the progress bar

    def initial_state(self) -> dict:
        if self.start_state is not None:  # continued from saved weights: the run's counters and history go on
            return {**self.start_state, "history": list(self.start_state["history"])}
        return {"step": 0, "tokens": 0, "seconds": 0.0, "history": []}

    def batches(self, step: int) -> dict:
        in_short_phase = self.short_train is not None and step < short_phase_steps(self.config)
        return self.to_device(self.shard((self.short_train if in_short_phase else self.train).batch(step)))

    def loss(self, model, batch) -> dict:
        out = model(**batch)
        return {"loss": out["loss"], **{name: out[f"{name}_loss"] for name in ("mlm", "nsp", "ltr")
                                        if f"{name}_loss" in out}}

    def evaluate(self, model) -> None:  # recorded, not a selection score
        self.heldout = evaluate_heldout(model, self.eval_batches, self.accelerator.autocast, self.majority)
        return None

    def record(self, state: dict, score, running_loss: float) -> dict:
        return {"step": state["step"], "tokens": state["tokens"], "seconds": round(state["seconds"], 1),
                "train_loss": None if math.isnan(running_loss) else running_loss,
                "learning_rate": self.scheduler.get_last_lr()[0], **self.heldout}

    def after_evaluation(self, state: dict, model) -> None:
        if self.accelerator.is_main_process:
            write_table(pd.DataFrame(state["history"]), self.output_dir / "history.csv")
            if self.on_evaluation is not None:
                self.on_evaluation(state, model, evaluation_line(state["history"][-1]))

    def after_step(self, state: dict, batch, losses: dict) -> None:
        tokens = int(batch["attention_mask"].sum()) * self.accelerator.num_processes
        state["tokens"] += tokens
        self.window["tokens"] += tokens

    def progress(self, state: dict, running_loss: float) -> dict | None:
        if state["step"] % 10:
            return None
        rate = self.window["tokens"] / max(time.time() - self.window["since"], 1e-9)
        self.window.update(tokens=0, since=time.time())
        return {"loss": f"{running_loss:.3f}", "tok_s": f"{rate:,.0f}"}


def evaluation_line(row: dict) -> str:
    """One line of progress from a history row: step, tokens, tokens/s so far, held-out [MASK] and NSP accuracy."""
    rate = row["tokens"] / row["seconds"] if row.get("seconds") else float("nan")
    parts = [f"step {row['step']:,}", f"{row['tokens'] / 1e6:.2f}M tokens", f"{rate:,.0f} tokens/s",
             f"lr {row['learning_rate']:.2e}"]
    if row.get("train_loss") is not None:
        parts.append(f"train loss {row['train_loss']:.3f}")
    for key, label in (("heldout_mlm_loss", "held-out MLM loss {:.3f}"),
                       ("heldout_mlm_mask_accuracy", "[MASK] accuracy {:.2%}"),
                       ("heldout_nsp_accuracy", "NSP accuracy {:.2%}")):
        if row.get(key) is not None:
            parts.append(label.format(row[key]))
    return "; ".join(parts)


def _pairs(config: PretrainingConfig, tokenizer, split: str, batch_size: int, max_length: int, corpus_dir=None,
           cache_dir=None) -> PairBatches:
    """``split``'s sentence pairs (``train`` or ``heldout``) of a run of ``config``, cut at ``max_length``."""
    next_sentence, left_to_right = config.objective == "mlm_nsp", config.objective == "ltr"
    instances = corpus_instances(tokenizer, split, files=config.corpus_files, max_length=max_length,
                                 seed=config.data_seed, next_sentence=next_sentence, corpus_dir=corpus_dir,
                                 cache_dir=cache_dir)
    return PairBatches(instances, tokenizer, batch_size, config.seed, next_sentence, left_to_right,
                       config.mask_fraction)


def corpus_batches(config: PretrainingConfig, tokenizer, corpus_dir=None, cache_dir=None
                   ) -> tuple[PairBatches, PairBatches, list[dict]]:
    """The training batches, the held-out pairs and the fixed, pre-masked held-out evaluation batches of a run of
    ``config`` (the same for every run that shares its data settings, seed and objective)."""
    train = _pairs(config, tokenizer, "train", config.batch_size, config.max_length, corpus_dir, cache_dir)
    heldout = _pairs(config, tokenizer, "heldout", 128, config.max_length, corpus_dir, cache_dir)
    # every run is scored at BERT's 15%, whatever it trains with, so held-out accuracies compare across runs
    heldout.mask_fraction = HELDOUT_MASK_FRACTION
    return train, heldout, heldout.evaluation_batches(config.eval_instances, config.data_seed)


def heldout_floors(config: PretrainingConfig, corpus_dir=None, cache_dir=None) -> dict:
    """The floors of a run's held-out evaluation, without training it: :func:`mlm_floors` of the evaluation batches
    :func:`pretrain` scores (per position type: count, always-the-majority-token accuracy, best constant, copy)."""
    tokenizer = load_tokenizer()
    train, _, eval_batches = corpus_batches(config, tokenizer, corpus_dir, cache_dir)
    return mlm_floors(eval_batches, majority_token(train.instances.tokens, FIRST_WORD_PIECE), tokenizer)


def pretrain(output_dir: str | Path, config: PretrainingConfig | None = None, resume: bool = True,
             show_progress: bool = True, corpus_dir=None, cache_dir=None, stop_after: int | None = None,
             stop_after_seconds: float | None = None, checkpoint_minutes: float | None = None,
             start_from: dict | None = None, on_evaluation=None) -> PretrainingResult:
    """Pre-train a BERT of ``config.size`` and save it to ``output_dir`` (see the module docstring).

    ``stop_after``: leave after this many steps as if interrupted (a checkpoint is written), for tests
    of resumption; ``stop_after_seconds``: the same after this much wall time (one stretch of a long run);
    ``checkpoint_minutes``: a checkpoint at least this often. ``start_from``: continue a run whose full checkpoint
    is gone from its saved weights (``{"weights": state dict, "state": the loop state at that step,
    "rewarm_steps": M}``) with a fresh optimizer and an M-step re-warm-up (or, with an ``"optimizer"`` state dict too,
    that optimizer's moments: a branch of a long run, ``rewarm_steps`` 0) (a ``"wsd"`` schedule only; see
    :class:`~bertsent.training.loop.WarmupStableDecay`). ``on_evaluation(state, model, line)``: called at every evaluation (main process) with the loop
    state, the model and one line of progress (:func:`evaluation_line`).
    The steps are :func:`bertsent.training.loop.train_loop`'s, with :class:`PretrainingMethod`.
    """
    config = config or PretrainingConfig()
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    accelerator = make_accelerator(config.mixed_precision)
    tokenizer = load_tokenizer()
    left_to_right = config.objective == "ltr"
    train, heldout, eval_batches = corpus_batches(config, tokenizer, corpus_dir, cache_dir)
    # the short first phase (Devlin et al.: 90% of the steps at length 128 before 512) reads the same pairs, cut shorter
    short_train = (_pairs(config, tokenizer, "train", config.batch_size, config.short_length, corpus_dir, cache_dir)
                   if config.short_length else None)
    majority = majority_token(train.instances.tokens, FIRST_WORD_PIECE)

    model = new_pretraining_model(config.size, len(tokenizer), config.seed, config.objective, dropout=config.dropout,
                                  attention=config.attention)
    if start_from is not None:
        if config.schedule != "wsd":
            raise ValueError("Only a warmup-stable-decay run ('wsd') continues from saved weights: another schedule's "
                             "rate at a step depends on the optimizer's history it would lose.")
        model.load_state_dict(start_from["weights"])
    if config.init_from:
        from transformers import AutoModelForPreTraining
        start = AutoModelForPreTraining.from_pretrained(REPO_ROOT / config.init_from, dtype=torch.float32)
        missing, unexpected = model.load_state_dict(start.state_dict(), strict=False)
        if unexpected or [m for m in missing if "decoder" not in m]:
            raise ValueError(f"{config.init_from} does not match a {config.size} BERT: missing {missing}, unexpected {unexpected}")
        del start
    optimizer = adamw(decay_parameter_groups(model, config.weight_decay), config.learning_rate, config.betas,
                      eps=config.adam_epsilon, fused=torch.cuda.is_available() or None)
    if start_from is not None and start_from.get("optimizer") is not None:
        # a branch of a long run keeps its parent's Adam moments; its rate is its own recipe's
        optimizer.load_state_dict(start_from["optimizer"])
        for group in optimizer.param_groups:
            group["lr"] = config.learning_rate
            group.pop("initial_lr", None)
    warmup = config.warmup_steps if config.warmup_steps is not None else int(config.warmup_ratio * config.max_steps)
    if config.schedule == "wsd":
        scheduler = WarmupStableDecay(optimizer, warmup, config.decay_start, config.decay_steps,
                                      rewarm_from=start_from["state"]["step"] if start_from else None,
                                      rewarm_steps=start_from["rewarm_steps"] if start_from else 0)
    else:
        scheduler = warmup_schedule(optimizer, warmup, config.max_steps, config.schedule)
    method = PretrainingMethod(train, eval_batches, majority, config, scheduler, output_dir, short_train,
                               start_state=start_from["state"] if start_from else None,
                               on_evaluation=on_evaluation)
    run = train_loop(method, model, optimizer, scheduler, LoopSettings(
        total_steps=config.max_steps, output_dir=output_dir, config=checkpoint_identity(config),
        eval_every=config.eval_every, checkpoint_every=1, max_grad_norm=config.max_grad_norm, step_seed=config.seed,
        loss_smoothing=0.02, resume=resume, stop_after=stop_after, stop_after_seconds=stop_after_seconds,
        checkpoint_minutes=checkpoint_minutes, show_progress=show_progress,
        description=f"BERT-{config.size} {config.objective}"), accelerator)
    state = run.state

    # a finished run asked again keeps its summary (the threads, device and times of the run that trained it)
    finished_now = run.steps_this_call > 0 or not (output_dir / "train.json").is_file()
    if state["step"] >= config.max_steps and finished_now and accelerator.is_main_process:
        model.save_pretrained(output_dir / "model")
        tokenizer.save_pretrained(output_dir / "model")
        summary = {"config": asdict(config), "steps": state["step"], "tokens": state["tokens"],
                   "seconds": state["seconds"], "train_pairs": len(train.instances),
                   "heldout_pairs": len(heldout.instances), "eval_pairs": sum(len(b["input_ids"]) for b in eval_batches),
                   "device": str(accelerator.device), "processes": accelerator.num_processes,
                   "torch_threads": torch.get_num_threads(), "final": state["history"][-1],
                   "mlm_floors": mlm_floors(eval_batches, majority, tokenizer) if not left_to_right else None}
        (output_dir / "train.json").write_text(json.dumps(summary, indent=2) + "\n")
    accelerator.wait_for_everyone()
    return PretrainingResult(output_dir, state["step"], state["tokens"], state["seconds"], state["history"])


def mlm_floors(batches: list[dict], majority: int, tokenizer) -> dict:
    """The held-out set's floors per position type: always the majority token, or copy the input."""
    table = accuracy_by_position_type(None, *masked_positions(batches), MASK_ID, majority)
    return {"majority_token": tokenizer.convert_ids_to_tokens(majority),
            **{row.positions: {"count": row.count, "majority": row.majority_floor,
                               "best_constant": row.best_constant_floor, "copy": row.copy_floor}
               for row in table.itertuples()}}


def save_untrained(size: str, path: str | Path, seed: int = 0) -> Path:
    """A randomly initialised BERT of ``size`` with the tokenizer: the "no pre-training" control."""
    path = Path(path)
    if not (path / "config.json").is_file():
        from ..quiet import quiet_transformers

        tokenizer = load_tokenizer()
        with quiet_transformers():
            new_pretraining_model(size, len(tokenizer), seed).save_pretrained(path)
        tokenizer.save_pretrained(path)
    return path
