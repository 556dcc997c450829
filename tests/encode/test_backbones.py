from pathlib import Path

import numpy as np
import pytest

from bertsent.encode.backbones import UnknownBackboneError, known_backbones, load_backbone, register_backbone


def test_minilm_loads_offline(minilm):
    assert minilm.n_layers == 7 and minilm.dim == 384
    assert minilm.tokenizer.tokenize("Hello world") == ["hello", "world"]


def test_mpnet_parts_are_joined_and_verified():
    backbone = load_backbone("all-mpnet-base-v2")
    assert backbone.n_layers == 13 and backbone.dim == 768
    assert not list(Path(backbone.source).rglob("desktop.ini"))  # archive junk removed


def test_mpnet_join_refuses_a_wrong_checksum(monkeypatch, tmp_path):
    from bertsent.encode import backbones

    monkeypatch.setattr(backbones, "CACHE_DIR", tmp_path)
    monkeypatch.setattr(backbones, "MPNET_ZIP_SHA256", "0" * 64)
    with pytest.raises(backbones.BackboneNotInstalledError, match="--force-reinstall"):
        backbones.backbone_path("all-mpnet-base-v2")
    assert not (tmp_path / "backbones" / "all-mpnet-base-v2").exists()  # nothing half-joined left behind


def test_glove_is_a_one_layer_backbone():
    glove = load_backbone("glove-6b-50d")
    assert glove.n_layers == 1 and glove.dim == 50
    vectors = glove.embed(["the cat .", "zzzqqq"], poolings=("mean", "max"))
    row = glove.vectors[glove.vocab["cat"]]
    expected = np.mean([glove.vectors[glove.vocab[w]] for w in ("the", "cat", ".")], axis=0)
    assert np.allclose(vectors["mean"][0, 0], expected)
    assert np.all(vectors["max"][0, 0] >= row)
    assert not vectors["mean"][0, 1].any()  # no known word: zero vector
    with pytest.raises(ValueError, match="supports poolings mean, max"):
        glove.embed(["a"], poolings=("cls",))


def test_unknown_backbone_lists_known_ones():
    with pytest.raises(UnknownBackboneError) as error:
        load_backbone("no-such-model-xyz")
    for name in known_backbones():
        assert name in str(error.value)


def test_local_directory_and_registration(minilm, tmp_path):
    local = load_backbone(minilm.source)
    assert local.n_layers == minilm.n_layers
    register_backbone("my-minilm", minilm.source, description="test")
    try:
        assert load_backbone("my-minilm").dim == 384
    finally:
        from bertsent.encode.backbones import REGISTRY

        REGISTRY.pop("my-minilm")
