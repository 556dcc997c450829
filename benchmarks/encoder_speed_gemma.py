"""Encoding speed on Gemma 3 270M: this library's encoder against a plain transformers loop, same run.

Both read the same distinct STS-B test sentences (the first ``--sentences``) and compute the same readouts for every
hidden state (``last`` token and ``mean`` without BOS, :mod:`bertsent.encode.causal_pooling`), with the same batch
size and no key/value cache. The plain loop is what one writes first: batches in data order, padded to the longest
sentence of each batch, attention mask passed. The encoder batches sentences of equal token length (no padding,
no mask) and pads only the length-sorted leftovers. Prints both times (alternating, ``--repeats`` times each),
their ratio, and the largest differences between the two sets of vectors.

    .venv/bin/python benchmarks/encoder_speed_gemma.py [--sentences 384] [--repeats 2] [--batch-size 32] [--threads 1]
        [--output results/benchmarks/encoder_speed_gemma.json]
"""
import argparse
import json
import os
import platform
import statistics
import time

import numpy as np
import torch

from bertsent.data.sts import load_stsb
from bertsent.encode.backbones import load_backbone
from bertsent.encode.encoder import Encoder

POOLINGS = ("last", "mean")


@torch.inference_mode()
def plain_loop(backbone, sentences, batch_size, max_length):
    """``{pooling: (layers, sentences, dim)}`` from padded batches in data order, pooled by hand."""
    out = {p: np.empty((backbone.n_layers, len(sentences), backbone.dim), dtype=np.float32) for p in POOLINGS}
    for start in range(0, len(sentences), batch_size):
        batch = sentences[start:start + batch_size]
        inputs = backbone.tokenizer(batch, padding=True, truncation=True, max_length=max_length, return_tensors="pt")
        hidden = torch.stack(backbone.model(**inputs, output_hidden_states=True, use_cache=False).hidden_states)
        mask = inputs["attention_mask"]
        last = mask.sum(dim=1) - 1  # right padding: the last real token
        out["last"][:, start:start + len(batch)] = hidden[:, torch.arange(len(batch)), last].numpy()
        words = mask.clone()
        words[:, 0] = 0  # BOS left out of the mean (every sentence here has a word)
        weights = words.unsqueeze(-1).float()
        out["mean"][:, start:start + len(batch)] = ((hidden * weights).sum(dim=2) / weights.sum(dim=1)).numpy()
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sentences", type=int, default=384)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (the book's machines have two cores)")
    parser.add_argument("--output", help="also write the measurements to this JSON file")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    pairs = load_stsb("test").subsets["test"]
    sentences = list(dict.fromkeys(pairs.sentences1 + pairs.sentences2))[:args.sentences]
    start = time.perf_counter()
    backbone = load_backbone("gemma-3-270m")
    load_s = time.perf_counter() - start
    encoder = Encoder(backbone, batch_size=args.batch_size, max_length=args.max_length, show_progress=False)
    lengths = np.array([len(ids) for ids in backbone.tokenizer(sentences)["input_ids"]])
    padded_tokens = sum(len(lengths[i:i + args.batch_size]) * lengths[i:i + args.batch_size].max()
                        for i in range(0, len(lengths), args.batch_size))
    print(f"{len(sentences)} distinct STS-B test sentences, {lengths.sum()} tokens ({padded_tokens} with the plain "
          f"loop's padding); gemma-3-270m loaded in {load_s:.1f} s; {args.threads} thread(s)")

    ours_times, plain_times = [], []
    for _ in range(args.repeats):
        start = time.perf_counter()
        expected = plain_loop(backbone, sentences, args.batch_size, args.max_length)
        plain_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        pooled = encoder.encode(sentences, poolings=POOLINGS)
        ours_times.append(time.perf_counter() - start)
    plain, mine = statistics.median(plain_times), statistics.median(ours_times)
    print(f"plain transformers loop (padded): median {plain:.2f} s  (runs: {', '.join(f'{t:.2f}' for t in plain_times)})")
    print(f"bertsent Encoder:                 median {mine:.2f} s  (runs: {', '.join(f'{t:.2f}' for t in ours_times)})")
    print(f"speed ratio (plain / bertsent): {plain / mine:.2f}x")
    differences = {}
    for pooling in POOLINGS:
        ours = pooled.vectors[pooling]
        last_layer = float(np.abs(ours[-1] - expected[pooling][-1]).max())
        scale = np.abs(expected[pooling]).max(axis=2, keepdims=True)  # per layer and sentence
        relative = float((np.abs(ours - expected[pooling]) / scale).max())
        differences[pooling] = {"max_abs_last_layer": last_layer, "max_relative_all_layers": relative}
        print(f"{pooling}: max abs difference at the last layer {last_layer:.2e}; over all layers, largest "
              f"difference relative to the vector's largest entry {relative:.2e}")
    if args.output:
        with open(args.output, "w", encoding="utf-8") as handle:
            json.dump({"backbone": "gemma-3-270m", "sentences": len(sentences), "tokens": int(lengths.sum()),
                       "padded_tokens": int(padded_tokens), "batch_size": args.batch_size, "threads": args.threads,
                       "poolings": list(POOLINGS), "plain_loop_s": plain_times, "bertsent_s": ours_times,
                       "ratio": plain / mine, "differences": differences, "load_from_cache_s": load_s,
                       "cpu_count": os.cpu_count(), "machine": platform.machine()}, handle, indent=2)
            handle.write("\n")
        print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
