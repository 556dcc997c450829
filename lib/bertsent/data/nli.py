"""Training data for contrastive sentence embeddings: NLI triplets and unlabelled Wikipedia sentences.

**NLI triplets** (premise, entailment hypothesis, contradiction hypothesis), the form supervised SimCSE trains on:

- SNLI dev and test (:func:`snli_triplets`). SNLI's training split and MultiNLI, which SimCSE's 275k triplets
  come from, are **not available here**; the dev and test splits give 6,339 triplets (3,172 + 3,167). Their text is
  SentEval's tokenised copy (spaces before punctuation). In SNLI each premise has hypotheses written for every
  label; each entailment hypothesis is paired with a contradiction hypothesis of the same premise (the k-th
  entailment with the k-th contradiction, cycling when there are fewer contradictions), so each
  (premise, entailment) pair is one triplet, as in SimCSE's construction. Premises with no contradiction are
  dropped.
- SICK's **training split only** (:func:`sick_entailment_pairs`, :func:`sick_triplets`): its pairs carry
  ENTAILMENT / NEUTRAL / CONTRADICTION judgements. Its test split is never used (the STS evaluation scores
  SICK-R test), nor its trial split (the dev set). A SICK triplet is a sentence A with one B it entails and one
  B it contradicts: 148 triplets; its 1,299 ENTAILMENT pairs have no hard negative.

**Unlabelled sentences** for the unsupervised design (:func:`wikipedia_sentences`): the first ``n`` sentences of
the shared Wikipedia corpus (``enwiki-2018.txt.xz``, validation documents left out) with ``min_words`` to
``max_words`` words, in file order; unsupervised SimCSE used 1M Wikipedia sentences.

:func:`nli_counts` reports how many of each there are.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .corpus import corpus_file, document_hash, held_out_documents, iter_documents, split_sentences
from .manifest import read_lines
from .transfer import SNLI_CLASSES, load_snli

METHOD_VERSION = 1  # bump when the maths changes

NLI_SOURCES = ("snli", "sick")
WIKIPEDIA_FILE = "enwiki-2018.txt.xz"


@dataclass(frozen=True)
class Triplets:
    """``(anchors[i], positives[i], negatives[i])``: premise, entailment hypothesis, contradiction hypothesis."""

    anchors: list[str]
    positives: list[str]
    negatives: list[str]

    def __post_init__(self):
        if not len(self.anchors) == len(self.positives) == len(self.negatives):
            raise ValueError("anchors, positives and negatives must have the same length")

    def __len__(self) -> int:
        return len(self.anchors)

    def head(self, n: int) -> "Triplets":
        return Triplets(self.anchors[:n], self.positives[:n], self.negatives[:n])

    def __add__(self, other: "Triplets") -> "Triplets":
        return Triplets(self.anchors + other.anchors, self.positives + other.positives,
                        self.negatives + other.negatives)


def triplets_from_labelled_pairs(pairs, labels) -> Triplets:
    """Triplets from labelled (premise, hypothesis) pairs: for each premise (first-seen order), its k-th
    entailment hypothesis with its (k mod n_c)-th contradiction hypothesis. ``labels``: "entailment",
    "contradiction" or anything else (ignored), case-insensitive."""
    entailed: dict[str, list[str]] = {}
    contradicted: dict[str, list[str]] = {}
    for (premise, hypothesis), label in zip(pairs, labels):
        label = str(label).lower()
        if label == "entailment":
            entailed.setdefault(premise, []).append(hypothesis)
            contradicted.setdefault(premise, [])
        elif label == "contradiction":
            contradicted.setdefault(premise, []).append(hypothesis)
            entailed.setdefault(premise, [])
    anchors, positives, negatives = [], [], []
    for premise, hypotheses in entailed.items():
        contradictions = contradicted[premise]
        if not contradictions:
            continue
        for k, hypothesis in enumerate(hypotheses):
            anchors.append(premise)
            positives.append(hypothesis)
            negatives.append(contradictions[k % len(contradictions)])
    return Triplets(anchors, positives, negatives)


def snli_triplets(splits=("dev", "test"), data_dir=None) -> Triplets:
    """SNLI triplets from the given splits (only dev and test exist here; see the module docstring)."""
    if isinstance(splits, str):
        splits = (splits,)
    out = Triplets([], [], [])
    for split in splits:
        examples = load_snli(split, data_dir)
        out = out + triplets_from_labelled_pairs(examples.inputs, [SNLI_CLASSES[y] for y in examples.labels])
    return out


def _sick_rows(split: str, data_dir=None) -> list[tuple[str, str, str]]:
    if split != "train":
        raise ValueError(f"SICK split {split!r} is not used for training: test is the SICK-R evaluation set and "
                         "trial is its dev set. Fix: use split='train'.")
    rows = []
    for line in read_lines("downstream/SICK/SICK_train.txt", data_dir)[1:]:  # header
        fields = line.rstrip("\n").split("\t")
        rows.append((fields[1], fields[2], fields[4]))
    return rows


def sick_entailment_pairs(split: str = "train", data_dir=None) -> list[tuple[str, str]]:
    """SICK (sentence A, sentence B) pairs judged ENTAILMENT, training split only."""
    return [(a, b) for a, b, label in _sick_rows(split, data_dir) if label.upper() == "ENTAILMENT"]


def sick_triplets(split: str = "train", data_dir=None) -> Triplets:
    """SICK triplets (A, a B that A entails, a B that A contradicts), training split only."""
    rows = _sick_rows(split, data_dir)
    return triplets_from_labelled_pairs([(a, b) for a, b, _ in rows], [label for _, _, label in rows])


def nli_triplets(sources=("snli",), data_dir=None) -> Triplets:
    """Triplets of the named sources, concatenated: ``"snli"`` (dev + test) and ``"sick"`` (train)."""
    if isinstance(sources, str):
        sources = (sources,)
    unknown = [s for s in sources if s not in NLI_SOURCES]
    if unknown:
        raise ValueError(f"Unknown NLI source(s) {unknown}. Known: {', '.join(NLI_SOURCES)}.")
    out = Triplets([], [], [])
    for source in sources:
        out = out + (snli_triplets(data_dir=data_dir) if source == "snli" else sick_triplets(data_dir=data_dir))
    return out


def wikipedia_sentences(n: int = 100_000, corpus_dir=None, file: str = WIKIPEDIA_FILE, min_words: int = 5,
                        max_words: int = 64, verify: bool = True) -> list[str]:
    """The first ``n`` distinct sentences of ``file`` with ``min_words``..``max_words`` words, from documents that
    are not held out for validation, in file order (fewer when the file runs out)."""
    if n < 1:
        raise ValueError(f"n must be a positive number of sentences, not {n}.")
    path = corpus_file(file, corpus_dir, verify=verify)
    out: dict[str, None] = {}
    for document in iter_documents(path):
        # one document at a time: held out when its own hash falls in the validation percent
        if held_out_documents(np.array([document_hash(document)]), minimum=0).any():
            continue
        for paragraph in document:
            for sentence in split_sentences(paragraph):
                if min_words <= len(sentence.split()) <= max_words:
                    out.setdefault(sentence)
                    if len(out) >= n:
                        return list(out)
    return list(out)


def nli_counts(data_dir=None) -> dict[str, int]:
    """How many training items each source gives: SNLI dev/test triplets, SICK train triplets and entailment
    pairs."""
    snli = {split: len(snli_triplets((split,), data_dir)) for split in ("dev", "test")}
    return {"snli_dev_triplets": snli["dev"], "snli_test_triplets": snli["test"],
            "snli_triplets": snli["dev"] + snli["test"], "sick_train_triplets": len(sick_triplets("train", data_dir)),
            "sick_train_entailment_pairs": len(sick_entailment_pairs("train", data_dir))}
