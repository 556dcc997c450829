"""Writing files safely, and checking them: the one copy of each atomic writer and of the file checksum.

Every writer goes through a temporary file in the target's folder and :func:`os.replace`, so a crash never
leaves a truncated file behind and a reader sees either the old file or the new one.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

import numpy as np


def sha256_of(path: Path) -> str:
    """The sha256 of a file's bytes (hex), read in blocks of 1 MiB."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def atomic_savez(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """Write an .npz so that a crash never leaves a truncated cache entry behind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:  # a file object: np.savez must not append ".npz" to the name
            np.savez(handle, **arrays)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def atomic_torch_save(obj, path: Path) -> None:
    """``torch.save`` through ``<path>.tmp``: a checkpoint is either the old one or the new one, never half."""
    import torch

    tmp = path.with_suffix(path.suffix + ".tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)


def write_json_atomic(path: Path, payload: dict) -> None:
    """Write ``payload`` as indented JSON with sorted keys (and a final newline), atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(payload, handle, indent=2, sort_keys=True)
        handle.write("\n")
    os.replace(tmp, path)


def write_csv_atomic(table, path: Path, **to_csv_options) -> None:
    """Write a pandas frame as CSV (``table.to_csv(..., **to_csv_options)``), atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".csv.tmp")
    os.close(fd)
    try:
        table.to_csv(tmp, **to_csv_options)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def save_sentence_transformer_atomically(modules: list, path: Path, staging: Path | None = None) -> Path:
    """Save ``SentenceTransformer(modules=modules)`` to ``path`` whole or not at all: written to a sibling folder,
    then swapped in; ``staging`` (the folder the modules were read from) is removed afterwards."""
    import shutil

    from sentence_transformers import SentenceTransformer

    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    SentenceTransformer(modules=modules, device="cpu").save(str(tmp))
    shutil.rmtree(path, ignore_errors=True)
    os.replace(tmp, path)
    if staging is not None:
        shutil.rmtree(staging, ignore_errors=True)
    return path
