import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest

from bertsent.experiments.toy_contrastive import circle_uniformity, temperature_sweep
from bertsent.report import toy_plots

from .test_plots import assert_legends_clear, assert_legible, legend_labels


@pytest.fixture(scope="module")
def sweep():
    return temperature_sweep([0.1, 0.5], n_clusters=3, n_train=60, n_eval=30, steps=3, batch_size=16)


def test_circle_panels_one_per_stage_plus_the_inputs(sweep):
    figure = toy_plots.circle_embeddings(sweep.embeddings, sweep.inputs)
    visible = [ax for ax in figure.axes if ax.get_visible()]
    assert [ax.get_title() for ax in visible] == ["input points (2-D)", "untrained encoder", "trained, τ = 0.1",
                                                  "trained, τ = 0.5"]
    assert_legible(figure)  # at most three panels a row, no wider than the page, text at least MIN_FONT
    plt.close(figure)


def test_geometry_figure_marks_the_untrained_encoder_and_the_even_spread(sweep):
    figure = toy_plots.temperature_geometry(sweep.table, circle_uniformity())
    left, right = figure.axes
    assert legend_labels(figure) == ["trained", "untrained", "even spread over the circle"]  # one legend, below
    assert [line.get_label() for line in right.get_lines()] == ["trained", "untrained", "even spread over the circle"]
    assert list(left.get_lines()[0].get_xdata()) == [0.1, 0.5]
    assert_legends_clear(figure)
    assert_legible(figure)
    plt.close(figure)


def test_histograms_and_loss_curves_have_complete_legends(sweep):
    figure = toy_plots.similarity_histograms(sweep.similarities, ["before", "tau = 0.5"])
    assert [t.get_text() for t in figure.legends[0].get_texts()] == list(toy_plots.PAIR_LABELS.values())
    assert_legends_clear(figure)
    assert_legible(figure)
    plt.close(figure)
    figure = toy_plots.loss_curves(sweep.history, batch_size=16)
    assert legend_labels(figure) == ["τ = 0.1", "τ = 0.5", "uniform guess, log 16"]
    assert_legends_clear(figure)
    assert_legible(figure)
    plt.close(figure)
