"""Training SG / SG-OPT: the released code's recipe, with its known defects fixed.

Recipe (released defaults): batch 16, learning rate 5e-5, 1 epoch, 10% linear warm-up then linear decay,
AdamW with betas (0.9, 0.9), gradient clipping at 1.0, max length 128, tau 0.01, lambda 0.1. STS-B dev
(Spearman of BERT_T's last-layer [CLS] cosine) is evaluated every 50 steps and the best checkpoint is
reloaded before anything is tested (the released code tested the last model in memory instead).

A causal LM backbone (Gemma 3; :func:`~bertsent.encode.backbones.is_causal_lm`) is trained the same way with
its sentence token, the last real token, as c (``SelfGuidedModel(readout="last")``), BERT_F's views leaving the
BOS token out (``skip_bos``, when the tokenizer adds one), and its tokenizer prepared as
:class:`~bertsent.encode.backbones.CausalBackbone` prepares it (right padding, a pad token). Dev selection, the
saved sentence-transformers model (last-token pooling) and every later evaluation read that same token.

Determinism and resumption: the sentence order of each epoch and every random draw of a step (the sampled
layer of L^base / L^opt1 / L^opt2, dropout) are seeded from ``(seed, epoch)`` and ``(seed, step)``, so a run
resumed from its checkpoint makes exactly the updates an uninterrupted run makes.

Runs under accelerate: ``accelerate launch -m bertsent.training.self_guided ...`` on several devices
shards the batches across processes (each process contrasts within its own batch).
"""
from __future__ import annotations

import argparse
import json
import math
import resource
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from ..data.sts import STSDataset
from ..encode.backbones import CausalBackbone, TransformerBackbone, backbone_path, is_causal_lm
from ..encode.causal_pooling import sentence_token_pooling
from ..encode.encoder import Encoder
from ..evaluation.sts import cosine_rows, evaluate_sts
from ..losses import LOSSES, weight_distance_regularizer
from ..models import SelfGuidedModel, load_encoder
from ..quiet import quiet_transformers
from ..report.io import save_sentence_transformer_atomically
from .loop import (LoopSettings, Method, TrainingDivergedError, adamw, make_accelerator, seed_everything,
                   train_loop, warmup_schedule)

METHOD_VERSION = 1  # bump when the maths changes

__all__ = ["SelfGuidedConfig", "SelfGuidedMethod", "TrainResult", "TrainingDivergedError", "dev_score", "peak_memory_mib",
           "save_sentence_transformer", "self_guided_model", "train_self_guided"]


@dataclass
class SelfGuidedConfig:
    loss: str = "opt3"  # base (SG), opt1, opt2, opt3 (SG-OPT)
    view_pooling: str = "max"  # the paper; the released code uses "mean"
    frozen_dropout: bool = False  # the released code left BERT_F's dropout on
    projection: bool = True  # False: the "no head" ablation
    head_dim: int = 4096
    temperature: float = 0.01
    reg_weight: float = 0.1
    batch_size: int = 16
    learning_rate: float = 5e-5
    epochs: int = 1
    warmup_ratio: float = 0.1
    betas: tuple[float, float] = (0.9, 0.9)
    weight_decay: float = 0.0  # not stated by the paper or the released recipe
    max_grad_norm: float = 1.0
    max_length: int = 128
    eval_every: int = 50
    seed: int = 42
    max_steps: int | None = None  # stop early (smoke runs, tests)

    def __post_init__(self):
        if self.loss not in LOSSES:
            raise ValueError(f"Unknown loss {self.loss!r}. Known: {', '.join(LOSSES)}.")
        self.betas = tuple(self.betas)


@dataclass
class TrainResult:
    output_dir: Path
    best_step: int
    best_dev: float
    steps: int
    seconds: float
    history: list[dict] = field(default_factory=list)


def _epoch_batches(n: int, batch_size: int, seed: int, epoch: int) -> list[list[int]]:
    order = np.random.default_rng([seed, epoch]).permutation(n)
    batches = [order[i:i + batch_size].tolist() for i in range(0, n, batch_size)]
    return [b for b in batches if len(b) > 1]  # a contrastive batch needs a negative


