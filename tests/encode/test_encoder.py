import numpy as np

from bertsent.encode.encoder import Encoder, _batches

SENTENCES = [
    "a man is playing a guitar .",
    "a woman is slicing an onion .",
    "a man is playing a guitar .",  # repeated: encoded once
    "the quick brown fox jumps over the lazy dog near the river bank this morning .",
    "hi",
]


def test_matches_sentence_transformers(minilm):
    from sentence_transformers import SentenceTransformer

    reference = SentenceTransformer(minilm.source, device="cpu").encode(SENTENCES)
    pooled = Encoder(minilm, show_progress=False).encode(SENTENCES)
    ours = pooled.lookup(SENTENCES, "mean", minilm.n_layers - 1)
    ours /= np.linalg.norm(ours, axis=1, keepdims=True)
    assert np.abs(ours - reference).max() < 1e-5


def test_each_distinct_sentence_once_and_every_layer(minilm):
    pooled = Encoder(minilm, show_progress=False).encode(SENTENCES)
    assert pooled.sentences == list(dict.fromkeys(SENTENCES))
    assert set(pooled.vectors) == {"cls", "mean", "max", "first_last_avg"}
    assert pooled.vectors["mean"].shape == (7, 4, 384)


def test_padded_and_unpadded_batches_agree(minilm):
    # min_bucket=1: every length its own unpadded batch; a huge min_bucket: one padded batch
    unpadded = Encoder(minilm, show_progress=False, min_bucket=1).encode(SENTENCES)
    padded = Encoder(minilm, show_progress=False, min_bucket=1000).encode(SENTENCES)
    for pooling in unpadded.vectors:
        assert np.allclose(unpadded.vectors[pooling], padded.vectors[pooling], atol=1e-4), pooling


def test_batches_cover_every_sentence_once():
    lengths = np.array([5, 7, 5, 5, 9, 7, 5, 3])
    batches = _batches(lengths, batch_size=2, min_bucket=3)
    flat = np.concatenate(batches)
    assert sorted(flat.tolist()) == list(range(8))
    assert all(len(b) <= 2 for b in batches)
    assert [lengths[b].tolist() for b in batches[:2]] == [[5, 5], [5, 5]]  # the common length, unpadded


def test_disk_cache_round_trip(minilm, tmp_path):
    first = Encoder(minilm, show_progress=False, cache=tmp_path).encode(SENTENCES)
    assert [p.suffix for p in tmp_path.iterdir()] == [".npz"]  # no temporary file left behind
    second = Encoder(minilm, show_progress=False, cache=tmp_path).encode(SENTENCES, poolings=["max"])
    assert list(second.vectors) == ["max"]
    assert np.array_equal(first.vectors["max"], second.vectors["max"])
