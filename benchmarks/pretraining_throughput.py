"""Pre-training throughput: the project's trainer against a plain ``transformers`` loop, in one run.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/pretraining_throughput.py [--steps 30] [--repeats 2]

Four arms, each a fresh process, interleaved over ``--repeats`` rounds (this machine is shared and noisy, so what
counts is each ratio to its peer measured in the same round):

- ``plain_1x1``: a plain loop (``transformers.BertForPreTraining`` called with ``labels``: the vocabulary projection
  at every position; ``torch.optim.AdamW``; bf16 autocast; the default attention kernel) on one thread;
- ``project_1x1``: the book's trainer (:func:`bertsent.training.pretraining.pretrain`, the long run's recipe:
  projection at masked positions only, eager attention, bf16) in one process of one thread: tokens/s per core;
- ``plain_1x2``: the plain loop in one process of two threads: what two cores give it;
- ``project_2x1``: the book's trainer as two data-parallel processes of one thread each (torchrun, gloo), as
  ``python -m bertsent.training.long_run --processes 2`` trains: tokens/s for the whole machine.

Every arm trains BERT-mini with MLM + NSP on the same corpus pairs (length 128, 32 pairs a step per process for the
trainer; 32 a step for the plain loop), masked the same way; tokens are the non-padding tokens of each batch. Each
arm's rate is taken over its steps after the first quarter (start-up and warm-up excluded). Writes
``results/benchmarks/pretraining_throughput.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUTPUT = REPO / "results" / "benchmarks" / "pretraining_throughput.json"
ARMS = ("plain_1x1", "project_1x1", "plain_1x2", "project_2x1")
PAIRS_PER_STEP = 32
CORPUS_FILE = "enwiki-2018.txt.xz"


def recipe(steps: int, processes: int):
    from bertsent.training.long_run import run_config

    from dataclasses import replace
    config = run_config("bert-mini-wsd")
    return replace(config, batch_size=PAIRS_PER_STEP * processes, max_steps=steps, eval_every=steps // 4,
                   eval_instances=8, corpus_files=(CORPUS_FILE,))


def project_arm(steps: int, output: Path) -> dict:
    """The trainer itself: its history's tokens and seconds between the evaluations at 1/4 and the end."""
    import torch

    from bertsent.training.pretraining import pretrain

    processes = int(os.environ.get("WORLD_SIZE", "1"))
    result = pretrain(output, recipe(steps, processes), resume=False, show_progress=False)
    first = next(row for row in result.history if row["step"] == steps // 4)
    last = result.history[-1]
    return {"tokens": last["tokens"] - first["tokens"], "seconds": last["seconds"] - first["seconds"],
            "steps": last["step"] - first["step"], "processes": processes, "threads": torch.get_num_threads()}


def plain_arm(steps: int) -> dict:
    """A plain transformers loop on the trainer's batches (the same pairs and masks as its step s)."""
    import torch
    from transformers import BertForPreTraining

    from bertsent.models.bert_pretraining import bert_config
    from bertsent.training.pretraining import corpus_batches, load_tokenizer

    config = recipe(steps, 1)
    tokenizer = load_tokenizer()
    train, _, _ = corpus_batches(config, tokenizer)
    model_config = bert_config("mini", len(tokenizer))
    model_config.hidden_dropout_prob = model_config.attention_probs_dropout_prob = 0.0
    torch.manual_seed(0)
    model = BertForPreTraining(model_config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.learning_rate, weight_decay=0.01)
    model.train()
    tokens, started = 0, None
    for step in range(steps):
        if step == steps // 4:
            tokens, started = 0, time.time()
        batch = train.batch(step)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                        token_type_ids=batch["token_type_ids"], labels=batch["labels"],
                        next_sentence_label=batch["next_sentence_label"])
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        tokens += int(batch["attention_mask"].sum())
    return {"tokens": tokens, "seconds": time.time() - started, "steps": steps - steps // 4, "processes": 1,
            "threads": torch.get_num_threads()}


def run_arm(arm: str, steps: int, scratch: Path) -> dict:
    """One arm in a fresh process (``torchrun`` for two processes); its measurement, read back from a file."""
    result = scratch / f"{arm}.json"
    threads = "2" if arm == "plain_1x2" else "1"
    env = {**os.environ, "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}
    here = [str(Path(__file__).resolve()), "--worker", arm, "--steps", str(steps), "--scratch", str(scratch)]
    if arm == "project_2x1":
        command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", *here]
    else:
        command = [sys.executable, *here]
    load_before = os.getloadavg()[0]
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    measured = json.loads(result.read_text())
    return {**measured, "arm": arm, "tokens_per_second": measured["tokens"] / measured["seconds"],
            "load_average_before": round(load_before, 2), "load_average_after": round(os.getloadavg()[0], 2)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--scratch", default=str(REPO / ".cache" / "benchmarks" / "pretraining_throughput"))
    parser.add_argument("--worker", choices=ARMS, default=None)
    parser.add_argument("--output", default=str(OUTPUT))
    args = parser.parse_args(argv)
    scratch = Path(args.scratch)
    if args.worker:
        import torch

        torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
        if args.worker.startswith("project"):
            measured = project_arm(args.steps, scratch / "runs" / args.worker)
        else:
            measured = plain_arm(args.steps)
        if int(os.environ.get("RANK", "0")) == 0:
            (scratch / f"{args.worker}.json").write_text(json.dumps(measured))
        return 0

    scratch.mkdir(parents=True, exist_ok=True)
    rounds = []
    for repeat in range(args.repeats):
        measured = {arm: run_arm(arm, args.steps, scratch) for arm in ARMS}
        rounds.append({"round": repeat + 1, "arms": measured,
                       "project_1x1_over_plain_1x1": measured["project_1x1"]["tokens_per_second"]
                       / measured["plain_1x1"]["tokens_per_second"],
                       "project_2x1_over_plain_1x2": measured["project_2x1"]["tokens_per_second"]
                       / measured["plain_1x2"]["tokens_per_second"]})
        print(json.dumps({k: v for k, v in rounds[-1].items() if k != "arms"}), flush=True)
        for arm, row in measured.items():
            print(f"  {arm}: {row['tokens_per_second']:,.0f} tokens/s (load {row['load_average_before']})", flush=True)

    def median(values):
        values = sorted(values)
        return values[len(values) // 2] if len(values) % 2 else (values[len(values) // 2 - 1] + values[len(values) // 2]) / 2

    summary = {arm: median([r["arms"][arm]["tokens_per_second"] for r in rounds]) for arm in ARMS}
    from bertsent.experiments.bert_publish import cpu_name

    payload = {
        "what": "tokens/s of BERT-mini MLM + NSP pre-training at length 128: the book's trainer against a plain "
                "transformers loop (BertForPreTraining with labels, AdamW, bf16 autocast) on the same pairs",
        "command": "OMP_NUM_THREADS=1 .venv/bin/python benchmarks/pretraining_throughput.py "
                   f"--steps {args.steps} --repeats {args.repeats}",
        "date": time.strftime("%Y-%m-%d"), "cpu": cpu_name(), "cores": os.cpu_count(),
        "pairs_per_step_per_process": PAIRS_PER_STEP, "steps_per_arm": args.steps,
        "median_tokens_per_second": summary,
        "project_per_core_over_plain": median([r["project_1x1_over_plain_1x1"] for r in rounds]),
        "project_machine_over_plain_two_threads": median([r["project_2x1_over_plain_1x2"] for r in rounds]),
        "machine_tokens_per_second": summary["project_2x1"],
        "rounds": rounds,
    }
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(payload, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
