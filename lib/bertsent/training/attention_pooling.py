"""Training an encoder with a layer-wise attention pooler (Oh et al., COLING 2022) by contrastive learning.

The three designs (``AttentionPoolingConfig.objective``), each the loss of :mod:`bertsent.losses.attention_pooling`
on the sentence vectors of :class:`~bertsent.models.layer_attention.LayerAttentionModel` (encoder and pooler
trained together):

- ``supervised``: batches of NLI triplets (premise, entailment, contradiction), in-batch negatives plus the hard
  negative (supervised SimCSE);
- ``unsupervised``: batches of unlabelled sentences, each encoded twice in training mode (two dropout views;
  the pooler's RReLU adds its own noise), unsupervised SimCSE;
- ``hybrid``: one triplet batch and one sentence batch per step, the two losses summed (our reading).

Recipe defaults (the released script): temperature 0.05, learning rate 2e-5, batch 64, 3 epochs, max length 64,
linear decay without warm-up (HF Trainer's default), gradient clipping at 1.0, STS-B dev Spearman ("all") of the
pooled vectors every ``eval_every`` steps, the best checkpoint restored at the end. The released run used a
batch of 64 x 4 GPUs; one process here contrasts within 64.

Determinism and resumption: each epoch's order is seeded from ``(seed, epoch)`` and every step's dropout and
RReLU draws from ``(seed, step)`` (:func:`bertsent.training.loop.seed_step`), so a resumed run makes the updates
of an uninterrupted one.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from ..data.nli import Triplets
from ..data.sts import STSDataset
from ..encode.backbones import load_backbone
from ..evaluation.sts import cosine_rows, evaluate_sts
from ..losses.attention_pooling import OBJECTIVES, dropout_infonce_loss, supervised_infonce_loss
from ..models.layer_attention import DEFAULT_POOLING, LayerAttentionModel, check_pooling, encode_sentences
from ..report.io import atomic_torch_save
from .loop import LoopSettings, Method, adamw, make_accelerator, seed_everything, train_loop, warmup_schedule

METHOD_VERSION = 1  # bump when the maths changes

__all__ = ["AttentionPoolingConfig", "AttentionPoolingMethod", "AttentionPoolingResult", "dev_score",
           "dropout_views", "epoch_batches", "parameter_groups", "train_attention_pooling"]


@dataclass
class AttentionPoolingConfig:
    objective: str = "supervised"  # supervised, unsupervised, hybrid (OBJECTIVES)
    pooling: str = DEFAULT_POOLING  # models.layer_attention.POOLINGS
    temperature: float = 0.05
    hard_negative_weight: float = 0.0  # SimCSE's; the LayerAttPooler release used 1.0
    unsupervised_weight: float = 1.0  # hybrid: L_sup + weight * L_unsup
    batch_size: int = 64
    learning_rate: float = 2e-5
    pooler_learning_rate: float | None = None  # None: the encoder's
    epochs: int = 3
    warmup_ratio: float = 0.0
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0
    max_length: int = 64
    eval_every: int = 125
    seed: int = 42
    max_steps: int | None = None  # stop early (smoke runs, tests)

    def __post_init__(self):
        if self.objective not in OBJECTIVES:
            raise ValueError(f"Unknown objective {self.objective!r}. Known: {', '.join(OBJECTIVES)}.")
        check_pooling(self.pooling)
        if self.batch_size < 2:
            raise ValueError(f"batch_size {self.batch_size}: a contrastive batch needs at least 2 rows "
                             "(the other rows are the negatives). Fix: use batch_size >= 2.")
        if self.temperature <= 0:
            raise ValueError(f"temperature must be positive, not {self.temperature}.")


@dataclass
class AttentionPoolingResult:
    output_dir: Path  # checkpoint.pt, best.pt, model/ (sentence-transformers), train.json
    model_dir: Path
    best_step: int
    best_dev: float
    steps: int
    seconds: float
    history: list[dict] = field(default_factory=list)


def epoch_batches(n: int, batch_size: int, seed: int, epoch: int) -> list[list[int]]:
    """The batches of one epoch: a permutation seeded from ``(seed, epoch)``, cut into ``batch_size`` rows
    (a last batch of one row is dropped: it has no negative)."""
    order = np.random.default_rng([seed, epoch]).permutation(n)
    batches = [order[i:i + batch_size].tolist() for i in range(0, n, batch_size)]
    return [b for b in batches if len(b) > 1]


def dev_score(model: LayerAttentionModel, tokenizer, dev: STSDataset, max_length: int = 64,
              batch_size: int = 64) -> float:
    """Spearman x 100 ("all") of the pooled vectors' cosine on a dev set."""
    sentences = dev.sentences()
    vectors = encode_sentences(model, tokenizer, sentences, batch_size, max_length)
    index = {s: i for i, s in enumerate(sentences)}
    return evaluate_sts(dev, lambda a, b: cosine_rows(vectors[[index[s] for s in a]],
                                                      vectors[[index[s] for s in b]]))["all"]


