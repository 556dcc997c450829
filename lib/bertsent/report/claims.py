"""Every verdict of the book: does our measurement reproduce a claim of a paper? One rule, one place.

A *claim* is an effect a paper reports: usually a difference between two of its rows ("SG-OPT's STS average is
43.22 points above [CLS]'s"), sometimes only a direction ("the larger model scores higher"). We measure the same
effect, in the same orientation (ours = A - B for a claim "A > B"), and compare the two.

The rule
--------
The *tolerance* is the effect the noise alone can make (see below). With ``ours`` our effect, ``paper`` the
paper's and ``ratio = ours / paper``:

* ``within noise``: ``|ours| <= tolerance``, whatever the sign;
* ``not reproduced``: beyond the noise, with the opposite sign from the paper's;
* ``reproduced``: beyond the noise, with the paper's sign, and between half and twice the paper's effect
  (``0.5 <= ratio <= 2``);
* ``direction only``: beyond the noise, with the paper's sign, but less than half the paper's effect;
* ``larger than the paper's``: beyond the noise, with the paper's sign, and more than twice the paper's effect: the
  direction holds, the size does not (an effect 40 times the paper's measures something else than the paper did);
* ``not testable here``: the claim was measured on an encoder that has not learned language (the book's own BERT
  while its held-out [MASK] accuracy is within :data:`LEARNED_MARGIN` points of always predicting the majority word
  piece; read from the model's committed ``models/<backbone>/mlm_accuracy.csv`` by :func:`encoder_floor`): a
  pooling or training effect on such an encoder tests nothing the paper claims about a language model, whatever the
  numbers;
* ``explained by the control``: beyond the noise in the paper's direction, but a control row (the same comparison
  with the claimed cause removed, :class:`Control`) leaves no effect beyond its own noise: the gain is not the
  claimed cause's;
* ``noise not measured``: no tolerance could be measured (one seed and no spread to borrow): no verdict;
* ``at floor``: both compared results sit at a trivial floor (a classifier that predicts one class for every
  example: the majority-class accuracy, an MCC of 0). Their difference measures no learning, and a side whose seeds
  all sit at the floor has a spread of zero that is degeneracy, not precision: no verdict, whatever the numbers.
  The caller says which floor (``floor`` of :func:`judge`);
* ``against a floor``: only the side the claim says is worse sits at such a floor, and the claimed winner is ahead
  beyond the noise. The direction holds, but against a constant predictor, not against the trained baseline the
  paper beat, so it is not called reproduced (``beaten_floor`` of :func:`judge`).

Where the paper gives a direction but no number (a claim "A > B" with no effect size), the ratio is blank and the
verdict comes from the sign alone, still weighed against the noise: ``reproduced`` (beyond the noise, the paper's
direction), ``not reproduced`` (beyond the noise, the opposite one) or ``within noise``; ``direction only`` and
``larger than the paper's`` cannot occur. Where the paper's wording is qualitative ("often", "roughly 75 to 105
degrees") the operational threshold is chosen once in :mod:`bertsent.report.reported`, beside the quote, and stated
in the claim's text; a range is judged by :func:`judge_range` (an equivalence test: the whole interval of our value
inside the range, or the whole of it outside). Rows a paper says nothing about (our own extra ablations) get :data:`NO_CLAIM` instead of a verdict.

The tolerance
-------------
Every tolerance is the half-width of a 95% two-sided interval of the compared difference: the 97.5% quantile of
Student's t (:func:`t_quantile`) at the Welch-Satterthwaite degrees of freedom of its parts times its standard
error, and it says where it came from (:class:`Noise`, the ``noise_source`` column). With 3 seeds a side the
quantile is 2.78 to 4.30, not 2: two standard errors would call a seed-noise difference beyond the noise far more
often than one time in twenty (``tests/report/test_claims.py`` checks the rate on simulated draws). Parts with no
seed spread (a binomial or bootstrap standard error of the evaluation set) have unlimited degrees of freedom, so a
tolerance with no seeds at all uses the normal quantile, 1.96. Ways of getting one:

* :func:`seed_noise`, for results with training seeds: the standard error of a difference of means over seeds,
  ``sqrt(sd_a^2/n_a + sd_b^2/n_b)`` (more sides for a difference of differences), each ``sd`` the standard deviation
  over that side's seeds, plus the evaluation set's own sampling noise (:class:`Evaluation`): every seed is scored on
  the same test items, so the seed spread leaves out which items the test set happens to hold, and two seeds with
  identical scores (sd 0) are not a zero-width yardstick. A deterministic side (an untrained readout, a fitted
  post-processing: no seed) adds no seed variance. A side with one seed has no spread of its own: it takes a
  *reference spread* (:class:`Spread`) the caller measured elsewhere, on the same backbone and the same family of
  methods (e.g. SG-OPT's standard deviation over its seeds lent to SG), and the row's ``seeds`` says ``one seed``.
  With no reference spread to lend, the tolerance is blank (not measured), the ``noise_source`` says so, and the
  verdict is ``noise not measured`` (:data:`NOISE_NOT_MEASURED`): a sign with no yardstick is not evidence either
  way, so the table shows our effect and its sign but does not call it reproduced.
* the evaluation set's part (:class:`Evaluation`): a paired bootstrap over the test items where both sides' per-item
  scores are kept (:func:`bootstrap_evaluation`), else, from the score and the set's size alone, the binomial
  standard error of an accuracy (its Matthews-correlation equivalent, 1/sqrt(n)) or the Fisher standard error of a
  Spearman correlation (:func:`binomial_evaluation`, :func:`correlation_evaluation`), for each side independently:
  without the per-item scores the two sides' covariance is unknown, and leaving it out can only widen the
  tolerance.
* :func:`dev_set_noise`, for GLUE-style dev scores with one fine-tuning per model: the binomial standard error of
  a difference of two accuracies on the same number of dev examples (``1/sqrt(n)`` for a Matthews correlation).
* :func:`pair_sampling_noise`, for two deterministic readouts (no seed at all: untrained encoders, GloVe) scored on
  the same test pairs: their difference still depends on which pairs the test set happens to hold. The standard
  error comes from a paired bootstrap over the pairs (:func:`bertsent.evaluation.sts.paired_bootstrap_se`).

Example
-------
The plain BERT of the book, SG-OPT (one seed) against its untrained [CLS] (deterministic), with SG-OPT's spread
over three seeds lent by the ablation page:

>>> noise = seed_noise(Side(seeds=1), Side(seeds=0), reference=Spread(0.41, 3, "sg_opt over 3 seeds"))
>>> round(noise.tolerance, 2), noise.seeds   # t at 2 df (4.30) x 0.41
(1.76, 'one seed')
>>> judge("sg_opt > cls", ours=0.57, paper=43.22, noise=noise)["verdict"]
'within noise'
>>> judge("sg_opt > cls", ours=4.76, paper=43.22, noise=noise)["verdict"]   # beyond noise, 11% of the paper's
'direction only'
"""
from __future__ import annotations

