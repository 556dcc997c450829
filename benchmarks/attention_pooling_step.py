"""What one training step of the attention-pooling chapter costs on each backbone, as a ratio to MiniLM's.

The step is the chapter's (:mod:`bertsent.training.attention_pooling`): the supervised objective on a batch of
NLI triplets (anchors, entailments and contradictions in one forward pass), the LayerAttPooler (``att_both_cls``),
InfoNCE, backward, clipping at 1.0, AdamW over the encoder and the pooler. The backbones are timed in the same
process and interleaved (each round times one step of every backbone, in a rotating order), so a busy machine
slows them alike and the ratios stay comparable; the median over the timed rounds is reported, and each backbone's
ratio to the first one's median. The batches are the same SNLI triplets for every backbone (the chapter's seeded
subset, :class:`bertsent.experiments.attention_pooling.TrainingData`).

    .venv/bin/python benchmarks/attention_pooling_step.py [--backbones all-minilm-l6-v2 bert-mini-wiki gemma-3-270m]
        [--rounds 3] [--batch-size 64] [--threads 1] [--output results/benchmarks/attention_pooling_step.json]
"""
import argparse
import json
import time

import torch
from bertsent.encode.backbones import load_backbone
from bertsent.experiments.attention_pooling import TrainingData
from bertsent.models.layer_attention import DEFAULT_POOLING, LayerAttentionModel
from bertsent.training.attention_pooling import AttentionPoolingConfig, AttentionPoolingMethod, parameter_groups
from bertsent.training.loop import adamw, make_accelerator
from bertsent.training.self_guided import peak_memory_mib
from interleaved import interleaved_seconds, medians as median_seconds, training_step


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backbones", nargs="+", default=["all-minilm-l6-v2", "bert-mini-wiki", "gemma-3-270m"])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (the chapter's runs used 1)")
    parser.add_argument("--output")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    steps = args.warmup + args.rounds
    triplets = TrainingData(max_triplets=args.batch_size * steps).triplets()  # the chapter's seeded subset
    config = AttentionPoolingConfig(objective="supervised", pooling=DEFAULT_POOLING, batch_size=args.batch_size)
    accelerator = make_accelerator()
    runs, load_seconds, parameters = {}, {}, {}
    for name in args.backbones:
        torch.manual_seed(0)
        start = time.perf_counter()
        source = load_backbone(name)
        load_seconds[name] = time.perf_counter() - start
        model = LayerAttentionModel.on_backbone(source, config.pooling).train()
        parameters[name] = sum(p.numel() for p in model.parameters() if p.requires_grad)
        method = AttentionPoolingMethod(model, source.tokenizer, config, triplets, None, None, steps)
        method.accelerator = accelerator
        optimizer = adamw(parameter_groups(model, config), config.learning_rate, weight_decay=config.weight_decay)
        runs[name] = (method, model, optimizer)
    names = list(args.backbones)
    seconds = interleaved_seconds(names, lambda name, step: training_step(*runs[name], step), args.rounds, args.warmup)
    medians = median_seconds(seconds)
    ratios = {name: medians[name] / medians[names[0]] for name in names}
    print(f"attention pooling ({config.pooling}, supervised), batch {args.batch_size} triplets, median of "
          f"{args.rounds} interleaved steps, {torch.get_num_threads()} thread(s)")
    print(f"{'backbone':20s} {'s/step':>8s} {'x ' + names[0]:>22s} {'trained params':>15s}")
    for name in names:
        print(f"{name:20s} {medians[name]:8.2f} {ratios[name]:22.2f} {parameters[name]:15,d}")
    if args.output:
        with open(args.output, "w", encoding="utf-8") as handle:
            json.dump({"pooling": config.pooling, "objective": "supervised", "batch_size": args.batch_size,
                       "max_length": config.max_length, "rounds": args.rounds, "warmup": args.warmup,
                       "threads": torch.get_num_threads(), "reference": names[0],
                       "median_step_seconds": medians, "ratio_to_reference": ratios, "step_seconds": seconds,
                       "trained_parameters": parameters, "load_seconds": load_seconds,
                       "peak_rss_mib": round(peak_memory_mib())}, handle, indent=2)
            handle.write("\n")
        print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
