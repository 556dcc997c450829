import json
import time
import types

import pytest

from bertsent.experiments.cost import inference_claims, inference_times, median_seconds, training_cost


def test_median_seconds_measures_the_call():
    assert 0.02 <= median_seconds(lambda: time.sleep(0.025), repeats=3, warmup=0) < 0.5
    with pytest.raises(ValueError, match="repeats"):
        median_seconds(lambda: None, repeats=0)


def test_inference_times_gives_ratios_to_the_peer():
    calls = []
    readouts = {"fast": lambda s: calls.append("fast"), "slow": lambda s: (time.sleep(0.03), calls.append("slow"))}
    table = inference_times(readouts, ["a", "b"], peer="fast", repeats=2).set_index("readout")
    assert table.loc["fast", "ratio_to_peer"] == 1.0
    assert table.loc["slow", "ratio_to_peer"] > 1.0
    assert calls == ["fast", "slow"] * 3  # warm-up, then interleaved repeats
    assert table.loc["fast", "ratio_sd"] == 0.0  # the peer against itself, repeat by repeat
    assert table.loc["slow", "ratio_sd"] >= 0.0
    with pytest.raises(ValueError, match="peer"):
        inference_times(readouts, ["a"], peer="mean")


def test_training_cost_reads_a_finished_run(tmp_path):
    (tmp_path / "train.json").write_text(json.dumps(
        {"backbone": "b", "config": {"loss": "opt3"}, "sentences": 100, "step": 7, "seconds": 14.0}))
    assert training_cost(tmp_path) == {"backbone": "b", "loss": "opt3", "sentences": 100, "steps": 7,
                                       "seconds": 14.0, "seconds_per_step": 2.0, "threads": None}
    (tmp_path / "train.json").write_text(json.dumps(
        {"backbone": "b", "config": {"loss": "opt3"}, "sentences": 100, "step": 7, "seconds": 14.0, "torch_threads": 2}))
    assert training_cost(tmp_path)["threads"] == 2


class _FakeEncoder:
    """Records what it encodes and returns pooled vectors as the encoder does: ``vectors[pooling][layer]``."""

    def __init__(self, name, calls, sentence_pooling="cls"):
        self.name, self.calls = name, calls
        self.backbone = types.SimpleNamespace(sentence_pooling=sentence_pooling)  # "last": a causal LM

    def encode(self, sentences, poolings):
        self.calls.append((self.name, tuple(sentences), tuple(poolings)))
        return types.SimpleNamespace(vectors={p: [None, [len(s) for s in sentences]] for p in poolings})


def test_timing_readouts_embed_with_the_right_model_and_pooling():
    from bertsent.experiments.cost import timing_readouts

    calls = []
    untrained, trained = _FakeEncoder("untrained", calls), _FakeEncoder("trained", calls)
    whitening = types.SimpleNamespace(transform=lambda vectors: [2 * v for v in vectors])
    readouts = timing_readouts(untrained, whitening)
    assert list(readouts) == ["mean", "cls", "whitening"]
    assert readouts["whitening"](["ab", "c"]) == [4, 2]  # the last layer's mean vectors, transformed
    readouts["cls"](["x"])
    assert calls == [("untrained", ("ab", "c"), ("mean",)), ("untrained", ("x",), ("cls",))]
    with_trained = timing_readouts(untrained, whitening, trained)
    assert list(with_trained) == ["mean", "cls", "whitening", "sg_opt"]
    with_trained["sg_opt"](["y"])
    assert calls[-1] == ("trained", ("y",), ("cls",))


def test_timing_readouts_read_a_causal_lms_last_token_as_cls():
    from bertsent.experiments.cost import timing_readouts

    calls = []
    untrained, trained = _FakeEncoder("untrained", calls, "last"), _FakeEncoder("trained", calls, "last")
    readouts = timing_readouts(untrained, types.SimpleNamespace(transform=lambda v: v), trained)
    readouts["cls"](["x"])
    readouts["sg_opt"](["y"])
    assert calls == [("untrained", ("x",), ("last",)), ("trained", ("y",), ("last",))]


def test_inference_claims_weigh_each_ratio_by_its_spread_over_repeats():
    import pandas as pd

    from bertsent.report.reported import sg_opt_cost_table

    rows = [("mean", 1.0, 0.0), ("whitening", 1.05, 0.02), ("sg_opt", 0.70, 0.03)]
    inference = pd.DataFrame([{"backbone": "m", "readout": r, "ratio_to_peer": q, "ratio_sd": sd, "repeats": 4}
                              for r, q, sd in rows])
    claims = inference_claims(inference, sg_opt_cost_table()).set_index("claim")
    faster = claims.loc["sg_opt faster than mean (% of mean's time)"]
    assert faster["our_effect"] == pytest.approx(30.0)
    assert faster["paper_effect"] == pytest.approx(100 * (1 - 10.51 / 13.94))
    from bertsent.report.claims import t_quantile

    assert faster["tolerance"] == pytest.approx(100 * t_quantile(3) * 0.03 / 2)  # t at 3 df x SE over 4 repeats
    assert faster["verdict"] == "reproduced"
    slower = claims.loc["post-processing slower than sg_opt (% of mean's time)"]
    assert slower["our_effect"] == pytest.approx(35.0)
    assert slower["tolerance"] == pytest.approx(100 * t_quantile(3) * (0.02 ** 2 + 0.03 ** 2) ** 0.5 / 2)
    assert slower["verdict"] == "direction only"  # 35 of the paper's 129
    one_repeat = inference.assign(ratio_sd=float("nan"), repeats=1)
    assert set(inference_claims(one_repeat, sg_opt_cost_table())["verdict"]) == {"noise not measured"}
    assert inference_claims(inference[inference["readout"] != "sg_opt"], sg_opt_cost_table()).empty