import functools
import math
import numbers
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from scipy import stats

# bump when the verdict rule changes (2: no verdict where the noise is not measured; 3: t-quantiles at the
# Welch-Satterthwaite df, the evaluation set's noise in every tolerance, reproduced bounded above, not testable on an
# unlearned encoder, explained by a control)
METHOD_VERSION = 3

REPRODUCED = "reproduced"
DIRECTION_ONLY = "direction only"
NOT_REPRODUCED = "not reproduced"
WITHIN_NOISE = "within noise"
NOISE_NOT_MEASURED = "noise not measured"
AT_FLOOR = "at floor"
# The claimed direction holds, but the side it says is worse never left a trivial floor (e.g. it predicts the
# majority class on every seed): a win over a constant predictor, not over the trained baseline the paper beat.
AGAINST_FLOOR = "against a floor"
LARGER = "larger than the paper's"
NOT_TESTABLE = "not testable here"
EXPLAINED = "explained by the control"
VERDICTS = (REPRODUCED, LARGER, DIRECTION_ONLY, NOT_REPRODUCED, WITHIN_NOISE, NOISE_NOT_MEASURED, AT_FLOOR,
            AGAINST_FLOOR, NOT_TESTABLE, EXPLAINED)
# The verdict of a row the paper makes no claim about (no row of its own in the paper's table).
NO_CLAIM = "-"
UNLABELLED_COLUMN = "ours"  # the summary's column for claims tables with no backbone or task column

CONFIDENCE = 0.95       # two-sided: the tolerance is the half-width of this interval of the compared difference
HALF_THE_PAPER = 0.5    # the smallest ratio ours / paper still called reproduced
TWICE_THE_PAPER = 2.0   # the largest; above it the size is not the paper's, only the direction
# An encoder has learned language when its held-out [MASK] accuracy is at least this many points above always
# predicting the majority word piece. At the unigram stage a model guesses frequent word pieces and stays within a
# point or two of that floor (the BERT chapter's stall study); one that reads context is tens of points above it, so
# the margin separates the two without calling a small model unlearned.
LEARNED_MARGIN = 10.0
MODELS_DIR = Path(__file__).resolve().parents[3] / "models"  # the book's own checkpoints and their MLM evaluation

CONTROL_COLUMNS = ("control", "control_effect", "control_tolerance")  # a row with a control (:class:`Control`)
# The columns of every claims table, in this order (a table's own context columns follow ``claim``).
CLAIM_COLUMNS = ["claim", "paper_effect", "our_effect", "ratio", "tolerance", "seeds", "noise_source", "verdict"]


@dataclass(frozen=True)
class Spread:
    """A seed spread measured elsewhere, lent to a side that has only one seed: the standard deviation ``sd``
    over ``seeds`` seeds, and ``source``, where it was measured (it ends up in ``noise_source``)."""
    sd: float
    seeds: int
    source: str


@dataclass(frozen=True)
class Side:
    """One side of a compared difference: the standard deviation of its result over its ``seeds`` seeds.

    ``seeds=0``: deterministic (an untrained readout, whitening: no seed, no seed noise); ``seeds=1``: one
    training seed, so no spread of its own (``sd`` is ignored and a reference :class:`Spread` is used).
    """
    sd: float = 0.0
    seeds: int = 0


@dataclass(frozen=True)
class Noise:
    """A tolerance (points; NaN where it could not be measured), the seeds behind it, and where it came from."""
    tolerance: float
    seeds: str
    source: str


