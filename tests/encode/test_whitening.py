import numpy as np

from bertsent.encode.whitening import Whitening


def test_whitened_embeddings_have_zero_mean_and_identity_covariance():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(500, 6)) @ rng.normal(size=(6, 6)) + 3.0  # correlated, off-centre
    white = Whitening.fit(x).transform(x)
    assert np.allclose(white.mean(axis=0), 0, atol=1e-9)
    assert np.allclose(np.cov(white.T), np.eye(6), atol=1e-6)


def test_dimension_reduction_keeps_the_leading_components():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(20000, 5)) * np.array([10.0, 5.0, 1.0, 0.1, 0.01])
    whitening = Whitening.fit(x, n_components=2)
    assert whitening.transform(x).shape == (20000, 2)
    first = whitening.matrix[:, 0] / np.linalg.norm(whitening.matrix[:, 0])
    assert np.allclose(np.abs(first), [1, 0, 0, 0, 0], atol=1e-2)  # the direction of largest variance first
