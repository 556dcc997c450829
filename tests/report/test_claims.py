"""The book's one verdict rule (``bertsent.report.claims``), on hand-made numbers."""
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from bertsent.report.claims import (
    AGAINST_FLOOR,
    CLAIM_COLUMNS,
    AT_FLOOR,
    DIRECTION_ONLY,
    NO_CLAIM,
    NOISE_NOT_MEASURED,
    NOT_REPRODUCED,
    REPRODUCED,
    VERDICTS,
    WITHIN_NOISE,
    Noise,
    Side,
    Spread,
    claims_summary,
    claims_table,
    dev_set_noise,
    judge,
    rejudge,
    seed_noise,
)

ONE_POINT = Noise(1.0, "3 vs 3", "hand-made")


def verdict(ours, paper=None, noise=ONE_POINT, direction=1):
    return judge("a > b", ours, paper, noise, direction)["verdict"]


def test_the_four_categories():
    assert VERDICTS == ("reproduced", "larger than the paper's", "direction only", "not reproduced", "within noise",
                        "noise not measured", "at floor", "against a floor", "not testable here",
                        "explained by the control")
    assert verdict(8.0, 10.0) == REPRODUCED          # beyond noise, 80% of the paper's
    assert verdict(2.0, 10.0) == DIRECTION_ONLY      # beyond noise, 20% of the paper's
    assert verdict(-2.0, 10.0) == NOT_REPRODUCED     # beyond noise, opposite sign
    assert verdict(0.9, 10.0) == WITHIN_NOISE        # |ours| <= tolerance
    assert verdict(-0.9, 10.0) == WITHIN_NOISE       # whatever its sign
    assert verdict(1.0, 10.0) == WITHIN_NOISE        # the tolerance itself is noise
    assert NO_CLAIM not in VERDICTS


def test_a_win_over_a_side_at_a_floor_is_not_called_reproduced():
    def against(ours, paper=None):
        return judge("a > b", ours, paper, ONE_POINT, beaten_floor="majority class")

    assert against(8.0, 10.0)["verdict"] == AGAINST_FLOOR    # would be reproduced
    assert against(2.0, 10.0)["verdict"] == AGAINST_FLOOR    # would be direction only
    assert against(3.0)["verdict"] == AGAINST_FLOOR          # a direction without a number
    assert against(0.5)["verdict"] == WITHIN_NOISE           # no win to qualify
    assert against(-3.0)["verdict"] == NOT_REPRODUCED        # the claimed loser won
    assert against(8.0, 10.0)["noise_source"] == "the side claimed worse at the majority class; hand-made"
    both = judge("a > b", 8.0, 10.0, ONE_POINT, floor="majority class", beaten_floor="majority class")
    assert both["verdict"] == AT_FLOOR                       # both at the floor wins over one
    table = claims_table([against(8.0, 10.0), against(-3.0)])
    assert rejudge(table)["verdict"].tolist() == [AGAINST_FLOOR, NOT_REPRODUCED]
    assert rejudge(table.assign(our_effect=[0.5, -3.0]))["verdict"].tolist() == [WITHIN_NOISE, NOT_REPRODUCED]


def test_negative_claims_read_the_same_way():
    assert verdict(-1.5, -2.0) == REPRODUCED         # ratio 0.75
    assert verdict(-1.5, -4.0) == DIRECTION_ONLY     # ratio 0.375
    assert verdict(1.5, -2.0) == NOT_REPRODUCED


def test_half_the_papers_effect_is_the_boundary():
    assert verdict(5.0, 10.0) == REPRODUCED          # exactly half: reproduced
    assert verdict(4.99, 10.0) == DIRECTION_ONLY
    assert verdict(-5.0, -10.0) == REPRODUCED
    row = judge("a > b", 5.0, 10.0, ONE_POINT)
    assert row["ratio"] == pytest.approx(0.5)