def t_quantile(df: float, confidence: float = CONFIDENCE) -> float:
    """The two-sided ``confidence`` quantile of Student's t with ``df`` degrees of freedom (the normal one for an
    infinite ``df``).

    >>> round(t_quantile(2), 2), round(t_quantile(4), 2), round(t_quantile(math.inf), 2)
    (4.3, 2.78, 1.96)
    """
    upper = 1 - (1 - confidence) / 2
    return float(stats.norm.ppf(upper) if math.isinf(df) else stats.t.ppf(upper, df))


def _df_text(df: float) -> str:
    return "normal" if math.isinf(df) else f"{df:.1f} df"


@dataclass(frozen=True)
class Evaluation:
    """The evaluation set's own sampling noise of a compared difference: its standard error ``se`` (points) and
    where it came from. Unlimited degrees of freedom (a bootstrap or a binomial over hundreds of items)."""
    se: float
    source: str


def _sides(count: int) -> str:
    return "1 side" if count == 1 else f"{count} sides"


def binomial_evaluation(count: int, score: float, metric: str = "accuracy", sides: int = 2,
                        what: str = "dev examples") -> Evaluation:
    """The evaluation-set standard error (points) of a difference of ``sides`` scores, each measured on the same
    ``count`` items, from the score alone: binomial sqrt(p(1-p)/n) for an accuracy (or F1) at ``score`` percent,
    1/sqrt(n) for a Matthews correlation (that of a correlation near zero), each side independent.

    >>> round(binomial_evaluation(872, 80.0).se, 2)   # sqrt(2 * 0.8 * 0.2 / 872) * 100
    1.92
    """
    if count < 1:
        raise ValueError(f"an evaluation set needs at least one item, got {count} {what}")
    if metric == "mcc":
        one, how = 1 / math.sqrt(count), "MCC SE 1/sqrt(n)"
    else:
        p = min(max(score / 100, 0.0), 1.0)
        one, how = math.sqrt(max(p * (1 - p), 1e-4) / count), f"binomial SE at {score:.1f}%"
    return Evaluation(100 * math.sqrt(sides) * one, f"{how}, {count:,} {what}, {_sides(sides)}")


def correlation_evaluation(count: int, correlation: float, sides: int = 2, what: str = "test pairs") -> Evaluation:
    """The evaluation-set standard error (points) of a difference of ``sides`` Spearman correlations (x 100), each
    on the same ``count`` pairs, from the correlation alone: Fisher's z with Spearman's variance 1.06 / (n - 3),
    back on the correlation's scale (times 1 - r^2), each side independent.

    >>> round(correlation_evaluation(1379, 80.0).se, 2)   # sqrt(2 * 1.06 / 1376) * (1 - 0.64) * 100
    1.41
    """
    if count < 4:
        raise ValueError(f"a correlation's standard error needs at least 4 pairs, got {count} {what}")
    r = min(abs(correlation) / 100, 0.999)
    one = math.sqrt(1.06 / (count - 3)) * (1 - r ** 2)
    return Evaluation(100 * math.sqrt(sides) * one,
                      f"Spearman SE (Fisher z) at {correlation:.1f}, {count:,} {what}, {_sides(sides)}")


def reciprocal_rank_evaluation(queries: int, mrr: float, sides: int = 2) -> Evaluation:
    """The evaluation-set standard error (points) of a difference of ``sides`` mean reciprocal ranks (x 100) over
    ``queries`` queries, from the mean alone: a reciprocal rank lies in [0, 1], so its variance is at most
    m(1 - m) (the Bhatia-Davis bound) and this is an upper bound.

    >>> round(reciprocal_rank_evaluation(643, 87.6).se, 2)   # sqrt(2 * 0.876 * 0.124 / 643) * 100
    1.84
    """
    m = min(max(mrr / 100, 0.0), 1.0)
    return Evaluation(100 * math.sqrt(sides * max(m * (1 - m), 1e-4) / queries),
                      f"reciprocal-rank SE bound at MRR {mrr:.1f}, {queries:,} queries, {_sides(sides)}")


def bootstrap_evaluation(standard_error: float, resamples: int) -> Evaluation:
    """A paired bootstrap's standard error (points) of the difference, both sides scored on the same items."""
    return Evaluation(float(standard_error), f"paired bootstrap over the test items ({resamples} resamples)")


def mean_of_sets_evaluation(parts: list[Evaluation], what: str = "sets") -> Evaluation:
    """The evaluation-set standard error of a difference averaged over independent sets: sqrt(sum se^2) / k.

    >>> mean_of_sets_evaluation([Evaluation(3.0, "a"), Evaluation(4.0, "b")]).se
    2.5
    """
    if not parts:
        raise ValueError("no evaluation sets to combine")
    se = math.sqrt(sum(part.se ** 2 for part in parts)) / len(parts)
    kind = re.split(r" at | \d", parts[0].source.split(",")[0])[0]
    return Evaluation(se, f"{kind} per set, averaged over {len(parts)} {what}")


