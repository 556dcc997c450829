"""Geometry metrics: known answers, brute-force comparisons, and the training callback on tiny stand-ins."""
import itertools

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from bertsent.data.sts import SentencePairs, STSDataset
from bertsent.evaluation.geometry import (
    alignment, anisotropy, cosine_by_gold_band, embed_sentences, geometry_summary, make_geometry_callback,
    positive_pairs, random_pair_indices, singular_value_spectrum, uniformity,
)


def unit(x):
    x = np.asarray(x, dtype=np.float64)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


# --- random_pair_indices ---------------------------------------------------------------------------------

def test_random_pairs_are_seeded_distinct_and_in_range():
    pairs = random_pair_indices(50, 2000, seed=3)
    assert pairs.shape == (2000, 2)
    assert pairs.dtype == np.int64
    assert (pairs[:, 0] != pairs[:, 1]).all()
    assert pairs.min() >= 0 and pairs.max() < 50
    assert np.array_equal(pairs, random_pair_indices(50, 2000, seed=3))
    assert not np.array_equal(pairs, random_pair_indices(50, 2000, seed=4))


def test_random_pairs_are_uniform_over_ordered_distinct_pairs():
    pairs = random_pair_indices(3, 30000, seed=0)
    counts = pd.Series([tuple(p) for p in pairs.tolist()]).value_counts(normalize=True)
    assert set(counts.index) == {(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)}
    assert np.allclose(counts.to_numpy(), 1 / 6, atol=0.01)


def test_random_pairs_with_two_sentences():
    assert {tuple(p) for p in random_pair_indices(2, 50).tolist()} == {(0, 1), (1, 0)}


@pytest.mark.parametrize("n, n_pairs, message", [(1, 5, "n >= 2"), (0, 5, "n >= 2"), (10, 0, "n_pairs >= 1")])
def test_random_pairs_reject_impossible_requests(n, n_pairs, message):
    with pytest.raises(ValueError, match=message):
        random_pair_indices(n, n_pairs)


# --- anisotropy ------------------------------------------------------------------------------------------

def test_anisotropy_of_identical_rows_is_one():
    x = np.tile([3.0, -1.0, 2.0], (20, 1))  # not unit length: cosine, not dot product
    assert anisotropy(x, n_pairs=100) == pytest.approx(1.0, abs=1e-12)


def test_anisotropy_of_isotropic_gaussian_is_near_zero():
    x = np.random.default_rng(0).standard_normal((2000, 512))
    assert abs(anisotropy(x)) < 0.02


def test_anisotropy_of_a_cone_is_near_one():
    rng = np.random.default_rng(1)
    x = 5.0 + 0.1 * rng.standard_normal((300, 64))
    assert anisotropy(x) > 0.99


def test_anisotropy_with_given_pairs_matches_hand_computation():
    x = np.array([[1.0, 0.0], [0.0, 2.0], [-3.0, 0.0], [1.0, 1.0]])
    pairs = np.array([[0, 1], [0, 2], [0, 3], [2, 3]])
    expected = np.mean([0.0, -1.0, 1 / np.sqrt(2), -1 / np.sqrt(2)])
    assert anisotropy(x, pairs=pairs) == pytest.approx(expected, abs=1e-12)


def test_anisotropy_accepts_tensors_and_is_seeded():
    x = np.random.default_rng(2).standard_normal((40, 8))
    assert anisotropy(torch.tensor(x, dtype=torch.float32), n_pairs=500, seed=5) == pytest.approx(
        anisotropy(x, n_pairs=500, seed=5), abs=1e-6)
    assert anisotropy(x, n_pairs=500, seed=5) != anisotropy(x, n_pairs=500, seed=6)


def test_anisotropy_rejects_zero_rows_and_self_pairs():
    x = np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 1.0]])
    with pytest.raises(ValueError, match=r"zero norm \(rows 1\).*cosine similarity is undefined"):
        anisotropy(x)
    with pytest.raises(ValueError, match="distinct rows"):
        anisotropy(np.eye(3), pairs=[[0, 1], [2, 2]])


# --- alignment -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("y, expected", [([[2.0, 0.0]], 0.0), ([[-0.5, 0.0]], 4.0), ([[0.0, 7.0]], 2.0)])
def test_alignment_known_answers(y, expected):
    assert alignment(np.array([[1.0, 0.0]]), np.array(y)) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("alpha", [2, 1.5])
def test_alignment_matches_brute_force(alpha):
    rng = np.random.default_rng(7)
    x, y = rng.standard_normal((9, 5)), rng.standard_normal((9, 5))
    expected = np.mean([np.linalg.norm(unit(x[i]) - unit(y[i])) ** alpha for i in range(9)])
    assert alignment(x, y, alpha=alpha) == pytest.approx(expected, rel=1e-12)