def test_opposite_sign_beyond_noise_is_not_reproduced_however_large_the_paper():
    row = judge("sg_opt > mean", -9.38, 22.05, ONE_POINT, backbone="some-backbone")
    assert row["verdict"] == NOT_REPRODUCED
    assert row["ratio"] == pytest.approx(-9.38 / 22.05)


def test_the_plain_bert_example_of_the_issue_is_no_longer_reproduced():
    # SG-OPT one seed vs an untrained (deterministic) [CLS]; the ablation page's spread of SG-OPT is lent
    noise = seed_noise(Side(seeds=1), Side(seeds=0), reference=Spread(0.41, 3, "sg_opt, 3 seeds"))
    assert noise.tolerance == pytest.approx(stats.t.ppf(0.975, 2) * 0.41)  # the lent spread's 2 df
    assert judge("sg_opt > cls", 0.57, 43.22, noise)["verdict"] == WITHIN_NOISE
    assert judge("sg_opt > cls", 4.76, 43.22, noise)["verdict"] == DIRECTION_ONLY


def test_a_direction_without_a_number_is_read_from_the_sign_alone():
    row = judge("big > small", 15.0, None, ONE_POINT, task="RTE")
    assert row["verdict"] == REPRODUCED and math.isnan(row["ratio"]) and math.isnan(row["paper_effect"])
    assert verdict(0.01 + 1.0) == REPRODUCED         # any size beyond noise: no "direction only"
    assert verdict(-3.0) == NOT_REPRODUCED
    assert verdict(0.5) == WITHIN_NOISE
    # a claim that something goes down: direction -1
    assert verdict(-3.0, direction=-1) == REPRODUCED
    assert verdict(3.0, direction=-1) == NOT_REPRODUCED
    assert judge("a > b", 2.0, float("nan"), ONE_POINT)["verdict"] == REPRODUCED  # NaN paper = no number


def test_judge_refuses_what_it_cannot_read():
    with pytest.raises(ValueError, match="paper's effect is 0"):
        judge("a > b", 1.0, 0.0, ONE_POINT)
    with pytest.raises(ValueError, match="missing"):
        judge("a > b", float("nan"), 1.0, ONE_POINT)
    with pytest.raises(ValueError, match="Noise"):
        judge("a > b", 1.0, 1.0)


def welch_df(*parts):
    """Welch-Satterthwaite degrees of freedom of independent (variance, df) parts, written out by hand."""
    return sum(v for v, _ in parts) ** 2 / sum(v ** 2 / df for v, df in parts)


def test_seed_noise_is_a_t_quantile_of_the_standard_error_of_a_difference():
    noise = seed_noise(Side(1.0, 4), Side(2.0, 8))
    df = welch_df((1.0 / 4, 3), (4.0 / 8, 7))
    assert noise.tolerance == pytest.approx(stats.t.ppf(0.975, df) * math.sqrt(1.0 / 4 + 4.0 / 8))
    assert noise.seeds == "4 vs 8"
    assert "sd 1.00 over 4 seeds" in noise.source and "sd 2.00 over 8 seeds" in noise.source
    assert seed_noise((1.0, 4), (2.0, 8)) == noise                       # sides as (sd, seeds) pairs
    # a deterministic side adds no variance: 3 df from the other side alone
    assert seed_noise(Side(1.0, 4), Side(seeds=0)).tolerance == pytest.approx(stats.t.ppf(0.975, 3) * 0.5)
    both_fixed = seed_noise(Side(), Side())
    assert both_fixed.tolerance == 0 and both_fixed.seeds == "none (deterministic)"


def test_a_one_seed_side_borrows_the_reference_spread():
    reference = Spread(0.5, 3, "sg_opt over 3 seeds on the ablation page")
    noise = seed_noise(Side(sd=9.9, seeds=1), Side(0.5, 3), reference=reference)  # its own sd is ignored
    df = welch_df((0.25, 2), (0.25 / 3, 2))
    assert noise.tolerance == pytest.approx(stats.t.ppf(0.975, df) * math.sqrt(0.25 + 0.25 / 3))
    assert noise.seeds == "one seed"
    assert "sg_opt over 3 seeds on the ablation page" in noise.source
    # a difference of differences (four sides), two of them one seed each
    four = seed_noise(Side(seeds=1), Side(seeds=1), Side(), Side(), reference=reference)
    # one spread lent twice is one estimate (its 2 df), not two independent ones
    assert four.tolerance == pytest.approx(stats.t.ppf(0.975, 2) * math.sqrt(2 * 0.25))