def seed_noise(*sides: Side | tuple[float, int], reference: Spread | None = None,
               evaluation: Evaluation | None = None, confidence: float = CONFIDENCE) -> Noise:
    """The tolerance of a difference of means over seeds: the t quantile at the Welch-Satterthwaite degrees of
    freedom times ``sqrt(sum(sd_i^2 / n_i) + evaluation.se^2)`` over the sides.

    A side is a :class:`Side` or a pair ``(sd, seeds)``. Deterministic sides (``seeds=0``) add no seed variance; a
    side with one seed adds ``reference.sd^2`` (with ``reference.seeds - 1`` degrees of freedom; the row's ``seeds``
    then reads ``one seed``); with one seed and no ``reference`` the tolerance is NaN (not measured). A side of
    ``n`` seeds contributes ``n - 1`` degrees of freedom, a lent spread its own seeds less one, counted once however
    many sides borrow it; the degrees of freedom are those of the seed parts alone, and ``evaluation`` (the test
    set's own sampling noise, :class:`Evaluation`) adds its variance only. Without an ``evaluation`` the source
    says the test set's noise is left out.

    >>> round(seed_noise(Side(1.0, 4), Side(2.0, 4)).tolerance, 2)   # t(4.4 df) x sqrt(1/4 + 4/4)
    2.99
    """
    sides = [side if isinstance(side, Side) else Side(*side) for side in sides]
    parts, described = [], []  # (variance, degrees of freedom) of each independent part
    lent = 0.0  # one estimate of the reference's variance however many sides borrow it: one part, not several
    for side in sides:
        if side.seeds <= 0:
            described.append("deterministic")
        elif side.seeds == 1:
            if reference is None:
                return Noise(float("nan"), "one seed", "not measured: one seed and no reference spread; "
                                                       "verdict from the sign and size alone")
            lent += reference.sd ** 2
            described.append(f"one seed (sd {reference.sd:.2f} lent: {reference.source})")
        else:
            parts.append((side.sd ** 2 / side.seeds, side.seeds - 1))
            described.append(f"sd {side.sd:.2f} over {side.seeds} seeds")
    if lent:
        parts.append((lent, max(reference.seeds - 1, 1)))
    # the degrees of freedom come from the seeds alone (Welch-Satterthwaite over the seed parts): counting the test
    # set's known variance in them as unlimited ones makes the interval too narrow on 2-5 seeds (6% of simulated
    # null draws called beyond the noise instead of 5%: tests/report/test_claims.py, the calibration test)
    seed_variance = sum(v for v, _ in parts)
    finite = sum(v ** 2 / df for v, df in parts)
    df = seed_variance ** 2 / finite if finite > 0 else math.inf
    variance = seed_variance + (evaluation.se ** 2 if evaluation is not None else 0.0)
    quantile = t_quantile(df, confidence)
    counts = [side.seeds for side in sides]
    if 1 in counts:
        seeds = "one seed"
    elif not any(counts):
        seeds = "none (deterministic)"
    else:
        seeds = " vs ".join(str(n) if n else "deterministic" for n in counts)
    described = [part if described.count(part) == 1 else f"{described.count(part)} x {part}"
                 for part in dict.fromkeys(described)]
    test_set = (f"; test set: {evaluation.source}" if evaluation is not None
                else "; the test set's own noise not included")
    return Noise(quantile * math.sqrt(variance), seeds,
                 f"t {quantile:.2f} ({_df_text(df)}) x SE of a difference over seeds: " + " vs ".join(described)
                 + test_set)


def dev_set_noise(dev_examples: int, score: float, metric: str = "accuracy", z: float | None = None,
                  scores: str = "dev scores") -> Noise:
    """``z`` (default the normal quantile of :data:`CONFIDENCE`, 1.96: no seeds) standard errors (points) of the difference between two models' scores on the same dev set, from the
    dev-set size alone: for GLUE-style results with one fine-tuning per model and no seeds.

    Accuracy p on n examples has a binomial standard error sqrt(p(1-p)/n), the difference of two independent ones
    sqrt(2) times that. For a Matthews correlation (``metric="mcc"``) the standard error is taken as 1/sqrt(n)
    (that of a correlation near zero). Fine-tuning seeds add more spread: this is a floor, not the whole noise.

    >>> round(dev_set_noise(277, 62.5).tolerance, 2)   # RTE: 1.96 * sqrt(2 * 0.625 * 0.375 / 277) * 100
    8.06
    """
    z = t_quantile(math.inf) if z is None else z
    if metric == "mcc":
        standard_error, how = 1 / math.sqrt(dev_examples), "MCC SE 1/sqrt(n)"
    else:
        p = min(max(score / 100, 0.0), 1.0)
        standard_error, how = math.sqrt(max(p * (1 - p), 1e-4) / dev_examples), f"binomial SE at {score:.1f}%"
    return Noise(100 * z * math.sqrt(2) * standard_error, "no seeds (one fine-tuning each)",
                 f"{z:.2f} SE of a difference of two {scores}: {how}, {dev_examples} {scores.split()[0]} examples")


def accuracy_noise(count: int, score: float, what: str = "examples", z: float | None = None) -> Noise:
    """``z`` (default 1.96) standard errors (points) of one accuracy ``score`` (percent) measured on ``count`` ``what``, against a
    fixed number computed on the same items (a floor such as always predicting the majority token): the binomial
    standard error sqrt(p(1-p)/n), with no second model's sampling noise to add.

    >>> round(accuracy_noise(12338, 5.33, "[MASK] positions").tolerance, 2)   # 1.96 * sqrt(0.0533 * 0.9467 / 12338) * 100
    0.4
    """
    z = t_quantile(math.inf) if z is None else z
    if count < 1:
        raise ValueError(f"an accuracy needs at least one item, got {count} {what}")
    p = min(max(score / 100, 0.0), 1.0)
    return Noise(100 * z * math.sqrt(max(p * (1 - p), 1e-4) / count), "one run",
                 f"{z:.2f} SE of one accuracy: binomial at {score:.2f}% on {count:,} {what}")


