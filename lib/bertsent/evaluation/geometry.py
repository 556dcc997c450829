"""Geometry of a sentence-embedding space: anisotropy, alignment and uniformity.

Three ideas, one number each:

- **Anisotropy** (Ethayarajh 2019, "How contextual are contextualized word representations?"): the
  embeddings crowd into a narrow cone, so even unrelated sentences have a high cosine similarity. Measured
  as the mean cosine over random pairs of distinct sentences: about 0 for directions spread evenly over the
  sphere, near 1 for a cone.
- **Alignment** (Wang & Isola 2020, ICML, "Understanding Contrastive Representation Learning through
  Alignment and Uniformity on the Hypersphere"): positive pairs (paraphrases) should map to nearby points.
  The mean of ``||f(x) - f(y)||^alpha`` over positive pairs, on the unit sphere: lower is better.
- **Uniformity** (same paper): the points should spread over the whole sphere. The log of the mean Gaussian
  potential ``exp(-t ||f(x_i) - f(x_j)||^2)`` over all pairs: lower (more negative) is better.

Alignment and uniformity pull against each other; plotting one against the other over training shows how a
method trades them. :func:`make_geometry_callback` records the three numbers during SG / SG-OPT training.

Every function takes numpy arrays or torch tensors (converted to float64 numpy) and returns floats, numpy
arrays or pandas frames.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.spatial.distance import pdist
from scipy.special import logsumexp

METHOD_VERSION = 1  # bump when the maths changes

__all__ = [
    "GeometryCallback", "alignment", "anisotropy", "cosine_by_gold_band", "embed_sentences", "geometry_summary",
    "make_geometry_callback", "positive_pairs", "random_pair_indices", "relative_spread", "singular_value_spectrum",
    "uniformity",
]

GOLD_BANDS = ((0, 1), (1, 2), (2, 3), (3, 4), (4, 5.0001))  # 5.0001 so that a gold score of 5.0 is in "4-5"


def _as_numpy(x, ndim: int | None = None, name: str = "embeddings") -> np.ndarray:
    if hasattr(x, "detach"):  # a torch tensor; .float() first because numpy has no bfloat16
        x = x.detach().cpu()
        x = x.float() if x.is_floating_point() else x
        x = x.numpy()
    x = np.asarray(x, dtype=np.float64)
    if ndim is not None and x.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional; got shape {x.shape}.")
    return x


def _unit_rows(x: np.ndarray, name: str = "embeddings") -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    zero = np.flatnonzero(norms[:, 0] == 0)
    if zero.size:
        # a zero vector has no direction: its cosine with anything is undefined, and silently using 0
        # would bias every metric below towards isotropy
        shown = ", ".join(map(str, zero[:5])) + (", ..." if zero.size > 5 else "")
        raise ValueError(f"{name} has {zero.size} row(s) with zero norm (rows {shown}): "
                         f"cosine similarity is undefined for a zero vector.")
    return x / norms


def random_pair_indices(n: int, n_pairs: int, seed: int = 0) -> np.ndarray:
    """A fixed, seeded sample of ``n_pairs`` ordered pairs ``(i, j)`` of distinct indices in ``[0, n)``.

    Each pair is uniform over the ``n (n - 1)`` ordered pairs with ``i != j``: ``i ~ U{0..n-1}``, then
    ``j = (i + k) mod n`` with ``k ~ U{1..n-1}``. Pairs are drawn with replacement.

    Args:
        n: number of sentences (rows), at least 2.
        n_pairs: number of pairs, at least 1.
        seed: seed of ``numpy.random.default_rng``; same seed, same pairs.

    Returns:
        int64 array of shape ``(n_pairs, 2)``.

    Example:
        >>> p = random_pair_indices(5, 3, seed=1)
        >>> p.shape, bool((p[:, 0] != p[:, 1]).all())
        ((3, 2), True)
    """
    if n < 2:
        raise ValueError(f"random_pair_indices needs n >= 2 sentences to form a pair of distinct ones; got n={n}.")
    if n_pairs < 1:
        raise ValueError(f"random_pair_indices needs n_pairs >= 1; got n_pairs={n_pairs}.")
    rng = np.random.default_rng(seed)
    i = rng.integers(0, n, size=n_pairs)
    # an offset in 1..n-1 can never map i onto itself, and keeps j uniform over the other n - 1 indices
    j = (i + rng.integers(1, n, size=n_pairs)) % n
    return np.stack([i, j], axis=1).astype(np.int64)


def anisotropy(embeddings, pairs=None, n_pairs: int = 10000, seed: int = 0) -> float:
    """Mean cosine similarity of random pairs of distinct rows (Ethayarajh 2019).

    ``A = (1 / m) sum_{(i, j)} cos(e_i, e_j)`` over ``m`` pairs ``(i, j)``, ``i != j``.

    Args:
        embeddings: ``(n, d)`` array or tensor, one row per sentence; no row may be zero.
        pairs: ``(m, 2)`` row indices; default ``random_pair_indices(n, n_pairs, seed)``.
        n_pairs, seed: used only when ``pairs`` is None.

    Returns:
        A float in ``[-1, 1]``: about 0 for isotropic directions, near 1 when the rows share a direction.

    Example:
        >>> anisotropy(np.array([[1.0, 0.0], [2.0, 0.0], [3.0, 0.0]]))
        1.0
    """
    x = _unit_rows(_as_numpy(embeddings, 2), "embeddings")
    if pairs is None:
        pairs = random_pair_indices(len(x), n_pairs, seed)
    pairs = np.asarray(pairs, dtype=np.int64)
    if pairs.ndim != 2 or pairs.shape[1] != 2 or len(pairs) == 0:
        raise ValueError(f"pairs must have shape (m, 2) with m >= 1; got shape {pairs.shape}.")
    if (pairs[:, 0] == pairs[:, 1]).any():
        raise ValueError("pairs must join distinct rows (i != j): a row's cosine with itself is always 1.")
    cosines = np.einsum("ij,ij->i", x[pairs[:, 0]], x[pairs[:, 1]])
    return float(np.mean(cosines))


def alignment(x, y, alpha: float = 2) -> float:
    """Alignment of positive pairs (Wang & Isola 2020): mean ``||f(x_i) - f(y_i)||_2^alpha``.

    ``f`` is L2 normalisation (done here), so with ``alpha = 2`` the value is ``2 - 2 cos`` averaged:
    0 for identical directions, 2 for orthogonal ones, 4 for antipodal ones.

    Args:
        x, y: ``(n, d)`` arrays or tensors; row ``i`` of ``x`` and row ``i`` of ``y`` form a positive pair.
        alpha: exponent of the distance (the paper uses 2).

    Example:
        >>> round(alignment(np.array([[1.0, 0.0]]), np.array([[0.0, 3.0]])), 6)
        2.0
    """
    x = _as_numpy(x, 2, "x")
    y = _as_numpy(y, 2, "y")
    if x.shape != y.shape:
        raise ValueError(f"x and y must have the same shape (row-aligned positive pairs); got {x.shape} and {y.shape}.")
    if len(x) == 0:
        raise ValueError("alignment needs at least one positive pair; got none.")
    distances = np.linalg.norm(_unit_rows(x, "x") - _unit_rows(y, "y"), axis=1)
    return float(np.mean(distances ** alpha))


def uniformity(x, t: float = 2, max_points: int | None = None, seed: int = 0) -> float:
    """Uniformity (Wang & Isola 2020): ``log mean_{i<j} exp(-t ||f(x_i) - f(x_j)||_2^2)``.

    ``f`` is L2 normalisation (done here). 0 when all points coincide (the worst case); the more evenly the
    points cover the sphere, the more negative. Two antipodal points with ``t = 2``: ``log exp(-8) = -8``.

    Args:
        x: ``(n, d)`` array or tensor, ``n >= 2`` (after subsampling).
        t: temperature of the Gaussian potential (the paper uses 2).
        max_points: if set and ``n`` is larger, a seeded random subset of this many rows is used: the
            pair count grows as ``n^2`` (10,000 rows are 50 million pairs).
        seed: seed of that subset.

    Example:
        >>> round(uniformity(np.array([[1.0, 0.0], [-1.0, 0.0]])), 6)
        -8.0
    """
    x = _as_numpy(x, 2, "x")
    if max_points is not None and len(x) > max_points:
        keep = np.sort(np.random.default_rng(seed).choice(len(x), size=max_points, replace=False))
        x = x[keep]
    if len(x) < 2:
        raise ValueError(f"uniformity needs at least 2 points to form a pair; got {len(x)}.")
    squared = pdist(_unit_rows(x, "x"), "sqeuclidean")
    # log-sum-exp rather than log(mean(exp)): with large t every potential can underflow to 0 and give -inf
    return float(logsumexp(-t * squared) - np.log(len(squared)))


def relative_spread(embeddings) -> float:
    r"""How much vectors differ from one example to the next, relative to their size:

    .. math:: \text{spread} = \frac{\frac{1}{d}\sum_j \operatorname{std}_i(x_{ij})}{\sqrt{\frac{1}{nd}\sum_{i,j} x_{ij}^2}}

    0 when every example has the same vector; near 1 when the vectors are centred at zero. A readout with a spread
    of 0.01 carries its differences between sentences in 1% of its magnitude: a classifier initialised at the
    usual scale reads almost the same input for every sentence.
    """
    x = _as_numpy(embeddings, ndim=2)
    size = float(np.sqrt(np.mean(x ** 2)))
    if size == 0.0:
        raise ValueError("every entry is 0: the spread is undefined. Fix: check that the readout was computed.")
    return float(x.std(axis=0).mean() / size)


def singular_value_spectrum(embeddings, center: bool = True, normalize: bool = True) -> np.ndarray:
    """Singular values of the embedding matrix, largest first: how many directions the embeddings use.

    ``X = U diag(s) V^T`` with ``X`` the ``(n, d)`` matrix, mean-centred (``X - mean(X)``) when ``center``.
    A spectrum that falls off after a few values means a few directions dominate (anisotropy); a flat one
    means the variance is spread evenly. Centring removes the common offset, which would otherwise appear
    as one huge leading value.

    Args:
        embeddings: ``(n, d)`` array or tensor.
        center: subtract the column means first.
        normalize: divide by the largest singular value (so the first value is 1).

    Returns:
        ``min(n, d)`` values, sorted descending.

    Example:
        >>> singular_value_spectrum(np.eye(3), center=False)
        array([1., 1., 1.])
    """
    x = _as_numpy(embeddings, 2)
    if center:
        x = x - x.mean(axis=0, keepdims=True)
    values = np.sort(np.linalg.svd(x, compute_uv=False))[::-1]
    if normalize:
        if values.size == 0 or values[0] == 0:
            raise ValueError("All singular values are zero (for example identical rows after centring): "
                             "the spectrum cannot be normalised; pass normalize=False.")
        values = values / values[0]
    return values


def _band_label(low: float, high: float) -> str:
    # rounded so that the default last band (4, 5.0001) reads "4-5"
    return f"{round(float(low), 2):g}-{round(float(high), 2):g}"


def _check_pairs(emb_a, emb_b, gold) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    a = _as_numpy(emb_a, 2, "emb_a")
    b = _as_numpy(emb_b, 2, "emb_b")
    gold = _as_numpy(gold, 1, "gold")
    if not len(a) == len(b) == len(gold):
        raise ValueError(f"emb_a, emb_b and gold must have the same length; got {len(a)}, {len(b)} and {len(gold)}.")
    return a, b, gold


def cosine_by_gold_band(emb_a, emb_b, gold, bands=GOLD_BANDS) -> pd.DataFrame:
    """Cosine of each STS pair next to its gold score and the gold band it falls in.

    ``cosine_i = cos(a_i, b_i)``; pair ``i`` is in band ``[low, high)`` when ``low <= gold_i < high`` (the
    default last band ends at 5.0001 so that it holds 5.0). A well-behaved model has cosines that rise with
    the band; an anisotropic one has high cosines in every band.

    Args:
        emb_a, emb_b: ``(n, d)`` embeddings of the first and second sentences of the pairs.
        gold: ``(n,)`` gold similarity scores.
        bands: increasing, non-overlapping ``(low, high)`` intervals.

    Returns:
        DataFrame with columns ``cosine``, ``gold`` and ``band`` (an ordered categorical with labels such as
        ``"0-1"`` ... ``"4-5"``; missing where a score is in no band), one row per pair, in input order.

    Example:
        >>> cosine_by_gold_band(np.eye(2), np.eye(2), [5.0, 0.5])["band"].tolist()
        ['4-5', '0-1']
    """
    a, b, gold = _check_pairs(emb_a, emb_b, gold)
    bands = [(float(low), float(high)) for low, high in bands]
    for (low, high), following in zip(bands, bands[1:] + [(np.inf, np.inf)]):
        if not low < high <= following[0]:
            raise ValueError(f"bands must be increasing and non-overlapping (low < high <= next low); got {bands}.")
    cosines = np.einsum("ij,ij->i", _unit_rows(a, "emb_a"), _unit_rows(b, "emb_b"))
    labels = [_band_label(low, high) for low, high in bands]
    band = np.full(len(gold), None, dtype=object)
    for (low, high), label in zip(bands, labels):
        band[(gold >= low) & (gold < high)] = label
    return pd.DataFrame({"cosine": cosines, "gold": gold,
                         "band": pd.Categorical(band, categories=labels, ordered=True)})


def positive_pairs(emb_a, emb_b, gold, threshold: float = 4.0) -> tuple[np.ndarray, np.ndarray]:
    """The STS pairs that count as paraphrases: ``(emb_a[m], emb_b[m])`` with ``m = gold >= threshold``.

    Example:
        >>> a, b = positive_pairs(np.eye(2), np.eye(2), [4.5, 1.0])
        >>> a.shape
        (1, 2)
    """
    a, b, gold = _check_pairs(emb_a, emb_b, gold)
    mask = gold >= threshold
    if not mask.any():
        raise ValueError(f"No pair has a gold score >= threshold {threshold} (highest: {gold.max(initial=-np.inf)}); "
                         f"lower the threshold.")
    return a[mask], b[mask]


def geometry_summary(emb_a, emb_b, gold, threshold: float = 4.0, n_pairs: int = 10000, seed: int = 0,
                     max_points: int | None = 5000) -> dict:
    """Anisotropy, alignment and uniformity of the embeddings of an STS set, in one dict.

    - ``anisotropy``: over random pairs of the distinct rows of ``emb_a`` and ``emb_b`` stacked (a sentence
      that appears in several pairs counts once, so no random pair joins a sentence with itself);
    - ``alignment``: over the positive pairs, ``gold >= threshold``;
    - ``uniformity``: over the same distinct rows, at most ``max_points`` of them;
    - ``n_positive``: the number of positive pairs.

    Example:
        >>> s = geometry_summary(np.eye(4)[:2], np.eye(4)[2:], [5.0, 0.0])
        >>> round(s["alignment"], 6), s["n_positive"]
        (2.0, 1)
    """
    a, b, gold = _check_pairs(emb_a, emb_b, gold)
    stacked = np.unique(np.concatenate([a, b]), axis=0)
    positive_a, positive_b = positive_pairs(a, b, gold, threshold)
    return {
        "anisotropy": anisotropy(stacked, n_pairs=n_pairs, seed=seed),
        "alignment": alignment(positive_a, positive_b),
        "uniformity": uniformity(stacked, max_points=max_points, seed=seed),
        "n_positive": len(positive_a),
    }


def embed_sentences(model, tokenizer, sentences, batch_size: int = 64, max_length: int = 128) -> np.ndarray:
    """Sentence embeddings from a ``SelfGuidedModel``: BERT_T's last-layer sentence token (its ``readout``: [CLS],
    or a causal LM's last real token), before any pooler or head.

    Calls the model's own ``sentence_vectors(input_ids, attention_mask)`` batch by batch, in eval mode
    (no dropout) and without gradients; the model's previous train/eval mode is restored afterwards, so this
    is safe to call in the middle of training.

    Args:
        model: a ``SelfGuidedModel`` (or anything with ``sentence_vectors``, ``training``, ``train``,
            ``eval`` and ``parameters``).
        tokenizer: its Hugging Face tokenizer.
        sentences: list of strings.

    Returns:
        ``(len(sentences), d)`` float32 array, in the order of ``sentences``.
    """
    import torch

    sentences = list(sentences)
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    chunks = []
    try:
        with torch.no_grad():
            for start in range(0, len(sentences), batch_size):
                encoded = tokenizer(sentences[start:start + batch_size], padding=True, truncation=True,
                                    max_length=max_length, return_tensors="pt").to(device)
                vectors = model.sentence_vectors(encoded["input_ids"], encoded["attention_mask"])
                chunks.append(vectors.float().cpu().numpy())
    finally:
        model.train(was_training)
    if not chunks:
        raise ValueError("embed_sentences got no sentences.")
    return np.concatenate(chunks)


class GeometryCallback:
    """A ``train_self_guided`` callback: the geometry of an STS set's embeddings at every evaluation.

    Called as ``callback(step, model, tokenizer)``; appends ``{"step", "alignment", "uniformity",
    "anisotropy"}`` to ``records``. Build it with :func:`make_geometry_callback`.
    """

    def __init__(self, dataset, threshold: float = 4.0, n_pairs: int = 10000, seed: int = 0,
                 max_points: int | None = 5000, batch_size: int = 64, max_length: int = 128):
        subsets = list(dataset.subsets.values())
        first = [s for pairs in subsets for s in pairs.sentences1]
        second = [s for pairs in subsets for s in pairs.sentences2]
        self.gold = np.concatenate([np.asarray(pairs.scores, dtype=np.float64) for pairs in subsets])
        # each distinct sentence is encoded once per evaluation; pairs index into that table
        self.sentences = list(dict.fromkeys(first + second))
        position = {s: k for k, s in enumerate(self.sentences)}
        self.index_a = np.array([position[s] for s in first], dtype=np.int64)
        self.index_b = np.array([position[s] for s in second], dtype=np.int64)
        if not (self.gold >= threshold).any():  # fail before training starts, not at its first evaluation
            raise ValueError(f"No pair of {dataset.name}/{dataset.split} has a gold score >= threshold {threshold}; "
                             f"lower the threshold.")
        self.threshold = threshold
        self.n_pairs = n_pairs
        self.seed = seed
        self.max_points = max_points
        self.batch_size = batch_size
        self.max_length = max_length
        self.records: list[dict] = []

    def __call__(self, step, model, tokenizer) -> dict:
        vectors = embed_sentences(model, tokenizer, self.sentences, self.batch_size, self.max_length)
        summary = geometry_summary(vectors[self.index_a], vectors[self.index_b], self.gold, self.threshold,
                                   self.n_pairs, self.seed, self.max_points)
        record = {"step": int(step), "alignment": summary["alignment"], "uniformity": summary["uniformity"],
                  "anisotropy": summary["anisotropy"]}
        self.records.append(record)
        return record

    def to_frame(self) -> pd.DataFrame:
        """The records so far, one row per evaluation."""
        return pd.DataFrame(self.records, columns=["step", "alignment", "uniformity", "anisotropy"])


def make_geometry_callback(dataset, threshold: float = 4.0, n_pairs: int = 10000, seed: int = 0,
                           max_points: int | None = 5000, batch_size: int = 64,
                           max_length: int = 128) -> GeometryCallback:
    """A callback for ``train_self_guided(..., callbacks=[...])`` that records alignment, uniformity and
    anisotropy of ``dataset`` (an ``STSDataset``) at every evaluation, step 0 included.

    The same seed (hence the same anisotropy pairs and uniformity subset) is used at every step, so the
    curves move only because the model does. ``max_length`` should match the training configuration's.

    Example:
        >>> geometry = make_geometry_callback(load_stsb("dev"))            # doctest: +SKIP
        >>> train_self_guided(..., callbacks=[geometry])                   # doctest: +SKIP
        >>> geometry.to_frame().plot(x="uniformity", y="alignment")        # doctest: +SKIP
    """
    return GeometryCallback(dataset, threshold, n_pairs, seed, max_points, batch_size, max_length)