def test_one_seed_without_a_reference_is_not_measured():
    noise = seed_noise(Side(seeds=1), Side(seeds=0))
    assert math.isnan(noise.tolerance) and noise.seeds == "one seed" and "not measured" in noise.source
    # a sign with no yardstick is no verdict, however large the effect
    assert judge("a > b", 9.0, 10.0, noise)["verdict"] == NOISE_NOT_MEASURED
    assert judge("a > b", -0.1, None, noise)["verdict"] == NOISE_NOT_MEASURED


def test_dev_set_noise_is_the_binomial_standard_error_of_a_difference():
    noise = dev_set_noise(277, 62.5)
    z = stats.norm.ppf(0.975)  # no seeds: the normal quantile
    assert noise.tolerance == pytest.approx(100 * z * (2 * 0.625 * 0.375 / 277) ** 0.5)
    assert "277 dev examples" in noise.source and "binomial" in noise.source
    assert dev_set_noise(1043, 0.0, metric="mcc").tolerance == pytest.approx(100 * z * (2 / 1043) ** 0.5)


def test_claims_table_columns_and_context():
    table = claims_table([
        judge("sg_opt > cls", 4.0, 43.22, ONE_POINT, backbone="m", train_data="stsb_all"),
        {"claim": "sg_opt > mean", "ours": -2.0, "paper": 22.05, "noise": ONE_POINT, "backbone": "m",
         "train_data": "stsb_all"},
    ])
    assert list(table.columns) == ["claim", "backbone", "train_data", *CLAIM_COLUMNS[1:]]
    assert set(CLAIM_COLUMNS) <= set(table.columns)
    assert table["verdict"].tolist() == [DIRECTION_ONLY, NOT_REPRODUCED]
    assert table["noise_source"].tolist() == ["hand-made", "hand-made"]
    assert list(claims_table([]).columns) == CLAIM_COLUMNS


def test_claims_summary_names_numeric_labels_and_skips_blank_ones():
    rows = [judge("a > b", 5.0, None, ONE_POINT, task="SST-2", exit=exit_) for exit_ in (1, 2)]
    rows.append(judge("shallow > deep", 3.0, None, ONE_POINT, task="SST-2"))
    table = claims_table(rows)
    table["exit"] = table["exit"].astype("Int64")
    summary = claims_summary(table, label_with=("exit",))
    assert summary.index.tolist() == ["a > b (exit 1)", "a > b (exit 2)", "shallow > deep"]


def test_claims_summary_is_one_row_per_claim_and_one_column_per_backbone():
    sts = claims_table([
        judge("sg_opt > cls", ours, 43.22, ONE_POINT, backbone=backbone, train_data=data)
        for backbone, data, ours in [("a", "stsb_all", 30.0), ("a", "stsb_train", 0.5), ("b", "stsb_train", 4.0)]
    ])
    glue = claims_table([judge("big > small", 15.0, None, ONE_POINT, task=task) for task in ("RTE", "CoLA")])
    summary = claims_summary(sts, glue)
    assert summary.shape == (3, 1 + 4)                     # 3 claims; paper + backbones a, b + tasks RTE, CoLA
    assert list(summary.columns) == ["paper", "a", "b", "RTE", "CoLA"]
    assert summary.index.tolist() == ["sg_opt > cls (stsb_all)", "sg_opt > cls (stsb_train)", "big > small"]
    assert summary.loc["sg_opt > cls (stsb_train)", "a"] == "+0.50 within noise"
    assert summary.loc["sg_opt > cls (stsb_train)", "b"] == "+4.00 direction only"
    assert summary.loc["sg_opt > cls (stsb_all)", "b"] == ""  # no result there
    assert summary.loc["sg_opt > cls (stsb_all)", "paper"] == "+43.22"
    assert summary.loc["big > small", "paper"] == "direction"
    assert summary.loc["big > small", "RTE"] == "+15.00 reproduced"
    assert claims_summary().empty and claims_summary(pd.DataFrame()).empty


