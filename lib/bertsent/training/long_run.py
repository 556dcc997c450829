"""One long pre-training run, trained in stretches that survive interruption and a change of machine.

A run of 60M+ tokens takes longer than any one session on two CPU cores, so it is trained in *stretches*, each started
by one command (in the background)::

    OMP_NUM_THREADS=1 .venv/bin/python -m bertsent.training.long_run bert-mini-wsd --minutes 150 --processes 2

A stretch continues the run from the best state it finds:

1. the full checkpoint in ``.cache/pretraining/long/<run>/checkpoint.pt`` (weights, optimizer, schedule, loop state;
   written at least every ``--checkpoint-minutes``): the run goes on exactly as if never stopped;
2. else the weights committed in ``models/training/<run>/`` (float16, one file, with ``record.json`` and
   ``history.csv``): the run goes on from their step with a fresh optimizer and a short re-warm-up of the learning
   rate (:class:`~bertsent.training.loop.WarmupStableDecay`), which the stretch's record says;
3. else a new run from its recipe (:data:`LONG_RUNS`).

During a stretch every evaluation prints one line (step, tokens, tokens/s, held-out [MASK] and NSP accuracy), and
every ``--export-minutes`` and at its end the weights, the record and the history are written to
``models/training/<run>/`` (atomically), ready to commit (``--commit`` commits them).

The schedule is warm-up then constant: the run can be extended for as long as its curve needs. Its decay is started on
purpose: ``--decay-start STEP --decay-steps N`` (the learning rate falls linearly to 0 over N steps from STEP; the
run ends there). ``--max-steps`` extends it.

*Levers* (:data:`BRANCHES`) are short branches of a long run, for a curve that stays flat: each starts from the
parent's full checkpoint (weights, Adam's moments, step, tokens and history) and trains a few hundred steps with one
change (its decay started there, another masking rate, another learning rate), so its curve and the parent's share
everything up to the branch step and the parent itself goes on unchanged. A branch commits its record and history,
not its weights (``models/training/<branch>/``)::

    .venv/bin/python -m bertsent.training.long_run bert-mini-wsd-decay --minutes 30 --processes 2 --commit
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

import pandas as pd
import torch

from ..paths import CACHE_DIR, REPO_ROOT
from ..report.io import write_json_atomic

METHOD_VERSION = 1  # bump when the maths changes

RUNS_ROOT = CACHE_DIR / "pretraining" / "long"  # full checkpoints: never committed
COMMITTED_ROOT = REPO_ROOT / "models" / "training"  # each run's latest float16 weights, record and history
REWARM_STEPS = 200  # re-warm-up after a restart from committed weights (a fresh Adam's moments need ~1/(1-beta2))

# The long runs' recipes. bert-mini-wsd: the book's size (mini), MLM + NSP as the paper, pairs of up to 128 tokens from
# every corpus file (about 140M word pieces, so 60M tokens see no pair twice), the stall study's best settings
# (learning rate 1e-3, dropout off), 64 pairs a step (two processes of 32), bf16 autocast and the eager attention
# kernel (benchmarks/pretraining_throughput.py), a 500-step warm-up and no decay until one is started on purpose.
LONG_RUNS = {
    "bert-mini-wsd": dict(size="mini", objective="mlm_nsp", max_length=128, batch_size=64, learning_rate=1e-3,
                          schedule="wsd", warmup_steps=500, max_steps=200_000, eval_every=250, eval_instances=1024,
                          dropout=0.0, mixed_precision="bf16", attention="eager"),
    # the "smaller model" lever, from scratch: BERT-tiny (2 layers, 128-d), otherwise bert-mini-wsd's recipe; several
    # times the tokens a second, so it asks within one session whether a BERT leaves the plateau on this data and
    # trainer at all
    "bert-tiny-wsd": dict(size="tiny", objective="mlm_nsp", max_length=128, batch_size=64, learning_rate=1e-3,
                          schedule="wsd", warmup_steps=500, max_steps=200_000, eval_every=250, eval_instances=1024,
                          dropout=0.0, mixed_precision="bf16", attention="eager"),
    # for tests: seconds on one core
    "smoke": dict(size="tiny", batch_size=8, max_length=64, learning_rate=1e-3, schedule="wsd", warmup_steps=2,
                  max_steps=12, eval_every=3, eval_instances=16, mixed_precision="no",
                  corpus_files=("enwiki-2018.txt.xz",)),
}

# Levers for a flat curve (see the module docstring): parent, steps after the branch step, and the one change.
# "decay": the warmup-stable-decay schedule's decay phase started at the branch step (a short decay shows what the
# run has learned under the noise of its constant rate); "changes": recipe fields that differ from the parent's.
BRANCHES = {
    "bert-mini-wsd-decay": dict(parent="bert-mini-wsd", steps=400, decay=True, changes={}),
    "bert-mini-wsd-mask40": dict(parent="bert-mini-wsd", steps=400, decay=False, changes={"mask_fraction": 0.4}),
    "bert-mini-wsd-lr3e-4": dict(parent="bert-mini-wsd", steps=400, decay=False, changes={"learning_rate": 3e-4}),
    "smoke-decay": dict(parent="smoke", steps=4, decay=True, changes={}),  # for tests
    "smoke-mask40": dict(parent="smoke", steps=4, decay=False, changes={"mask_fraction": 0.4}),  # for tests
}


# Levers that are new runs, not branches (the "smaller model" lever): lever -> the long run it is a lever of. Their
# curves are compared with that run's at equal tokens.
SCRATCH_LEVERS = {"bert-tiny-wsd": "bert-mini-wsd"}


def branch_config(name: str, branch_step: int):
    """The configuration of lever ``name`` (:data:`BRANCHES`) branched from its parent at ``branch_step``."""
    from ..training.pretraining import PretrainingConfig

    if name not in BRANCHES:
        raise ValueError(f"Unknown lever {name!r}; known: {', '.join(BRANCHES)}")
    branch = BRANCHES[name]
    end = branch_step + branch["steps"]
    fields = {**LONG_RUNS[branch["parent"]], **branch["changes"], "max_steps": end}
    if branch["decay"]:
        fields.update(decay_start=branch_step, decay_steps=branch["steps"])
    return PretrainingConfig(**fields)


def branch_start(name: str, runs_root: Path) -> dict:
    """What lever ``name`` starts from: its parent's full checkpoint (weights, optimizer moments, loop state)."""
    parent = BRANCHES[name]["parent"]
    path = Path(runs_root) / parent / "checkpoint.pt"
    if not path.is_file():
        raise FileNotFoundError(f"Lever {name} branches from {parent}'s full checkpoint, and there is none at {path}. "
                                f"Fix: train a stretch of {parent} first (it writes one), then start the lever.")
    saved = torch.load(path, map_location="cpu", weights_only=False)
    state = {key: saved["state"][key] for key in ("step", "tokens", "seconds")}
    state["history"] = list(saved["state"]["history"])
    return {"weights": saved["model"], "optimizer": saved["optimizer"], "state": state, "rewarm_steps": 0}


