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


def test_stall_study_curves_draw_the_floors():
    from bertsent.report.plots import stall_study_curves

    history = pd.DataFrame({"run": ["a", "a", "b", "b"], "tokens": [0, 1e6, 0, 1e6],
                            "heldout_mlm_loss": [10.3, 7.2, 10.3, 7.0], "heldout_mlm_mask_accuracy": [0, .05, 0, .06],
                            "heldout_mlm_unchanged_accuracy": [0, .3, 0, .45]})
    fig = stall_study_curves(history, majority_floor=0.053, unigram_loss=7.29)
    loss_axis, mask_axis, _ = fig.axes
    assert any(line.get_label() == "unigram entropy" and line.get_ydata()[0] == 7.29 for line in loss_axis.get_lines())
    assert any(line.get_label() == "always the majority token" and line.get_ydata()[0] == pytest.approx(5.3)
               for line in mask_axis.get_lines())
    plt.close(fig)
