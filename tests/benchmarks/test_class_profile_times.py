"""The class profile's timing script: every page has a class setting, and the status page's table is built from the CSV."""
import importlib.util

import pandas as pd
import pytest

from bertsent.book import load_config, resolve_parameters
from bertsent.paths import REPO_ROOT


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("class_profile_times",
                                                  REPO_ROOT / "benchmarks" / "class_profile_times.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_page_has_a_class_setting_that_the_runner_accepts():
    config = load_config()
    assert list(config["profiles"]["class"]) == list(config["notebooks"])
    for name in config["notebooks"]:
        resolve_parameters(name, "class", config=config)  # raises on an unknown parameter or a wrong type


def times(seconds, ran=(True, True)):
    return pd.DataFrame({"page": ["a", "b"], "seconds": seconds, "ran": list(ran), "message": ["", ""],
                         "cores": [2, 2], "threads": [1, 1], "load_average": [0.1, 1.2], "cpu_capability": ["AVX2"] * 2, "commit": ["abc1234"] * 2,
                         "date": ["2026-12-01"] * 2})


def test_times_table_says_which_pages_exceed_five_minutes(script):
    table = script.times_table(times([120.0, 301.0], ran=(True, True)))
    assert "| a | 2.0 | yes |" in table and "| b | 5.0 | **no** |" in table
    assert "longest page 5.0 min" in table and "2 cores (AVX2, 1 PyTorch thread(s), load average 0.1-1.2" in table
    assert "| b | 0.1 | did not run |" in script.times_table(times([120.0, 6.0], ran=(True, False)))


def test_update_status_page_replaces_only_the_marked_table(script, tmp_path):
    page = tmp_path / "status.md"
    page.write_text(f"before\n{script.START}\nold table\n{script.END}\nafter\n")
    script.update_status_page(times([60.0, 90.0]), page)
    text = page.read_text()
    assert text.startswith("before\n") and text.endswith("after\n") and "old table" not in text
    assert "| a | 1.0 | yes |" in text
    unmarked = tmp_path / "plain.md"
    unmarked.write_text("no markers here\n")
    with pytest.raises(SystemExit, match="markers"):
        script.update_status_page(times([60.0, 90.0]), unmarked)
