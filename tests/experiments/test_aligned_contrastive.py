"""The ACL chapter's tables, noise and verdicts on hand-made runs (no training)."""
import math

import numpy as np
import pandas as pd
import pytest

from bertsent.experiments import aligned_contrastive as acl
from bertsent.report.claims import Spread, t_quantile


def _runs(scores: dict) -> pd.DataFrame:
    """(task, method) -> list of per-seed scores (MRPC: (accuracy, f1) pairs)."""
    rows = []
    for (task, method), values in scores.items():
        for seed, value in enumerate(values, start=1):
            row = {"task": task, "method": method, "seed": seed, "weight": None if method == "ce" else 0.5,
                   "metric": acl.task_metric(task), "train_seconds": 10.0 * (1 + (method != "ce")),
                   "accuracy": None, "f1": None, "mcc": None}
            if task == "MRPC":
                row["accuracy"], row["f1"] = value
            else:
                row[acl.task_metric(task)] = value
            row["score"] = row[acl.task_metric(task)]
            rows.append(row)
    return pd.DataFrame(rows)


def test_acl_config_per_method():
    assert acl.acl_config("ce") is None
    scl, embed, gated = acl.acl_config("ce_scl", 0.3), acl.acl_config("acl_embed"), acl.acl_config("acl", 1.0, 0.1)
    assert (scl.loss, scl.gradient_gate, scl.weight, scl.measure_angle) == ("scl", False, 0.3, True)
    assert (embed.loss, embed.gradient_gate, embed.weight, embed.temperature) == ("acl_embed", False, 0.5, 0.3)
    assert (gated.loss, gated.gradient_gate, gated.weight, gated.temperature) == ("acl_embed", True, 1.0, 0.1)
    scl_gated = acl.acl_config("scl_grad")
    assert (scl_gated.loss, scl_gated.gradient_gate) == ("scl", True)
    with pytest.raises(ValueError, match="Unknown method"):
        acl.acl_config("acl_grad")


def test_component_claims_remove_one_component_at_a_time():
    rows = [{"task": "CoLA", "metric": "mcc", "method": m, "mean": mean, "sd": 1.0, "seeds": 3, "at_floor": False}
            for m, mean in (("ce", 10.0), ("ce_scl", 12.0), ("acl_embed", 20.0), ("acl", 21.0))]
    claims = acl.component_claims(pd.DataFrame(rows))
    assert claims["component"].tolist() == ["ACL-Grad", "ACL-Embed"]  # no scl_grad run: its row is left out
    assert claims["claim"].tolist() == ["acl > acl_embed", "acl_embed > ce_scl"]
    assert claims["our_effect"].tolist() == pytest.approx([1.0, 8.0])
    assert list(claims.columns[:2]) == ["claim", "component"]
    with_gate = acl.component_claims(pd.DataFrame(rows + [{**rows[1], "method": "scl_grad", "mean": 15.0}]))
    assert with_gate["component"].tolist()[-1] == "ACL-Embed, gate on"
    assert with_gate["our_effect"].iloc[-1] == pytest.approx(6.0)


def test_score_table_means_sds_and_mrpc_two_metrics():
    runs = _runs({("RTE", "ce"): [60.0, 62.0, 64.0], ("RTE", "acl"): [65.0, 65.0, 68.0],
                  ("MRPC", "ce"): [(80.0, 85.0), (82.0, 87.0)], ("MRPC", "acl"): [(81.0, 86.0)]})
    scores = acl.score_table(runs)
    rte = scores[scores["task"] == "RTE"].set_index("method")
    assert rte.loc["ce", "mean"] == 62.0 and rte.loc["ce", "sd"] == pytest.approx(2.0) and rte.loc["ce", "seeds"] == 3
    assert rte.loc["acl", "mean"] == pytest.approx(66.0)
    mrpc = scores[scores["task"] == "MRPC"]
    assert list(mrpc["metric"]) == ["accuracy", "accuracy", "f1", "f1"]
    assert mrpc[(mrpc["metric"] == "f1") & (mrpc["method"] == "ce")]["mean"].item() == 86.0
    assert math.isnan(mrpc[(mrpc["metric"] == "f1") & (mrpc["method"] == "acl")]["sd"].item())  # one seed
    table = acl.main_table(scores)
    assert list(table.index) == ["CE", "ACL (Embed+Grad)"]
    assert list(table.columns) == ["MRPC accuracy", "MRPC f1", "RTE accuracy"]  # GLUE order of TASK_METRICS
    assert table.loc["CE", "RTE accuracy"] == "62.00 ± 2.00" and table.loc["ACL (Embed+Grad)", "MRPC f1"] == "86.00"


def test_main_claims_use_seed_noise_and_count_the_majority():
    runs = _runs({("RTE", "ce"): [60.0, 62.0, 64.0], ("RTE", "ce_scl"): [61.0, 61.0, 61.0],
                  ("RTE", "acl"): [70.0, 72.0, 74.0],
                  ("CoLA", "ce"): [30.0, 32.0, 34.0], ("CoLA", "ce_scl"): [33.0, 33.0, 33.0],
                  ("CoLA", "acl"): [32.0, 33.0, 34.0]})
    claims = acl.main_claims(acl.score_table(runs))
    rte = claims[claims["task"] == "RTE"].set_index("claim")
    assert rte.loc["acl > ce", "our_effect"] == pytest.approx(10.0)
    assert rte.loc["acl > ce", "tolerance"] == pytest.approx(t_quantile(4) * math.sqrt(4 / 3 + 4 / 3))  # Welch: 2 + 2 df
    assert rte.loc["acl > ce", "verdict"] == "reproduced" and math.isnan(rte.loc["acl > ce", "paper_effect"])
    cola = claims[claims["task"] == "CoLA"].set_index("claim")
    assert cola.loc["acl > ce", "verdict"] == "within noise"
    assert acl.majority_count(claims) == {"tasks": 2, "beyond_noise": 1, "by_sign": 1,  # CoLA: 33 vs 33 is no win
                                          "at_floor": 0}


