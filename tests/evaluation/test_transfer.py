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
