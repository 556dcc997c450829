"""What ACL-Grad's extra gradient pass costs: the time of one fine-tuning step per objective, as a ratio to CE's.

The objectives are those of the aligned-contrastive chapter (:mod:`bertsent.training.aligned_contrastive`), on the
quick recipe's batches (SST-2, batch 32, max length 128, all-MiniLM-L6-v2), timed in the same process and
interleaved (each round times one step of every objective on the same batch, in a rotating order), so a busy machine
slows them alike and the ratios stay comparable:

- ``ce``: the classifier's cross-entropy, one backward pass;
- ``ce_scl`` / ``acl_embed``: CE + lambda * the contrastive term, one backward pass (no angle measured);
- ``acl``: ACL-Embed with ACL-Grad: the CE and contrastive gradients taken separately (two passes), their angle,
  the gate, and the combined gradient written from the two (no third pass);
- ``acl_embed_measured``: the same two passes and angle without the gate: what the chapter's runs of CE+SCL and
  ACL-Embed pay to log the angle at every step.

A step is: batch, forward, loss, backward (the objective's), clipping, AdamW. The median over the timed rounds is
reported, and each objective's ratio to CE's median.

    .venv/bin/python benchmarks/acl_step.py [--rounds 15] [--output results/benchmarks/acl_step.json]
"""
import argparse
import json

import torch
from bertsent.data.glue import load_glue
from bertsent.encode.backbones import backbone_path
from bertsent.quiet import quiet_transformers
from bertsent.training.aligned_contrastive import AclConfig, ContrastiveObjective
from bertsent.training.glue import GlueConfig, GlueMethod, GlueObjective
from bertsent.training.loop import adamw, make_accelerator
from bertsent.training.self_guided import peak_memory_mib
from interleaved import interleaved_seconds, medians as median_seconds, training_step

OBJECTIVES = {
    "ce": lambda: GlueObjective(),
    "ce_scl": lambda: ContrastiveObjective(AclConfig(loss="scl", gradient_gate=False, measure_angle=False)),
    "acl_embed": lambda: ContrastiveObjective(AclConfig(loss="acl_embed", gradient_gate=False, measure_angle=False)),
    "acl_embed_measured": lambda: ContrastiveObjective(AclConfig(loss="acl_embed", gradient_gate=False,
                                                                 measure_angle=True)),
    "acl": lambda: ContrastiveObjective(AclConfig(loss="acl_embed", gradient_gate=True)),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backbone", default="all-minilm-l6-v2")
    parser.add_argument("--task", default="SST-2")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--output")
    args = parser.parse_args()
    from transformers import AutoTokenizer

    model_path = str(backbone_path(args.backbone))
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    train = load_glue(args.task, "train").sample(32 * (args.rounds + args.warmup), random_state=0).reset_index(drop=True)
    dev = load_glue(args.task, "dev").iloc[:8]
    config = GlueConfig(batch_size=32, max_length=128, seed=1)
    accelerator = make_accelerator()
    runs = {}
    for name, make in OBJECTIVES.items():
        torch.manual_seed(0)
        objective = make()
        with quiet_transformers():  # "newly initialised classifier" is the point of fine-tuning
            model = objective.build_model(model_path)
        model.train()
        method = GlueMethod(args.task, train, dev, tokenizer, config, objective)
        method.accelerator = accelerator
        runs[name] = (method, model, adamw(model.parameters(), 5e-5, fused=True))
    names = list(OBJECTIVES)
    seconds = interleaved_seconds(names, lambda name, step: training_step(*runs[name], step), args.rounds, args.warmup)
    medians = median_seconds(seconds)
    ratios = {name: medians[name] / medians["ce"] for name in names}
    print(f"{args.backbone}, {args.task}, batch 32, median of {args.rounds} interleaved steps, "
          f"{torch.get_num_threads()} thread(s)")
    print(f"{'objective':20s} {'ms/step':>9s} {'x CE':>6s}")
    for name in names:
        print(f"{name:20s} {medians[name] * 1000:9.1f} {ratios[name]:6.2f}")
    print(f"ACL-Grad's own cost (acl / acl_embed): {medians['acl'] / medians['acl_embed']:.2f}x")
    if args.output:
        with open(args.output, "w", encoding="utf-8") as handle:
            json.dump({"backbone": args.backbone, "task": args.task, "batch_size": 32, "rounds": args.rounds,
                       "threads": torch.get_num_threads(), "median_step_seconds": medians,
                       "ratio_to_ce": ratios, "acl_grad_ratio": medians["acl"] / medians["acl_embed"],
                       "step_seconds": seconds, "peak_rss_mib": round(peak_memory_mib())}, handle, indent=2)
            handle.write("\n")
        print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
