"""The staging of a canonical page run's result files (issue 39): while the runner names a staging folder, what a
page writes under ``results/`` goes there (never the run store), and what it reads back is its own latest copy."""
import pandas as pd

from bertsent.paths import RESULTS_DIR
from bertsent.report.io import STAGING_VARIABLE, read_path, results_glob, staged


def test_without_a_staging_folder_every_path_is_its_own(monkeypatch, tmp_path):
    monkeypatch.delenv(STAGING_VARIABLE, raising=False)
    assert staged(RESULTS_DIR / "x.csv") == RESULTS_DIR / "x.csv"


def test_results_files_are_staged_and_the_run_store_and_other_folders_are_not(monkeypatch, tmp_path):
    monkeypatch.setenv(STAGING_VARIABLE, str(tmp_path / "staging"))
    assert staged(RESULTS_DIR / "isotropy" / "claims.csv") == tmp_path / "staging" / "isotropy" / "claims.csv"
    assert staged(RESULTS_DIR / "runs" / "sg" / "index.csv") == RESULTS_DIR / "runs" / "sg" / "index.csv"
    assert staged(RESULTS_DIR / "runs" / "layer_pooling.json") == RESULTS_DIR / "runs" / "layer_pooling.json"
    assert staged(tmp_path / "rerun" / "results" / "x.csv") == tmp_path / "rerun" / "results" / "x.csv"


def test_write_table_stages_and_names_the_final_path(monkeypatch, tmp_path, capsys):
    from bertsent.report.tables import write_table

    monkeypatch.setenv(STAGING_VARIABLE, str(tmp_path / "staging"))
    target = RESULTS_DIR / "never-written-by-a-test" / "t.csv"
    written = write_table(pd.DataFrame({"a": [1.5]}), target)
    assert written == tmp_path / "staging" / "never-written-by-a-test" / "t.csv" and written.is_file()
    assert not target.parent.exists()
    assert capsys.readouterr().out.strip() == "wrote results/never-written-by-a-test/t.csv"
    assert read_path(target) == written


def test_the_scoreboard_counts_the_claims_tables_the_page_staged(monkeypatch, tmp_path):
    from bertsent.experiments.claims_overview import scoreboard, write_scoreboard

    monkeypatch.setenv(STAGING_VARIABLE, str(tmp_path / "staging"))
    claims = tmp_path / "staging" / "isotropy" / "claims.csv"
    claims.parent.mkdir(parents=True)
    pd.DataFrame({"claim": ["a", "b", "c"], "verdict": ["reproduced"] * 3}).to_csv(claims, index=False)
    assert results_glob(RESULTS_DIR, "isotropy/claims.csv") == [claims]
    table = scoreboard()
    assert table.loc["geometry", "total"] == 3 and table.loc["geometry", "reproduced"] == 3
    write_scoreboard()
    assert (tmp_path / "staging" / "claims_scoreboard.csv").is_file()