def lever_start(name: str, run_dir: Path, runs_root: Path) -> tuple[dict, dict | None]:
    """Lever ``name``'s branch description (``run_dir/branch.json``: parent, branch step, change; written when it
    starts) and, when it has no checkpoint of its own yet, what it starts from (:func:`branch_start`)."""
    path = run_dir / "branch.json"
    if (run_dir / "checkpoint.pt").is_file():
        if not path.is_file():
            raise FileNotFoundError(f"{run_dir} has a checkpoint but no branch.json. Fix: delete {run_dir} and start "
                                    f"the lever again.")
        return json.loads(path.read_text(encoding="utf-8")), None
    start_from = branch_start(name, runs_root)
    step = start_from["state"]["step"]
    if path.is_file() and json.loads(path.read_text(encoding="utf-8"))["branch_step"] != step:
        raise ValueError(f"Lever {name} began at step {json.loads(path.read_text())['branch_step']:,} but its checkpoint "
                         f"is gone and its parent is now at step {step:,}. Fix: delete {run_dir} (and "
                         f"models/training/{name}) to branch again from step {step:,}.")
    lever = BRANCHES[name]
    branch = {"parent": lever["parent"], "branch_step": step, "branch_tokens": start_from["state"]["tokens"],
              "steps": lever["steps"], "decay": lever["decay"], "changes": lever["changes"]}
    if int(os.environ.get("RANK", "0")) == 0:
        run_dir.mkdir(parents=True, exist_ok=True)
        write_json_atomic(path, branch)
    return branch, start_from