def test_alignment_rejects_misaligned_inputs():
    with pytest.raises(ValueError, match="same shape"):
        alignment(np.ones((3, 2)), np.ones((4, 2)))
    with pytest.raises(ValueError, match="y has 1 row"):
        alignment(np.ones((2, 2)), np.array([[1.0, 0.0], [0.0, 0.0]]))


# --- uniformity ------------------------------------------------------------------------------------------

def test_uniformity_known_answers():
    assert uniformity(np.tile([0.3, 0.4], (6, 1))) == pytest.approx(0.0, abs=1e-12)
    assert uniformity(np.array([[2.0, 0.0], [-1.0, 0.0]])) == pytest.approx(-8.0, abs=1e-12)
    assert uniformity(np.array([[2.0, 0.0], [-1.0, 0.0]]), t=1) == pytest.approx(-4.0, abs=1e-12)


def test_uniformity_does_not_underflow_for_large_t():
    # naive log(mean(exp(-8000))) is log(0) = -inf
    assert uniformity(np.array([[1.0, 0.0], [-1.0, 0.0]]), t=1000) == pytest.approx(-4000.0)


@pytest.mark.parametrize("t", [2, 0.5])
def test_uniformity_matches_brute_force(t):
    x = np.random.default_rng(11).standard_normal((7, 5))
    u = unit(x)
    potentials = [np.exp(-t * np.sum((u[i] - u[j]) ** 2)) for i in range(7) for j in range(i + 1, 7)]
    assert uniformity(x, t=t) == pytest.approx(np.log(np.mean(potentials)), rel=1e-10)


def test_uniformity_prefers_spread_points_to_clustered_ones():
    rng = np.random.default_rng(3)
    angles = np.linspace(0, 2 * np.pi, 60, endpoint=False)
    circle = np.stack([np.cos(angles), np.sin(angles)], axis=1)
    arc = np.stack([np.cos(angles / 20), np.sin(angles / 20)], axis=1)  # the same count within 18 degrees
    assert uniformity(circle) < uniformity(arc) - 1.0
    sphere = rng.standard_normal((300, 64))
    cluster = 3.0 + rng.standard_normal((300, 64))
    assert uniformity(sphere) < uniformity(cluster) - 1.0


def test_uniformity_subsample_is_seeded_and_uses_a_subset():
    x = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    pair_values = {uniformity(x[list(p)]) for p in itertools.combinations(range(3), 2)}
    value = uniformity(x, max_points=2, seed=4)
    assert any(value == pytest.approx(v) for v in pair_values)
    assert value != pytest.approx(uniformity(x))
    assert uniformity(x, max_points=2, seed=4) == value
    assert uniformity(x, max_points=3) == uniformity(x)


def test_uniformity_needs_two_points():
    with pytest.raises(ValueError, match="at least 2 points"):
        uniformity(np.ones((1, 3)))


# --- singular_value_spectrum -----------------------------------------------------------------------------

@pytest.mark.parametrize("center", [True, False])
def test_spectrum_of_rank_one_matrix(center):
    rng = np.random.default_rng(5)
    x = np.outer(rng.standard_normal(10), rng.standard_normal(6))
    values = singular_value_spectrum(x, center=center)
    assert values.shape == (6,)
    assert values[0] == pytest.approx(1.0)
    assert np.abs(values[1:]).max() < 1e-6


def test_spectrum_of_orthonormal_rows():
    q, _ = np.linalg.qr(np.random.default_rng(6).standard_normal((8, 5)))
    rows = q.T  # 5 orthonormal rows in 8 dimensions
    assert np.allclose(singular_value_spectrum(rows, center=False), np.ones(5), atol=1e-12)
    # centring removes the mean direction: one value drops to 0, the rest stay equal
    centred = singular_value_spectrum(rows, center=True)
    assert np.allclose(centred, [1, 1, 1, 1, 0], atol=1e-12)


def test_spectrum_is_sorted_and_unnormalised_on_request():
    x = np.diag([1.0, 3.0, 2.0])
    assert np.allclose(singular_value_spectrum(x, center=False, normalize=False), [3, 2, 1])
    assert np.allclose(singular_value_spectrum(x, center=False), [1, 2 / 3, 1 / 3])


def test_spectrum_of_constant_rows_cannot_be_normalised():
    with pytest.raises(ValueError, match="All singular values are zero"):
        singular_value_spectrum(np.ones((4, 3)))


# --- cosine_by_gold_band and positive_pairs --------------------------------------------------------------

