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
  ACL-Embed pay to log the angle at every step;
- ``plain_transformers``: the reference for CE, a plain ``transformers`` loop on the same batches:
  ``AutoModelForSequenceClassification`` from the same weights (the same seed for its new classifier), the batch's
  sentences tokenised in the step as the library does (padding to the batch's longest, truncation at the same
  maximum length), forward with the labels, ``loss.backward()``, clipping at 1.0, ``torch.optim.AdamW`` as it comes
  (same learning rate, no weight decay as the other arms). Its batches are checked equal to CE's before the timing.

A step is: batch, forward, loss, backward (the objective's), clipping, AdamW. The median over the timed rounds is
reported, each objective's ratio to CE's median, and ``ce_vs_plain``: CE's median over the plain loop's (at most 1:
the library's step is no slower than the plain loop). The process's CPU seconds of every step are kept too
(``cpu_step_seconds``, and ``ce_vs_plain_cpu``): the work done without the waits for a core that a busy machine adds.

    .venv/bin/python benchmarks/acl_step.py [--rounds 15] [--output results/benchmarks/acl_step.json]
"""
import argparse
import json
import os
import platform

import numpy as np
import torch
from bertsent.data.glue import load_glue
from bertsent.experiments.bert_publish import cpu_name
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
PLAIN = "plain_transformers"


class PlainLoop:
    """A plain ``transformers`` fine-tuning step (see the module docstring) on the rows CE's method reads."""

    def __init__(self, model_path: str, tokenizer, method, learning_rate: float):
        from transformers import AutoModelForSequenceClassification

        with quiet_transformers():
            self.model = AutoModelForSequenceClassification.from_pretrained(model_path, num_labels=2)
        self.model.train()
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=learning_rate, weight_decay=0.0)
        self.tokenizer, self.train, self.config = tokenizer, method.train, method.config
        # the method's order of the first epoch (GlueMethod.batches), checked equal in check_batches
        self.order = np.random.default_rng([self.config.seed, 0]).permutation(len(self.train))

    def inputs(self, step: int) -> dict:
        size = self.config.batch_size
        rows = self.train.iloc[self.order[step * size:(step + 1) * size]]
        encoded = self.tokenizer(rows["sentence1"].tolist(), padding=True, truncation=True,
                                 max_length=self.config.max_length, return_tensors="pt")
        return {**encoded, "labels": torch.tensor(rows["label"].to_numpy(dtype=np.int64))}

    def check_batches(self, method, steps: int) -> None:
        for step in range(steps):
            mine, theirs = self.inputs(step), method.batches(step)
            if mine.keys() != theirs.keys() or not all(torch.equal(mine[k], theirs[k].cpu()) for k in mine):
                raise AssertionError(f"the plain loop's batch {step} differs from the library's")

    def step(self, step: int) -> None:
        loss = self.model(**self.inputs(step)).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)


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
    if args.task != "SST-2":
        raise SystemExit("the plain loop tokenises single sentences: --task SST-2")
    torch.manual_seed(0)  # the classifier CE's model was given
    plain = PlainLoop(model_path, tokenizer, runs["ce"][0], 5e-5)
    plain.check_batches(runs["ce"][0], args.rounds + args.warmup)
    names = [*OBJECTIVES, PLAIN]

    def step(name, round_):
        return plain.step(round_) if name == PLAIN else training_step(*runs[name], round_)

    cpu_seconds, load_before = {}, os.getloadavg()
    seconds = interleaved_seconds(names, step, args.rounds, args.warmup, cpu_seconds=cpu_seconds)
    medians, cpu_medians = median_seconds(seconds), median_seconds(cpu_seconds)
    ratios = {name: medians[name] / medians["ce"] for name in names}
    ce_vs_plain, ce_vs_plain_cpu = medians["ce"] / medians[PLAIN], cpu_medians["ce"] / cpu_medians[PLAIN]
    print(f"{args.backbone}, {args.task}, batch 32, median of {args.rounds} interleaved steps, "
          f"{torch.get_num_threads()} thread(s)")
    print(f"{'objective':20s} {'ms/step':>9s} {'cpu ms':>9s} {'x CE':>6s}")
    for name in names:
        print(f"{name:20s} {medians[name] * 1000:9.1f} {cpu_medians[name] * 1000:9.1f} {ratios[name]:6.2f}")
    print(f"ACL-Grad's own cost (acl / acl_embed): {medians['acl'] / medians['acl_embed']:.2f}x")
    print(f"CE against the plain transformers loop: {ce_vs_plain:.2f}x (CPU time: {ce_vs_plain_cpu:.2f}x)")
    if args.output:
        with open(args.output, "w", encoding="utf-8") as handle:
            json.dump({"backbone": args.backbone, "task": args.task, "batch_size": 32, "rounds": args.rounds,
                       "threads": torch.get_num_threads(), "cpu": cpu_name(), "cores": os.cpu_count(),
                       "machine": platform.machine(), "load_average": {"before": load_before, "after": os.getloadavg()},
                       "torch": torch.__version__, "median_step_seconds": medians,
                       "ratio_to_ce": ratios, "acl_grad_ratio": medians["acl"] / medians["acl_embed"],
                       "ce_vs_plain": ce_vs_plain, "median_cpu_step_seconds": cpu_medians,
                       "ce_vs_plain_cpu": ce_vs_plain_cpu, "step_seconds": seconds,
                       "cpu_step_seconds": cpu_seconds, "peak_rss_mib": round(peak_memory_mib())}, handle, indent=2)
            handle.write("\n")
        print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
