"""The pre-training command line (``python -m bertsent.training.pretraining``) and its profiles.

It lives apart from :mod:`bertsent.training.pretraining` so that it needs neither torch nor transformers until the
run starts: the arguments and the corpus's checksums are checked first, and a damaged or replaced corpus file stops
the command in a second or two with one line (loading torch and transformers alone takes about 10 s), before any
output folder is made.
"""
from __future__ import annotations

import argparse
import json
import sys

METHOD_VERSION = 1  # bump when the maths changes (here: a profile's values)

# Profiles: `smoke` for tests (seconds); `cpu` the stall study's best recipe (results/bert/stall_study.csv: lr 1e-3,
# batch 32, dropout off, and shorter pairs: the lowest held-out loss for the same tokens) in BERT's two phases, 90% of
# the steps on pairs of at most 64 tokens (about 2,000 tokens a step), the last 10% at 128, so every position the
# fine-tuning pages use is trained: 6,000 steps, about 13M tokens, about 85 minutes of 2 idle cores in float32 (bf16
# autocast is several times slower than float32 on CPUs without AVX-512 BF16, such as this project's AVX2 machines);
# three of the six corpus files (57M tokens, so no pair is seen twice); `gpu` for one large GPU (bf16) within one
# ten-minute command (bertsent.experiments.remote_pretraining: it times the step first and sets max_steps to what
# fits): the book's size (mini), batch 256, one corpus file (enwiki-2018, 12.1M word pieces, the one small enough
# to travel with the repository), so a long run sees each pair many times (as the BabyLM baselines do).
PROFILES = {
    "smoke": dict(size="tiny", batch_size=8, max_steps=6, eval_every=3, eval_instances=32, max_length=64,
                  mixed_precision="no", corpus_files=("enwiki-2018.txt.xz",)),
    "cpu": dict(size="mini", batch_size=32, learning_rate=1e-3, dropout=0.0, max_steps=6000, eval_every=500,
                eval_instances=1024, short_length=64, mixed_precision="no",
                corpus_files=("enwiki-2018.txt.xz", "enwiki-2015-part0.txt.xz", "eltec-eng-novels.txt.xz")),
    "gpu": dict(size="mini", batch_size=256, learning_rate=1e-3, max_steps=8000, eval_every=500,
                eval_instances=8192, corpus_files=("enwiki-2018.txt.xz",)),
}


def parse_arguments(argv=None) -> tuple[argparse.ArgumentParser, argparse.Namespace, dict]:
    """The parser, the parsed arguments and the configuration values (the profile's, then ``--set``'s)."""
    parser = argparse.ArgumentParser(prog="python -m bertsent.training.pretraining",
                                     description="Pre-train BERT (MLM + NSP) on the local corpus.")
    parser.add_argument("--output", required=True, help="run directory (resumed if it holds a checkpoint)")
    parser.add_argument("--profile", choices=list(PROFILES), default="cpu")
    parser.add_argument("--corpus-dir", default=None)
    parser.add_argument("--no-resume", action="store_true")
    parser.add_argument("--set", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                        help="override one configuration field, e.g. --set max_steps 500")
    args = parser.parse_args(argv)
    values = dict(PROFILES[args.profile])
    for name, value in args.set:
        values[name] = json.loads(value) if value[:1] in "[{0123456789-" or value in ("true", "false") else value
    if isinstance(values.get("corpus_files"), str):  # one file, named bare: not a sequence of letters
        values["corpus_files"] = [values["corpus_files"]]
    return parser, args, values


def check_corpus(values: dict, corpus_dir=None) -> None:
    """The checksums of the corpus files the run reads (``corpus_files``, default all), against ``SHA256SUMS`` and
    the library's list; the share of known words needs the tokenizer and is checked when the run starts."""
    from ..data.corpus import verify_corpus

    verify_corpus(values.get("corpus_files"), corpus_dir)


def main(argv=None) -> int:
    parser, args, values = parse_arguments(argv)
    from ..data.corpus import CorpusChecksumError, CorpusContentError, CorpusNotFoundError

    corpus_errors = (CorpusNotFoundError, CorpusChecksumError, CorpusContentError)
    try:
        check_corpus(values, args.corpus_dir)
    except corpus_errors as error:
        print(f"error: {error}", file=sys.stderr)  # one line: what, where, and the fix
        return 1
    except ValueError as error:  # a corpus file name the library does not know
        parser.error(str(error))
    from ..report.io import output_folder_problem

    problem = output_folder_problem(args.output)
    if problem:  # before the imports and the corpus's tokenisation, not at the first checkpoint
        print(f"error: --output {args.output}: {problem}. Fix: choose a writable --output.", file=sys.stderr)
        return 1

    from dataclasses import fields

    from .loop import TrainingDivergedError
    from .pretraining import PretrainingConfig, pretrain

    known = [f.name for f in fields(PretrainingConfig)]
    for name, _ in args.set:
        if name not in known:
            parser.error(f"unknown configuration field {name!r}; known: {', '.join(known)}")
    try:
        result = pretrain(args.output, PretrainingConfig(**values), resume=not args.no_resume,
                          corpus_dir=args.corpus_dir)
    except (TrainingDivergedError, *corpus_errors) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    scores = "; ".join(f"held-out {key.split('_')[1].upper()} accuracy {value:.4f}"
                       for key, value in result.history[-1].items() if key.endswith("_accuracy"))
    print(f"{result.steps} steps, {result.tokens:,} tokens in {result.seconds:.0f} s; {scores}; "
          f"model in {result.output_dir / 'model'}")
    return 0
