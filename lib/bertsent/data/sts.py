"""Semantic textual similarity benchmarks: STS12-16, STS-B and SICK-R, read as SentEval reads them.

Each dataset is a :class:`STSDataset`: one or more named subsets of scored sentence pairs. STS12-16
keep their SemEval subsets (needed for the "wmean" aggregation); STS-B and SICK-R have one subset,
the requested split.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .manifest import read_lines

METHOD_VERSION = 1  # bump when the maths changes

STS_YEARS = {
    "sts12": ("STS12-en-test", ["MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews"]),
    # STS13's SMT subset is not redistributable; SentEval skips it too.
    "sts13": ("STS13-en-test", ["FNWN", "headlines", "OnWN"]),
    "sts14": ("STS14-en-test", ["deft-forum", "deft-news", "headlines", "images", "OnWN", "tweet-news"]),
    "sts15": ("STS15-en-test", ["answers-forums", "answers-students", "belief", "headlines", "images"]),
    "sts16": ("STS16-en-test", ["answer-answer", "headlines", "plagiarism", "postediting", "question-question"]),
}
STS_DATASETS = ("stsb", "sickr", "sts12", "sts13", "sts14", "sts15", "sts16")
SPLITS = ("train", "dev", "test")


@dataclass(frozen=True)
class SentencePairs:
    """Scored sentence pairs: ``scores[i]`` is the gold similarity of ``(sentences1[i], sentences2[i])``."""

    sentences1: list[str]
    sentences2: list[str]
    scores: np.ndarray

    def __post_init__(self):
        if not len(self.sentences1) == len(self.sentences2) == len(self.scores):
            raise ValueError("sentences1, sentences2 and scores must have the same length")

    def __len__(self) -> int:
        return len(self.scores)

    def head(self, n: int) -> "SentencePairs":
        return SentencePairs(self.sentences1[:n], self.sentences2[:n], self.scores[:n])


@dataclass(frozen=True)
class STSDataset:
    name: str
    split: str
    subsets: dict[str, SentencePairs]

    def __len__(self) -> int:
        return sum(len(pairs) for pairs in self.subsets.values())

    def sentences(self) -> list[str]:
        """Every distinct sentence, in first-seen order."""
        seen = dict.fromkeys(s for pairs in self.subsets.values() for s in (*pairs.sentences1, *pairs.sentences2))
        return list(seen)

    def head(self, n_per_subset: int) -> "STSDataset":
        """A smaller copy (the first ``n_per_subset`` pairs of every subset), for smoke runs."""
        return STSDataset(self.name, self.split, {k: v.head(n_per_subset) for k, v in self.subsets.items()})


def _pairs(rows: list[tuple[str, str, float]]) -> SentencePairs:
    s1, s2, scores = zip(*rows) if rows else ((), (), ())
    return SentencePairs(list(s1), list(s2), np.asarray(scores, dtype=np.float64))


def load_sts_year(name: str, data_dir=None) -> STSDataset:
    """STS12-16: per subset, the pairs whose gold line is not empty."""
    folder, subset_names = STS_YEARS[name]
    subsets = {}
    for subset in subset_names:
        inputs = read_lines(f"downstream/STS/{folder}/STS.input.{subset}.txt", data_dir)
        gold = read_lines(f"downstream/STS/{folder}/STS.gs.{subset}.txt", data_dir)
        if len(inputs) != len(gold):
            raise ValueError(f"{name}/{subset}: {len(inputs)} input lines but {len(gold)} gold lines")
        rows = []
        for line, score in zip(inputs, gold):
            if not score.strip():
                continue
            first, second = line.split("\t")[:2]
            rows.append((first, second, float(score)))
        subsets[subset] = _pairs(rows)
    return STSDataset(name, "test", subsets)


def load_stsb(split: str = "test", data_dir=None) -> STSDataset:
    """STS Benchmark (SentEval copy): tab-separated, score in column 5, sentences in columns 6 and 7."""
    _check_split(split)
    rows = []
    for line in read_lines(f"downstream/STS/STSBenchmark/sts-{split}.csv", data_dir):
        fields = line.strip().split("\t")
        rows.append((fields[5], fields[6], float(fields[4])))
    return STSDataset("stsb", split, {split: _pairs(rows)})


def load_sickr(split: str = "test", data_dir=None) -> STSDataset:
    """SICK relatedness; SentEval's split names: train, dev (= SICK_trial), test (= SICK_test_annotated)."""
    _check_split(split)
    filename = {"train": "SICK_train.txt", "dev": "SICK_trial.txt", "test": "SICK_test_annotated.txt"}[split]
    rows = []
    for line in read_lines(f"downstream/SICK/{filename}", data_dir)[1:]:  # header
        fields = line.strip().split("\t")
        rows.append((fields[1], fields[2], float(fields[3])))
    return STSDataset("sickr", split, {split: _pairs(rows)})


def load_sts(name: str, split: str = "test", data_dir=None) -> STSDataset:
    """Load one STS dataset by name: ``stsb``, ``sickr`` (any split) or ``sts12`` ... ``sts16`` (test only)."""
    if name not in STS_DATASETS:
        raise ValueError(f"Unknown STS dataset {name!r}. Known: {', '.join(STS_DATASETS)}.")
    if name == "stsb":
        return load_stsb(split, data_dir)
    if name == "sickr":
        return load_sickr(split, data_dir)
    if split != "test":
        raise ValueError(f"{name} has only a test split (asked for {split!r}).")
    return load_sts_year(name, data_dir)


def _check_split(split: str) -> None:
    if split not in SPLITS:
        raise ValueError(f"Unknown split {split!r}. Known: {', '.join(SPLITS)}.")