def _at_majority(runs: pd.DataFrame, floored: set) -> pd.DataFrame:
    """``runs`` marked as mark_majority_class would: the (task, method) pairs in ``floored`` predict one class."""
    return runs.assign(at_majority_class=[(t, m) in floored for t, m in zip(runs["task"], runs["method"])])


def test_cells_and_claims_at_the_majority_class_are_marked_and_get_no_verdict():
    # every RTE seed of CE and ACL predicts one class: identical scores, sd 0, a tolerance of 0
    runs = _at_majority(_runs({("RTE", "ce"): [52.71] * 3, ("RTE", "acl"): [52.71, 52.71, 52.71],
                               ("RTE", "ce_scl"): [50.0, 54.0, 58.0],
                               ("CoLA", "ce"): [0.0, 0.0, 0.0], ("CoLA", "acl"): [0.0, 0.0, 1.5]}),
                        {("RTE", "ce"), ("RTE", "acl"), ("CoLA", "ce")})
    runs.loc[(runs["task"] == "CoLA") & (runs["method"] == "acl") & (runs["seed"] < 3), "at_majority_class"] = True
    scores = acl.score_table(runs)
    floor = scores.set_index(["task", "method"])["at_floor"]
    assert floor[("RTE", "ce")] and floor[("RTE", "acl")] and not floor[("RTE", "ce_scl")]
    assert not floor[("CoLA", "acl")]  # one seed of three left the floor
    table = acl.main_table(scores)
    assert table.loc["CE", "RTE accuracy"] == "52.71 ± 0.00 (majority class)"
    assert table.loc["CE+SCL", "RTE accuracy"] == "54.00 ± 4.00"
    claims = acl.main_claims(scores).set_index(["task", "claim"])
    assert claims.loc[("RTE", "acl > ce"), "verdict"] == "at floor"
    assert claims.loc[("RTE", "acl > ce_scl"), "verdict"] != "at floor"  # one side learned something
    assert claims.loc[("CoLA", "acl > ce"), "verdict"] != "at floor"
    assert acl.majority_count(claims.reset_index())["at_floor"] == 1
    # a clear win over a method at the majority class on every seed is a win over a constant predictor
    beaten = acl.score_table(_at_majority(_runs({("MRPC", "ce_scl"): [(68.38, 81.22)] * 3, ("MRPC", "acl"): [(70.0, 82.0), (70.5, 82.1), (71.0, 82.3)]}),
                                          {("MRPC", "ce_scl")}))
    row = acl.main_claims(beaten, against=("ce_scl",)).iloc[0]
    assert row["our_effect"] > row["tolerance"] and row["verdict"] == "against a floor"
    # the reading names each method at the floor on every seed, per task, even where its comparison gets a verdict
    assert acl.floor_phrase(scores) == ("At the majority class on every seed: CE on CoLA and RTE; ACL (Embed+Grad) on "
                                        "RTE. Beating a method there means beating a constant predictor, not a trained "
                                        "one.")
    assert acl.floor_phrase(scores[~scores["at_floor"]]) == ""


def test_a_task_whose_ce_has_not_learned_it_leaves_its_claims_not_testable():
    """CE must beat the majority class beyond its noise (seed spread and the dev set's own) before a method effect on
    the task is judged: RTE's CE a hair above the majority class leaves RTE's claims *not testable here*, whatever
    ACL scores; SST-2's CE far above it keeps SST-2's."""
    runs = _runs({("RTE", "ce"): [52.0, 54.0, 56.0], ("RTE", "ce_scl"): [53.0, 54.0, 55.0],
                  ("RTE", "acl"): [70.0, 72.0, 74.0], ("RTE", "acl_embed"): [60.0, 61.0, 62.0],
                  ("SST-2", "ce"): [80.0, 81.0, 82.0], ("SST-2", "ce_scl"): [80.0, 80.5, 81.0],
                  ("SST-2", "acl"): [83.0, 84.0, 85.0]})
    scores = acl.score_table(runs.assign(dev_examples=runs["task"].map({"RTE": 277, "SST-2": 872})))
    majority = scores.drop_duplicates("task").set_index("task")["majority"]
    assert majority["RTE"] == pytest.approx(52.71, abs=0.01) and majority["SST-2"] == pytest.approx(50.92, abs=0.01)
    check = acl.baseline_check(scores).set_index("task")
    assert check.loc["RTE", "difference"] == pytest.approx(54.0 - majority["RTE"])
    binomial = math.sqrt(54.0 * 46.0 / 277)  # one side: the majority class is a fixed predictor
    assert check.loc["RTE", "tolerance"] == pytest.approx(t_quantile(2) * math.sqrt(4 / 3 + binomial ** 2), rel=1e-3)
    assert not check.loc["RTE", "kept"] and check.loc["SST-2", "kept"]
    left_out = acl.left_out_tasks(scores)
    assert list(left_out) == ["RTE"] and left_out["RTE"].startswith("CE has not learned RTE beyond the majority class")
    claims = acl.main_claims(scores).set_index(["task", "claim"])
    assert claims.loc[("RTE", "acl > ce"), "our_effect"] == pytest.approx(18.0)
    assert claims.loc[("RTE", "acl > ce"), "verdict"] == "not testable here"
    assert claims.loc[("RTE", "acl > ce"), "noise_source"].startswith("CE has not learned RTE")
    assert claims.loc[("SST-2", "acl > ce"), "verdict"] != "not testable here"
    components = acl.component_claims(scores)
    assert set(components.loc[components["task"] == "RTE", "verdict"]) == {"not testable here"}
    assert acl.baseline_check(scores.drop(columns=["majority"])).empty  # a page written before the column


