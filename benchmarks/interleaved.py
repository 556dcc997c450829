"""Timing several set-ups in one process, interleaved, so that a busy machine slows them alike.

Each round runs one step of every set-up, in an order rotated by one each round (no set-up always goes first, when
caches are cold or a neighbour has just finished); the first ``warmup`` rounds are not kept.
"""
import statistics
import time
from typing import Callable

import torch


def interleaved_seconds(names: list[str], step: Callable[[str, int], object], rounds: int,
                        warmup: int = 1, cpu_seconds: dict | None = None) -> dict[str, list[float]]:
    """Seconds of ``step(name, round)`` per name over ``rounds`` kept rounds (after ``warmup`` ones).

    ``cpu_seconds``: a dict that receives the process's CPU seconds of the same steps (name -> list): the work done,
    without the time spent waiting for a core that other processes hold, so less swayed by a busy machine."""
    seconds = {name: [] for name in names}
    cpu = {name: [] for name in names}
    for round_ in range(warmup + rounds):
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            start, start_cpu = time.perf_counter(), time.process_time()
            step(name, round_)
            if round_ >= warmup:
                seconds[name].append(time.perf_counter() - start)
                cpu[name].append(time.process_time() - start_cpu)
    if cpu_seconds is not None:
        cpu_seconds.update(cpu)
    return seconds


def medians(seconds: dict[str, list[float]]) -> dict[str, float]:
    return {name: statistics.median(values) for name, values in seconds.items()}


def training_step(method, model, optimizer, step: int) -> None:
    """One step of a :class:`bertsent.training.loop.Method` as the loop takes it, without its bookkeeping: batch,
    loss, the method's backward, clipping at 1.0, the optimizer's update."""
    losses = method.loss(model, method.batches(step))
    method.backward(model, losses)
    torch.nn.utils.clip_grad_norm_(method.trainable_parameters(model), 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