class AttentionPoolingMethod(Method):
    """The designs of the module docstring as a :class:`~bertsent.training.loop.Method`."""

    divergence_advice = "Fix: lower the learning rate or raise the temperature."

    def __init__(self, model: LayerAttentionModel, tokenizer, config: AttentionPoolingConfig,
                 triplets: Triplets | None, sentences: list[str] | None, dev: STSDataset | None,
                 steps_per_epoch: int):
        self.model, self.tokenizer, self.config = model, tokenizer, config
        self.triplets, self.sentences, self.dev = triplets, sentences, dev
        self.steps_per_epoch = steps_per_epoch

    def _tokens(self, texts: list[str]):
        return self.to_device(self.tokenizer(texts, padding=True, truncation=True, max_length=self.config.max_length,
                                             return_tensors="pt"))

    def batches(self, step: int) -> dict:
        epoch, position = divmod(step, self.steps_per_epoch)
        batch = {}
        if self.triplets is not None:
            ids = self.shard(epoch_batches(len(self.triplets), self.config.batch_size, self.config.seed, epoch)[position])
            t = self.triplets
            # one tokenizer call, one forward pass: anchors, positives, negatives stacked
            batch["triplets"] = self._tokens([t.anchors[i] for i in ids] + [t.positives[i] for i in ids]
                                             + [t.negatives[i] for i in ids])
        if self.sentences is not None:
            sentence_batches = epoch_batches(len(self.sentences), self.config.batch_size, self.config.seed, epoch)
            ids = self.shard(sentence_batches[position % len(sentence_batches)])
            batch["sentences"] = self._tokens([self.sentences[i] for i in ids])
        return batch

    def loss(self, model, batch) -> dict:
        c = self.config
        terms = {}
        if "triplets" in batch:
            z = model(batch["triplets"]["input_ids"], batch["triplets"]["attention_mask"])
            anchor, positive, negative = z.chunk(3)
            terms["supervised"] = supervised_infonce_loss(anchor, positive, negative, c.temperature,
                                                          c.hard_negative_weight)
        if "sentences" in batch:
            view1, view2 = dropout_views(model, batch["sentences"])
            terms["unsupervised"] = dropout_infonce_loss(view1, view2, c.temperature)
        if c.objective == "supervised":
            total = terms["supervised"]
        elif c.objective == "unsupervised":
            total = terms["unsupervised"]
        else:
            total = terms["supervised"] + c.unsupervised_weight * terms["unsupervised"]
        return {"loss": total, **terms}

    def evaluate(self, model) -> float | None:
        if self.dev is None:
            return None
        return dev_score(model, self.tokenizer, self.dev, self.config.max_length)


def dropout_views(model, tokens) -> tuple[torch.Tensor, torch.Tensor]:
    """Two encodings of the same batch in training mode (dropout and RReLU drawn anew for each)."""
    if not model.training:
        raise ValueError("dropout_views needs the model in training mode (no dropout in eval mode). "
                         "Fix: call model.train() first.")
    view1 = model(tokens["input_ids"], tokens["attention_mask"])
    view2 = model(tokens["input_ids"], tokens["attention_mask"])
    return view1, view2