def test_repeated_sides_are_described_once():
    reference = Spread(0.4, 3, "sg_opt over 3 seeds")
    noise = seed_noise(Side(seeds=1), Side(seeds=1), Side(), Side(), reference=reference)
    assert noise.source == ("t 4.30 (2.0 df) x SE of a difference over seeds: 2 x one seed (sd 0.40 lent: sg_opt "
                            "over 3 seeds) vs 2 x deterministic; the test set's own noise not included")


def test_the_docstring_examples_hold():
    import doctest

    from bertsent.report import claims

    assert doctest.testmod(claims).failed == 0


def test_verdict_box_one_line_per_claim_in_a_myst_admonition():
    from bertsent.report.claims import NO_CLAIM, Noise, claims_table, judge, verdict_box

    noise = Noise(1.0, "3 vs 3", "test")
    table = claims_table([
        judge("sg_opt > cls", ours=30.0, paper=43.22, noise=noise, backbone="m", train_data="stsb_all"),
        judge("sg_opt > mean", ours=-3.0, paper=22.05, noise=noise, backbone="m", train_data="stsb_all"),
        judge("big > small", ours=0.5, noise=noise, backbone="m", train_data="stsb_all"),
        judge("sg_opt > sg", ours=2.0, paper=2.45, noise=Noise(float("nan"), "one seed", "not measured"),
              backbone="m", train_data="stsb_all"),
    ])
    extra = table.iloc[[0]].assign(claim="our extra row", verdict=NO_CLAIM)
    box = verdict_box(pd.concat([table, extra], ignore_index=True))
    lines = box.splitlines()
    assert lines[0] == "```{admonition} Verdict" and lines[-1] == "```"
    claims = [line for line in lines if line.startswith("- ")]
    assert claims == [
        "- sg_opt > cls (m, stsb_all): ours +30.00 vs the paper's +43.22, tolerance ±1.00: **reproduced**",
        "- sg_opt > mean (m, stsb_all): ours -3.00 vs the paper's +22.05, tolerance ±1.00: **not reproduced**",
        "- big > small (m, stsb_all): ours +0.50 vs the paper's a direction, no number, tolerance ±1.00: **within noise**",
        "- sg_opt > sg (m, stsb_all): ours +2.00 vs the paper's +2.45, tolerance not measured: **noise not measured**",
    ]
    assert "4 claims: 1 reproduced, 1 not reproduced, 1 within noise, 1 noise not measured." in lines


def test_verdict_box_labels_lines_with_numeric_columns_when_asked():
    """Per-exit claims differ only by their exit, a number the box leaves out unless ``label_with`` names it (an
    exit read back from a CSV as 2.0 reads ``exit 2``); a row without one gets no label."""
    from bertsent.report.claims import Noise, claims_table, judge, verdict_box

    noise = Noise(1.0, "2 vs 2", "test")
    table = claims_table([judge("acl_cl > joint", ours=0.5, noise=noise, task="SST-2", exit=exit_) for exit_ in (1, 2)]
                         + [judge("gain: shallow > deep", ours=3.0, noise=noise, task="SST-2")])
    table["exit"] = table["exit"].astype(float)
    plain = [line for line in verdict_box(table).splitlines() if line.startswith("- ")]
    assert plain[0] == plain[1]
    labelled = [line for line in verdict_box(table, label_with=("exit",)).splitlines() if line.startswith("- ")]
    assert labelled[0].startswith("- acl_cl > joint (exit 1) (SST-2): ")
    assert labelled[1].startswith("- acl_cl > joint (exit 2) (SST-2): ")
    assert labelled[2].startswith("- gain: shallow > deep (SST-2): ")


