"""GLUE task files (``glue/<TASK>/{train,dev,test}.tsv``) as pandas frames with uniform columns.

Every frame has ``sentence1``, ``sentence2`` (``None`` for single-sentence tasks) and ``label``
(``None`` on the unlabelled test splits). Labels are integers, except STS-B's float scores.
"""
from __future__ import annotations

import csv

import pandas as pd

from .manifest import verified_path

METHOD_VERSION = 1  # bump when the maths changes

# task -> (sentence1 column, sentence2 column, label column, label names or None for regression)
GLUE_TASKS = {
    "CoLA": (3, None, 1, None),
    "SST-2": ("sentence", None, "label", None),
    "MRPC": ("#1 String", "#2 String", "Quality", None),
    "RTE": ("sentence1", "sentence2", "label", ["entailment", "not_entailment"]),
    "QNLI": ("question", "sentence", "label", ["entailment", "not_entailment"]),
    "WNLI": ("sentence1", "sentence2", "label", None),
    "STS-B": ("sentence1", "sentence2", "score", None),
}


def load_glue(task: str, split: str, data_dir=None) -> pd.DataFrame:
    if task not in GLUE_TASKS:
        raise ValueError(f"Unknown GLUE task {task!r}. Known here: {', '.join(GLUE_TASKS)} (MNLI and QQP are not available).")
    path = verified_path(f"glue/{task}/{split}.tsv", data_dir) if _exists(task, split) else None
    if path is None:
        raise ValueError(f"GLUE {task} has no {split!r} split here.")
    first, second, label, names = GLUE_TASKS[task]
    header = None if task == "CoLA" and split != "test" else 0
    frame = pd.read_csv(path, sep="\t", header=header, quoting=csv.QUOTE_NONE, encoding="utf-8-sig",
                        dtype=str, keep_default_na=False)
    if task == "CoLA" and split == "test":
        first = "sentence"
    if task == "MRPC" and split == "test":
        label = None
    out = pd.DataFrame({
        "sentence1": frame[first],
        "sentence2": frame[second] if second is not None else None,
    })
    if label is not None and label in frame.columns:
        values = frame[label]
        if task == "STS-B":
            out["label"] = values.astype(float)
        elif names is not None:
            out["label"] = values.map(names.index)
        else:
            out["label"] = values.astype(int)
    else:
        out["label"] = None
    return out


def _exists(task: str, split: str) -> bool:
    from .manifest import load_manifest

    return f"glue/{task}/{split}.tsv" in load_manifest()
