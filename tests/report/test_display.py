"""Tables for reading: no row index, blanks for missing values, scientific notation where decimals would lie."""
import numpy as np
import pandas as pd

from bertsent.report.display import format_number, readable


def test_numbers_are_written_for_reading():
    assert format_number(5e-5) == "5e-5"
    assert format_number(1.5e-4) == "1.5e-4"
    assert format_number(0.05) == "0.05"
    assert format_number(71.23456) == "71.23"
    assert format_number(71.23456, decimals=1) == "71.2"
    assert format_number(0.0) == "0.00"
    assert format_number(2.5e9) == "2.5e9"
    assert format_number(265.0, integral=True) == "265"
    for missing in (np.nan, None, pd.NA, float("nan")):
        assert format_number(missing) == ""
    assert format_number("sg_opt") == "sg_opt"


def test_readable_table_has_no_index_no_nan_and_keeps_index_names_as_columns():
    frame = pd.DataFrame({"backbone": ["a", "b"], "method": ["x", "y"], "lr": [5e-5, 3e-4],
                          "steps": [265.0, np.nan], "score": [71.234, np.nan],
                          "flag": pd.array([1, None], dtype="Int64")}).set_index(["backbone", "method"])
    table = readable(frame)
    html = table._repr_html_()
    assert list(table.frame.columns) == ["backbone", "method", "lr", "steps", "score", "flag"]
    assert table.frame.values.tolist() == [["a", "x", "5e-5", "265", "71.23", "1"], ["b", "y", "3e-4", "", "", ""]]
    for word in ("NaN", "&lt;NA&gt;", "<NA>", "None", "0.0000"):
        assert word not in html, word
    assert "<th></th>" not in html and "<th>0</th>" not in html  # no row numbers
    assert "71.23" in repr(table) and "NaN" not in repr(table)


def test_scores_that_happen_to_be_whole_keep_their_decimals():
    table = readable(pd.DataFrame({"accuracy": [0.0, 1.0], "steps": [4.0, np.nan], "tokens": [1907.0, 1834.0],
                                   "seeds": pd.array([1, 2], dtype="Int64")}))
    assert table.frame.values.tolist() == [["0.00", "4.00", "1907", "1"], ["1.00", "", "1834", "2"]]


def test_a_plain_range_index_is_dropped():
    table = readable(pd.DataFrame({"score": [1.5, 2.25]}))
    assert list(table.frame.columns) == ["score"]
    assert table.frame["score"].tolist() == ["1.50", "2.25"]


def test_a_claims_table_reads_side_by_side_with_its_noise_source_as_a_tooltip():
    from bertsent.report.claims import Noise, claims_table

    table = claims_table([{"claim": "a > b", "ours": 3.0, "paper": 4.0, "noise": Noise(1.0, "3 vs 3", "sd 0.5 & t"),
                           "backbone": "m"},
                          {"claim": "c > d", "ours": -2.0, "noise": Noise(1.0, "3 vs 3", "dev set"), "backbone": "m"}])
    shown = readable(table)
    assert list(shown.frame.columns) == ["claim", "backbone", "ours", "paper", "ratio", "tolerance", "seeds", "verdict"]
    assert shown.frame.iloc[0].tolist() == ["a > b", "m", "3.00", "4.00", "0.75", "1.00", "3 vs 3", "reproduced"]
    assert shown.frame.iloc[1]["paper"] == ""  # a direction only: no number
    page = shown._repr_html_()
    assert 'title="sd 0.5 &amp; t"' in page and 'title="dev set"' in page and "noise_source" not in page
    assert "sd 0.5 & t" in repr(shown)  # the plain-text form keeps it as its last column
