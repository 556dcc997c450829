import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from bertsent.report import plots


def history(n_runs: int) -> pd.DataFrame:
    rows = []
    for run in range(n_runs):
        for step in (0, 50, 100):
            rows.append({"run": f"run {run}", "step": step, "dev": 40.0 + run + step / 100, "loss": 1.0 + run,
                         "best": step == 50})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("n_runs", [3, 11])
def test_selection_curves_give_every_run_its_own_colour(n_runs):
    figure = plots.selection_curves(history(n_runs))
    left, right = figure.axes
    colours = [tuple(line.get_color()) for line in left.get_lines()]
    assert len(colours) == n_runs
    assert len(set(colours)) == n_runs
    assert [tuple(line.get_color()) for line in right.get_lines()] == colours
    plt.close(figure)