def test_the_recipe_is_the_grids_best_mean_with_ties_to_the_cheaper_one():
    rows = [("CoLA", 1e-4, 3, 0, 20.0), ("CoLA", 1e-4, 3, 9, 30.0), ("CoLA", 2e-5, 5, 0, 24.0), ("CoLA", 2e-5, 5, 9, 24.0),
            ("RTE", 5e-5, 5, 0, 60.0), ("RTE", 5e-5, 3, 0, 60.0), ("RTE", 2e-5, 3, 0, 52.7)]
    grid = pd.DataFrame(rows, columns=["task", "learning_rate", "epochs", "seed", "score"]).assign(
        metric="x", train_seconds=1.0, at_majority_class=lambda t: t["score"] == 52.7)
    recipes = acl.chosen_recipes(grid)
    chosen = recipes[recipes["chosen"]].set_index("task")
    assert (chosen.loc["CoLA", "learning_rate"], chosen.loc["CoLA", "epochs"]) == (1e-4, 3)  # mean 25 beats 24
    assert (chosen.loc["RTE", "learning_rate"], chosen.loc["RTE", "epochs"]) == (5e-5, 3)  # a tie: fewer epochs
    assert recipes.set_index(["task", "learning_rate", "epochs"]).loc[("CoLA", 1e-4, 3), "seeds"] == 2
    assert recipes["at_majority_class"].tolist() == [0, 0, 0, 0, 1]
    settings = acl.with_chosen_recipes({"learning_rate": 5e-5, "epochs": {"SST-2": 1, "CoLA": 1, "RTE": 1},
                                        "batch_size": 32}, recipes, ["SST-2", "CoLA", "RTE"])
    assert settings == {"learning_rate": {"SST-2": 5e-5, "CoLA": 1e-4, "RTE": 5e-5},
                        "epochs": {"SST-2": 1, "CoLA": 3, "RTE": 3}, "batch_size": 32}


def test_the_contrastive_term_is_the_grids_best_and_the_gated_method_takes_its_ungated_ones():
    rows = [("RTE", "ce_scl", 0.1, 0.5, 0, 60.0), ("RTE", "ce_scl", 0.1, 0.5, 9, 50.0),
            ("RTE", "ce_scl", 0.3, 0.5, 0, 56.0), ("RTE", "ce_scl", 0.3, 0.5, 9, 56.0),
            ("RTE", "ce_scl", 0.3, 0.1, 0, 56.0), ("RTE", "ce_scl", 0.3, 0.1, 9, 56.0),
            ("RTE", "acl_embed", 0.3, 1.0, 0, 58.0), ("CoLA", "ce_scl", 0.5, 1.0, 0, 20.0)]
    grid = pd.DataFrame(rows, columns=["task", "method", "temperature", "weight", "seed", "score"]).assign(
        metric="x", train_seconds=1.0)
    terms = acl.chosen_terms(grid)
    chosen = terms[terms["chosen"]].set_index(["task", "method"])
    assert (chosen.loc[("RTE", "ce_scl"), "weight"], chosen.loc[("RTE", "ce_scl"), "temperature"]) == (0.1, 0.3)
    assert len(chosen) == 3 and terms["seeds"].tolist()[:3] == [2, 2, 2]  # a tie at 56 goes to the smaller weight
    assert acl.term_of(terms, "scl_grad", "RTE", 0.5, 0.3) == (0.1, 0.3)
    assert acl.term_of(terms, "acl", "RTE", 0.5, 0.3) == (1.0, 0.3)
    assert acl.term_of(terms, "acl", "CoLA", 0.5, 0.3) == (0.5, 0.3)  # not tuned on CoLA: the page's
    assert acl.term_of(None, "ce_scl", "RTE", 0.5, 0.3) == (0.5, 0.3)


def test_cost_table_ratio_to_ce():
    cost = acl.cost_table(_runs({("RTE", "ce"): [1.0], ("RTE", "acl"): [2.0]})).set_index("method")
    assert cost.loc["ce", "seconds_ratio_to_ce"] == 1.0 and cost.loc["acl", "seconds_ratio_to_ce"] == 2.0


def test_angle_table_share_strictly_above_threshold_and_nan_counted_apart():
    angles = pd.DataFrame({"method": ["ce_scl"] * 5 + ["acl_embed"] * 2, "task": "RTE", "seed": [1, 1, 1, 2, 2, 1, 1],
                           "weight": 0.5, "step": [1, 2, 3, 1, 2, 1, 2],
                           "angle": [80.0, 90.0, 100.0, 95.0, np.nan, 70.0, 89.9], "dropped": False})
    table = acl.angle_table(angles).set_index("method")
    assert table.loc["ce_scl", "steps"] == 4 and table.loc["ce_scl", "undefined"] == 1
    assert table.loc["ce_scl", "share_above"] == 0.5  # 100 and 95; exactly 90 is not above
    assert table.loc["ce_scl", "median"] == 92.5 and table.loc["ce_scl", "seeds"] == 2
    assert table.loc["ce_scl", "pair"] == "CE vs SCL" and table.loc["acl_embed", "share_above"] == 0.0
    assert "RTE, CE vs SCL: 50% of 4 steps above 90 degrees" in acl.angle_sentence(table.reset_index())


