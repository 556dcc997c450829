"""What the methods cost: training time of finished runs and inference time on a benchmark.

Wall times on a shared 2-core machine are noisy, so every inference time is reported beside a ratio to a peer
measured in the same run (the untrained backbone with mean pooling), which is the number to compare.
"""
from __future__ import annotations

import json
import math
import statistics
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import pandas as pd

if TYPE_CHECKING:
    from ..encode.encoder import Encoder
    from ..encode.whitening import Whitening

METHOD_VERSION = 1  # bump when the maths changes


def median_seconds(call: Callable[[], object], repeats: int = 3, warmup: int = 1) -> float:
    """Median wall time of ``call()`` over ``repeats`` runs, after ``warmup`` untimed runs."""
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, not {repeats}")
    for _ in range(warmup):
        call()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def inference_times(readouts: dict[str, Callable[[list[str]], object]], sentences: list[str], peer: str,
                    repeats: int = 3) -> pd.DataFrame:
    """Seconds to embed ``sentences`` with each readout, and the ratio to ``peer`` (one of the readouts).

    The readouts are timed in turn, repeat by repeat, so slow phases of a noisy machine hit all of them alike.
    ``ratio_sd``: the standard deviation over repeats of each repeat's time divided by the peer's in the same repeat
    (NaN with one repeat), the noise :func:`inference_claims` weighs a ratio against.
    """
    if peer not in readouts:
        raise ValueError(f"The peer {peer!r} is not among the readouts {list(readouts)}")
    for embed in readouts.values():
        embed(sentences)  # warm-up: model loading, allocator, thread pools
    times: dict[str, list[float]] = {name: [] for name in readouts}
    for _ in range(repeats):
        for name, embed in readouts.items():
            times[name].append(median_seconds(lambda: embed(sentences), repeats=1, warmup=0))
    seconds = {name: statistics.median(values) for name, values in times.items()}
    # each repeat's ratio to the peer timed in the same repeat: their spread is the noise of the ratio
    ratios = {name: [t / p for t, p in zip(values, times[peer])] for name, values in times.items()}
    return pd.DataFrame([{"readout": name, "seconds": value, "ratio_to_peer": value / seconds[peer],
                          "ratio_sd": statistics.stdev(ratios[name]) if repeats > 1 else float("nan"),
                          "sentences": len(sentences), "repeats": repeats} for name, value in seconds.items()])


def timing_readouts(untrained: Encoder, whitening: Whitening, trained: Encoder | None = None
                     ) -> dict[str, Callable[[list[str]], object]]:
    """The readouts whose inference time is measured, for :func:`inference_times`, in the order they are timed.

    ``mean`` and ``cls``: the untrained backbone's last-layer poolings (encoded by ``untrained``), ``cls`` standing
    for the backbone's sentence token ([CLS]; a causal LM's last token, :func:`~bertsent.encode.causal_pooling.sentence_token_pooling`);
    ``whitening``: its mean vectors transformed by ``whitening`` (fitted beforehand, so fitting is not timed);
    ``sg_opt``, only with a ``trained`` encoder: that model's sentence token. Each embeds the sentences it is
    given, as an evaluation does.
    """
    from ..encode.causal_pooling import sentence_token_pooling

    def mean(sentences):
        return untrained.encode(sentences, ["mean"])

    def cls(sentences):
        return untrained.encode(sentences, [sentence_token_pooling(untrained.backbone)])

    def whitened(sentences):
        return whitening.transform(untrained.encode(sentences, ["mean"]).vectors["mean"][-1])

    readouts = {"mean": mean, "cls": cls, "whitening": whitened}
    if trained is not None:
        def sg_opt(sentences):
            return trained.encode(sentences, [sentence_token_pooling(trained.backbone)])

        readouts["sg_opt"] = sg_opt
    return readouts


def inference_claims(inference: pd.DataFrame, paper: pd.DataFrame) -> pd.DataFrame:
    """The paper's inference-cost claims on each backbone of ``inference`` (:func:`inference_times` rows with a
    ``backbone`` column), in percent of untrained mean pooling's time, against ``paper``
    (:func:`~bertsent.report.reported.sg_opt_cost_table`, BERT-flow's row standing for the post-processing peer):

    - "sg_opt faster than mean": 100 * (1 - SG-OPT's ratio to mean); the paper's 10.51 s against 13.94 s is +24.6;
    - "post-processing slower than sg_opt": 100 * (whitening's ratio - SG-OPT's); the paper's BERT-flow, +129.

    The tolerance is the t quantile (repeats - 1 degrees of freedom) times the SE of the mean of the per-repeat
    ratios (``ratio_sd`` / sqrt(repeats); for the second claim both readouts' spreads added in quadrature). Timing is the machine's, not the method's: the verdict says whether
    this machine measured the paper's difference, on a shared CPU.
    """
    from ..report.claims import Noise, claims_table, judge, t_quantile

    paper_ratio = paper["inference_ratio_to_mean"]
    rows = []
    for backbone, group in inference.groupby("backbone", sort=False):
        readouts = group.set_index("readout")
        if "sg_opt" not in readouts.index:
            continue
        repeats = int(readouts.loc["sg_opt", "repeats"])

        def noise(*names: str) -> Noise:
            spread = math.sqrt(sum(float(readouts.loc[name, "ratio_sd"]) ** 2 for name in names))
            quantile = t_quantile(max(repeats - 1, 1))
            return Noise(100 * quantile * spread / math.sqrt(repeats), f"{repeats} timing repeats",
                         f"t {quantile:.2f} ({max(repeats - 1, 1)} df) x SE of the mean per-repeat time ratio "
                         f"({', '.join(names)} to mean)")

        sg_opt = float(readouts.loc["sg_opt", "ratio_to_peer"])
        rows.append(judge("sg_opt faster than mean (% of mean's time)", 100 * (1 - sg_opt),
                          100 * (1 - float(paper_ratio["sg_opt"])), noise("sg_opt"), backbone=backbone))
        if "whitening" in readouts.index:
            rows.append(judge("post-processing slower than sg_opt (% of mean's time)",
                              100 * (float(readouts.loc["whitening", "ratio_to_peer"]) - sg_opt),
                              100 * (float(paper_ratio["bert_flow"]) - float(paper_ratio["sg_opt"])),
                              noise("whitening", "sg_opt"), backbone=backbone))
    return claims_table(rows)


def training_cost(run_dir: str | Path) -> dict:
    """Steps, wall time and time per step of a finished SG / SG-OPT run (its ``train.json``).

    The time covers the whole run: training steps and the STS-B dev evaluations every 50 steps.
    """
    summary = json.loads((Path(run_dir) / "train.json").read_text())
    steps = summary["step"]
    return {"backbone": summary["backbone"], "loss": summary["config"]["loss"], "sentences": summary["sentences"],
            "steps": steps, "seconds": summary["seconds"], "seconds_per_step": summary["seconds"] / max(steps, 1),
            "threads": summary.get("torch_threads")}  # None: recorded only by runs since it was added
