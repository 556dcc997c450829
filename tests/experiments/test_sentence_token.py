"""The experiments read the backbone's sentence token where the paper reads [CLS]: [CLS] on an encoder, the last
token on a causal LM (the tiny random Gemma 3 of tests/conftest.py), under the stable method label ``cls``."""
import math

import numpy as np
import pytest

from bertsent.data.sts import SentencePairs, STSDataset
from bertsent.encode.backbones import backbone_sentence_pooling
from bertsent.encode.encoder import Encoder


def tiny_sts():
    return {"tiny": STSDataset("tiny", "test", {"one": SentencePairs(
        ["a man plays guitar .", "dogs run .", "one word", "a man", "This sentence", "dogs plays"],
        ["a man plays .", "a man plays guitar .", "one word .", "dogs run", "means in one word", "man run"],
        np.array([4.5, 1.0, 5.0, 2.0, 0.5, 3.0]))})}


def test_the_sentence_token_of_a_backbone_by_name(tiny_gemma_dir, minilm):
    assert backbone_sentence_pooling("gemma-3-270m") == "last"  # from the registry: no weights loaded
    assert backbone_sentence_pooling("all-minilm-l6-v2") == "cls"
    assert backbone_sentence_pooling(tiny_gemma_dir) == "last"
    assert backbone_sentence_pooling(minilm.source) == "cls"  # a directory: its config decides
    with pytest.raises(ValueError, match="glove-6b-50d.*no sentence token"):
        backbone_sentence_pooling("glove-6b-50d")


def test_untrained_baselines_label_a_causal_lms_last_token_cls(tiny_gemma):
    from bertsent.experiments.sts_tables import baseline_poolings, baseline_scores, layer_pooling_scores

    assert baseline_poolings(tiny_gemma) == {"cls": "last", "mean": "mean", "first_last_avg": "first_last_avg",
                                             "prompt": "prompt"}
    encoder = Encoder(tiny_gemma, show_progress=False)
    datasets = tiny_sts()
    baselines = baseline_scores(encoder, datasets).set_index(["method", "aggregation"])["spearman"]
    assert sorted(set(baselines.index.get_level_values("method"))) == ["cls", "first_last_avg", "mean", "prompt"]
    full, _ = layer_pooling_scores(encoder, datasets, ["last", "mean"], layers=[-1])
    full = full.set_index(["pooling", "aggregation"])["spearman"]
    assert math.isclose(baselines[("cls", "all")], full[("last", "all")])
    assert math.isclose(baselines[("mean", "all")], full[("mean", "all")])


def test_scores_and_readouts_default_to_the_sentence_token(tiny_gemma, minilm):
    from bertsent.experiments.geometry import Readout
    from bertsent.experiments.self_guided import score_encoder

    gemma, bert = Encoder(tiny_gemma, show_progress=False), Encoder(minilm, show_progress=False)
    datasets = tiny_sts()
    assert score_encoder(gemma, datasets).equals(score_encoder(gemma, datasets, "last"))
    assert Readout("tiny-gemma", "cls", gemma).pooling == "last"
    assert Readout("minilm", "cls", bert).pooling == "cls"
    assert Readout("tiny-gemma", "mean", gemma, "mean").pooling == "mean"