def mean_of_sets_noise(noises: list[Noise], seeds: str | None = None, what: str = "sets") -> Noise:
    """The noise of a difference averaged over ``k`` independent sets (tasks, test sets), from each set's own:
    ``sqrt(sum tolerance_i^2) / k``. ``seeds``: the row's seeds text (default: the first noise's).

    >>> mean_of_sets_noise([Noise(3.0, "x", "s"), Noise(4.0, "x", "s")]).tolerance
    2.5
    """
    tolerance = math.sqrt(sum(noise.tolerance ** 2 for noise in noises)) / len(noises)
    sources = list(dict.fromkeys(noise.source.split(":")[0] for noise in noises))
    return Noise(tolerance, seeds if seeds is not None else noises[0].seeds,
                 f"{'; '.join(sources)}; combined over {len(noises)} {what} (sqrt of the summed squares / {len(noises)})")


def pair_sampling_noise(standard_error: float, resamples: int, z: float | None = None) -> Noise:
    """``z`` (default 1.96, the normal quantile: no seeds) standard errors of a difference between two deterministic
    readouts, from a paired bootstrap over the
    test pairs (``standard_error`` in points, e.g. :func:`~bertsent.evaluation.sts.average_difference_se` of the
    seven sets' :func:`~bertsent.evaluation.sts.paired_bootstrap_se`).

    >>> round(pair_sampling_noise(0.8, 1000).tolerance, 3)   # 1.96 x 0.8
    1.568
    """
    z = t_quantile(math.inf) if z is None else z
    return Noise(z * standard_error, "none (deterministic)",
                 f"{z:.2f} SE of a paired bootstrap over the test pairs ({resamples} resamples)")


def _verdict(ours: float, paper: float | None, direction: int, tolerance: float) -> str:
    """The rule of this module (see its docstring); ``paper`` None: a direction without a number."""
    if math.isnan(tolerance):
        return NOISE_NOT_MEASURED
    if ours == 0 or abs(ours) <= tolerance:
        return WITHIN_NOISE
    if (ours > 0) != (direction > 0):
        return NOT_REPRODUCED
    if paper is not None and ours / paper < HALF_THE_PAPER:
        return DIRECTION_ONLY
    if paper is not None and ours / paper > TWICE_THE_PAPER:
        return LARGER
    return REPRODUCED


@functools.lru_cache(maxsize=None)
def encoder_floor(backbone: str, models_dir: str | None = None) -> str | None:
    """Why a claim measured on ``backbone`` is not testable, or None where it is: the reason when the backbone is
    one of the book's own checkpoints (``models/<backbone>/mlm_accuracy.csv``) whose held-out [MASK] accuracy is
    less than :data:`LEARNED_MARGIN` points above always predicting the majority word piece. A backbone with no such
    evaluation (a published model pre-trained by others) is taken as having learned language.

    >>> encoder_floor("no-such-backbone") is None
    True
    """
    path = Path(models_dir or MODELS_DIR) / str(backbone) / "mlm_accuracy.csv"
    if not path.is_file():
        return None
    table = pd.read_csv(path)
    rows = table[table["positions"] == "mask"]
    if "text" in rows and (rows["text"] == "held-out corpus").any():
        rows = rows[rows["text"] == "held-out corpus"]
    if not len(rows):
        return None
    row = rows.iloc[0]
    accuracy, floor = 100 * float(row["accuracy"]), 100 * float(row["majority_floor"])
    if accuracy - floor >= LEARNED_MARGIN:
        return None
    return (f"{backbone} has not learned language: held-out [MASK] accuracy {accuracy:.2f}% against "
            f"{floor:.2f}% for always the majority word piece, less than {LEARNED_MARGIN:g} points above it "
            f"({int(row['count']):,} positions, {path.parent.name}/{path.name})")


@dataclass(frozen=True)
class Control:
    """A claim's control: the same comparison with the claimed cause removed (e.g. the deeper backbone trained
    without ACL-CL), ``label`` its row in words, ``effect`` what the claimed cause adds over it (oriented as the
    claim) and ``noise`` that effect's tolerance. Where the claimed cause adds nothing beyond its noise, the claim's
    effect is the control's, not the cause's."""
    label: str
    effect: float
    noise: Noise


def floor_sides(winner_at_floor: bool, loser_at_floor: bool, label: str) -> dict:
    """:func:`judge`'s ``floor`` and ``beaten_floor`` for a claim "winner > loser" whose sides may sit at the trivial
    floor ``label`` (e.g. "majority class"): ``floor`` when both do, ``beaten_floor`` when only the loser does.

    >>> floor_sides(False, True, "majority class")
    {'floor': None, 'beaten_floor': 'majority class'}
    """
    return {"floor": label if winner_at_floor and loser_at_floor else None,
            "beaten_floor": label if loser_at_floor and not winner_at_floor else None}


