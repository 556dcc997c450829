"""Pre-train the book's BERT on a GPU machine that has only the repository, and bring the run back.

A GPU machine lent for a few minutes receives a copy of the working tree and nothing else: no corpus folder, no
installed tokenizer package. Three steps, each one command:

1. here, ``python -m bertsent.experiments.remote_pretraining pack gpu_carry``: copies what the run reads into a
   git-ignored folder that travels with the tree: the profile's corpus files (checked against their sha256) and the
   uncased WordPiece tokenizer's files (those of ``all-minilm-l6-v2``, the vocabulary of every BERT in the book);
2. there, ``python3 -m bertsent.experiments.remote_pretraining train gpu_carry $OUT --budget 420`` (with ``lib`` on
   ``PYTHONPATH``): times a few steps first, sets ``max_steps`` to the largest of :data:`STEP_LADDER` that fits the
   budget (the learning-rate schedule depends on it, so it is fixed before the run starts), pre-trains with the
   ``gpu`` profile, and writes into ``$OUT`` the run's ``train.json`` and ``history.csv`` and the weights in float16,
   in shards small enough to come back (:data:`SHARD_SIZE`);
3. here, ``python -m bertsent.experiments.remote_pretraining unpack FOLDER``: puts the weights (float32 again) and
   ``train.json`` where the BERT chapter looks for a finished run (``.cache/pretraining/runs/<key>/``) and commits
   the run's results (``results/runs/pretraining/<key>/``), keyed as a local run of the same configuration.

The BERT chapter's page then reads that run with ``-p pretraining_profile gpu -p pretraining_overrides
'{"max_steps": N}'`` (N as printed by ``unpack``), without training. The weights are float16-rounded on the way
back; ``unpack`` says so in the run's ``train.json`` (``transport``).
"""
from __future__ import annotations

import argparse
import json
import shutil
import time
from dataclasses import asdict
from pathlib import Path

import pandas as pd

METHOD_VERSION = 1  # bump when the maths changes

PROFILE = "gpu"
STEP_LADDER = (1000, 2000, 4000, 6000, 8000, 12000, 16000, 24000)
PROBE_STEPS = 300  # a throwaway run timed from its step PROBE_FROM to its end (the first steps warm caches up)
PROBE_FROM = 100
SHARD_SIZE = "15MB"  # a file that comes back from the GPU machine may hold at most 16 MiB
TOKENIZER_FILES = ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


def _config(**overrides):
    from ..training.pretraining import PROFILES, PretrainingConfig

    return PretrainingConfig(**{**PROFILES[PROFILE], **overrides})


def pack(folder: Path) -> Path:
    """Copy the ``gpu`` profile's corpus files and the tokenizer into ``folder`` (``corpus/``, ``tokenizer/``)."""
    from ..data.corpus import corpus_file
    from ..encode.backbones import backbone_path
    from ..training.pretraining import TOKENIZER_SOURCE

    folder = Path(folder)
    (folder / "corpus").mkdir(parents=True, exist_ok=True)
    for name in _config().corpus_files:
        shutil.copy2(corpus_file(name), folder / "corpus" / name)
    (folder / "tokenizer").mkdir(exist_ok=True)
    source = Path(backbone_path(TOKENIZER_SOURCE))
    for name in TOKENIZER_FILES:
        shutil.copy2(source / name, folder / "tokenizer" / name)
    return folder


def _use_packed_tokenizer(folder: Path) -> None:
    """Point the tokenizer's registered name at the packed copy (the GPU machine has no tokenizer package)."""
    from ..encode.backbones import register_backbone
    from ..training.pretraining import TOKENIZER_SOURCE

    register_backbone(TOKENIZER_SOURCE, Path(folder) / "tokenizer")


def steps_that_fit(seconds_per_step: float, budget_seconds: float, ladder=STEP_LADDER) -> int:
    """The largest ``ladder`` entry whose steps take at most ``budget_seconds`` (evaluations and saving are in
    the budget's margin), at least the smallest.

    >>> steps_that_fit(0.05, 420)
    8000
    """
    fitting = [steps for steps in ladder if steps * seconds_per_step <= budget_seconds]
    return max(fitting) if fitting else min(ladder)


def probe_step_seconds(folder: Path, work: Path, overrides: dict | None = None, steps: int = PROBE_STEPS,
                       start: int = PROBE_FROM) -> float:
    """Seconds per training step of the ``gpu`` profile on this machine: a throwaway run of ``steps`` steps,
    timed by the training loop between its evaluations at ``start`` and at the end (the data it prepares is
    cached for the real run)."""
    from ..training.pretraining import pretrain

    probe = _config(**{**(overrides or {}), "max_steps": steps, "eval_every": start, "eval_instances": 256})
    history = pd.DataFrame(pretrain(work / "probe", probe, resume=False, corpus_dir=folder / "corpus",
                                    show_progress=False).history).set_index("step")["seconds"]
    return float(history.loc[steps] - history.loc[start]) / (steps - start)