def test_cosine_by_gold_band_assigns_left_closed_bands():
    gold = np.array([0.0, 0.99, 1.0, 3.5, 4.0, 5.0])
    a = np.tile([1.0, 0.0], (6, 1))
    b = np.array([[1, 0], [0, 1], [-1, 0], [1, 1], [2, 0], [0, -3]], dtype=float)
    frame = cosine_by_gold_band(a, b, gold)
    assert list(frame.columns) == ["cosine", "gold", "band"]
    assert frame["band"].tolist() == ["0-1", "0-1", "1-2", "3-4", "4-5", "4-5"]
    assert list(frame["band"].cat.categories) == ["0-1", "1-2", "2-3", "3-4", "4-5"]
    assert np.allclose(frame["cosine"], [1, 0, -1, 1 / np.sqrt(2), 1, 0], atol=1e-12)
    assert np.array_equal(frame["gold"], gold)


def test_cosine_by_gold_band_custom_bands_and_scores_outside_them():
    frame = cosine_by_gold_band(np.eye(3), np.eye(3), [0.5, 2.5, 7.0], bands=((0, 2.5), (2.5, 5.0001)))
    assert frame["band"].iloc[:2].tolist() == ["0-2.5", "2.5-5"]
    assert pd.isna(frame["band"].iloc[2])


def test_cosine_by_gold_band_rejects_mismatched_lengths():
    with pytest.raises(ValueError, match="same length; got 3, 3 and 2"):
        cosine_by_gold_band(np.eye(3), np.eye(3), [1.0, 2.0])


def test_positive_pairs_selects_gold_at_or_above_threshold():
    a, b = np.arange(8.0).reshape(4, 2), -np.arange(8.0).reshape(4, 2)
    pa, pb = positive_pairs(a, b, [3.9, 4.0, 5.0, 1.0])
    assert np.array_equal(pa, a[[1, 2]]) and np.array_equal(pb, b[[1, 2]])
    with pytest.raises(ValueError, match="threshold 4.5"):
        positive_pairs(a, b, [3.9, 4.0, 4.2, 1.0], threshold=4.5)


def test_geometry_summary_combines_the_metrics():
    rng = np.random.default_rng(9)
    a, b = rng.standard_normal((12, 6)), rng.standard_normal((12, 6))
    gold = np.linspace(0, 5, 12)
    summary = geometry_summary(a, b, gold, threshold=3.0, n_pairs=300, seed=2, max_points=10)
    stacked = np.unique(np.vstack([a, b]), axis=0)
    mask = gold >= 3.0
    assert summary == {
        "anisotropy": pytest.approx(anisotropy(stacked, n_pairs=300, seed=2)),
        "alignment": pytest.approx(alignment(a[mask], b[mask])),
        "uniformity": pytest.approx(uniformity(stacked, max_points=10, seed=2)),
        "n_positive": int(mask.sum()),
    }


def test_geometry_summary_counts_a_repeated_sentence_once():
    # the same sentence in two pairs: with duplicates, random pairs could join it with itself (cosine 1)
    a = np.array([[1.0, 0.0], [1.0, 0.0]])
    b = np.array([[0.0, 1.0], [-1.0, 0.0]])
    summary = geometry_summary(a, b, [5.0, 0.0], n_pairs=2000, seed=0)
    distinct = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    assert summary["anisotropy"] == pytest.approx(anisotropy(distinct, n_pairs=2000, seed=0))
    assert summary["uniformity"] == pytest.approx(uniformity(distinct))


# --- embedding helper and training callback --------------------------------------------------------------

class FakeTokenizer:
    """One token per sentence: its index in a fixed vocabulary."""

    def __init__(self, vocabulary):
        self.ids = {s: k for k, s in enumerate(vocabulary)}

    def __call__(self, sentences, **kwargs):
        ids = torch.tensor([[self.ids[s]] for s in sentences])
        return _Encoded(input_ids=ids, attention_mask=torch.ones_like(ids))


class _Encoded(dict):
    def to(self, device):
        return _Encoded({k: v.to(device) for k, v in self.items()})


class FakeModel(nn.Module):
    """Exposes what the helper uses; logs the mode and gradient state it was called in."""

    def __init__(self, table):
        super().__init__()
        self.table = nn.Embedding.from_pretrained(torch.tensor(table, dtype=torch.float32), freeze=False)
        self.calls = []

    def sentence_vectors(self, input_ids, attention_mask):
        self.calls.append({"batch": len(input_ids), "training": self.training, "grad": torch.is_grad_enabled()})
        return self.table(input_ids[:, 0])


@pytest.mark.parametrize("training", [True, False])
def test_embed_sentences_batches_in_eval_mode_without_grad_and_restores_mode(training):
    sentences = [f"s{k}" for k in range(5)]
    table = np.random.default_rng(0).standard_normal((5, 3))
    model = FakeModel(table).train(training)
    vectors = embed_sentences(model, FakeTokenizer(sentences), sentences[::-1], batch_size=2)
    assert np.allclose(vectors, table[::-1], atol=1e-6)
    assert [c["batch"] for c in model.calls] == [2, 2, 1]
    assert not any(c["training"] or c["grad"] for c in model.calls)
    assert model.training is training


