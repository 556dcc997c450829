import math

import pandas as pd

from bertsent.encoder import Encoder
from bertsent.sts_tables import (LAYER_POOLING_COLUMNS, baseline_scores, grid_extremes, layer_pooling_grid,
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