def judge(claim: str, ours: float, paper: float | None = None, noise: Noise | None = None, direction: int = 1,
          floor: str | None = None, beaten_floor: str | None = None, untestable: str | None = None,
          control: Control | None = None, check_encoder: bool = True, **context) -> dict:
    """One claim's row: our effect beside the paper's, their ratio, the tolerance and its source, and the verdict.

    ``ours``: our effect, oriented as the paper's (for "A > B", our A - B). ``paper``: the paper's effect; None (or
    NaN) where the paper gives only a direction, which ``direction`` then gives (+1: the paper says ``ours`` should be
    positive, -1: negative). ``noise``: from :func:`seed_noise` or :func:`dev_set_noise`. ``context``: columns that
    say where the claim was tested (backbone, train_data, task, ...), placed after ``claim``. ``floor``: where
    both sides sit at a trivial floor, which one (e.g. "majority class"): the verdict is then :data:`AT_FLOOR` and
    ``noise_source`` names the floor. ``beaten_floor``: where only the side the claim says is worse sits at a floor,
    which one: a verdict that would be *reproduced* or *direction only* is then :data:`AGAINST_FLOOR` (the claimed
    winner beat a constant predictor, not a trained baseline), and ``noise_source`` says so. ``untestable``: why the
    claim cannot be tested here (the verdict is :data:`NOT_TESTABLE` and ``noise_source`` gives the reason); where it
    is None and ``context`` names a ``backbone``, :func:`encoder_floor` of it (``check_encoder=False`` skips that, for
    claims about the encoder's own pre-training). ``control``: a :class:`Control`; a verdict in the paper's direction
    whose control leaves no effect beyond its noise is :data:`EXPLAINED`, and the row carries the control's label,
    effect and tolerance (columns ``control``, ``control_effect``, ``control_tolerance``).

    >>> row = judge("big > small", ours=15.0, noise=dev_set_noise(277, 62.5), task="RTE")
    >>> row["verdict"], row["ratio"]
    ('reproduced', nan)
    >>> judge("opt1 < sg_opt", ours=-0.8, paper=-2.01, noise=Noise(0.5, "3 vs 3", "test"))["verdict"]
    'direction only'
    >>> judge("acl > ce_scl", ours=7.0, noise=Noise(4.0, "3 vs 3", "test"), beaten_floor="majority class")["verdict"]
    'against a floor'
    """
    if noise is None:
        raise ValueError(f"{claim}: a verdict needs a Noise (seed_noise or dev_set_noise), none given.")
    if ours is None or math.isnan(ours):
        raise ValueError(f"{claim}: our effect is missing (NaN); leave the claim out instead.")
    if paper is not None and math.isnan(paper):
        paper = None
    if paper == 0:
        raise ValueError(f"{claim}: the paper's effect is 0, which gives no direction to test.")
    if paper is not None:
        direction = 1 if paper > 0 else -1
    elif direction not in (1, -1):
        raise ValueError(f"{claim}: direction must be +1 or -1, got {direction!r}.")
    verdict, source = _verdict(ours, paper, direction, noise.tolerance), noise.source
    if untestable is None and check_encoder and isinstance(context.get("backbone"), str):
        untestable = encoder_floor(context["backbone"])
    extra = {}
    if control is not None:
        left = _verdict(control.effect, None, direction, control.noise.tolerance)
        extra = {"control": control.label, "control_effect": float(control.effect),
                 "control_tolerance": control.noise.tolerance}
        if verdict in (REPRODUCED, DIRECTION_ONLY, LARGER) and left != REPRODUCED:
            verdict = EXPLAINED
            source = (f"{source}; the control ({control.label}) leaves {control.effect:+.2f} against "
                      f"±{control.noise.tolerance:.2f}")
    if untestable is not None:
        verdict, source = NOT_TESTABLE, f"{untestable}; {noise.source}"
    elif floor is not None:
        verdict, source = AT_FLOOR, f"both sides at the {floor}; {noise.source}"
    elif beaten_floor is not None:
        source = f"the side claimed worse at the {beaten_floor}; {noise.source}"
        if verdict in (REPRODUCED, DIRECTION_ONLY, LARGER):
            verdict = AGAINST_FLOOR
    return {"claim": claim, **context, **extra,
            "paper_effect": float("nan") if paper is None else float(paper), "our_effect": float(ours),
            "ratio": float("nan") if paper is None else ours / paper,
            "tolerance": noise.tolerance, "seeds": noise.seeds, "noise_source": source, "verdict": verdict}


def judge_range(claim: str, ours: float, low: float, high: float, noise: Noise, **context) -> dict:
    """A claim that a quantity lies in ``[low, high]`` (a paper's range with the slack its wording allows, chosen in
    :mod:`bertsent.report.reported`), as an equivalence test: *reproduced* when our whole interval ``ours ±
    tolerance`` lies inside the range, *not reproduced* when it lies wholly outside, *within noise* when the noise
    straddles a bound. ``paper_effect`` is the range's middle; ``ratio`` is blank (a position, not an effect).

    >>> judge_range("p90 in [95, 115]", 91.0, 95.0, 115.0, Noise(1.0, "5", "test"))["verdict"]
    'not reproduced'
    """
    if ours is None or math.isnan(ours):
        raise ValueError(f"{claim}: our value is missing (NaN); leave the claim out instead.")
    tolerance = noise.tolerance
    if math.isnan(tolerance):
        verdict = NOISE_NOT_MEASURED
    elif low <= ours - tolerance and ours + tolerance <= high:
        verdict = REPRODUCED
    elif ours + tolerance < low or ours - tolerance > high:
        verdict = NOT_REPRODUCED
    else:
        verdict = WITHIN_NOISE
    untestable = encoder_floor(context["backbone"]) if isinstance(context.get("backbone"), str) else None
    source = noise.source if untestable is None else f"{untestable}; {noise.source}"
    return {"claim": claim, **context, "paper_effect": (low + high) / 2, "our_effect": float(ours),
            "ratio": float("nan"), "tolerance": tolerance, "seeds": noise.seeds, "noise_source": source,
            "verdict": NOT_TESTABLE if untestable else verdict}