def test_verdict_box_is_empty_without_claims():
    from bertsent.report.claims import verdict_box

    assert verdict_box() == "" and verdict_box(pd.DataFrame(), []) == ""


def test_two_sides_at_a_floor_get_no_verdict_whatever_their_numbers():
    # every seed of both sides at the majority class: a spread of 0, so any difference would pass as beyond noise
    degenerate = seed_noise(Side(0.0, 3), Side(0.0, 3))
    assert degenerate.tolerance == 0.0
    assert judge("a > b", 1.2, 2.0, degenerate)["verdict"] == REPRODUCED
    row = judge("a > b", 1.2, 2.0, degenerate, floor="majority class")
    assert row["verdict"] == AT_FLOOR
    assert row["noise_source"].startswith("both sides at the majority class")
    assert row["our_effect"] == 1.2 and row["tolerance"] == 0.0  # the numbers stay visible


def test_rejudge_applies_the_current_rule_to_a_stored_table():
    stored = claims_table([judge("a > b", 3.0, 4.0, ONE_POINT), judge("c > d", 1.5, 8.0, ONE_POINT),
                           judge("e > f", 0.5, None, ONE_POINT), judge("g > h", 0.0, None, ONE_POINT,
                                                                       floor="majority class")])
    stale = stored.assign(verdict=["holds", "holds", "holds", AT_FLOOR])  # judged by an older rule
    assert rejudge(stale)["verdict"].tolist() == ["reproduced", "direction only", "within noise", AT_FLOOR]
    assert rejudge(stored)["verdict"].tolist() == stored["verdict"].tolist()  # the rule's own verdicts unchanged


# --- rule version 3: t-quantiles, the test set's noise, bounded size, untestable encoders, controls ---------------

def test_two_seeds_a_side_use_the_t_quantile_at_two_degrees_of_freedom():
    from bertsent.report.claims import t_quantile

    noise = seed_noise(Side(1.0, 2), Side(1.0, 2))
    # equal spreads, 2 seeds a side: Welch-Satterthwaite gives 1 + 1 = 2 df, whose quantile is 4.30, not 2
    assert noise.tolerance == pytest.approx(stats.t.ppf(0.975, 2) * math.sqrt(1.0 / 2 + 1.0 / 2))
    assert noise.tolerance > 4.0 * math.sqrt(1.0)
    assert t_quantile(2) == pytest.approx(4.3027, abs=1e-4)
    assert "2.0 df" in noise.source


def test_sides_with_no_seed_spread_are_floored_by_the_test_sets_noise():
    from bertsent.report.claims import binomial_evaluation

    # two seeds each with identical dev accuracy: sd 0, which alone would be a zero-width yardstick
    bare = seed_noise(Side(0.0, 2), Side(0.0, 2))
    assert bare.tolerance == 0.0
    evaluation = binomial_evaluation(872, 80.0)  # SST-2 dev: 872 examples
    floored = seed_noise(Side(0.0, 2), Side(0.0, 2), evaluation=evaluation)
    expected_se = 100 * math.sqrt(2 * 0.8 * 0.2 / 872)
    assert evaluation.se == pytest.approx(expected_se)
    assert floored.tolerance == pytest.approx(stats.norm.ppf(0.975) * expected_se)  # no seed variance: normal df
    assert "872 dev examples" in floored.source
    assert judge("a > b", -0.52, None, floored)["verdict"] == WITHIN_NOISE
    assert judge("a > b", -0.52, None, bare)["verdict"] == NOT_REPRODUCED


def test_a_ratio_of_forty_two_is_larger_than_the_papers():
    from bertsent.report.claims import LARGER

    assert verdict(0.19 * 42, 0.19, noise=Noise(0.5, "3 vs 3", "test")) == LARGER
    assert verdict(20.0, 10.0) == REPRODUCED                  # exactly twice: still the paper's size
    assert verdict(20.01, 10.0) == LARGER
    assert verdict(-25.0, -10.0) == LARGER                    # negative claims the same way
    assert rejudge(claims_table([judge("a > b", 30.0, 10.0, ONE_POINT)]))["verdict"].tolist() == [LARGER]


