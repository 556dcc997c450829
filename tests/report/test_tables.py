"""The committed result tables have the promised shape (the values come from the notebook runs)."""
import itertools

import pandas as pd
import pytest

from bertsent.data.sts import STS_DATASETS
from bertsent.encode.pooling import POOLINGS
from bertsent.paths import RESULTS_DIR

LAYERS = {"all-minilm-l6-v2": 7, "all-mpnet-base-v2": 13}


@pytest.mark.parametrize("backbone", LAYERS)
def test_layer_pooling_csv_is_complete(backbone):
    table = pd.read_csv(RESULTS_DIR / "layer_pooling" / f"{backbone}.csv")
    assert list(table.columns) == ["backbone", "dataset", "layer", "pooling", "aggregation", "spearman"]
    expected = set(itertools.product(STS_DATASETS, range(LAYERS[backbone]), POOLINGS, ("all", "wmean")))
    assert set(zip(table.dataset, table.layer, table.pooling, table.aggregation)) == expected
    assert len(table) == len(expected)
    undefined = table[table.spearman.isna()]
    assert set(zip(undefined.layer, undefined.pooling)) == {(0, "cls")}  # and nothing else is undefined
    assert table.spearman.dropna().between(-100, 100).all()


def test_baselines_csv_is_complete():
    table = pd.read_csv(RESULTS_DIR / "sts_baselines.csv")
    assert list(table.columns) == ["backbone", "method", "dataset", "aggregation", "spearman"]
    methods = set(zip(table.backbone, table.method))
    assert ("glove-6b-50d", "glove_mean") in methods
    for backbone in LAYERS:
        assert {(backbone, m) for m in ("cls", "mean", "first_last_avg")} <= methods
    for key, group in table.groupby(["backbone", "method"]):
        assert set(zip(group.dataset, group.aggregation)) == set(itertools.product(STS_DATASETS, ("all", "wmean"))), key
    assert table.spearman.notna().all()


def test_sts_main_csv_has_one_row_per_seed_dataset_and_aggregation():
    table = pd.read_csv(RESULTS_DIR / "sts_main.csv", dtype={"seed": str})
    assert list(table.columns) == ["backbone", "method", "train_data", "seed", "dataset", "aggregation", "spearman"]
    for key, group in table.groupby(["backbone", "method", "train_data", "seed"]):
        assert set(zip(group.dataset, group.aggregation)) == set(itertools.product(STS_DATASETS, ("all", "wmean"))), key
        assert len(group) == 14, key
    trained = table[table.method.isin(["sg", "sg_opt"])]
    assert len(trained) > 0 and trained.seed.str.isdigit().all()
    assert table.spearman.notna().all()


def test_small_floats_keep_their_value_in_csv(tmp_path):
    from bertsent.report.tables import write_table

    path = write_table(pd.DataFrame({"learning_rate": [5e-5, 3e-5, 1e-3], "spearman": [73.50421, 0.12345, 0.0]}),
                       tmp_path / "t.csv")
    table = pd.read_csv(path)
    assert table["learning_rate"].tolist() == [5e-5, 3e-5, 1e-3]
    assert table["spearman"].tolist() == [73.5042, 0.1235, 0.0]


def test_as_written_gives_what_the_csv_reads_back(tmp_path):
    """A page judges its claims from ``as_written(table)``; the claims page re-judges them from the CSV: same values."""
    from bertsent.report.tables import as_written, write_table

    table = pd.DataFrame({"backbone": ["a", "b"], "stsb_test_sd": [0.43217891, float("nan")], "lr": [2e-5, 1e-3],
                          "seeds": [5, 1]})
    read_back = pd.read_csv(write_table(table, tmp_path / "t.csv"))
    pd.testing.assert_frame_equal(as_written(table), read_back)
    assert as_written(table)["stsb_test_sd"].iloc[0] == 0.4322 and pd.isna(as_written(table)["stsb_test_sd"].iloc[1])