def claims_table(claims: Iterable[Mapping]) -> pd.DataFrame:
    """A DataFrame of claims, one row each: :data:`CLAIM_COLUMNS`, with each row's context columns after ``claim``.

    ``claims``: rows returned by :func:`judge`, or mappings of :func:`judge`'s keyword arguments (judged here).

    >>> noise = Noise(1.0, "3 vs 3", "test")
    >>> claims_table([{"claim": "a > b", "ours": 3.0, "paper": 4.0, "noise": noise, "backbone": "m"}])["verdict"].tolist()
    ['reproduced']
    """
    rows = [dict(claim) if "verdict" in claim else judge(**claim) for claim in claims]
    context = list(dict.fromkeys(key for row in rows for key in row if key not in CLAIM_COLUMNS))
    return pd.DataFrame(rows, columns=["claim", *context, *CLAIM_COLUMNS[1:]])


def rejudge(table: pd.DataFrame, direction: int = 1, df: float | None = None) -> pd.DataFrame:
    """``table`` (a claims table read back from its CSV) with every verdict recomputed by the current rule from the
    row's own ``our_effect``, ``paper_effect`` and ``tolerance``: for claims whose inputs are not kept as per-run CSVs
    (e.g. test-set sizes). ``direction``: the expected sign where the paper gives none. Rows *at floor* stay so;
    rows *against a floor* stay so while the direction still holds beyond the noise; a row with a ``backbone`` that
    has not learned language is *not testable here* (:func:`encoder_floor`).

    A tolerance written by rule version 2 (its ``noise_source`` starts "2 SE") was two standard errors: with ``df``
    (the degrees of freedom behind it; ``math.inf`` for a test set's binomial noise alone) it is rescaled to the
    current quantile, ``t_quantile(df) / 2`` times, and its source says so; without ``df`` such a row is refused.

    >>> old = claims_table([judge("a > b", 3.0, 4.0, Noise(1.0, "3 vs 3", "test"))]).assign(verdict="reproduced?")
    >>> rejudge(old)["verdict"].tolist()
    ['reproduced']
    """
    table = table.copy()
    for index, row in table.iterrows():
        source = str(row["noise_source"])
        tolerance = float(row["tolerance"])
        if re.match(r"2 SE\b", source):
            if df is None:
                raise ValueError(f"{row['claim']}: its tolerance is two standard errors (rule version 2); pass the "
                                 f"degrees of freedom behind it (df) to rescale it to the current quantile")
            quantile = t_quantile(df)
            tolerance *= quantile / 2
            source = f"t {quantile:.2f} ({_df_text(df)}) x SE{source[len('2 SE'):]} (rescaled from 2 SE)"
            table.loc[index, ["tolerance", "noise_source"]] = [tolerance, source]
        untestable = encoder_floor(row["backbone"]) if isinstance(row.get("backbone"), str) else None
        if untestable is not None:
            if not source.startswith(untestable):
                table.loc[index, "noise_source"] = f"{untestable}; {source}"
            table.loc[index, "verdict"] = NOT_TESTABLE
            continue
        if row["verdict"] == AT_FLOOR:
            continue
        paper = None if pd.isna(row["paper_effect"]) else float(row["paper_effect"])
        sign = direction if paper is None else (1 if paper > 0 else -1)
        verdict = _verdict(float(row["our_effect"]), paper, sign, tolerance)
        if row["verdict"] == AGAINST_FLOOR and verdict in (REPRODUCED, DIRECTION_ONLY, LARGER):
            verdict = AGAINST_FLOOR
        table.loc[index, "verdict"] = verdict
    return table


def _effect(value: float, digits: int) -> str:
    return f"{value:+.{digits}f}"


def _label_value(column: str, value) -> str:
    """A label column's value as it reads in a claim's label: a number says what it counts (``exit 2``; a whole
    number read back from a CSV as 2.0 reads 2)."""
    if isinstance(value, numbers.Number):
        return f"{column} {int(value) if float(value).is_integer() else value}"
    return str(value)


def claims_summary(*tables: pd.DataFrame, label_with: Iterable[str] = ("train_data",), digits: int = 2) -> pd.DataFrame:
    """One screen for a chapter index: one row per claim, the paper's effect, and one column per backbone (or
    task, for tables without a ``backbone`` column; :data:`UNLABELLED_COLUMN` for tables with neither) holding our
    effect and verdict, e.g. ``+0.57 within noise``.

    ``tables``: claims tables (:func:`claims_table`). Columns named in ``label_with`` that a table has are added to
    the claim's label where the row has a value, e.g. ``sg_opt > cls (stsb_train)``, a number with its column's name
    (``acl_cl > joint (exit 2)``). The ``paper`` column reads ``direction`` where the paper
    gives no number. Cells with no result are empty.
    """
    cells: dict[str, dict[str, str]] = {}
    columns: list[str] = []
    for table in tables:
        if table is None or not len(table):
            continue
        by = next((column for column in ("backbone", "task") if column in table), None)
        extra = [column for column in label_with if column in table]
        for _, row in table.iterrows():
            label = row["claim"] + "".join(f" ({_label_value(column, row[column])})" for column in extra
                                           if pd.notna(row[column]))
            paper = "direction" if pd.isna(row["paper_effect"]) else _effect(row["paper_effect"], digits)
            cell = f"{_effect(row['our_effect'], digits)} {row['verdict']}"
            entry = cells.setdefault(label, {"paper": paper})
            column = row[by] if by else UNLABELLED_COLUMN
            entry[column] = f"{entry[column]}; {cell}" if column in entry else cell
            if column not in columns:
                columns.append(column)
    summary = pd.DataFrame.from_dict(cells, orient="index", columns=["paper", *columns]).fillna("")
    return summary.rename_axis("claim")


