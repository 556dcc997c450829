"""NLI triplets (SNLI dev + test, SICK train) and Wikipedia sentences."""
import pytest

from bertsent.data.nli import (
    nli_counts,
    nli_triplets,
    sick_entailment_pairs,
    sick_triplets,
    snli_triplets,
    triplets_from_labelled_pairs,
    wikipedia_sentences,
)


def test_triplets_pair_each_entailment_with_a_contradiction_of_the_same_premise():
    pairs = [("p", "e1"), ("p", "n"), ("p", "c1"), ("q", "e2"), ("r", "c3"), ("p", "e3"), ("r", "e4")]
    labels = ["entailment", "neutral", "contradiction", "ENTAILMENT", "contradiction", "entailment", "entailment"]
    triplets = triplets_from_labelled_pairs(pairs, labels)
    # q has no contradiction: dropped; p's two entailments share its one contradiction
    assert list(zip(triplets.anchors, triplets.positives, triplets.negatives)) == [
        ("p", "e1", "c1"), ("p", "e3", "c1"), ("r", "e4", "c3")]


def test_snli_and_sick_counts():
    counts = nli_counts()
    assert counts["snli_dev_triplets"] == 3172 and counts["snli_test_triplets"] == 3167
    assert counts["snli_triplets"] == len(snli_triplets())
    assert counts["sick_train_entailment_pairs"] == len(sick_entailment_pairs()) == 1299
    assert counts["sick_train_triplets"] == len(sick_triplets()) > 0
    assert len(nli_triplets(("snli", "sick"))) == counts["snli_triplets"] + counts["sick_train_triplets"]


def test_snli_triplets_are_real_triplets():
    triplets = snli_triplets("dev")
    assert triplets.anchors[0] == "Two women are embracing while holding to go packages ."
    assert triplets.positives[0] == "Two woman are holding packages ."
    assert triplets.negatives[0] == "The men are fighting outside a deli ."
    assert all(p != n for p, n in zip(triplets.positives, triplets.negatives))


def test_sick_test_and_trial_are_refused():
    for split in ("test", "dev", "trial"):
        with pytest.raises(ValueError, match="split='train'"):
            sick_triplets(split)
    with pytest.raises(ValueError, match="Known: snli, sick"):
        nli_triplets("mnli")


def test_wikipedia_sentences():
    sentences = wikipedia_sentences(300)
    assert len(sentences) == len(set(sentences)) == 300
    assert all(5 <= len(s.split()) <= 64 for s in sentences)
    assert wikipedia_sentences(50) == sentences[:50]