def _fake_encoder(folder, name, accuracy, floor):
    (folder / name).mkdir(parents=True)
    pd.DataFrame([{"positions": "mask", "count": 29201, "accuracy": accuracy, "majority_floor": floor,
                   "text": "held-out corpus"}]).to_csv(folder / name / "mlm_accuracy.csv", index=False)


def test_an_unlearned_backbone_is_not_testable_whatever_the_numbers(tmp_path, monkeypatch):
    from bertsent.report import claims
    from bertsent.report.claims import NOT_TESTABLE, encoder_floor

    _fake_encoder(tmp_path, "unigram-bert", 0.0654, 0.0591)   # 0.6 points above the majority word piece
    _fake_encoder(tmp_path, "learned-bert", 0.45, 0.0591)     # tens of points above it
    assert "has not learned language" in encoder_floor("unigram-bert", str(tmp_path))
    assert encoder_floor("learned-bert", str(tmp_path)) is None
    assert encoder_floor("published-model", str(tmp_path)) is None  # no MLM evaluation: pre-trained by others
    monkeypatch.setattr(claims, "MODELS_DIR", tmp_path)
    encoder_floor.cache_clear()
    try:
        row = judge("att_both > cls_mean_last", 7.99, 1.46, ONE_POINT, backbone="unigram-bert")
        assert row["verdict"] == NOT_TESTABLE and "6.54%" in row["noise_source"]
        assert judge("a > b", 7.99, 1.46, ONE_POINT, backbone="learned-bert")["verdict"] == LARGER_OR_REPRODUCED[1]
        assert judge("a > b", 7.99, 1.46, ONE_POINT, backbone="unigram-bert", check_encoder=False)["verdict"] != NOT_TESTABLE
        stored = claims_table([judge("a > b", 2.0, 2.0, ONE_POINT, backbone="unigram-bert", check_encoder=False)])
        assert rejudge(stored)["verdict"].tolist() == [NOT_TESTABLE]
    finally:
        encoder_floor.cache_clear()


LARGER_OR_REPRODUCED = ("reproduced", "larger than the paper's")


def test_the_books_bert_is_not_testable_while_it_sits_at_the_unigram_floor():
    """Read from the committed MLM evaluation: the verdict follows the file, so it changes when the model learns."""
    from pathlib import Path

    from bertsent.report.claims import LEARNED_MARGIN, MODELS_DIR, encoder_floor

    path = Path(MODELS_DIR) / "bert-mini-wiki" / "mlm_accuracy.csv"
    if not path.is_file():
        pytest.skip("no committed MLM evaluation of bert-mini-wiki")
    table = pd.read_csv(path)
    row = table[(table["positions"] == "mask") & (table["text"] == "held-out corpus")].iloc[0]
    unlearned = 100 * (row["accuracy"] - row["majority_floor"]) < LEARNED_MARGIN
    assert (encoder_floor("bert-mini-wiki") is not None) == unlearned


def test_a_control_that_leaves_nothing_explains_the_effect():
    from bertsent.report.claims import EXPLAINED, Control, verdict_box

    control = Control("deep exit 6 with joint CE: 88.76", effect=-0.86, noise=Noise(1.2, "2 vs 2", "test"))
    row = judge("deep exit 6 (acl_cl) >= shallow (joint)", 6.77, None, ONE_POINT, task="SST-2", control=control)
    assert row["verdict"] == EXPLAINED
    assert row["control"] == "deep exit 6 with joint CE: 88.76" and row["control_effect"] == -0.86
    kept = judge("a > b", 6.77, None, ONE_POINT, control=Control("c", 3.0, Noise(1.2, "2 vs 2", "test")))
    assert kept["verdict"] == REPRODUCED                      # the cause adds beyond its noise: the claim stands
    assert judge("a > b", -3.0, None, ONE_POINT, control=control)["verdict"] == NOT_REPRODUCED
    box = verdict_box(claims_table([row]))
    assert "control: deep exit 6 with joint CE: 88.76" in box and "-0.86, tolerance ±1.20" in box


