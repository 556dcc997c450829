"""Sentence encoding: one forward pass per batch yields every layer's pooled vectors.

:class:`Encoder` encodes each distinct sentence once, in batches of sentences that have the same
number of tokens (so no padding is computed and no attention mask is needed: the cheapest
possible batch on a CPU), falling back to length-sorted padded batches where lengths are rare.
Pooled vectors can be cached on disk, keyed by the backbone, the settings and the sentences.

A causal backbone (:class:`~bertsent.encode.backbones.CausalBackbone`, e.g. Gemma 3) is read with
:mod:`~bertsent.encode.causal_pooling`'s readouts; its padding, where a batch needs any, is on the right, and its
``prompt`` readout runs a second pass over the prompt-wrapped sentences, batched the same way.
"""
from __future__ import annotations

import hashlib
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm  # plain text bars: no widget dependency in notebooks

from ..paths import EMBEDDINGS_CACHE_DIR
from ..report.io import atomic_savez
from .causal_pooling import pool_all_layers_causal, prompt_token_ids
from .pooling import POOLINGS, pool_all_layers

METHOD_VERSION = 1  # bump when the maths changes


@dataclass
class PooledEmbeddings:
    """Pooled vectors of distinct sentences: ``vectors[pooling]`` has shape ``(layers, sentences, dim)``."""

    sentences: list[str]
    vectors: dict[str, np.ndarray]

    def __post_init__(self):
        self.row = {sentence: i for i, sentence in enumerate(self.sentences)}

    @property
    def n_layers(self) -> int:
        return next(iter(self.vectors.values())).shape[0]

    def lookup(self, sentences: list[str], pooling: str, layer: int) -> np.ndarray:
        """Vectors of ``sentences`` (repeats allowed) for one pooling and layer: ``(len(sentences), dim)``."""
        return self.vectors[pooling][layer, [self.row[s] for s in sentences]]


def forward_passes(poolings) -> list[tuple[str, ...]]:
    """The readouts ``poolings`` grouped by the forward pass that yields them: the sentence's own tokens (every
    readout but ``prompt``), then the prompt-wrapped sentence (``prompt``: a second pass, causal backbones only)."""
    direct = tuple(p for p in poolings if p != "prompt")
    prompt = tuple(p for p in poolings if p == "prompt")
    return [group for group in (direct, prompt) if group]


def _batches(lengths: np.ndarray, batch_size: int, min_bucket: int) -> list[np.ndarray]:
    """Group sentence indices into batches: one token length per batch where a length is common,
    length-sorted padded batches for the rest."""
    order = np.argsort(lengths, kind="stable")
    batches, leftovers = [], []
    for length in np.unique(lengths):
        members = order[lengths[order] == length]
        if len(members) < min_bucket:
            leftovers.extend(members.tolist())
            continue
        batches.extend(members[i:i + batch_size] for i in range(0, len(members), batch_size))
    leftovers = np.array(sorted(leftovers, key=lambda i: lengths[i]), dtype=int)
    batches.extend(leftovers[i:i + batch_size] for i in range(0, len(leftovers), batch_size))
    return batches