def dev_score(model: SelfGuidedModel, tokenizer, dev: STSDataset, max_length: int, batch_size: int = 64) -> float:
    """Spearman x 100 ("all") of BERT_T's last-layer sentence token (the model's readout: [CLS], or the last token
    of a causal LM) cosine on a dev set."""
    was_training = model.training
    model.eval()
    kind = CausalBackbone if model.readout == "last" else TransformerBackbone
    backbone = kind.from_loaded("trained", tokenizer, model.trained, next(model.parameters()).device)
    token = sentence_token_pooling(backbone)
    pooled = Encoder(backbone, batch_size=batch_size, max_length=max_length, show_progress=False).encode(
        dev.sentences(), poolings=[token])
    last = pooled.n_layers - 1
    score = evaluate_sts(dev, lambda a, b: cosine_rows(pooled.lookup(a, token, last), pooled.lookup(b, token, last)))
    model.train(was_training)
    return score["all"]


def peak_memory_mib() -> float:
    """Peak resident memory of this process so far, in MiB (``getrusage``'s ``ru_maxrss``: KiB on Linux, bytes on
    macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1 << 20) if sys.platform == "darwin" else peak / 1024


def self_guided_model(backbone: str, config: SelfGuidedConfig | None = None) -> tuple[SelfGuidedModel, object]:
    """BERT_T, BERT_F and the head for ``backbone`` (a registered name or a model directory), with its tokenizer.

    A causal LM reads its last real token as c and leaves BOS out of its views; its tokenizer pads on the right
    with a pad token, as :class:`~bertsent.encode.backbones.CausalBackbone` reads it."""
    from transformers import AutoTokenizer

    config = config or SelfGuidedConfig()
    source = backbone_path(backbone)
    tokenizer = AutoTokenizer.from_pretrained(source)
    encoder = load_encoder(source)
    causal, skip_bos = is_causal_lm(source), False
    if causal:
        skip_bos = CausalBackbone.from_loaded(backbone, tokenizer, encoder).adds_bos
    model = SelfGuidedModel(encoder, config.view_pooling, config.frozen_dropout, config.projection, config.head_dim,
                            readout="last" if causal else "cls", skip_bos=skip_bos)
    return model, tokenizer


def train_self_guided(backbone: str, sentences: list[str], dev: STSDataset, output_dir: str | Path,
                      config: SelfGuidedConfig | None = None, resume: bool = True, show_progress: bool = True,
                      callbacks=(), checkpoint_every: int = 200, keep_checkpoints: bool = False) -> TrainResult:
    """Train SG / SG-OPT on ``sentences`` (no labels), select on ``dev``, save to ``output_dir``.

    ``output_dir`` receives ``checkpoint.pt`` (for resumption), ``best.pt`` (BERT_T's best weights),
    ``model/`` (the selected model in sentence-transformers format: [CLS] pooling, last-token pooling for a causal
    LM) and ``train.json`` (with ``peak_rss_mib``: the process's peak resident memory when training ended, model
    loading included; per process under accelerate).
    A causal LM (``backbone`` whose checkpoint :func:`~bertsent.encode.backbones.is_causal_lm`) trains its last
    real token as c; see the module's docstring.
    ``callbacks``: functions called as ``callback(step, model, tokenizer)`` at every evaluation.
    ``checkpoint_every``: steps between resumable checkpoints (taken at evaluations; the optimizer state
    makes one several times the model's size, so not at every evaluation).
    A finished run keeps only ``model/`` and ``train.json``: ``checkpoint.pt`` and ``best.pt`` (together several
    times the model's size: 2.5 GB for Gemma 3 270M) are deleted once the model is saved, unless
    ``keep_checkpoints``; asked again with ``resume``, a finished run returns its recorded result without training.
    The steps are :func:`bertsent.training.loop.train_loop`'s, with :class:`SelfGuidedMethod`.
    """
    config = config or SelfGuidedConfig()
    output_dir = Path(output_dir)
    finished = _finished_result(output_dir, config) if resume else None
    if finished is not None:
        return finished
    accelerator = make_accelerator()
    seed_everything(config.seed)
    model, tokenizer = self_guided_model(backbone, config)
    sentences = list(dict.fromkeys(s for s in sentences if s.strip()))
    steps_per_epoch = len(_epoch_batches(len(sentences), config.batch_size, config.seed, 0))
    total_steps = steps_per_epoch * config.epochs
    if config.max_steps:
        total_steps = min(total_steps, config.max_steps)
    # fused AdamW: one kernel for all parameters; a third of the unfused step time on a 2-core CPU
    optimizer = adamw([p for p in model.parameters() if p.requires_grad], config.learning_rate, config.betas,
                      weight_decay=config.weight_decay, fused=True)
    scheduler = warmup_schedule(optimizer, math.ceil(config.warmup_ratio * total_steps), total_steps)
    method = SelfGuidedMethod(model, tokenizer, sentences, dev, config, steps_per_epoch, callbacks)
    run = train_loop(method, model, optimizer, scheduler, LoopSettings(
        total_steps=total_steps, output_dir=output_dir, config=asdict(config), eval_every=config.eval_every,
        checkpoint_every=checkpoint_every, checkpoint_at_end=keep_checkpoints, max_grad_norm=config.max_grad_norm,
        step_seed=config.seed, resume=resume, show_progress=show_progress, description=f"{config.loss} ({backbone})"),
        accelerator)
    state = run.state

    # The selected model (restored by the loop from best.pt), not the last one in memory.
    if accelerator.is_main_process:
        save_sentence_transformer(model.trained, tokenizer, output_dir / "model", model.readout)
        # the thread count when the run finished: the time per step means little without it
        summary = {"backbone": backbone, "config": asdict(config), "sentences": len(sentences), **state,
                   "torch_threads": torch.get_num_threads(), "processes": accelerator.num_processes,
                   "readout": model.readout, "skip_bos": model.skip_bos, "peak_rss_mib": round(peak_memory_mib(), 1)}
        (output_dir / "train.json").write_text(json.dumps(summary, indent=2) + "\n")
    accelerator.wait_for_everyone()
    if accelerator.is_main_process and not keep_checkpoints:
        for name in ("checkpoint.pt", "best.pt"):
            (output_dir / name).unlink(missing_ok=True)
    return TrainResult(output_dir, state["best_step"], state["best_dev"], state["step"], state["seconds"],
                       state["history"])


def _finished_result(output_dir: Path, config: SelfGuidedConfig) -> TrainResult | None:
    """The recorded result of a run finished in ``output_dir`` (``train.json`` and ``model/``), or None; a finished
    run of another configuration is refused, as a checkpoint of one is."""
    summary_path = output_dir / "train.json"
    if not (summary_path.is_file() and (output_dir / "model").is_dir()):
        return None
    summary = json.loads(summary_path.read_text())
    if summary["config"] != json.loads(json.dumps(asdict(config))):
        raise ValueError(f"{output_dir} holds a finished run of another configuration; use another output directory "
                         "or resume=False.")
    return TrainResult(output_dir, summary["best_step"], summary["best_dev"], summary["step"], summary["seconds"],
                       summary["history"])


class SelfGuidedMethod(Method):
    """SG / SG-OPT as a :class:`~bertsent.training.loop.Method`: batches of unlabelled sentences in a seeded order
    per epoch, the configured loss (``LOSSES[config.loss]``) plus the weight-distance regulariser, STS-B dev
    selection on BERT_T; checkpoints keep the trainable weights, ``best.pt`` BERT_T's."""

    divergence_advice = "Fix: lower the learning rate or raise the temperature."

    def __init__(self, model: SelfGuidedModel, tokenizer, sentences: list[str], dev: STSDataset,
                 config: SelfGuidedConfig, steps_per_epoch: int, callbacks=()):
        self.model, self.tokenizer, self.sentences, self.dev = model, tokenizer, sentences, dev
        self.config, self.steps_per_epoch, self.callbacks = config, steps_per_epoch, callbacks
        self.loss_fn = LOSSES[config.loss]
        self.trainable_names = {n for n, p in model.named_parameters() if p.requires_grad}

    def batches(self, step: int):
        epoch, position = divmod(step, self.steps_per_epoch)
        batch_ids = _epoch_batches(len(self.sentences), self.config.batch_size, self.config.seed, epoch)[position]
        return self.to_device(self.tokenizer([self.sentences[i] for i in self.shard(batch_ids)], padding=True,
                                             truncation=True, max_length=self.config.max_length,
                                             return_tensors="pt"))

    def loss(self, model, batch) -> dict:
        c, h = model(batch["input_ids"], batch["attention_mask"])
        if self.config.loss != "opt3":
            sampled = torch.randint(h.shape[1], (h.shape[0],), device=h.device)
            h = h[torch.arange(h.shape[0], device=h.device), sampled]
        contrastive = self.loss_fn(c, h, self.config.temperature)
        regularizer = weight_distance_regularizer(self.model.trained, self.model.frozen, self.config.reg_weight)
        return {"loss": contrastive + regularizer, "contrastive": contrastive, "regularizer": regularizer}

    def evaluate(self, model) -> float:
        return dev_score(model, self.tokenizer, self.dev, self.config.max_length)

    def after_evaluation(self, state: dict, model) -> None:
        for callback in self.callbacks:
            callback(state["step"], model, self.tokenizer)

    def checkpoint_weights(self, model) -> dict:
        return {k: v for k, v in model.state_dict().items() if k in self.trainable_names}

    def load_checkpoint_weights(self, model, weights: dict) -> None:
        model.load_state_dict(weights, strict=False)

    def best_weights(self, model) -> dict:
        return model.trained.state_dict()

    def load_best_weights(self, model, weights: dict) -> None:
        model.trained.load_state_dict(weights)


def save_sentence_transformer(encoder, tokenizer, path: Path, readout: str | None = None) -> None:
    """Save BERT_T with its sentence-token pooling so that ``SentenceTransformer(path)`` reproduces our sentence
    vectors: [CLS] (``readout="cls"``) or, for a causal LM (``readout="last"``), sentence-transformers'
    ``lasttoken`` pooling, the last real token of each row; the tokenizer is saved as given (a causal one
    prepared to pad on the right). ``readout=None``: ``"last"`` when the encoder is a causal LM, else ``"cls"``."""
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

    modes = {"cls": "cls", "last": "lasttoken"}
    staging = path.with_name(path.name + ".hf")
    encoder.save_pretrained(staging)
    tokenizer.save_pretrained(staging)
    if readout is None:
        readout = "last" if is_causal_lm(staging) else "cls"
    if readout not in modes:
        raise ValueError(f"Unknown readout {readout!r}. Known: {', '.join(modes)}.")
    with quiet_transformers():  # BERT_T has no pooler on purpose; its absence is not news
        transformer = Transformer(str(staging))
    pooling = Pooling(encoder.config.hidden_size, pooling_mode=modes[readout])
    save_sentence_transformer_atomically([transformer, pooling], path, staging)


def main(argv=None) -> int:
    """Command line: ``[accelerate launch] python -m bertsent.training.self_guided --backbone NAME --output DIR``."""
    import dataclasses

    from ..data.sts import load_stsb
    from ..data.sentences import TRAINING_SETS, training_sentences

    parser = argparse.ArgumentParser(description="Train SG / SG-OPT (Kim, Yoo and Lee 2021).")
    parser.add_argument("--backbone", required=True, help="registered name, local directory or hub id")
    parser.add_argument("--output", required=True)
    parser.add_argument("--train-data", default="stsb_all", choices=list(TRAINING_SETS))
    parser.add_argument("--dev-pairs", type=int, default=None, help="use only the first dev pairs (smoke runs)")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--no-resume", action="store_true")
    for f in dataclasses.fields(SelfGuidedConfig):
        kind = {"bool": lambda v: v.lower() in ("1", "true", "yes"), "int | None": int}.get(str(f.type), None)
        kind = kind or (float if "float" in str(f.type) else int if "int" in str(f.type) else str)
        parser.add_argument(f"--{f.name.replace('_', '-')}", type=kind, nargs=2 if f.name == "betas" else None,
                            default=f.default)
    args = parser.parse_args(argv)
    from ..book import ParameterError, _check_range, check_backbone_name

    try:  # ranges and the backbone's name, before any data or model is loaded (no hub retries for a typo)
        check_backbone_name(args.backbone, "--backbone")
        for f in dataclasses.fields(SelfGuidedConfig):
            _check_range(f"--{f.name.replace('_', '-')}", f.name, getattr(args, f.name),
                         example=f"--{f.name.replace('_', '-')} {200 if f.default is None else f.default}")
        if args.dev_pairs is not None and args.dev_pairs < 1:
            raise ParameterError(f"--dev-pairs: expected a size of at least 1, got {args.dev_pairs}; e.g. --dev-pairs 24")
    except ParameterError as error:
        parser.error(str(error))
    config = SelfGuidedConfig(**{f.name: getattr(args, f.name) for f in dataclasses.fields(SelfGuidedConfig)})
    dev = load_stsb("dev", args.data_dir)
    if args.dev_pairs:
        dev = dev.head(args.dev_pairs)
    try:
        result = train_self_guided(args.backbone, training_sentences(args.train_data, args.data_dir), dev,
                                   args.output, config, resume=not args.no_resume)
    except TrainingDivergedError as error:  # one line: the step, the loss, the cause, the last good checkpoint
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"best STS-B dev {result.best_dev:.2f} at step {result.best_step} of {result.steps}; model in {result.output_dir / 'model'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
