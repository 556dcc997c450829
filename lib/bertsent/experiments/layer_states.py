r"""Cached layer readouts of a frozen encoder: what the layer-wise attention pooler reads, computed once.

With the encoder frozen (eval mode: no dropout), the pooler of :mod:`bertsent.models.layer_attention` sees, for each
sentence, two vectors per hidden state l = 0 .. L-1 and nothing else:

.. math::

    s_l = h^{(l)}_{\mathrm{[CLS]}} \ (\text{a causal LM: the last real token}), \qquad
    t_l = \frac{1}{|T|} \sum_{i \in T} h^{(l)}_i \ (T: \text{real tokens; a causal LM's BOS left out})

exactly as :meth:`LayerAttentionModel.readouts <bertsent.models.layer_attention.LayerAttentionModel.readouts>`
computes them (this module calls it). So a pooler can be trained and scored on stored ``(s, t)`` arrays, minutes a
run, instead of running the encoder at every step.

A cache entry is one backbone's readouts of one list of sentences, under ``.cache/layer_states/<key>/`` (git-ignored):

- ``sentences.json``: the sentences, in the order of the rows;
- ``s.npy``, ``t.npy``: float32 arrays ``(n, L, d)``, row i = sentence i;
- ``progress.json``: how many batches (of the sentences sorted by length, longest first) are written; rewritten
  atomically after each flushed group of batches, so an interrupted fill resumes where it stopped;
- ``done.json``: written last (seconds, sentences per second, threads): the entry is complete.

The key (:func:`states_key`) is a readable prefix and the hash of :func:`states_identity`: the backbone and its
weights' digest, the sentences' digest and count, ``max_length``, the encode batch size (padding changes the numbers
in the last float bits) and the method versions of the readout path, built as the run store builds its keys
(:func:`bertsent.experiments.store.run_key`).
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..paths import CACHE_DIR
from ..report.io import write_json_atomic
from .store import digest_of, run_key

METHOD_VERSION = 1  # bump when the maths changes

READOUT_PATH = ("bertsent.models.layer_attention", "bertsent.encode.backbones")
DEFAULT_ROOT = CACHE_DIR / "layer_states"


def states_identity(backbone: str, sentences: list[str], max_length: int = 64, batch_size: int = 64) -> dict:
    """What a cache entry's numbers depend on (see the module docstring)."""
    from .runs import backbone_identity, path_versions

    return {"kind": "layer_states", **backbone_identity(backbone), "sentences": digest_of(list(sentences)),
            "count": len(sentences), "max_length": int(max_length), "batch_size": int(batch_size),
            "methods": path_versions(READOUT_PATH)["digest"]}


def states_key(backbone: str, name: str, sentences: list[str], max_length: int = 64, batch_size: int = 64) -> str:
    """``<backbone>-<name>-<hash of states_identity>``."""
    return run_key(f"{backbone.replace('/', '_')}-{name}", states_identity(backbone, sentences, max_length, batch_size))


@dataclass
class LayerStates:
    """A complete cache entry: ``s``, ``t`` (memory-mapped, ``(n, L, d)``), its sentences and their row index."""

    directory: Path
    sentences: list[str]
    s: np.ndarray
    t: np.ndarray
    info: dict

    @classmethod
    def open(cls, directory: Path) -> "LayerStates":
        directory = Path(directory)
        if not (directory / "done.json").is_file():
            raise FileNotFoundError(f"{directory} is not a complete layer-state cache (no done.json). "
                                    "Fix: fill it with cache_layer_states (it resumes).")
        sentences = json.loads((directory / "sentences.json").read_text(encoding="utf-8"))
        return cls(directory, sentences, np.load(directory / "s.npy", mmap_mode="r"),
                   np.load(directory / "t.npy", mmap_mode="r"),
                   json.loads((directory / "done.json").read_text(encoding="utf-8")))

    def __len__(self) -> int:
        return len(self.sentences)

    @property
    def n_states(self) -> int:
        return self.s.shape[1]

    @property
    def dim(self) -> int:
        return self.s.shape[2]

    def rows(self, sentences) -> np.ndarray:
        """The row of each of ``sentences`` (KeyError for one not cached)."""
        index = self.index
        return np.array([index[s] for s in sentences], dtype=np.int64)

    @property
    def index(self) -> dict:
        if not hasattr(self, "_index"):
            self._index = {s: i for i, s in enumerate(self.sentences)}
        return self._index

    def bytes(self) -> int:
        return int(self.s.nbytes + self.t.nbytes)