def train(folder: Path, out: Path, budget_seconds: float, work: Path | None = None, overrides: dict | None = None,
          ladder=STEP_LADDER, probe_steps: int = PROBE_STEPS, probe_from: int = PROBE_FROM) -> dict:
    """Pre-train with the ``gpu`` profile for as many steps of ``ladder`` as fit ``budget_seconds`` (counted from
    this call's start: data preparation and the probe included); write the results to ``out``. ``overrides``:
    configuration fields changed from the profile (tests: a tiny model)."""
    import torch
    from transformers import BertForPreTraining

    from ..training.pretraining import pretrain

    folder, out = Path(folder), Path(out)
    work = Path(work or "/tmp/bertsent-pretraining")
    _use_packed_tokenizer(folder)
    started = time.perf_counter()
    per_step = probe_step_seconds(folder, work, overrides, probe_steps, probe_from)
    left = budget_seconds - (time.perf_counter() - started)
    steps = steps_that_fit(per_step, left, ladder)
    print(f"{per_step * 1000:.1f} ms a step; {left:.0f} s left: {steps} steps", flush=True)
    config = _config(**{**(overrides or {}), "max_steps": steps})
    run_dir = work / "run"
    result = pretrain(run_dir, config, corpus_dir=folder / "corpus", show_progress=False)
    (out / "run").mkdir(parents=True, exist_ok=True)
    shutil.copy2(run_dir / "train.json", out / "run" / "train.json")
    pd.DataFrame(result.history).to_csv(out / "run" / "history.csv", index=False)
    model = BertForPreTraining.from_pretrained(run_dir / "model", dtype=torch.float32)
    model.half().save_pretrained(out / "model", max_shard_size=SHARD_SIZE)
    final = result.history[-1]
    print(f"{result.steps} steps, {result.tokens:,} tokens, {result.seconds:.0f} s; held-out [MASK] accuracy "
          f"{final.get('heldout_mlm_mask_accuracy', float('nan')):.4f}", flush=True)
    return {"steps": result.steps, "tokens": result.tokens, "seconds": result.seconds}


def unpack(folder: Path, runs_root: Path | None = None, results_dir=None, overrides: dict | None = None) -> Path:
    """Put a run that ``train`` wrote into ``folder`` where the BERT chapter finds it; commit its results.
    ``overrides``: those ``train`` was given (tests)."""
    import torch
    from transformers import BertForPreTraining

    from ..paths import CACHE_DIR
    from ..training.pretraining import load_tokenizer
    from ..report.io import write_json_atomic
    from .runs import pretraining_run_dir, pretraining_key, record_pretraining
    from .store import StoredRun

    folder = Path(folder)
    summary = json.loads((folder / "run" / "train.json").read_text(encoding="utf-8"))
    config = _config(**{**(overrides or {}), "max_steps": summary["config"]["max_steps"]})
    if json.loads(json.dumps(asdict(config))) != summary["config"]:
        raise ValueError(f"{folder} was trained with another configuration than the {PROFILE!r} profile with "
                         f"max_steps={config.max_steps}: {summary['config']}. Fix: unpack it with the library "
                         "version that trained it.")
    run_dir = pretraining_run_dir(Path(runs_root or CACHE_DIR / "pretraining" / "runs"), config)
    model = BertForPreTraining.from_pretrained(folder / "model", dtype=torch.float32)
    model.save_pretrained(run_dir / "model")
    load_tokenizer().save_pretrained(run_dir / "model")
    summary["transport"] = "trained on another machine; weights brought back in float16 and stored in float32"
    write_json_atomic(run_dir / "train.json", summary)
    stored = StoredRun.at("pretraining", pretraining_key(config), results_dir)
    record_pretraining(stored, config, summary, pd.read_csv(folder / "run" / "history.csv"))
    print(f"{stored.key}: weights in {run_dir / 'model'}, results in {stored.directory}; the BERT chapter reads it "
          f"with -p pretraining_profile gpu -p pretraining_overrides '{{\"max_steps\": {config.max_steps}}}'")
    return run_dir


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("pack", help="copy the corpus files and tokenizer into FOLDER").add_argument("folder")
    trainer = commands.add_parser("train", help="pre-train on this (GPU) machine, write the run to OUT")
    trainer.add_argument("folder")
    trainer.add_argument("out")
    trainer.add_argument("--budget", type=float, default=420.0, help="seconds of training steps (default 420)")
    commands.add_parser("unpack", help="bring a trained run from FOLDER into the book").add_argument("folder")
    args = parser.parse_args(argv)
    if args.command == "pack":
        print(pack(Path(args.folder)))
    elif args.command == "train":
        train(Path(args.folder), Path(args.out), args.budget)
    else:
        unpack(Path(args.folder))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
