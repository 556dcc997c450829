import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest

from bertsent.experiments.toy_contrastive import circle_uniformity, temperature_sweep
from bertsent.report import toy_plots


@pytest.fixture(scope="module")
def sweep():
    return temperature_sweep([0.1, 0.5], n_clusters=3, n_train=60, n_eval=30, steps=3, batch_size=16)


def test_circle_panels_one_per_stage_plus_the_inputs(sweep):
    figure = toy_plots.circle_embeddings(sweep.embeddings, sweep.inputs)
    visible = [ax for ax in figure.axes if ax.get_visible()]
    assert [ax.get_title() for ax in visible] == ["input points (2-D)", "untrained encoder", "trained, τ = 0.1",
                                                  "trained, τ = 0.5"]
    assert figure.get_size_inches()[0] <= 9.5  # at most three panels a row: the page width
    plt.close(figure)


def test_geometry_figure_marks_the_untrained_encoder_and_the_even_spread(sweep):
    figure = toy_plots.temperature_geometry(sweep.table, circle_uniformity())
    left, right = figure.axes
    assert [t.get_text() for t in left.get_legend().get_texts()] == ["trained", "untrained"]
    assert [t.get_text() for t in right.get_legend().get_texts()] == ["trained", "untrained",
                                                                      "even spread over the circle"]
    assert list(left.get_lines()[0].get_xdata()) == [0.1, 0.5]
    plt.close(figure)


def test_histograms_and_loss_curves_have_complete_legends(sweep):
    figure = toy_plots.similarity_histograms(sweep.similarities, ["before", "tau = 0.5"])
    assert [t.get_text() for t in figure.legends[0].get_texts()] == list(toy_plots.PAIR_LABELS.values())
    plt.close(figure)
    figure = toy_plots.loss_curves(sweep.history, batch_size=16)
    assert [t.get_text() for t in figure.axes[0].get_legend().get_texts()] == ["τ = 0.1", "τ = 0.5",
                                                                               "uniform guess, log 16"]
    plt.close(figure)