def test_lambda_table_spread_and_claim():
    rows = []
    for method, curve in {"acl_embed": {0.1: [50.0, 52.0], 1.0: [40.0, 42.0]},
                          "acl": {0.1: [50.0, 52.0], 1.0: [49.0, 51.0]}}.items():
        for weight, values in curve.items():
            rows += [{"task": "CoLA", "method": method, "weight": weight, "seed": s, "score": v}
                     for s, v in enumerate(values, start=1)]
    table = acl.lambda_table(pd.DataFrame(rows))
    assert list(table["method"]) == ["acl_embed", "acl_embed", "acl", "acl"]
    assert table["sd"].tolist() == pytest.approx([math.sqrt(2)] * 4)
    spread = acl.lambda_spread(table).set_index("method")
    assert spread.loc["acl_embed", "range"] == 10.0 and spread.loc["acl", "range"] == 1.0
    assert spread.loc["acl_embed", "best_weight"] == 0.1 and spread.loc["acl_embed", "worst_weight"] == 1.0
    claim = acl.lambda_claim(table).iloc[0]
    assert claim["our_effect"] == 9.0 and claim["range_with_grad"] == 1.0
    assert claim["tolerance"] == pytest.approx(t_quantile(4) * math.sqrt(4 * 2 / 2))  # four sides, sd^2 = 2 over 2 seeds each: 4 x 1 df
    assert claim["verdict"] == "reproduced"
    floored = acl.lambda_table(pd.DataFrame(rows).assign(at_majority_class=True))
    assert floored["at_floor"].all() and not table["at_floor"].any()
    assert acl.lambda_claim(floored).iloc[0]["verdict"] == "at floor"


def test_lambda_claim_borrows_a_spread_for_one_seed():
    table = pd.DataFrame({"task": "CoLA", "method": ["acl_embed", "acl_embed", "acl", "acl"],
                          "weight": [0.1, 1.0, 0.1, 1.0], "mean": [50.0, 40.0, 50.0, 49.0],
                          "sd": np.nan, "seeds": 1, "metric": "mcc"})
    without = acl.lambda_claim(table).iloc[0]
    assert math.isnan(without["tolerance"]) and without["seeds"] == "one seed"
    lent = acl.lambda_claim(table, reference=Spread(3.0, 3, "test")).iloc[0]
    assert lent["tolerance"] == pytest.approx(t_quantile(2) * math.sqrt(4 * 9.0)) and lent["verdict"] == "within noise"  # one spread: 2 df


def _exits():
    """Two seeds, 4 exits; acl_cl gains 6 points at exits 1-2, 2 at exits 3-4 over joint; kd gains 1 everywhere."""
    rows = []
    for seed, jitter in ((1, 0.0), (2, 1.0)):
        for exit_, base in zip(range(1, 5), (60.0, 70.0, 80.0, 85.0)):
            for mode, gain in (("joint", 0.0), ("kd", 1.0), ("acl_cl", 6.0 if exit_ <= 2 else 2.0)):
                score = base + gain + jitter * (exit_ % 2)
                rows.append({"mode": mode, "task": "SST-2", "seed": seed, "exit": exit_, "metric": "accuracy",
                             "score": score, "accuracy": score})
    return pd.DataFrame(rows)


def test_exit_table_gain_and_claims():
    exits = _exits()
    table = acl.exit_table(exits)
    acl_cl = table[table["mode"] == "acl_cl"].set_index("exit")
    assert acl_cl.loc[1, "gain_over_joint"] == pytest.approx(6.0) and acl_cl.loc[4, "gain_over_joint"] == pytest.approx(2.0)
    assert acl_cl.loc[1, "seeds"] == 2 and acl_cl.loc[1, "mean"] == pytest.approx(66.5)
    claims = acl.exit_claims(table)
    assert len(claims) == 8 and set(claims["claim"]) == {"acl_cl > joint", "acl_cl > kd"}
    first = claims[(claims["exit"] == 1) & (claims["claim"] == "acl_cl > joint")].iloc[0]
    assert first["our_effect"] == pytest.approx(6.0)
    assert first["tolerance"] == pytest.approx(t_quantile(2) * math.sqrt(0.5 / 2 + 0.5 / 2))  # sd sqrt(0.5) on each side, 1 + 1 df


def test_exits_at_the_majority_class_get_no_verdict():
    exits = _exits()
    floored = exits.assign(at_majority_class=exits["exit"] == 1)  # every mode's first exit predicts one class
    table = acl.exit_table(floored)
    assert table.set_index(["mode", "exit"]).loc[("joint", 1), "at_floor"]
    assert not table.set_index(["mode", "exit"]).loc[("joint", 2), "at_floor"]
    claims = acl.exit_claims(table)
    assert set(claims.loc[claims["exit"] == 1, "verdict"]) == {"at floor"}
    assert "at floor" not in set(claims.loc[claims["exit"] > 1, "verdict"])
    assert acl.shallow_gain_claim(floored).iloc[0]["verdict"] == "reproduced"  # exits 2-4 learned
    assert acl.shallow_gain_claim(exits.assign(at_majority_class=True)).iloc[0]["verdict"] == "at floor"


