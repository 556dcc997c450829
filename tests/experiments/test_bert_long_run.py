"""The long run's page helpers (``bertsent.experiments.bert_long_run``), on the committed smoke stretch."""
import pandas as pd
import pytest

from bertsent.experiments.bert_long_run import curve_table, floor_claims, load_run, stretch_table

FIXTURE_ROOT = "tests/fixtures/training/long_run"  # relative: read from the repository's root, as a profile names it
FLOORS = {"majority_token": ",", "eval_pairs": 1024,
          "mask": {"count": 20000, "majority": 0.05, "best_constant": 0.06, "copy": 0.0}}


def test_a_run_with_nothing_committed_says_how_to_make_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="bertsent.training.long_run no-run"):
        load_run("no-run", tmp_path)


def test_the_committed_stretch_reads_back_as_curve_and_stretch_tables():
    record, history = load_run("smoke", FIXTURE_ROOT)
    stretches = stretch_table(record)
    assert stretches["stretch"].tolist() == [1] and stretches["continued_from"].iloc[0] == "new run"
    assert stretches["tokens_millions"].iloc[0] == pytest.approx(record["tokens"] / 1e6)
    curve = curve_table(history)
    assert curve["step"].tolist() == history["step"].tolist()
    assert curve["tokens_millions"].iloc[-1] == pytest.approx(record["tokens"] / 1e6)


def history_at(mask_accuracy: float, nsp_accuracy: float) -> pd.DataFrame:
    return pd.DataFrame([{"step": 0, "tokens": 0, "heldout_mlm_mask_accuracy": 0.0, "heldout_nsp_accuracy": 0.5},
                         {"step": 100, "tokens": 10**6, "heldout_mlm_mask_accuracy": mask_accuracy,
                          "heldout_nsp_accuracy": nsp_accuracy}])


def test_a_run_on_the_plateau_has_not_left_the_floor():
    claims = floor_claims(history_at(0.062, 0.51), FLOORS).set_index("claim")
    assert claims.loc["[MASK] accuracy > the best constant guess", "verdict"] == "within noise"
    assert claims.loc["[MASK] accuracy > the target 25%", "verdict"] == "not reproduced"
    assert claims.loc["NSP accuracy > chance (50%)", "verdict"] == "within noise"


def test_a_run_that_learned_clears_the_floor_the_target_and_chance():
    claims = floor_claims(history_at(0.31, 0.80), FLOORS).set_index("claim")
    # judged against the harder floor: the best constant (6%), not the majority word piece (5%)
    assert claims.loc["[MASK] accuracy > the best constant guess", "our_effect"] == pytest.approx(25.0)
    assert set(claims["verdict"]) == {"reproduced"}
