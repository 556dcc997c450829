"""SentEval transfer tasks (MR, CR, SUBJ, MPQA, SST-2, TREC, MRPC) and SNLI dev/test.

Files are read as SentEval's loaders read them (``splitlines``: the few blank lines of CR and MPQA
are kept, so the counts equal SentEval's published sizes). Tasks without a given split
(MR, CR, SUBJ, MPQA) have one split, ``all``, evaluated by 10-fold cross-validation.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .manifest import read_lines

METHOD_VERSION = 1  # bump when the maths changes

TRANSFER_TASKS = ("mr", "cr", "subj", "mpqa", "sst2", "trec", "mrpc")
_BINARY_FILES = {
    "mr": ("MR/rt-polarity.pos", "MR/rt-polarity.neg"),
    "cr": ("CR/custrev.pos", "CR/custrev.neg"),
    "subj": ("SUBJ/subj.objective", "SUBJ/subj.subjective"),
    "mpqa": ("MPQA/mpqa.pos", "MPQA/mpqa.neg"),
}
TREC_CLASSES = ("ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM")
SNLI_CLASSES = ("entailment", "neutral", "contradiction")


@dataclass(frozen=True)
class Examples:
    """Inputs with integer labels. An input is a sentence, or a ``(sentence1, sentence2)`` pair."""

    inputs: list
    labels: np.ndarray

    def __len__(self) -> int:
        return len(self.labels)


@dataclass(frozen=True)
class ClassificationTask:
    name: str
    splits: dict[str, Examples]
    n_classes: int

    @property
    def cross_validated(self) -> bool:
        return set(self.splits) == {"all"}

    @property
    def scored_examples(self) -> int:
        """How many examples its accuracy is measured on: every example (10-fold cross-validation) or the test split."""
        return len(self.splits["all"] if self.cross_validated else self.splits["test"])


def load_transfer(name: str, data_dir=None) -> ClassificationTask:
    """Load one SentEval transfer task by name (see ``TRANSFER_TASKS``)."""
    if name in _BINARY_FILES:
        positive, negative = _BINARY_FILES[name]
        pos = read_lines(f"downstream/{positive}", data_dir, encoding="latin-1")
        neg = read_lines(f"downstream/{negative}", data_dir, encoding="latin-1")
        labels = np.array([1] * len(pos) + [0] * len(neg))
        return ClassificationTask(name, {"all": Examples(pos + neg, labels)}, 2)
    if name == "sst2":
        splits = {}
        for split in ("train", "dev", "test"):
            rows = [line.rsplit("\t", 1) for line in read_lines(f"downstream/SST/binary/sentiment-{split}", data_dir)]
            splits[split] = Examples([text.strip() for text, _ in rows], np.array([int(y) for _, y in rows]))
        return ClassificationTask(name, splits, 2)
    if name == "trec":
        splits = {}
        for split, filename in (("train", "train_5500.label"), ("test", "TREC_10.label")):
            inputs, labels = [], []
            for line in read_lines(f"downstream/TREC/{filename}", data_dir, encoding="latin-1"):
                tag, question = line.strip().split(" ", 1)
                inputs.append(question)
                labels.append(TREC_CLASSES.index(tag.split(":")[0]))
            splits[split] = Examples(inputs, np.array(labels))
        return ClassificationTask(name, splits, len(TREC_CLASSES))
    if name == "mrpc":
        splits = {}
        for split in ("train", "test"):
            inputs, labels = [], []
            for line in read_lines(f"downstream/MRPC/msr_paraphrase_{split}.txt", data_dir, encoding="utf-8-sig")[1:]:
                label, _, _, first, second = line.strip().split("\t")
                inputs.append((first, second))
                labels.append(int(label))
            splits[split] = Examples(inputs, np.array(labels))
        return ClassificationTask(name, splits, 2)
    raise ValueError(f"Unknown transfer task {name!r}. Known: {', '.join(TRANSFER_TASKS)}.")


def load_snli(split: str = "dev", data_dir=None) -> Examples:
    """SNLI premise-hypothesis pairs (only dev and test are available here; SNLI train is not)."""
    if split not in ("dev", "test"):
        raise ValueError(f"SNLI split {split!r} is not available here. Known: dev, test.")
    premises = read_lines(f"downstream/SNLI/s1.{split}", data_dir)
    hypotheses = read_lines(f"downstream/SNLI/s2.{split}", data_dir)
    labels = read_lines(f"downstream/SNLI/labels.{split}", data_dir)
    inputs = [(p.strip(), h.strip()) for p, h in zip(premises, hypotheses)]
    return Examples(inputs, np.array([SNLI_CLASSES.index(y.strip()) for y in labels]))


def subsample(task: ClassificationTask, max_examples: int | None, seed: int = 0) -> ClassificationTask:
    """A smaller copy with at most ``max_examples`` per split, both classes kept (smoke runs); ``None``: unchanged."""
    if not max_examples:
        return task
    rng = np.random.default_rng(seed)
    splits = {}
    for name, examples in task.splits.items():
        keep = np.sort(rng.permutation(len(examples))[:max_examples]) if len(examples) > max_examples else np.arange(len(examples))
        splits[name] = Examples([examples.inputs[i] for i in keep], examples.labels[keep])
    return ClassificationTask(task.name, splits, task.n_classes)