def test_shallow_gain_claim_is_paired_within_seed():
    claim = acl.shallow_gain_claim(_exits()).iloc[0]
    # acl_cl: shallow - deep per seed = (66 or 66.5) - (84.5 or 85) ...; the difference of modes is exactly 6 - 2
    assert claim["our_effect"] == pytest.approx(4.0) and claim["exits"] == 4
    assert claim["tolerance"] == pytest.approx(0.0) and claim["verdict"] == "reproduced"  # the jitter cancels


def test_multi_exit_claims_is_one_table_with_integer_exits():
    exits = _exits()
    claims = acl.multi_exit_claims(acl.exit_table(exits), exits)
    assert len(claims) == 8 + 1 and str(claims["exit"].dtype) == "Int64"
    assert claims["exit"].dropna().tolist() == [1, 1, 2, 2, 3, 3, 4, 4]
    shallow = claims[claims["exit"].isna()].iloc[0]
    assert shallow["claim"].startswith("gain of acl_cl over joint") and shallow["our_effect"] == pytest.approx(4.0)
    joined = acl.joined_exit_claims(acl.exit_claims(acl.exit_table(exits)), acl.shallow_gain_claim(exits))
    pd.testing.assert_frame_equal(joined, claims)


def test_exit_curve_table_averages_seeds():
    curve = pd.DataFrame({"mode": "acl_cl", "task": "SST-2", "seed": [1, 2, 1, 2], "threshold": [0.0, 0.0, 0.5, 0.5],
                          "mean_layers": [6.0, 6.0, 2.0, 3.0], "metric": "accuracy", "score": [90.0, 88.0, 80.0, 82.0],
                          "mean_layers_timed": [6.0, 6.0, 2.0, 3.0],
                          "seconds_per_example": [0.010, 0.012, 0.004, 0.006]})
    table = acl.exit_curve_table(curve).set_index("threshold")
    assert table.loc[0.5, "mean_layers"] == 2.5 and table.loc[0.5, "score"] == 81.0
    assert table.loc[0.0, "seconds_per_example"] == pytest.approx(0.011)
    assert table.loc[0.0, "score_sd"] == pytest.approx(math.sqrt(2)) and table.loc[0.0, "seeds"] == 2


def test_missing_tasks_are_named():
    sentence = acl.missing_tasks_sentence(["RTE", "CoLA"])
    assert "MNLI, QNLI, QQP are missing" in sentence and "RTE, CoLA" in sentence


def test_with_reference_lends_the_mean_sd():
    scores = pd.DataFrame({"task": ["RTE", "CoLA", "RTE"], "metric": ["accuracy", "mcc", "accuracy"],
                           "method": ["acl", "acl", "ce"], "mean": [60.0, 30.0, 59.0], "sd": [1.0, 3.0, 9.0],
                           "seeds": [3, 3, 3]})
    spread = acl.with_reference(scores)
    assert spread.sd == 2.0 and spread.seeds == 3
    assert acl.with_reference(scores.assign(sd=np.nan)) is None


def test_settings_per_task():
    config = acl.glue_config("CoLA", 2, {"SST-2": 4000}, learning_rate={"CoLA": 1e-4, "SST-2": 5e-5}, epochs=1)
    assert (config.learning_rate, config.epochs, config.seed, config.max_train_examples) == (1e-4, 1, 2, None)
    assert acl.glue_config("SST-2", 1, {"SST-2": 4000}, learning_rate={"SST-2": 5e-5}).max_train_examples == 4000
    with pytest.raises(ValueError, match="No value for RTE"):
        acl.glue_config("RTE", 1, learning_rate={"CoLA": 1e-4})
    sentence = acl.recipe_sentence("m", [1, 2], ["SST-2", "CoLA"], 1, {"SST-2": 5e-5, "CoLA": 1e-4}, 32, 128,
                                   {"SST-2": 4000})
    assert "learning rate: SST-2 5e-05, CoLA 0.0001" in sentence and "epochs: 1;" in sentence
    assert "SST-2 4,000 (seeded subsamples), the others all" in sentence


def test_seeds_may_be_given_per_task():
    assert acl.seeds_of([1, 2], "CoLA") == [1, 2]
    per_task = {"SST-2": [1, 2, 3], "CoLA": [1, 2, 3, 4, 5]}
    assert acl.seeds_of(per_task, "CoLA") == [1, 2, 3, 4, 5] and acl.seeds_of(per_task, "SST-2") == [1, 2, 3]
    with pytest.raises(ValueError, match="No value for MRPC"):
        acl.seeds_of(per_task, "MRPC")
    assert acl.seeds_phrase([1, 2], ["SST-2", "CoLA"]) == "2 seed(s) (1, 2)"
    assert acl.seeds_phrase(per_task, ["SST-2", "CoLA"]) == "SST-2: 3 seed(s) (1, 2, 3); CoLA: 5 seed(s) (1, 2, 3, 4, 5)"
    assert "CoLA: 5 seed(s)" in acl.recipe_sentence("m", per_task, ["SST-2", "CoLA"], 1, 5e-5, 32, 128)