def run_config(name: str, **changes):
    """The configuration of long run ``name`` with ``changes`` to the fields a run may change between stretches
    (:data:`~bertsent.training.pretraining.EXTENDABLE_FIELDS`)."""
    from ..training.pretraining import EXTENDABLE_FIELDS, PretrainingConfig

    if name not in LONG_RUNS:
        raise ValueError(f"Unknown long run {name!r}; known: {', '.join(LONG_RUNS)}")
    fixed = [field for field in changes if field not in EXTENDABLE_FIELDS]
    if fixed:
        raise ValueError(f"A long run's recipe is fixed; {', '.join(fixed)} cannot change between stretches "
                         f"(only {', '.join(EXTENDABLE_FIELDS)}). Fix: name a new run in LONG_RUNS.")
    return PretrainingConfig(**{**LONG_RUNS[name], **{k: v for k, v in changes.items() if v is not None}})


def read_record(committed: Path) -> dict | None:
    path = committed / "record.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def committed_start(committed: Path, config) -> dict | None:
    """What a stretch continues from when the full checkpoint is gone: the committed weights and the loop state at
    their step (counters and history), or None when nothing is committed."""
    from ..training.pretraining import checkpoint_identity

    record = read_record(committed)
    if record is None:
        return None
    if record["identity"] != json.loads(json.dumps(checkpoint_identity(config))):
        raise ValueError(f"{committed} holds a run of another recipe. Fix: train it with the recipe in its record.json, "
                         f"or name a new run.")
    from safetensors.torch import load_file

    weights = {name: tensor.float() for name, tensor in load_file(committed / "model.safetensors").items()}
    # the saved file keeps the tied output embedding once; the model has it under both names
    weights.setdefault("cls.predictions.decoder.weight", weights["bert.embeddings.word_embeddings.weight"])
    weights.setdefault("cls.predictions.decoder.bias", weights["cls.predictions.bias"])
    history = pd.read_csv(committed / "history.csv")
    rows = [{k: (None if pd.isna(v) else v) for k, v in row.items()} for row in history.to_dict("records")]
    state = {"step": record["step"], "tokens": record["tokens"], "seconds": record["seconds"], "history": rows}
    return {"weights": weights, "state": state, "rewarm_steps": REWARM_STEPS}