def parameter_groups(model: LayerAttentionModel, config: AttentionPoolingConfig) -> list[dict]:
    """AdamW's groups: the encoder's trainable parameters, and the pooler's at ``pooler_learning_rate`` if set."""
    encoder = [p for p in model.encoder.parameters() if p.requires_grad]
    pooler = [p for p in model.pooler.parameters() if p.requires_grad]
    groups = [{"params": encoder, "weight_decay": config.weight_decay}]
    if pooler:
        groups.append({"params": pooler, "weight_decay": config.weight_decay,
                       "lr": config.pooler_learning_rate or config.learning_rate})
    return groups


def train_attention_pooling(backbone: str, output_dir: str | Path, config: AttentionPoolingConfig | None = None,
                            triplets: Triplets | None = None, sentences: list[str] | None = None,
                            dev: STSDataset | None = None, resume: bool = True, show_progress: bool = True,
                            checkpoint_every: int = 500, backbone_object=None,
                            keep_checkpoints: bool = False) -> AttentionPoolingResult:
    """Train ``backbone`` with a layer-wise attention pooler; returns where the selected model is saved.

    ``triplets``: NLI triplets (:func:`bertsent.data.nli.nli_triplets`), needed by the supervised and hybrid
    objectives; ``sentences``: unlabelled sentences (:func:`bertsent.data.nli.wikipedia_sentences`), needed by the
    unsupervised and hybrid ones. An epoch is a pass over the triplets (over the sentences for ``unsupervised``).
    ``dev``: STS-B dev (``load_stsb("dev")``) for checkpoint selection; None: the last step is kept.
    ``backbone_object``: an already loaded backbone (``load_backbone`` result, or a ``TransformerBackbone`` built
    with ``from_loaded``, e.g. a tiny random model in tests) instead of loading ``backbone`` by name.

    ``output_dir`` receives ``checkpoint.pt`` (resumption), ``best.pt`` (encoder + pooler weights), ``model/`` (the
    selected model in sentence-transformers format, see :mod:`bertsent.models.layer_attention_export`) and
    ``train.json`` (configuration, counts, history, seconds). A finished run keeps ``best.pt`` (the selected
    weights, or the last ones without ``dev``), ``model/`` and ``train.json``: ``checkpoint.pt`` (weights and
    optimizer state, about three times the model) is deleted unless ``keep_checkpoints``.
    """
    from ..models.layer_attention_export import save_layer_attention_model

    config = config or AttentionPoolingConfig()
    needs_triplets = config.objective in ("supervised", "hybrid")
    needs_sentences = config.objective in ("unsupervised", "hybrid")
    if needs_triplets and not triplets:
        raise ValueError(f"The {config.objective} objective needs NLI triplets. "
                         "Fix: pass triplets=bertsent.data.nli.nli_triplets().")
    if needs_sentences and not sentences:
        raise ValueError(f"The {config.objective} objective needs unlabelled sentences. "
                         "Fix: pass sentences=bertsent.data.nli.wikipedia_sentences(n).")
    triplets = triplets if needs_triplets else None
    sentences = list(dict.fromkeys(s for s in sentences if s.strip())) if needs_sentences else None
    output_dir = Path(output_dir)
    accelerator = make_accelerator()
    seed_everything(config.seed)
    source = backbone_object or load_backbone(backbone)
    model = LayerAttentionModel.on_backbone(source, config.pooling)
    tokenizer = source.tokenizer
    if not any(p.requires_grad for p in model.parameters()):
        raise ValueError("Nothing to train: every parameter is frozen.")

    n_rows = len(triplets) if triplets is not None else len(sentences)
    steps_per_epoch = len(epoch_batches(n_rows, config.batch_size, config.seed, 0))
    if steps_per_epoch == 0:
        raise ValueError(f"{n_rows} training rows make no batch of at least 2. Fix: give more data.")
    total_steps = steps_per_epoch * config.epochs
    if config.max_steps:
        total_steps = min(total_steps, config.max_steps)
    optimizer = adamw(parameter_groups(model, config), config.learning_rate, weight_decay=config.weight_decay)
    scheduler = warmup_schedule(optimizer, int(config.warmup_ratio * total_steps), total_steps)
    method = AttentionPoolingMethod(model, tokenizer, config, triplets, sentences, dev, steps_per_epoch)
    run = train_loop(method, model, optimizer, scheduler, LoopSettings(
        total_steps=total_steps, output_dir=output_dir, config={"backbone": backbone, **asdict(config)},
        eval_every=config.eval_every, evaluate_at_start=dev is not None, checkpoint_every=checkpoint_every,
        checkpoint_at_end=keep_checkpoints,
        max_grad_norm=config.max_grad_norm, step_seed=config.seed, resume=resume, show_progress=show_progress,
        description=f"attention pooling {config.objective}/{config.pooling} ({backbone})"), accelerator)
    state = run.state

    model_dir = output_dir / "model"
    if accelerator.is_main_process:
        model.eval()
        save_layer_attention_model(model, tokenizer, model_dir, config.max_length)
        summary = {"backbone": backbone, "config": asdict(config),
                   "triplets": 0 if triplets is None else len(triplets),
                   "sentences": 0 if sentences is None else len(sentences), **state,
                   "torch_threads": torch.get_num_threads(), "processes": accelerator.num_processes}
        (output_dir / "train.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
        if not (output_dir / "best.pt").is_file():  # no dev selection: the last weights are the run's
            atomic_torch_save(method.best_weights(model), output_dir / "best.pt")
    accelerator.wait_for_everyone()
    if accelerator.is_main_process and not keep_checkpoints:
        (output_dir / "checkpoint.pt").unlink(missing_ok=True)
    return AttentionPoolingResult(output_dir, model_dir, state["best_step"], state["best_dev"], state["step"],
                                  state["seconds"], state["history"])


def main(argv=None) -> int:
    """Command line: ``python -m bertsent.training.attention_pooling --backbone NAME --output DIR [--objective ...]``
    (NLI triplets from SNLI dev + test, ``--sick`` adds SICK train's; ``--wiki-sentences N`` Wikipedia sentences
    for the unsupervised and hybrid objectives; STS-B dev selects the checkpoint)."""
    import argparse
    import dataclasses

    from ..data.nli import nli_triplets, wikipedia_sentences
    from ..data.sts import load_stsb

    parser = argparse.ArgumentParser(description="Train a layer-wise attention pooler (Oh et al., COLING 2022).")
    parser.add_argument("--backbone", required=True, help="registered name, local directory or hub id")
    parser.add_argument("--output", required=True)
    parser.add_argument("--sick", action="store_true", help="add SICK train triplets to SNLI's")
    parser.add_argument("--wiki-sentences", type=int, default=100_000)
    parser.add_argument("--dev-pairs", type=int, default=None, help="use only the first dev pairs (smoke runs)")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--no-resume", action="store_true")
    for f in dataclasses.fields(AttentionPoolingConfig):
        kind = {"int | None": int, "float | None": float}.get(str(f.type))
        kind = kind or (float if "float" in str(f.type) else int if "int" in str(f.type) else str)
        parser.add_argument(f"--{f.name.replace('_', '-')}", type=kind, default=f.default)
    args = parser.parse_args(argv)
    config = AttentionPoolingConfig(**{f.name: getattr(args, f.name) for f in dataclasses.fields(AttentionPoolingConfig)})
    dev = load_stsb("dev", args.data_dir)
    if args.dev_pairs:
        dev = dev.head(args.dev_pairs)
    triplets = nli_triplets(("snli", "sick") if args.sick else ("snli",), args.data_dir)
    sentences = wikipedia_sentences(args.wiki_sentences) if config.objective != "supervised" else None
    result = train_attention_pooling(args.backbone, args.output, config, triplets, sentences, dev,
                                     resume=not args.no_resume)
    print(f"best STS-B dev {result.best_dev:.2f} at step {result.best_step} of {result.steps}; "
          f"model in {result.model_dir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
