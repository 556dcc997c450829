"""Encoding speed: this library's encoder against sentence-transformers' ``encode``, same model, same run.

Encodes every STS-B test sentence with all-MiniLM-L6-v2 both ways (alternating, ``--repeats`` times each)
and prints the median times, their ratio, and the largest absolute difference between the two sets of
normalised last-layer mean vectors (sentence-transformers' own output for this model).

    .venv/bin/python benchmarks/encoder_speed.py [--repeats 3] [--batch-size 64] [--output results/benchmarks/encoder_speed.json]
"""
import argparse
import json
import platform
import statistics
import time

import numpy as np
from sentence_transformers import SentenceTransformer

from bertsent.encode.backbones import load_backbone
from bertsent.data.sts import load_stsb
from bertsent.encode.encoder import Encoder


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--st-batch-size", type=int, default=32, help="sentence-transformers' default")
    parser.add_argument("--output", help="also write the measurements to this JSON file")
    args = parser.parse_args()

    pairs = load_stsb("test").subsets["test"]
    sentences = pairs.sentences1 + pairs.sentences2
    backbone = load_backbone("all-minilm-l6-v2")
    reference = SentenceTransformer(backbone.source, device="cpu")
    encoder = Encoder(backbone, batch_size=args.batch_size, show_progress=False)
    print(f"{len(sentences)} sentences ({len(set(sentences))} distinct), model {backbone.source}")

    ours_times, st_times = [], []
    for _ in range(args.repeats):
        start = time.perf_counter()
        expected = reference.encode(sentences, batch_size=args.st_batch_size)
        st_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        pooled = encoder.encode(sentences, poolings=["mean"])
        ours_times.append(time.perf_counter() - start)
    ours = pooled.lookup(sentences, "mean", backbone.n_layers - 1)
    ours = ours / np.linalg.norm(ours, axis=1, keepdims=True)
    st, mine = statistics.median(st_times), statistics.median(ours_times)
    print(f"sentence-transformers encode: median {st:.2f} s  (runs: {', '.join(f'{t:.2f}' for t in st_times)})")
    print(f"bertsent Encoder (mean only): median {mine:.2f} s  (runs: {', '.join(f'{t:.2f}' for t in ours_times)})")
    print(f"speed ratio (sentence-transformers / bertsent): {st / mine:.2f}x")
    max_diff = float(np.abs(ours - expected).max())
    print(f"max abs difference of the vectors: {max_diff:.2e}")
    if args.output:
        with open(args.output, "w", encoding="utf-8") as handle:
            json.dump({"sentences": len(sentences), "distinct": len(set(sentences)), "batch_size": args.batch_size,
                       "sentence_transformers_s": st_times, "bertsent_s": ours_times, "ratio": st / mine,
                       "max_abs_difference": max_diff, "cpu_count": __import__("os").cpu_count(),
                       "machine": platform.machine()}, handle, indent=2)
            handle.write("\n")
        print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