def export(model, state: dict, config, committed: Path, stretches: list[dict], branch: dict | None = None) -> None:
    """Write the run's weights (float16, with config and tokenizer: ``AutoModel`` reads it), ``history.csv`` and
    ``record.json`` to ``committed``, replacing the previous copy only once the new one is complete. A lever
    (``branch``: its parent, branch step and change) writes its record and history only."""
    from ..training.pretraining import checkpoint_identity, load_tokenizer

    staging = committed.with_name(committed.name + ".tmp")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    if branch is None:
        model_copy = type(model)(model.config)
        model_copy.load_state_dict(model.state_dict())
        model_copy.config.architectures = ["BertForPreTraining"]
        model_copy.half().save_pretrained(staging)
        settings = json.loads((staging / "config.json").read_text())
        settings["dtype"] = "float32"  # stored in half precision, loaded as float32
        settings.pop("_attn_implementation", None)
        (staging / "config.json").write_text(json.dumps(settings, indent=2) + "\n")
        load_tokenizer().save_pretrained(staging)
    pd.DataFrame(state["history"]).to_csv(staging / "history.csv", index=False)
    write_json_atomic(staging / "record.json", {
        "run": committed.name, "step": state["step"], "tokens": state["tokens"], "seconds": state["seconds"],
        "config": asdict(config), "identity": checkpoint_identity(config), "stretches": stretches,
        **({"branch": branch} if branch is not None else {}),
        "last_evaluation": state["history"][-1] if state["history"] else None})
    old = committed.with_name(committed.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if committed.exists():
        committed.rename(old)
    staging.rename(committed)
    shutil.rmtree(old, ignore_errors=True)


def commit(committed: Path, message: str, attempts: int = 5) -> None:
    """``git add`` and ``git commit`` the run's committed folder (retrying while another commit holds the index)."""
    for attempt in range(attempts):
        added = subprocess.run(["git", "add", "--", str(committed)], cwd=REPO_ROOT, capture_output=True, text=True)
        if added.returncode == 0:
            done = subprocess.run(["git", "commit", "-q", "-m", message, "--", str(committed)], cwd=REPO_ROOT,
                                  capture_output=True, text=True)
            if done.returncode == 0:
                return
        time.sleep(5 * (attempt + 1))
    print(f"warning: could not commit {committed}; commit it by hand", file=sys.stderr, flush=True)


def train_stretch(name: str, minutes: float, checkpoint_minutes: float = 10.0, export_minutes: float = 45.0,
                  runs_root: Path = RUNS_ROOT, committed_root: Path = COMMITTED_ROOT, commit_exports: bool = False,
                  corpus_dir=None, cache_dir=None, show_progress: bool = False, **changes) -> dict:
    """Train one stretch of long run ``name`` for at most ``minutes`` (see the module docstring); returns the stretch's
    record."""
    from ..experiments.bert_publish import cpu_name
    from ..training.pretraining import pretrain

    run_dir, committed = Path(runs_root) / name, Path(committed_root) / name
    started_at = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    previous = read_record(committed)
    stretches = list(previous["stretches"]) if previous else []
    start_from, branch = None, None
    if name in BRANCHES:
        if any(value is not None for value in changes.values()):
            raise ValueError(f"Lever {name}'s length and schedule are fixed in BRANCHES; drop --max-steps and --decay-*.")
        branch, start_from = lever_start(name, run_dir, Path(runs_root))
        config = branch_config(name, branch["branch_step"])
    else:
        config = run_config(name, **changes)
    if (run_dir / "checkpoint.pt").is_file():
        saved = torch.load(run_dir / "checkpoint.pt", map_location="cpu", weights_only=False)["state"]
        source, start_step, start_tokens = f"checkpoint at step {saved['step']}", saved["step"], saved["tokens"]
        del saved
    elif branch is not None:
        state = start_from["state"]
        source = f"{branch['parent']}'s checkpoint at step {state['step']} (weights and optimizer): a lever"
        start_step, start_tokens = state["step"], state["tokens"]
    else:
        start_from = committed_start(committed, config)
        if start_from is None:
            source, start_step, start_tokens = "new run", 0, 0
        else:
            state = start_from["state"]
            source = (f"committed weights at step {state['step']} (the full checkpoint was gone): fresh optimizer, "
                      f"{REWARM_STEPS}-step re-warm-up")
            start_step, start_tokens = state["step"], state["tokens"]
    from .loop import effective_precision

    accelerator_main = int(os.environ.get("RANK", "0")) == 0
    stretch = {"stretch": len(stretches) + 1, "started": started_at, "cpu": cpu_name(),
               "processes": int(os.environ.get("WORLD_SIZE", "1")), "threads_per_process": torch.get_num_threads(),
               "precision": effective_precision(config.mixed_precision), "continued_from": source, "start_step": start_step, "start_tokens": start_tokens}
    clock = {"start": time.time(), "exported": time.time()}

    def stretch_record(state: dict, running: bool) -> list[dict]:
        wall = time.time() - clock["start"]
        tokens = state["tokens"] - start_tokens
        return stretches + [{**stretch, "end_step": state["step"], "end_tokens": state["tokens"],
                             "wall_seconds": round(wall, 1), "tokens_per_second": round(tokens / max(wall, 1e-9), 1),
                             "running": running}]

    def on_evaluation(state: dict, model, line: str) -> None:
        print(line, flush=True)
        if time.time() - clock["exported"] >= 60 * export_minutes and state["step"] > start_step:
            export(model, state, config, committed, stretch_record(state, running=True), branch)
            clock["exported"] = time.time()
            print(f"exported step {state['step']:,} to {committed}", flush=True)
            if commit_exports:
                commit(committed, f"{name}: step {state['step']:,}, {state['tokens'] / 1e6:.1f}M tokens (stretch "
                                  f"{stretch['stretch']}, in progress)")

    print(f"{name}: stretch {stretch['stretch']} from {source}; stops after {minutes:g} minutes", flush=True)
    result = pretrain(run_dir, config, corpus_dir=corpus_dir, cache_dir=cache_dir, show_progress=show_progress,
                      stop_after_seconds=60 * minutes, checkpoint_minutes=checkpoint_minutes, start_from=start_from,
                      on_evaluation=on_evaluation if accelerator_main else None)
    final = stretch_record({"step": result.steps, "tokens": result.tokens}, running=False)[-1]
    if accelerator_main:
        from ..models.bert_pretraining import new_pretraining_model
        from ..training.pretraining import load_tokenizer

        saved = torch.load(run_dir / "checkpoint.pt", map_location="cpu", weights_only=False)
        model = None
        if branch is None:
            model = new_pretraining_model(config.size, len(load_tokenizer()), config.seed, config.objective,
                                          dropout=config.dropout)
            model.load_state_dict(saved["model"])
        export(model, saved["state"], config, committed, stretches + [final], branch)
        print(f"{name}: stretch {final['stretch']} done: steps {final['start_step']:,}-{final['end_step']:,}, "
              f"{(final['end_tokens'] - final['start_tokens']) / 1e6:.1f}M tokens in {final['wall_seconds']:.0f} s "
              f"({final['tokens_per_second']:,.0f} tokens/s); exported to {committed}", flush=True)
        if commit_exports:
            commit(committed, f"{name}: stretch {final['stretch']} ends at step {final['end_step']:,}, "
                              f"{final['end_tokens'] / 1e6:.1f}M tokens ({final['tokens_per_second']:,.0f} tokens/s)")
    return final


def relaunch(processes: int, argv: list[str]) -> int:
    """Run this command again as ``processes`` data-parallel processes of one thread each (torchrun, gloo)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(processes),
               "-m", "bertsent.training.long_run", *argv]
    return subprocess.run(command, env=env).returncode


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(description="Train one stretch of a long BERT pre-training run (resumable).")
    parser.add_argument("run", nargs="?", default="bert-mini-wsd", choices=[*LONG_RUNS, *BRANCHES],
                        help="the run's name (a long run, or a lever: a short branch of one)")
    parser.add_argument("--minutes", type=float, required=True, help="stop (with a checkpoint and an export) after this")
    parser.add_argument("--processes", type=int, default=1, help="data-parallel processes of one thread each")
    parser.add_argument("--checkpoint-minutes", type=float, default=10.0)
    parser.add_argument("--export-minutes", type=float, default=45.0,
                        help="write the weights to models/training/RUN this often (and at the end)")
    parser.add_argument("--commit", action="store_true", help="git-commit each export")
    parser.add_argument("--max-steps", type=int, default=None, help="extend the run (or end it earlier)")
    parser.add_argument("--decay-start", type=int, default=None, help="start the linear decay to 0 at this step")
    parser.add_argument("--decay-steps", type=int, default=None, help="... over this many steps")
    parser.add_argument("--corpus-dir", default=None)
    parser.add_argument("--runs-root", default=str(RUNS_ROOT), help="where full checkpoints go (git-ignored)")
    parser.add_argument("--committed-root", default=str(COMMITTED_ROOT), help="where the weights are exported")
    args = parser.parse_args(argv)
    if args.minutes <= 0 or args.processes < 1 or args.checkpoint_minutes <= 0 or args.export_minutes <= 0:
        parser.error("--minutes, --checkpoint-minutes and --export-minutes must be > 0 and --processes >= 1")
    if args.processes > 1 and "LOCAL_RANK" not in os.environ:
        return relaunch(args.processes, argv)
    if "LOCAL_RANK" in os.environ:
        torch.set_num_threads(1)
    changes = {"max_steps": args.max_steps, "decay_start": args.decay_start, "decay_steps": args.decay_steps}
    if args.decay_start is not None and args.max_steps is None and args.run not in BRANCHES:
        changes["max_steps"] = args.decay_start + (args.decay_steps or 0)
    train_stretch(args.run, args.minutes, args.checkpoint_minutes, args.export_minutes, Path(args.runs_root),
                  Path(args.committed_root), commit_exports=args.commit, corpus_dir=args.corpus_dir, **changes)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
