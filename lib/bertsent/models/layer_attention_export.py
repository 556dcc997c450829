"""A trained encoder + layer-wise attention pooler in the sentence-transformers format.

The saved folder holds two modules: sentence-transformers' ``Transformer`` (the encoder, its config set to return
every hidden state: ``all_layer_embeddings``) and :class:`LayerAttentionPooling` (this module: the pooler's
configuration and weights), so that ``SentenceTransformer(path, trust_remote_code=True)`` gives the same vectors
as :class:`~bertsent.models.layer_attention.LayerAttentionModel` in eval mode.

**Why ``trust_remote_code=True``**: sentence-transformers 6 refuses to import any module class outside its own
package unless told to trust it (``modules.json`` names ``bertsent.models.layer_attention_export.
LayerAttentionPooling``, imported from the installed ``bertsent``; no code is stored in the folder). Without the
flag it raises a ValueError that says so.

``save_layer_attention_model(..., readout="cls_last")`` (or ``"mean_last"``) saves the trained encoder with
sentence-transformers' own ``Pooling`` module instead, the pooler removed (the paper's RQ4 setting): that folder
loads with a plain ``SentenceTransformer(path)``.
"""
from __future__ import annotations

import shutil
from pathlib import Path

from sentence_transformers.base.modules.module import Module

from ..quiet import quiet_transformers
from ..report.io import save_sentence_transformer_atomically
from .layer_attention import DEFAULT_POOLING, LayerAttentionModel, LayerAttentionPooler, layer_readouts

METHOD_VERSION = 1  # bump when the maths changes


class LayerAttentionPooling(Module):
    """sentence-transformers module: ``all_layer_embeddings`` + ``attention_mask`` -> ``sentence_embedding``
    (the pooler of :mod:`bertsent.models.layer_attention`); ``layer_attention`` holds alpha (batch, L, L)."""

    config_keys: list[str] = ["dim", "n_states", "pooling", "causal", "skip_bos"]

    def __init__(self, dim: int, n_states: int, pooling: str = DEFAULT_POOLING, causal: bool = False,
                 skip_bos: bool = True):
        super().__init__()
        self.dim, self.n_states, self.pooling = dim, n_states, pooling
        self.causal, self.skip_bos = causal, skip_bos
        self.pooler = LayerAttentionPooler(dim, n_states, pooling)

    def forward(self, features: dict) -> dict:
        hidden = features.get("all_layer_embeddings")
        if hidden is None:
            raise ValueError("LayerAttentionPooling needs every hidden state (features['all_layer_embeddings']). "
                             "Fix: save the encoder with config.output_hidden_states = True "
                             "(save_layer_attention_model does).")
        s, t = layer_readouts(hidden, features["attention_mask"], self.causal, self.skip_bos)
        features["sentence_embedding"] = self.pooler(s, t)
        if self.pooler.alpha is not None:
            features["layer_attention"] = self.pooler.alpha
        return features

    def get_sentence_embedding_dimension(self) -> int:
        return self.pooler.output_dim

    def get_embedding_dimension(self) -> int:
        return self.pooler.output_dim

    def save(self, output_path: str, *args, safe_serialization: bool = True, **kwargs) -> None:
        self.save_config(output_path)
        self.save_torch_weights(output_path, safe_serialization=safe_serialization)

    @classmethod
    def load(cls, model_name_or_path: str, subfolder: str = "", token=None, cache_folder=None, revision=None,
             local_files_only: bool = False, **kwargs):
        hub = {"subfolder": subfolder, "token": token, "cache_folder": cache_folder, "revision": revision,
               "local_files_only": local_files_only}
        module = cls(**cls.load_config(model_name_or_path=model_name_or_path, **hub))
        return cls.load_torch_weights(model_name_or_path=model_name_or_path, model=module, **hub)


READOUT_MODES = {"cls_last": {False: "cls", True: "lasttoken"}, "mean_last": {False: "mean"}}


def save_layer_attention_model(model: LayerAttentionModel, tokenizer, path: str | Path,
                               max_length: int | None = None, readout: str | None = None) -> Path:
    """Save ``model`` in the sentence-transformers format; written atomically (a ``.tmp`` folder renamed into
    place). ``max_length``: the saved max_seq_length (None: the tokenizer's).

    ``readout=None``: encoder + :class:`LayerAttentionPooling` (load with ``SentenceTransformer(path,
    trust_remote_code=True)``); ``"cls_last"`` / ``"mean_last"``: the encoder with a standard ``Pooling`` of its
    last hidden state, the pooler removed (loads with ``SentenceTransformer(path)``).
    """
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

    if readout is not None and model.causal not in READOUT_MODES.get(readout, {}):
        raise ValueError(f"readout {readout!r} cannot be saved for a {'causal' if model.causal else 'encoder'} "
                         "model with a standard Pooling module (a causal model's mean leaves BOS out, which "
                         "Pooling does not). Fix: use readout='cls_last' or readout=None.")
    path = Path(path)
    staging = path.with_name(path.name + ".hf")
    shutil.rmtree(staging, ignore_errors=True)
    encoder = model.encoder
    previous = encoder.config.output_hidden_states
    encoder.config.output_hidden_states = readout is None
    try:
        encoder.save_pretrained(staging)
    finally:
        encoder.config.output_hidden_states = previous
    tokenizer.save_pretrained(staging)
    with quiet_transformers():
        transformer = Transformer(str(staging), max_seq_length=max_length)
    pooler = model.pooler
    if readout is None:
        pooling = LayerAttentionPooling(pooler.dim, pooler.n_states, pooler.pooling, model.causal, model.skip_bos)
        pooling.pooler.load_state_dict(pooler.state_dict())
    else:
        pooling = Pooling(pooler.dim, pooling_mode=READOUT_MODES[readout][model.causal])
    return save_sentence_transformer_atomically([transformer, pooling], path, staging)