def _context_label(row: pd.Series, columns: Iterable[str]) -> str:
    """The text context columns of a claim row (backbone, task, ...) that its claim does not already name."""
    words = set(re.split(r"[\s(),:]+", row["claim"]))
    values = [row[column] for column in columns
              if isinstance(row[column], str) and row[column] and row[column] not in words]
    return f" ({', '.join(values)})" if values else ""


def verdict_line(row: pd.Series, context: Iterable[str] = (), digits: int = 2, label_with: Iterable[str] = ()) -> str:
    """One claim as a line of the verdict box: the claim, our effect against the paper's, the tolerance, the verdict.
    ``label_with``: columns added to the label where the row has a value, as :func:`claims_summary` adds them (a
    number with its column's name: ``(exit 2)``)."""
    paper = "a direction, no number" if pd.isna(row["paper_effect"]) else _effect(row["paper_effect"], digits)
    tolerance = ("not measured" if pd.isna(row["tolerance"])
                 else f"±{row['tolerance']:.{digits}f}")
    labels = "".join(f" ({_label_value(column, row[column])})" for column in label_with
                     if column in row and pd.notna(row[column]))
    context = [column for column in context if column not in CONTROL_COLUMNS]
    line = (f"{row['claim']}{labels}{_context_label(row, context)}: ours {_effect(row['our_effect'], digits)} vs the "
            f"paper's {paper}, tolerance {tolerance}: **{row['verdict']}**")
    if "control" in row and isinstance(row["control"], str) and row["control"]:
        line += (f" (control: {row['control']}; what the claimed cause adds over it "
                 f"{_effect(row['control_effect'], digits)}, tolerance ±{row['control_tolerance']:.{digits}f})")
    return line


def verdict_box(*tables: pd.DataFrame, title: str = "Verdict", digits: int = 2, label_with: Iterable[str] = ()) -> str:
    """The verdict box that ends a page: a MyST admonition (Markdown text) with one line per claim of ``tables``
    (claims tables, :func:`claims_table`), then a count of the verdicts. Rows without a claim (:data:`NO_CLAIM`)
    are left out; with no claim at all the box is empty text (show nothing). ``label_with``: as for
    :func:`verdict_line` (e.g. ``("exit",)`` tells a multi-exit page's per-exit lines apart).

    >>> table = claims_table([judge("a > b", ours=3.0, paper=4.0, noise=Noise(1.0, "3 vs 3", "test"), backbone="m")])
    >>> print(verdict_box(table))
    ```{admonition} Verdict
    :class: tip
    - a > b (m): ours +3.00 vs the paper's +4.00, tolerance ±1.00: **reproduced**
    <BLANKLINE>
    1 claim: 1 reproduced.
    ```
    """
    lines, counts = [], dict.fromkeys(VERDICTS, 0)
    for table in tables:
        if table is None or not len(table):
            continue
        context = [column for column in table.columns if column not in CLAIM_COLUMNS]
        for _, row in table.iterrows():
            if row["verdict"] == NO_CLAIM:
                continue
            lines.append(f"- {verdict_line(row, context, digits, label_with)}")
            counts[row["verdict"]] = counts.get(row["verdict"], 0) + 1
    if not lines:
        return VerdictBox("")
    total = len(lines)
    tally = ", ".join(f"{n} {verdict}" for verdict, n in counts.items() if n)
    tally = f"{total} claim{'s' if total != 1 else ''}: {tally}."
    return VerdictBox("\n".join([f"```{{admonition}} {title}", ":class: tip", *lines, "", tally, "```"]),
                      lines, tally, {verdict: n for verdict, n in counts.items() if n})


class VerdictBox(str):
    """The text of a verdict box (a MyST admonition), which is what a page displays, with its parts kept
    (``lines``: one per claim; ``tally``: the count of the verdicts as a sentence; ``counts``: verdict -> claims)
    so the box that opens a page (:func:`bertsent.report.pages.findings_box`) can show the count up front without
    reading the text back."""

    def __new__(cls, text: str, lines: Iterable[str] = (), tally: str = "", counts: Mapping[str, int] | None = None):
        box = super().__new__(cls, text)
        box.lines, box.tally, box.counts = list(lines), tally, dict(counts or {})
        return box

    def held(self) -> int:
        """Claims that hold: reproduced, larger than the paper's, or in its direction only."""
        return sum(self.counts.get(verdict, 0) for verdict in (REPRODUCED, LARGER, DIRECTION_ONLY))

    def failed(self) -> int:
        """Claims not reproduced."""
        return self.counts.get(NOT_REPRODUCED, 0)