def test_embed_sentences_restores_mode_after_an_error():
    model = FakeModel(np.eye(2)).train()
    with pytest.raises(KeyError):
        embed_sentences(model, FakeTokenizer(["a"]), ["unknown"])
    assert model.training


def test_embed_sentences_on_a_tiny_self_guided_model(tmp_path):
    transformers = pytest.importorskip("transformers")
    from bertsent.models import SelfGuidedModel

    words = ["a", "cat", "dog", "sits", "runs", "the", "mat"]
    (tmp_path / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n")
    tokenizer = transformers.BertTokenizerFast(vocab_file=str(tmp_path / "vocab.txt"))
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=12, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                     intermediate_size=32, max_position_embeddings=32, hidden_dropout_prob=0.5)
    model = SelfGuidedModel(transformers.BertModel(config, add_pooling_layer=False), head_dim=8).train()
    sentences = ["the cat sits", "a dog runs on the mat", "cat", "the mat"]
    vectors = embed_sentences(model, tokenizer, sentences, batch_size=3)
    assert model.training and model.trained.training
    model.eval()
    with torch.no_grad():
        encoded = tokenizer(sentences, padding=True, return_tensors="pt")
        expected = model.trained(**encoded).last_hidden_state[:, 0].numpy()
    assert vectors.shape == (4, 16)
    assert np.abs(vectors - expected).max() < 1e-5


def tiny_sts():
    return STSDataset("tiny", "dev", {
        "one": SentencePairs(["a", "b", "c"], ["b", "d", "e"], np.array([4.5, 1.0, 4.0])),
        "two": SentencePairs(["f", "a"], ["g", "h"], np.array([0.0, 5.0])),
    })


def test_geometry_callback_records_each_evaluation():
    dataset = tiny_sts()
    vocabulary = list("abcdefgh")
    table = np.random.default_rng(1).standard_normal((8, 4))
    callback = make_geometry_callback(dataset, n_pairs=200, seed=1, max_points=None, batch_size=3)
    model = FakeModel(table).train()
    tokenizer = FakeTokenizer(vocabulary)
    callback(0, model, tokenizer)
    assert sum(c["batch"] for c in model.calls) == 8  # each distinct sentence once
    with torch.no_grad():
        model.table.weight.mul_(-2.0)  # "training" changed the model; alignment and uniformity are scale-free
    model.table.weight.data[0] = torch.tensor([1.0, 0.0, 0.0, 0.0])
    callback(3, model, tokenizer)

    first = [vocabulary.index(s) for s in ["a", "b", "c", "f", "a"]]
    second = [vocabulary.index(s) for s in ["b", "d", "e", "g", "h"]]
    gold = [4.5, 1.0, 4.0, 0.0, 5.0]
    expected = []
    for weights in (table, model.table.weight.detach().numpy()):
        summary = geometry_summary(weights[first], weights[second], gold, n_pairs=200, seed=1, max_points=None)
        assert summary["n_positive"] == 3
        expected.append(summary)
    assert [r["step"] for r in callback.records] == [0, 3]
    for record, summary in zip(callback.records, expected):
        assert set(record) == {"step", "alignment", "uniformity", "anisotropy"}
        for key in ("alignment", "uniformity", "anisotropy"):
            assert record[key] == pytest.approx(summary[key], rel=1e-5)
    assert callback.records[0]["alignment"] != pytest.approx(callback.records[1]["alignment"])
    frame = callback.to_frame()
    assert list(frame.columns) == ["step", "alignment", "uniformity", "anisotropy"]
    assert frame["step"].tolist() == [0, 3]
    assert model.training


def test_geometry_callback_needs_a_positive_pair():
    with pytest.raises(ValueError, match="tiny/dev.*threshold 5.5"):
        make_geometry_callback(tiny_sts(), threshold=5.5)


def test_relative_spread_is_zero_for_one_vector_one_for_centred_noise_and_blind_to_scale():
    from bertsent.evaluation.geometry import relative_spread

    rng = np.random.default_rng(0)
    assert relative_spread(np.tile([0.3, -1.0, 2.0], (5, 1))) == 0.0
    noise = rng.normal(size=(20000, 8))
    assert abs(relative_spread(noise) - 1.0) < 0.02
    offset = np.array([5.0, -5.0, 5.0, -5.0]) + 0.01 * rng.normal(size=(1000, 4))  # varies in 0.2% of its size
    assert abs(relative_spread(offset) - 0.002) < 0.0002
    assert relative_spread(1000 * offset) == pytest.approx(relative_spread(offset))
    with pytest.raises(ValueError, match="undefined"):
        relative_spread(np.zeros((3, 2)))