def test_angle_claims_weigh_the_share_above_the_threshold_against_the_seed_spread():
    rows = [("RTE", "ce_scl", seed, angle) for seed, angles in ((1, [80, 95, 100, 70]), (2, [91, 92, 60, 99]),
                                                                 (3, [100, 85, 93, 94]))
            for angle in angles]
    rows += [("RTE", "acl_embed", 1, a) for a in (10, 20, float("nan"))] + [("RTE", "ce", 1, 120.0)]
    angles = pd.DataFrame(rows, columns=["task", "method", "seed", "angle"])
    claims = acl.angle_claims(angles, 90.0).set_index("claim")
    often = "in >= 25% of steps ('often'; % of steps - 25)"
    scl = claims.loc[f"CE and SCL gradients > 90 degrees apart {often}"]
    assert scl["our_effect"] == pytest.approx(100 * 8 / 12 - 25)  # 8 of the 12 steps, against "often" = 25%
    per_seed = np.array([50.0, 75.0, 75.0])  # seeds' shares: 2 of 4, 3 of 4, 3 of 4
    assert scl["tolerance"] == pytest.approx(t_quantile(2) * per_seed.std(ddof=1) / np.sqrt(3))
    assert scl["verdict"] == "reproduced" and np.isnan(scl["paper_effect"])
    embed = claims.loc[f"CE and ACL-Embed gradients > 90 degrees apart {often}"]
    assert embed["our_effect"] == -25.0 and embed["verdict"] == "noise not measured"  # one seed: no verdict
    ranged = claims[claims.index.str.contains("percentile")]
    assert len(ranged) == 2 and (ranged["paper_effect"].tolist() == [75.0, 105.0])  # CE-SCL only
    assert len(claims) == 4  # CE alone has no angle claim


def test_depth_comparison_reads_the_deep_models_middle_exit_against_the_shallow_models_last():
    shallow = _exits()  # 4 exits: the "6-layer" model of this toy; joint CE at its last exit: 85 on both seeds
    deep = pd.concat([_exits().assign(exit=lambda t: t["exit"] + 4 * block) for block in (0, 1)], ignore_index=True)
    # the deep (8-exit) model's exit 3 under acl_cl: 82 (seed 1) and 83 (seed 2)
    table = acl.depth_table(deep, shallow, deep_exit=3, deep_backbone="big", shallow_backbone="small")
    row = table[(table["backbone"] == "big") & (table["mode"] == "acl_cl")].iloc[0]
    assert (row["exit"], row["of_layers"], row["mean"], row["seeds"]) == (3, 8, pytest.approx(82.5), 2)
    last = table[(table["backbone"] == "small") & (table["mode"] == "joint")].iloc[0]
    assert (last["exit"], last["mean"]) == (4, pytest.approx(85.0))
    claims = acl.depth_claims(deep, shallow, deep_exit=3, deep_backbone="big", shallow_backbone="small")
    assert claims["claim"].tolist() == ["big exit 3 (acl_cl) >= small (4 layers, joint)"]
    assert claims["our_effect"].iloc[0] == pytest.approx(-2.5)
    # sd 0.71 over 2 seeds against sd 0: one degree of freedom, whose quantile is 12.7
    assert claims["tolerance"].iloc[0] == pytest.approx(t_quantile(1) * 0.5)
    assert claims["verdict"].iloc[0] == "within noise"
    assert claims["control"].iloc[0].startswith("big exit 3 with joint: ")  # the control's row travels with it


def test_deep_exit_claims_compare_acl_cl_with_joint_ce_on_the_deep_backbone_only():
    deep = _exits()
    claims = acl.deep_exit_claims(deep, "big")
    assert set(claims["claim"].dropna()) == {"big: acl_cl > joint", "big: gain of acl_cl over joint: shallow half > deep half"}
    assert (claims["model"] == "big").all() and claims["exit"].dropna().tolist() == [1, 2, 3, 4]  # no kd rows
    assert claims.loc[claims["exit"] == 1, "our_effect"].iloc[0] == pytest.approx(6.0)
    pd.testing.assert_series_equal(claims["our_effect"],
                                   acl.multi_exit_claims(acl.exit_table(deep), deep, against=("joint",))["our_effect"])
    assert not len(acl.deep_exit_claims(deep[deep["mode"] == "acl_cl"], "big"))  # no joint CE on it: nothing to judge
    assert not len(acl.deep_exit_claims(pd.DataFrame(), "big"))


def test_deep_exit_sentence_names_the_floor_the_compared_exit_and_the_shallow_claim():
    deep = _exits().assign(at_majority_class=lambda t: t["exit"] == 1)
    sentence = acl.deep_exit_sentence(acl.deep_exit_claims(deep, "big"), deep_exit=3)
    assert sentence.startswith("- big, SST-2: exit 1 sits at the majority class in both modes;")
    assert "at exit 3 ACL-CL minus joint CE is +2.00" in sentence and "at exit 4 ACL-CL minus joint CE is +2.00" in sentence
    assert "shallow-half gain minus the deep-half gain is +4.00 (reproduced)" in sentence


def test_step_cost_is_a_ratio_to_ce_from_the_benchmark():
    table = acl.step_cost_table({"median_step_seconds": {"ce": 0.5, "acl_embed": 0.6, "acl": 1.0}}).set_index("objective")
    assert table["ratio_to_ce"].tolist() == [1.0, pytest.approx(1.2), 2.0]
    assert table.loc["acl", "ms_per_step"] == 1000.0 and "two gradient passes" in table.loc["acl", "step"]


def test_step_cost_table_names_the_plain_loop_and_reads_the_benchmarks_new_fields():
    """The benchmark's JSON also holds the plain transformers loop, CPU seconds and ce_vs_plain: the table gets a
    worded row for the plain loop and ignores the rest."""
    benchmark = {"median_step_seconds": {"ce": 0.5, "acl": 1.0, "plain_transformers": 0.625}, "ce_vs_plain": 0.8,
                 "median_cpu_step_seconds": {"ce": 0.25}, "cpu": "a CPU"}
    table = acl.step_cost_table(benchmark).set_index("objective")
    assert table.loc["plain_transformers", "ratio_to_ce"] == pytest.approx(1.25)
    assert "plain transformers loop" in table.loc["plain_transformers", "step"]


