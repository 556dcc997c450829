import math

import pandas as pd
import pytest

from bertsent.encode.encoder import Encoder
from bertsent.experiments.sts_tables import (LAYER_POOLING_COLUMNS, baseline_scores, grid_extremes, layer_pooling_grid,
                                             layer_pooling_scores, load_sts_datasets, sts_average)


def test_layer_pooling_rows_cover_the_grid(minilm):
    datasets = load_sts_datasets(["stsb", "sts13"], max_pairs=20)
    table, subsets = layer_pooling_scores(Encoder(minilm, show_progress=False), datasets)
    assert list(table.columns) == LAYER_POOLING_COLUMNS
    assert len(table) == 2 * 7 * 4 * 2  # datasets x layers x poolings x aggregations
    assert set(subsets["subset"]) == {"test", "FNWN", "headlines", "OnWN"}
    layer0_cls = table[(table.layer == 0) & (table.pooling == "cls")]["spearman"]
    assert layer0_cls.isna().all()  # the same vector for every sentence: undefined
    assert table[(table.layer > 0) | (table.pooling != "cls")]["spearman"].notna().all()
    grid = layer_pooling_grid(table, "stsb")
    assert grid.shape == (7, 4) and math.isnan(grid.loc[0, "cls"])
    extremes = grid_extremes(grid)
    assert extremes["best"]["spearman"] == grid.max().max()


def test_baselines_use_the_last_layer(minilm):
    datasets = load_sts_datasets(["stsb"], max_pairs=30)
    encoder = Encoder(minilm, show_progress=False)
    baselines = baseline_scores(encoder, datasets)
    full, _ = layer_pooling_scores(encoder, datasets)
    last = full[full.layer == 6].set_index(["pooling", "aggregation"])["spearman"]
    for row in baselines.itertuples():
        assert math.isclose(row.spearman, last[(row.method, row.aggregation)])


def test_sts_average_needs_all_seven():
    rows = pd.DataFrame({"m": ["x"] * 7, "dataset": list("abcdefg"), "aggregation": "all", "spearman": range(7)})
    assert sts_average(rows, ["m"])["spearman"].iloc[0] == 3.0
    assert math.isnan(sts_average(rows.iloc[:6], ["m"])["spearman"].iloc[0])


def test_figure1_checks_on_a_hand_made_grid():
    from bertsent.experiments.sts_tables import figure1_checks

    grid = pd.DataFrame({"cls": [float("nan"), 10.0, 20.0, 30.0, 70.0],
                         "mean": [50.0, 40.0, 45.0, 55.0, 80.0],
                         "max": [60.0, 65.0, 35.0, 25.0, 60.0]}, index=range(5))
    checks = figure1_checks(grid)
    assert checks["best"] == {"layer": 4, "pooling": "mean", "spearman": 80.0}
    assert checks["worst"] == {"layer": 1, "pooling": "cls", "spearman": 10.0}
    assert checks["spread"] == 70.0
    assert checks["last_cls"] == 70.0 and checks["last_cls_rank"] == 2 and checks["cells"] == 14
    assert checks["best_shallow"] == {"layer": 1, "pooling": "max", "spearman": 65.0}
    assert checks["cls_weakest_layers"] == 2 and checks["cls_layers"] == 4  # layers 1 and 2; at 3 max is lower



def test_figure1_checks_on_a_two_layer_bert_take_its_first_layer_as_the_shallow_one():
    from bertsent.experiments.sts_tables import figure1_checks

    grid = pd.DataFrame({"cls": [float("nan"), 10.0, 70.0], "mean": [50.0, 40.0, 45.0]}, index=range(3))
    checks = figure1_checks(grid)  # layers 1-3 asked for; layer 2 is the last, layer 3 does not exist
    assert checks["best_shallow"] == {"layer": 1, "pooling": "mean", "spearman": 40.0}
    with pytest.raises(ValueError, match="no shallow layer"):
        figure1_checks(grid.loc[[0, 2]])


