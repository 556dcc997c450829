"""Unlabelled training sentences for SG / SG-OPT (gold scores are never used)."""
from __future__ import annotations

from .sts import load_stsb
from .transfer import load_snli

METHOD_VERSION = 1  # bump when the maths changes

TRAINING_SETS = {
    "stsb_all": "every STS-B sentence (train, dev and test): the paper's protocol, as BERT-flow's",
    "stsb_train": "STS-B train sentences only: the leak-free variant (no test sentence seen in training)",
    "snli": "SNLI premises and hypotheses (dev and test, the splits available here): the domain-robustness variant",
}


def training_sentences(name: str, data_dir=None) -> list[str]:
    """Distinct sentences of a named training set (see ``TRAINING_SETS``), in a fixed order."""
    if name == "stsb_all":
        splits = [load_stsb(s, data_dir).subsets[s] for s in ("train", "dev", "test")]
    elif name == "stsb_train":
        splits = [load_stsb("train", data_dir).subsets["train"]]
    elif name == "snli":
        pairs = [p for split in ("dev", "test") for p in load_snli(split, data_dir).inputs]
        return list(dict.fromkeys(s for pair in pairs for s in pair))
    else:
        raise ValueError(f"Unknown training set {name!r}. Known: {', '.join(TRAINING_SETS)}.")
    return list(dict.fromkeys(s for pairs in splits for s in (*pairs.sentences1, *pairs.sentences2)))