def test_exit_probe_reads_each_exits_input_on_the_runs_own_training_rows(monkeypatch):
    """One row per layer 1..L (exit l reads hidden state l, never the embeddings) and readout, fitted on the rows
    training_rows gives the run's seed; a sentence-pair task is refused."""
    import bertsent.data.glue
    import bertsent.training.glue
    from bertsent.encode.backbones import load_backbone
    from bertsent.encode.encoder import Encoder
    from bertsent.evaluation.geometry import relative_spread

    good = ["a wonderful , moving film", "great acting and a fine story", "i loved every minute", "a joy to watch"]
    bad = ["a dull , lifeless mess", "terrible acting and a thin story", "i hated every minute", "a chore to sit through"]
    rows = pd.DataFrame({"sentence1": good * 3 + bad * 3, "sentence2": None, "label": [1] * 12 + [0] * 12})
    asked = []

    def training_rows(task, max_train_examples, seed, data_dir=None):
        asked.append((task, max_train_examples, seed))
        return rows

    monkeypatch.setattr(bertsent.training.glue, "training_rows", training_rows)
    monkeypatch.setattr(bertsent.data.glue, "load_glue", lambda *_: rows.iloc[::3].reset_index(drop=True))
    monkeypatch.setattr(acl, "majority_class_scores", lambda *_: {"accuracy": 50.0})
    probe = acl.exit_probe("all-minilm-l6-v2", "SST-2", 7, {"SST-2": 24, "CoLA": 9})
    assert asked == [("SST-2", 24, 7)]
    assert list(probe["layer"]) == [1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6]
    assert list(probe["readout"]) == ["cls", "mean"] * 6
    assert probe[["probe_raw", "probe_standardised"]].stack().between(0, 100).all()
    pooled = Encoder(load_backbone("all-minilm-l6-v2"), show_progress=False).encode(rows["sentence1"].tolist(), ["cls"])
    assert probe.loc[0, "spread"] == pytest.approx(relative_spread(pooled.lookup(rows["sentence1"].tolist(), "cls", 1)))

    pairs = rows.assign(sentence2="and another")
    monkeypatch.setattr(bertsent.training.glue, "training_rows", lambda *_, **__: pairs)
    with pytest.raises(ValueError, match="single-sentence task"):
        acl.exit_probe("all-minilm-l6-v2", "RTE", 1)


def test_probe_table_sets_each_layers_probes_beside_its_exit_and_names_the_layers_at_the_floor():
    probe = pd.DataFrame([
        {"backbone": "m", "task": "SST-2", "layer": layer, "readout": readout, "spread": spread,
         "probe_raw": raw, "probe_standardised": standardised, "majority_class": 50.9174}
        for layer, readout, spread, raw, standardised in [
            (1, "cls", 0.001, 50.9174, 70.0), (1, "mean", 0.6, 76.0, 76.5),
            (2, "cls", 0.5, 73.0, 74.0), (2, "mean", 0.7, 78.0, 78.5)]])
    exits = pd.DataFrame({"task": "SST-2", "mode": ["kd", "kd", "joint", "joint"], "exit": [1, 2, 1, 2],
                          "mean": [60.0, 81.0, 50.9174, 80.0]})
    table = acl.probe_table(probe, {"m": exits})
    assert list(table["layer"]) == [1, 2] and list(table["exit_mode"]) == ["joint", "joint"]  # joint first
    assert list(table["exit_score"]) == [50.9174, 80.0]
    assert list(table["cls_probe_standardised"]) == [70.0, 74.0] and list(table["mean_probe_standardised"]) == [76.5, 78.5]
    sentence = acl.probe_sentence(table)
    assert "at layer 1, where the fine-tuned joint CE exits score the majority class" in sentence
    assert "0.10%-0.10% of its size" in sentence and "70.00-70.00 standardised: the label is in" in sentence
    weak = acl.probe_table(probe.assign(probe_standardised=55.0), {"m": exits})
    assert "the states themselves hold little of the label" in acl.probe_sentence(weak)
    assert "exit_score_fast_heads" not in table and "larger learning rate" not in sentence
    for fast, words in ((50.9174, "leaves these exits at the majority class all the same"),
                        (66.0, "lifts 1 of these 1 exits off the majority class (66.00-66.00)")):
        checked = acl.probe_table(probe, {"m": exits}, fast_heads={"m": exits.assign(mean=[0.0, 0.0, fast, 90.0])})
        assert list(checked["exit_score_fast_heads"]) == [fast, 90.0]
        assert words in acl.probe_sentence(checked)
    gaps = pd.concat([probe, probe.assign(layer=probe["layer"] + 2)], ignore_index=True)  # layers 1-4
    floors = exits.iloc[[2, 3, 2, 3]].assign(exit=[1, 2, 3, 4], mean=[50.9174, 80.0, 50.9174, 50.9174])
    assert "at layers 1, 3 and 4, where" in acl.probe_sentence(acl.probe_table(gaps, {"m": floors}))
    untrained = acl.probe_table(probe)
    assert untrained["exit_score"].isna().all()
    assert "at layer 1, where the raw probe is within half a point" in acl.probe_sentence(untrained)


