"""Writing files safely, and checking them: the one copy of each atomic writer and of the file checksum.

Every writer goes through a temporary file in the target's folder and :func:`os.replace`, so a crash never
leaves a truncated file behind and a reader sees either the old file or the new one.

A canonical page run (:mod:`bertsent.book`) also stages its page's result files: the runner names a folder in
:data:`STAGING_VARIABLE`, which its kernel inherits; every file the page writes under ``results/`` (but for the run
store, ``results/runs/``) goes there instead (:func:`staged`), and the runner moves them into ``results/`` only once
the notebook has finished. A file is a page's result only with the rest of its page: a run that fails or is
interrupted leaves ``results/`` as it was, however far it got.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

import numpy as np

from ..paths import RESULTS_DIR

# set by the runner for a canonical page run: the folder whose results/ receives the page's files until it finishes
STAGING_VARIABLE = "BERTSENT_RESULTS_STAGING"


def staged(path) -> Path:
    """Where a page writes ``path``: ``$BERTSENT_RESULTS_STAGING/<path under results/>`` for a file under the
    book's ``results/`` while a canonical run stages them, else ``path`` itself. The run store (``results/runs/``)
    is never staged: a trained run is kept once it finishes, whatever becomes of the page that trained it."""
    folder = os.environ.get(STAGING_VARIABLE)
    path = Path(path)
    if not folder:
        return path
    resolved, results = path.resolve(), RESULTS_DIR.resolve()
    if not resolved.is_relative_to(results) or resolved.is_relative_to(results / "runs"):
        return path
    return Path(folder) / resolved.relative_to(results)


def read_path(path) -> Path:
    """Where to read ``path``: the staged copy when this page wrote one (a page reads its own latest tables), else
    ``path``."""
    copy = staged(path)
    return copy if copy != Path(path) and copy.exists() else Path(path)


def results_glob(base, pattern: str) -> list[Path]:
    """``sorted(base.glob(pattern))``, with what this page staged under ``base`` in place of (or beside) the
    committed files."""
    base = Path(base)
    found = {p.relative_to(base): p for p in base.glob(pattern)}
    copy = staged(base)
    if copy != base and copy.is_dir():
        found.update({p.relative_to(copy): p for p in copy.glob(pattern)})
    return [found[key] for key in sorted(found)]


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


def output_folder_problem(folder: Path) -> str | None:
    """Why ``folder`` cannot take a run's output, in words (None: it can): it, or the nearest folder above it that
    exists, must be a folder this user may write (a read-only file system counts, even for root)."""
    folder = Path(folder)
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is a file, not a folder"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"{existing} is not writable by this user"
    return None
