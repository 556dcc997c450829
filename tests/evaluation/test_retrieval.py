"""Retrieval metrics (MRR@10, recall@1/10) on toy indexes, and the query sets built from the book's pairs."""
import numpy as np
import pytest

from bertsent.evaluation.retrieval import (
    evaluate_retrieval,
    first_relevant_ranks,
    load_retrieval_set,
    retrieval_metrics,
    retrieval_set_from_pairs,
)


def test_ranks_on_a_toy_index():
    # candidates on the unit circle at these angles (degrees); cosine falls with the angle difference
    angles = np.radians([0, 10, 30, 60, 90, 180])
    vectors = np.stack([np.cos(angles), np.sin(angles)], axis=1)
    queries = np.array([0, 0, 3, 5])
    relevant = [np.array([1]), np.array([4]), np.array([1, 5]), np.array([1])]
    # q0 -> 1: nearest (10 deg) -> rank 1; q0 -> 4 (90 deg): 1, 2, 3 are nearer -> rank 4
    # q3 (60) -> {1 (50 away), 5 (120 away)}: the best relevant is 1; 2 and 4 (30 away) are nearer -> rank 3
    # q5 (180) -> 1 (170 away): 2 (150 away), 3 (120 away) and 4 (90 away) are nearer -> rank 4
    ranks = first_relevant_ranks(vectors, queries, relevant)
    assert ranks.tolist() == [1, 4, 3, 4]
    metrics = retrieval_metrics(ranks)
    assert metrics["mrr@10"] == pytest.approx((1 + 1 / 4 + 1 / 3 + 1 / 4) / 4 * 100)
    assert metrics["recall@1"] == pytest.approx(25.0)
    assert metrics["recall@10"] == pytest.approx(100.0)


def test_ranks_beyond_k_score_zero_in_mrr():
    metrics = retrieval_metrics(np.array([1, 11, 10]))
    assert metrics["mrr@10"] == pytest.approx((1 + 0 + 0.1) / 3 * 100)
    assert metrics["recall@10"] == pytest.approx(200 / 3)


def test_a_constant_encoder_ranks_last_not_first():
    vectors = np.ones((6, 3))
    ranks = first_relevant_ranks(vectors, np.array([0]), [np.array([1])])
    assert ranks.tolist() == [5]  # all 4 other candidates tie with the partner and count against it


def test_sets_from_pairs_use_every_sentence_as_a_candidate_and_both_directions():
    rset = retrieval_set_from_pairs("toy", ["a", "b", "c", "a"], ["x", "y", "z", "a"], [True, False, True, True])
    assert rset.sentences == ["a", "b", "c", "x", "y", "z"]
    # a<->x, c<->z; the pair (a, a) is skipped
    assert rset.queries.tolist() == [0, 2, 3, 5]
    assert [r.tolist() for r in rset.relevant] == [[3], [5], [0], [2]]
    perfect = {"a": [1, 0], "x": [1, 0.01], "c": [0, 1], "z": [0.01, 1], "b": [-1, 0], "y": [0, -1]}
    metrics = evaluate_retrieval(rset, lambda sentences: np.array([perfect[s] for s in sentences]))
    assert metrics["mrr@10"] == 100.0 and metrics["queries"] == 4 and metrics["candidates"] == 6


def test_query_sets_from_the_books_data():
    stsb = load_retrieval_set("stsb", "test")
    assert 0 < len(stsb) < len(stsb.sentences)
    mrpc = load_retrieval_set("mrpc", "test")
    assert len(mrpc) > 1000
    with pytest.raises(ValueError, match="Known: stsb, sickr, mrpc"):
        load_retrieval_set("quora")