def test_floor_sentence_names_the_exits_at_the_majority_class_in_every_mode_and_seed():
    runs = pd.DataFrame([{"task": "SST-2", "mode": mode, "seed": seed, "exit": exit,
                          "at_majority_class": exit in floors}
                         for mode, seed, floors in (("joint", 1, {1, 2, 3}), ("joint", 2, {1, 3}),
                                                    ("acl_cl", 1, {1, 3, 4}))
                         for exit in (1, 2, 3, 4)])
    sentence = acl.floor_sentence({"m": runs, "deep": None})
    assert sentence == ("- m, SST-2: exits 1 and 3 of 4 score the majority class in every mode (joint CE and ACL-CL) "
                        "on each of its 2 seeds.")
    lifted = runs.assign(at_majority_class=runs["exit"] == 1)
    assert "exit 1 of 4 scores the majority class" in acl.floor_sentence({"m": lifted})
    none = runs.assign(at_majority_class=False)
    assert acl.floor_sentence({"m": none}) == ("- m, SST-2: no exit scores the majority class in every mode "
                                               "(joint CE and ACL-CL) on each of its 2 seeds.")
    one = runs[(runs["mode"] == "acl_cl")]
    assert acl.floor_sentence({"m": one}) == ("- m, SST-2: exits 1, 3 and 4 of 4 score the majority class in the one "
                                              "mode run (ACL-CL) on its one seed.")
    assert acl.floor_sentence({"m": runs.iloc[:0]}) == ""


def test_without_grids_the_tuned_recipe_is_the_pages_own():
    settings = {"learning_rate": {"RTE": 1e-4}, "epochs": 3}
    tuned = acl.tuned_recipe(None, ["RTE"], settings, grid_learning_rates=[5e-5], grid_epochs=[],
                             contrastive_grid_temperatures=[], contrastive_grid_weights=[0.5])
    assert tuned.settings == settings and tuned.settings is not settings
    assert tuned.recipes is tuned.recipe_runs is tuned.terms is tuned.term_runs is None


def test_the_baseline_gate_gives_contrastive_runs_only_to_the_tasks_ce_learned(monkeypatch):
    """With ``baseline_gate``, CE runs first over the table's seeds; the contrastive grid (and every method but CE)
    gets only the tasks CE learned beyond the majority class, and a lambda curve on a task left out is refused."""
    ce = pd.DataFrame([{"task": task, "method": "ce", "seed": seed, "metric": "accuracy", "score": score,
                        "accuracy": score, "dev_examples": dev, "at_majority_class": False, "train_seconds": 1.0}
                       for task, dev, scores in (("SST-2", 872, [85.0, 86.0, 84.5]), ("RTE", 277, [53.0, 54.5, 52.0]))
                       for seed, score in zip([1, 2, 3], scores)])
    calls = []

    def run_grid(model, tasks, methods, seeds, *args, **kwargs):
        calls.append(("run_grid", list(tasks), list(methods), list(seeds)))
        return ce[ce["task"].isin(tasks)], None

    def contrastive_grid(model, tasks, *args, **kwargs):
        calls.append(("contrastive_grid", list(tasks)))
        return pd.DataFrame([{"task": task, "method": "ce_scl", "temperature": 0.3, "weight": 0.5, "seed": 0,
                              "metric": "accuracy", "score": 80.0, "train_seconds": 1.0} for task in tasks])

    monkeypatch.setattr(acl, "run_grid", run_grid)
    monkeypatch.setattr(acl, "contrastive_grid", contrastive_grid)
    monkeypatch.setattr(acl, "majority_class_scores", lambda task, *_: {"accuracy": {"SST-2": 50.9, "RTE": 52.7}[task]})
    tuned = acl.tuned_recipe(None, ["SST-2", "RTE"], {"epochs": 1}, contrastive_grid_temperatures=[0.3],
                             contrastive_grid_weights=[0.5], seeds=[1, 2, 3], baseline_gate=True)
    assert calls == [("run_grid", ["SST-2", "RTE"], ["ce"], [1, 2, 3]), ("contrastive_grid", ["SST-2"])]
    assert tuned.kept == ["SST-2"] and list(tuned.check["kept"]) == [True, False]
    assert list(tuned.terms["task"]) == ["SST-2"]
    with pytest.raises(ValueError, match="lambda_task 'RTE' is left out.*SST-2"):
        acl.lambda_grid(None, "RTE", [0.5], [1], kept_tasks=tuned.kept)
    ungated = acl.tuned_recipe(None, ["SST-2", "RTE"], {"epochs": 1}, contrastive_grid_temperatures=[0.3],
                               contrastive_grid_weights=[0.5], seeds=[1, 2, 3])
    assert ungated.kept is None and calls[-1] == ("contrastive_grid", ["SST-2", "RTE"])
    with pytest.raises(ValueError, match="baseline_gate needs the table's seeds"):
        acl.tuned_recipe(None, ["SST-2"], {"epochs": 1}, baseline_gate=True)


def test_a_gated_run_grid_trains_ce_everywhere_and_the_other_methods_on_the_kept_tasks_only(monkeypatch):
    import bertsent.experiments.runs

    assert acl.trained_on("ce", "RTE", ["SST-2"]) and not acl.trained_on("acl", "RTE", ["SST-2"])
    assert acl.trained_on("acl", "SST-2", ["SST-2"]) and acl.trained_on("acl", "RTE", None)

    def glue_run(*args, **kwargs):
        raise AssertionError("a method was fine-tuned on a task the gate left out")

    monkeypatch.setattr(bertsent.experiments.runs, "glue_run", glue_run)
    runs, angles = acl.run_grid(None, ["RTE"], ["ce_scl", "acl_embed", "acl"], [1, 2], kept_tasks=["SST-2"])
    assert runs.empty and angles.empty
