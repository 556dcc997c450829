import numpy as np

from bertsent.data.transfer import ClassificationTask, Examples
from bertsent.evaluation.transfer import evaluate_transfer, features


def embed_by_lookup(table):
    return lambda sentences: np.array([table[s] for s in sentences])


def test_cross_validated_task_separable_vs_random():
    rng = np.random.default_rng(0)
    sentences = [f"s{i}" for i in range(200)]
    labels = np.array([i % 2 for i in range(200)])
    informative = {s: np.r_[2.0 * y - 1 + 0.1 * rng.normal(), rng.normal(size=3)] for s, y in zip(sentences, labels)}
    noise = {s: rng.normal(size=4) for s in sentences}
    task = ClassificationTask("toy", {"all": Examples(sentences, labels)}, 2)
    assert evaluate_transfer(task, embed_by_lookup(informative)) == 100.0
    assert 30.0 < evaluate_transfer(task, embed_by_lookup(noise)) < 70.0  # chance level


def test_pair_features_follow_senteval():
    task = ClassificationTask("pairs", {"train": Examples([("a", "b")], np.array([1]))}, 2)
    vectors = {"a": np.array([1.0, 2.0]), "b": np.array([3.0, -1.0])}
    assert np.array_equal(features(task, "train", embed_by_lookup(vectors)), [[2.0, 3.0, 3.0, -2.0]])


def test_given_splits_use_dev_then_test():
    rng = np.random.default_rng(1)
    def split(n, offset):
        names = [f"x{offset + i}" for i in range(n)]
        y = rng.integers(0, 2, n)
        return names, y
    table, splits = {}, {}
    for name, n, offset in (("train", 120, 0), ("dev", 40, 1000), ("test", 40, 2000)):
        names, y = split(n, offset)
        for s, label in zip(names, y):
            table[s] = np.array([label * 2.0 - 1.0, rng.normal()])
        splits[name] = Examples(names, y)
    assert evaluate_transfer(ClassificationTask("t", splits, 2), embed_by_lookup(table)) == 100.0


def test_a_frozen_probe_reads_a_signal_carried_in_a_sliver_of_the_scale_only_when_standardised():
    """The multi-exit page's point: a class signal 1/1000 the size of the feature it rides on (a shallow [CLS]) is
    out of reach of a logistic regression at SentEval's C grid, and plain once each feature is standardised."""
    import pytest
    from bertsent.evaluation.transfer import fit_frozen_probe

    rng = np.random.default_rng(0)
    labels = np.arange(400) % 2
    x = np.c_[0.05 + 1e-4 * (2 * labels - 1) + 1e-6 * rng.normal(size=400), rng.normal(size=(400, 3))]
    train, test = slice(0, 300), slice(300, 400)
    raw = fit_frozen_probe(x[train], labels[train], standardize=False).score(x[test], labels[test])
    standardised = fit_frozen_probe(x[train], labels[train], standardize=True).score(x[test], labels[test])
    assert standardised == 1.0
    assert raw < 0.7
    with pytest.raises(ValueError, match="one label per row"):
        fit_frozen_probe(x[:10], labels[:9])