def test_a_qualitative_claim_is_judged_at_its_stated_threshold():
    from bertsent.experiments.aligned_contrastive import angle_claims
    from bertsent.report import reported

    often = reported.ACL_THRESHOLDS["often"]
    rng = np.random.default_rng(0)
    steps = []
    for seed, share in ((1, 0.05), (2, 0.04), (3, 0.06)):  # about 5% of the steps above 90 degrees on each seed
        angles = np.where(rng.random(400) < share, 95.0, 80.0)
        steps += [{"task": "RTE", "method": "ce_scl", "seed": seed, "step": i, "angle": a} for i, a in enumerate(angles)]
    table = angle_claims(pd.DataFrame(steps))
    shares = table[table["claim"].str.contains("% of steps")]
    assert f"{often:g}%" in shares["claim"].iloc[0]            # the threshold is in the claim's text
    assert shares["verdict"].iloc[0] == NOT_REPRODUCED         # 5% of steps is not "often" at that threshold
    ranged = table[table["claim"].str.contains("percentile")]
    assert len(ranged) == 2                                    # the 75-105 degree range is judged too


# --- calibration: the rule's false-alarm rate and power on simulated seeds ----------------------------------------

def _simulated_verdicts(effect, paper, seeds, draws=4000, sd=1.0, test_se=0.5, rng_seed=0):
    """Verdicts on ``draws`` simulated comparisons: each side's seeds are normal around its true mean with ``sd``,
    and each side's score carries one draw of its test set's sampling noise (``test_se``) shared by its seeds, as
    when every seed is scored on the same test set."""
    from bertsent.report.claims import Evaluation

    rng = np.random.default_rng(rng_seed)
    evaluation = Evaluation(test_se * math.sqrt(2), "simulated")
    verdicts = []
    for _ in range(draws):
        a = effect + rng.normal(0, test_se) + rng.normal(0, sd, seeds)
        b = rng.normal(0, test_se) + rng.normal(0, sd, seeds)
        noise = seed_noise(Side(a.std(ddof=1), seeds), Side(b.std(ddof=1), seeds), evaluation=evaluation)
        verdicts.append(judge("a > b", float(a.mean() - b.mean()), paper, noise)["verdict"])
    return pd.Series(verdicts)


@pytest.mark.parametrize("seeds", [2, 3, 5])
def test_no_true_effect_is_called_reproduced_or_not_reproduced_in_more_than_five_percent_of_draws(seeds):
    verdicts = _simulated_verdicts(0.0, 2.0, seeds)
    called = verdicts.isin([REPRODUCED, NOT_REPRODUCED, "larger than the paper's", DIRECTION_ONLY]).mean()
    assert called <= 0.05
    # the old rule (2 standard errors of the seeds alone) failed this at 3 seeds: a check that the check can fail
    if seeds == 3:
        rng = np.random.default_rng(0)
        old = 0
        for _ in range(4000):
            a, b = rng.normal(0, 0.5) + rng.normal(0, 1, 3), rng.normal(0, 0.5) + rng.normal(0, 1, 3)
            old += abs(a.mean() - b.mean()) > 2 * math.sqrt(a.var(ddof=1) / 3 + b.var(ddof=1) / 3)
        assert old / 4000 > 0.05


@pytest.mark.parametrize("seeds", [3, 5])
def test_a_true_effect_equal_to_the_papers_is_reproduced_in_most_draws(seeds):
    # the paper's effect five seed sds: the size of the book's clear effects (e.g. ACL's CE+SCL gap on RTE)
    verdicts = _simulated_verdicts(5.0, 5.0, seeds)
    assert (verdicts == REPRODUCED).mean() > 0.5
    assert (verdicts == NOT_REPRODUCED).mean() < 0.01