def test_figure1_checks_reads_a_causal_backbones_last_token_as_its_cls():
    from bertsent.experiments.sts_tables import figure1_checks

    grid = pd.DataFrame({"last": [float("nan"), 10.0, 20.0, 30.0, 70.0],
                         "mean": [50.0, 40.0, 45.0, 55.0, 80.0]}, index=range(5))
    checks = figure1_checks(grid, sentence_pooling="last")
    assert checks["last_cls"] == 70.0 and checks["last_cls_rank"] == 2
    assert checks["cls_weakest_layers"] == 4 and checks["cls_layers"] == 4
    with pytest.raises(ValueError, match="sentence_pooling"):
        figure1_checks(grid)  # no [CLS] column: the caller must name the readout

def test_baseline_table_is_one_row_per_readout_with_the_average_of_seven():
    from bertsent.experiments.sts_tables import baseline_table

    sets = ["stsb", "sickr", "sts12", "sts13", "sts14", "sts15", "sts16"]
    rows = [(b, m, d, a, base + k + (a == "wmean"))
            for b, m, base in [("g", "glove_mean", 50.0), ("t", "cls", 30.0), ("t", "mean", 60.0)]
            for k, d in enumerate(sets) for a in ("all", "wmean")]
    scores = pd.DataFrame(rows, columns=["backbone", "method", "dataset", "aggregation", "spearman"])
    table = baseline_table(scores, "all", sets)
    assert list(table.index) == [("g", "glove_mean"), ("t", "cls"), ("t", "mean")]  # in the order of the rows
    assert list(table.columns) == [*sets, "avg"]
    assert table.loc[("t", "mean"), "sts12"] == 62.0 and table.loc[("t", "mean"), "avg"] == 63.0
    assert baseline_table(scores, "wmean", sets).loc[("g", "glove_mean"), "avg"] == 54.0
    # a dataset missing for one readout: its average is NaN, never a partial one
    partial = baseline_table(scores.drop(index=scores.index[(scores["method"] == "cls") & (scores["dataset"] == "sts16")]),
                             "all", sets)
    assert math.isnan(partial.loc[("t", "cls"), "avg"]) and partial.loc[("t", "mean"), "avg"] == 63.0
    # fewer than seven datasets: no average column, columns in the order asked
    assert list(baseline_table(scores, "all", ["sts13", "stsb"]).columns) == ["sts13", "stsb"]


def test_baseline_claims_take_the_papers_difference_on_the_same_datasets():
    from bertsent.experiments.sts_tables import DIFFERENCE_COLUMNS, baseline_claims

    differences = pd.DataFrame([("m", "mean > cls", "mean", "cls", "the 7 STS sets", 10.0, 1.0, 1000),
                                ("m", "glove_mean > mean", "glove_mean", "mean", "stsb+sickr", -3.0, 1.0, 1000)],
                               columns=DIFFERENCE_COLUMNS)
    claims = baseline_claims(differences).set_index("claim")
    assert math.isclose(claims.loc["mean > cls", "paper_effect"], 52.57 - 31.40, abs_tol=0.01)  # Table 2 averages
    # GloVe - BERT mean on STS-B and SICK-R only: ((58.02 - 47.29) + (53.76 - 58.22)) / 2
    assert math.isclose(claims.loc["glove_mean > mean", "paper_effect"], 3.135, abs_tol=1e-9)
    # rule 3: the normal quantile (deterministic readouts) times the paired bootstrap's SE of 1.0
    assert claims["tolerance"].tolist() == pytest.approx([1.96, 1.96], abs=1e-3)
    assert claims["verdict"].tolist() == ["direction only", "not reproduced"]


def test_figure1_differences_pick_the_grids_cells_and_claims_judge_them(minilm):
    from bertsent.experiments.sts_tables import figure1_claims, figure1_differences

    sts = load_sts_datasets(["stsb"], max_pairs=30)
    encoder = Encoder(minilm, show_progress=False)
    table, _ = layer_pooling_scores(encoder, sts)
    grid = layer_pooling_grid(table, "stsb")
    differences = figure1_differences(encoder, sts["stsb"], grid, "cls", resamples=50)
    best, worst = grid_extremes(grid).values()
    assert differences["a"][0] == f"layer {best['layer']} {best['pooling']}"
    assert differences["b"][1] == f"layer {grid.index.max()} cls"
    assert math.isclose(differences["difference"][0], best["spearman"] - worst["spearman"], abs_tol=1e-9)
    assert (differences["standard_error"] > 0).all()
    claims = figure1_claims(differences)
    assert claims["paper_effect"].round(2).tolist() == [46.48, 42.89]