def _batches(sentences: list[str], batch_size: int) -> list[np.ndarray]:
    """The encode batches: sentences sorted longest first (stable), cut into ``batch_size`` rows (less padding)."""
    order = np.argsort([-len(s) for s in sentences], kind="stable")
    return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]


def cache_layer_states(source, backbone: str, name: str, sentences: list[str], max_length: int = 64,
                       batch_size: int = 64, root: Path | None = None, flush_every: int = 20,
                       log=print, stop_after: int | None = None) -> LayerStates | None:
    """Fill (or resume, or just open) the cache entry of ``sentences`` read by ``source`` (a loaded backbone,
    :func:`bertsent.encode.backbones.load_backbone`; None: loaded by ``backbone`` name only when work remains).

    ``stop_after``: stop after that many batches of this call (tests of resumption); returns None then."""
    import torch

    from ..models.layer_attention import LayerAttentionModel

    sentences = list(sentences)
    if len(set(sentences)) != len(sentences):
        raise ValueError("The sentences of a layer-state cache must be distinct. Fix: pass list(dict.fromkeys(...)).")
    directory = Path(root or DEFAULT_ROOT) / states_key(backbone, name, sentences, max_length, batch_size)
    if (directory / "done.json").is_file():
        return LayerStates.open(directory)
    if source is None:
        from ..encode.backbones import load_backbone

        source = load_backbone(backbone)
    model = LayerAttentionModel.on_backbone(source, "cls_last").eval()
    for p in model.parameters():
        p.requires_grad_(False)
    n_states, dim = model.pooler.n_states, model.pooler.dim
    shape = (len(sentences), n_states, dim)
    progress_file = directory / "progress.json"
    progress = json.loads(progress_file.read_text()) if progress_file.is_file() else None
    if progress is None or not (directory / "s.npy").is_file():
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "sentences.json").write_text(json.dumps(sentences), encoding="utf-8")
        for array in ("s", "t"):
            np.lib.format.open_memmap(directory / f"{array}.npy", mode="w+", dtype=np.float32, shape=shape).flush()
        progress = {"batches": 0, "seconds": 0.0}
        write_json_atomic(progress_file, progress)
    s_out = np.load(directory / "s.npy", mmap_mode="r+")
    t_out = np.load(directory / "t.npy", mmap_mode="r+")
    if s_out.shape != shape:
        raise ValueError(f"{directory}: cached arrays are {s_out.shape}, the backbone gives {shape}. Fix: delete "
                         "the folder (the key should have changed: a METHOD_VERSION was not bumped?).")
    batches = _batches(sentences, batch_size)
    done, seconds = int(progress["batches"]), float(progress["seconds"])
    if done:
        log(f"{name}: resuming at batch {done} of {len(batches)} ({directory.name})")
    tokenizer = source.tokenizer
    start, count = time.perf_counter(), 0
    with torch.no_grad():
        for b in range(done, len(batches)):
            ids = batches[b]
            tokens = tokenizer([sentences[i] for i in ids], padding=True, truncation=True, max_length=max_length,
                               return_tensors="pt")
            s, t = model.readouts(tokens["input_ids"], tokens["attention_mask"])
            s_out[ids] = s.float().numpy()
            t_out[ids] = t.float().numpy()
            count += 1
            last = b + 1 == len(batches)
            if count % flush_every == 0 or last or (stop_after and count >= stop_after):
                s_out.flush()
                t_out.flush()
                write_json_atomic(progress_file, {"batches": b + 1,
                                                  "seconds": seconds + time.perf_counter() - start})
            if stop_after and count >= stop_after and not last:
                return None
    seconds += time.perf_counter() - start
    del s_out, t_out
    write_json_atomic(directory / "done.json", {
        "backbone": backbone, "name": name, "sentences": len(sentences), "states": n_states, "dim": dim,
        "max_length": max_length, "batch_size": batch_size, "seconds": round(seconds, 2),
        "sentences_per_second": round(len(sentences) / max(seconds, 1e-9), 2),
        "threads": torch.get_num_threads(), "bytes": 2 * 4 * int(np.prod(shape)),
        "identity": states_identity(backbone, sentences, max_length, batch_size)})
    log(f"{name}: {len(sentences)} sentences cached in {seconds:.0f} s ({directory.name})")
    return LayerStates.open(directory)
