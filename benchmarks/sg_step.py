"""Where an SG-OPT training step spends its time, and how much the trainer's choices save.

Times the parts of one step (batch 16: tokenise, BERT_F forward with every hidden state, BERT_T forward,
projection head, loss + regulariser, backward, clip + AdamW) for two set-ups in the same run:

- ``naive``: every batch padded to max_length 128, the default (unfused) AdamW;
- ``bertsent``: what ``bertsent.training`` does: pad to the longest sentence of the batch, fused AdamW.

    .venv/bin/python benchmarks/sg_step.py [--backbone all-minilm-l6-v2] [--steps 12] [--output FILE.json]
"""
import argparse
import json
import statistics
import time

import torch
from bertsent.data.sts import load_stsb
from bertsent.losses import sg_opt3_loss, weight_distance_regularizer
from bertsent.training.self_guided import peak_memory_mib, self_guided_model

PARTS = ["tokenise", "frozen forward (views)", "trained forward ([CLS] / last token)", "projection head", "loss + regulariser",
         "backward", "clip + AdamW"]


def time_steps(backbone, sentences, steps, pad_to_max, fused):
    torch.manual_seed(0)
    model, tokenizer = self_guided_model(backbone)  # a causal LM: last token as c, BOS out of the views
    model.train()
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=5e-5, betas=(0.9, 0.9), fused=fused)
    times = {part: [] for part in PARTS}
    for step in range(steps + 2):
        batch = sentences[step * 16:(step + 1) * 16]
        marks = [time.perf_counter()]
        encoded = tokenizer(batch, padding="max_length" if pad_to_max else True, truncation=True, max_length=128,
                            return_tensors="pt")
        marks.append(time.perf_counter())
        views = model.views(encoded["input_ids"], encoded["attention_mask"])
        marks.append(time.perf_counter())
        cls = model.sentence_vectors(encoded["input_ids"], encoded["attention_mask"])
        marks.append(time.perf_counter())
        c, h = model.head(cls), model.head(views)
        marks.append(time.perf_counter())
        loss = sg_opt3_loss(c, h, 0.01) + weight_distance_regularizer(model.trained, model.frozen, 0.1)
        marks.append(time.perf_counter())
        loss.backward()
        marks.append(time.perf_counter())
        torch.nn.utils.clip_grad_norm_(trainable, 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        marks.append(time.perf_counter())
        if step >= 2:  # warm-up steps excluded
            for part, start, end in zip(PARTS, marks, marks[1:]):
                times[part].append(end - start)
    return {part: statistics.median(values) for part, values in times.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backbone", default="all-minilm-l6-v2")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--output")
    args = parser.parse_args()
    sentences = load_stsb("train").subsets["train"].sentences1
    results = {
        "naive": time_steps(args.backbone, sentences, args.steps, pad_to_max=True, fused=False),
        "bertsent": time_steps(args.backbone, sentences, args.steps, pad_to_max=False, fused=True),
    }
    print(f"{args.backbone}, batch 16, median of {args.steps} steps (ms)")
    print(f"{'part':28s} {'naive':>9s} {'bertsent':>9s}")
    for part in PARTS:
        print(f"{part:28s} {results['naive'][part] * 1000:9.1f} {results['bertsent'][part] * 1000:9.1f}")
    totals = {name: sum(parts.values()) for name, parts in results.items()}
    print(f"{'step':28s} {totals['naive'] * 1000:9.1f} {totals['bertsent'] * 1000:9.1f}")
    print(f"speed-up (naive / bertsent): {totals['naive'] / totals['bertsent']:.2f}x")
    print(f"peak resident memory of the process: {peak_memory_mib():.0f} MiB")
    if args.output:
        with open(args.output, "w", encoding="utf-8") as handle:
            json.dump({"backbone": args.backbone, "steps": args.steps, "seconds": results, "step_seconds": totals,
                       "threads": torch.get_num_threads(), "peak_rss_mib": round(peak_memory_mib())}, handle, indent=2)
            handle.write("\n")
        print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