class Encoder:
    """Encode sentences with a backbone into every layer x pooling.

    Example::

        encoder = Encoder(load_backbone("all-minilm-l6-v2"))
        pooled = encoder.encode(["a man plays a guitar .", "a woman slices an onion ."])
        pooled.vectors["mean"].shape   # (7, 2, 384): embedding output + 6 layers
    """

    def __init__(self, backbone, batch_size: int = 64, max_length: int = 128, cache: bool | str | Path = False,
                 show_progress: bool = True, min_bucket: int = 8):
        self.backbone = backbone
        self.batch_size = batch_size
        self.max_length = max_length
        self.cache_dir = EMBEDDINGS_CACHE_DIR if cache is True else (Path(cache) if cache else None)
        self.show_progress = show_progress
        self.min_bucket = min_bucket

    def supported_poolings(self) -> tuple[str, ...]:
        return getattr(self.backbone, "poolings", POOLINGS)

    def encode(self, sentences: list[str], poolings=None) -> PooledEmbeddings:
        """Pool every layer of each distinct sentence (all supported poolings unless ``poolings`` is given)."""
        supported = self.supported_poolings()
        poolings = tuple(poolings or supported)
        unknown = [p for p in poolings if p not in supported]
        if unknown:
            raise ValueError(f"Unknown pooling(s) {unknown} for {getattr(self.backbone, 'name', 'this backbone')}; "
                             f"choose from {', '.join(supported)}")
        unique = list(dict.fromkeys(sentences))
        vectors = {}
        for group in forward_passes(supported):
            wanted = [p for p in poolings if p in group]
            if wanted:
                vectors.update(self._encode_pass(unique, group, wanted))
        return PooledEmbeddings(unique, {p: vectors[p] for p in poolings})

    def _encode_pass(self, unique: list[str], group: tuple[str, ...], wanted: list[str]) -> dict[str, np.ndarray]:
        """The readouts ``wanted`` of one forward pass (``group``: every readout that pass yields). A cache entry
        holds the whole group, so a later call asking for another readout of the same pass hits it too, and one
        asking only for the sentence's own readouts never runs the prompt's pass."""
        cache_file = self._cache_file(unique, group)
        if cache_file is not None and cache_file.is_file():
            try:
                with np.load(cache_file) as stored:
                    return {p: stored[p] for p in wanted}
            except (OSError, ValueError, KeyError, zipfile.BadZipFile):
                cache_file.unlink()  # unreadable entry: recompute it
        computed = group if cache_file is not None else tuple(wanted)
        if self.backbone.kind == "glove":
            vectors = self.backbone.embed(unique, computed)
        else:
            vectors = self._encode_transformer(unique, computed)
        if cache_file is not None:
            atomic_savez(cache_file, vectors)
        return {p: vectors[p] for p in wanted}

    @torch.inference_mode()
    def _encode_transformer(self, sentences: list[str], poolings) -> dict[str, np.ndarray]:
        backbone = self.backbone
        causal = backbone.kind == "causal"
        out = {p: np.empty((backbone.n_layers, len(sentences), backbone.dim), dtype=np.float32) for p in poolings}
        passes = []  # (token ids, {readout: where it goes in out})
        direct = [p for p in poolings if p != "prompt"]
        if direct:
            ids = backbone.tokenizer(sentences, truncation=True, max_length=self.max_length)["input_ids"]
            passes.append((ids, {p: p for p in direct}))
        if "prompt" in poolings:
            if not causal:
                raise ValueError(f"The prompt readout needs a causal backbone; {backbone.name} is an encoder.")
            ids = prompt_token_ids(backbone.tokenizer, sentences, self.max_length, backbone.prompt_template)
            passes.append((ids, {"last": "prompt"}))
        progress = tqdm(total=len(sentences) * len(passes), desc=f"encoding ({backbone.name})", unit="sent",
                        disable=not self.show_progress)
        for token_ids, targets in passes:
            self._forward(token_ids, targets, out, progress)
        progress.close()
        return out

    def _forward(self, token_ids: list[list[int]], targets: dict[str, str], out: dict[str, np.ndarray], progress) -> None:
        """Run the model over ``token_ids`` in length batches; pooled readout ``r`` goes to ``out[targets[r]]``."""
        backbone = self.backbone
        tokenizer, model = backbone.tokenizer, backbone.model
        causal = backbone.kind == "causal"
        extra = getattr(backbone, "forward_kwargs", {})
        lengths = np.array([len(ids) for ids in token_ids])
        for batch in _batches(lengths, self.batch_size, self.min_bucket):
            padded = tokenizer.pad({"input_ids": [token_ids[i] for i in batch]}, return_tensors="pt")
            mask = padded["attention_mask"].to(backbone.device)
            inputs = {"input_ids": padded["input_ids"].to(backbone.device)}
            if not bool(mask.all()):  # equal-length batches need no mask
                inputs["attention_mask"] = mask
            hidden = model(**inputs, **extra, output_hidden_states=True).hidden_states
            if causal:
                pooled = pool_all_layers_causal(hidden, mask, list(targets), skip_bos=backbone.adds_bos)
            else:
                pooled = pool_all_layers(hidden, mask, list(targets))
            for readout, tensor in pooled.items():
                out[targets[readout]][:, batch] = tensor.float().cpu().numpy()
            progress.update(len(batch))

    def _cache_file(self, unique: list[str], poolings) -> Path | None:
        if self.cache_dir is None:
            return None
        key = hashlib.sha256(json.dumps(
            [self.backbone.identity, self.max_length, list(poolings), unique], ensure_ascii=False
        ).encode()).hexdigest()[:32]
        return self.cache_dir / f"{self.backbone.name.replace('/', '_')}-{key}.npz"

