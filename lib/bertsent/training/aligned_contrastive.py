"""Aligned contrastive learning (ACL; Zhu, arXiv 2602.03563) for GLUE fine-tuning, as objectives of
:func:`bertsent.training.glue.finetune_glue` (the recipe's data, schedule, dev metric and cache are unchanged).

- :class:`ContrastiveObjective`: CE + lambda * a contrastive term on the [CLS] representations: SCL (Gunel et
  al. 2021) or ACL-Embed (label embeddings as members), with ACL-Grad (``gradient_gate``): each step, the angle
  between the gradients of CE and of the contrastive term on the shared encoder's parameters; above
  ``angle_threshold`` (90 degrees) the step uses CE alone. The angle is logged every step (history column
  ``angle``, ``dropped``), also without the gate when ``measure_angle`` (the motivating figure).
- :class:`MultiExitObjective`: a :class:`~bertsent.models.multi_exit.MultiExitClassifier` trained with the exits'
  mean CE ("joint"), plus lambda * logit KD from the last exit ("kd") or plus lambda * ACL-CL ("acl_cl").

Choices the paper leaves open, made here:

- h = the pooled [CLS] state the classifier reads, before the classifier's dropout (BERT: the input of
  ``model.dropout``, i.e. the pooler's output; RoBERTa / MPNet heads: tanh(dense(x)), the input of ``out_proj``;
  a multi-exit model: the exit's pooled state). l_k = row k of the last linear layer's weight.
- CE + lambda * L (not Gunel et al.'s (1 - lambda) CE + lambda L); lambda = 0.5, tau = 0.3 by default.
- The angle is measured on the encoder's parameters (``model.base_model`` / ``model.bert``: embeddings, layers,
  pooler), not the classifier: the parameters both terms share in every variant (``angle_parameters="all"``:
  every trainable parameter, the classifier included). All of them are flattened into one vector; a parameter
  that one term does not reach counts as a zero gradient there. An undefined angle (a zero gradient) is NaN
  and never drops the term.
- The gradients are those of the step's unclipped terms (before the loop's norm clipping, which applies to
  what is then backpropagated). The two measurement passes are extra backward passes: a step costs about
  three of them under several processes and two under one (the combined gradient is then assembled from the
  two, g_CE + lambda g_L, instead of a third pass).
- Multi-exit: every exit's CE has weight 1/L (the mean); the guidance terms are averaged over the L - 1
  shallow exits; KD is T^2 KL(softmax(z_L / T) || softmax(z_l / T)) with T = 1 and the last exit detached;
  ACL-CL detaches the last exit too (:func:`bertsent.losses.acl_cl_loss`).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import torch
import torch.nn.functional as F

from ..losses.aligned_contrastive import acl_cl_loss, acl_embed_loss, scl_loss
from ..models.multi_exit import MultiExitClassifier, early_exit_decisions
from ..evaluation.glue import decision_diagnosis
from .glue import GlueObjective, TASK_METRICS, _batches, glue_logits, glue_metrics

METHOD_VERSION = 1  # bump when the maths changes

CONTRASTIVE_LOSSES = ("ce", "scl", "acl_embed")
MULTI_EXIT_MODES = ("joint", "kd", "acl_cl")


def gradient_angle(first, second) -> float:
    """The angle in degrees between two gradients, each a sequence of tensors (None: zeros of the other's shape)
    flattened into one vector; NaN when either is zero."""
    first, second = list(first), list(second)
    if len(first) != len(second):
        raise ValueError(f"the two gradients have {len(first)} and {len(second)} tensors. Fix: take both over the "
                         f"same parameter list.")
    dot = norm_first = norm_second = 0.0
    for a, b in zip(first, second):
        if a is None or b is None:
            present = a if a is not None else b
            if present is not None:
                squared = float(present.double().pow(2).sum())
                norm_first, norm_second = (norm_first + squared, norm_second) if a is not None else (
                    norm_first, norm_second + squared)
            continue
        a, b = a.double(), b.double()
        dot += float((a * b).sum())
        norm_first += float(a.pow(2).sum())
        norm_second += float(b.pow(2).sum())
    if norm_first == 0.0 or norm_second == 0.0:
        return math.nan
    cosine = max(-1.0, min(1.0, dot / math.sqrt(norm_first * norm_second)))
    return math.degrees(math.acos(cosine))


def encoder_parameters(model) -> list[torch.Tensor]:
    """The trainable parameters of the classifier's encoder (``model.base_model`` or ``model.bert``)."""
    model = getattr(model, "module", model)
    encoder = getattr(model, "bert", None) or getattr(model, "base_model", None)
    if encoder is None or encoder is model:
        raise ValueError(f"{type(model).__name__} has no encoder attribute (bert / base_model) to measure the "
                         f"gradient angle on. Fix: use angle_parameters='all'.")
    return [p for p in encoder.parameters() if p.requires_grad]


def gated_combination(angle: float, threshold: float, gate: bool) -> bool:
    """ACL-Grad's rule: True (drop the contrastive term this step) when the gate is on and angle > threshold."""
    return bool(gate) and not math.isnan(angle) and angle > threshold


@dataclass
class AclConfig:
    """ACL fine-tuning on top of :class:`~bertsent.training.glue.GlueConfig` (see the module docstring)."""
    loss: str = "acl_embed"  # "ce" (the recipe, angle not measurable), "scl" (CE + SCL), "acl_embed"
    weight: float = 0.5  # lambda
    temperature: float = 0.3
    gradient_gate: bool = True  # ACL-Grad
    angle_threshold: float = 90.0  # gamma_thres, degrees
    angle_parameters: str = "encoder"  # "encoder" or "all"
    measure_angle: bool = True  # log the angle (every step when the gate is on)
    # without the gate: measure (two backward passes) on every angle_every-th step only, and take one backward pass of
    # CE + lambda * term on the others: the same update, at about half the cost (1 keeps a run's key as it was)
    angle_every: int = 1
    # the result adds evaluation.glue.decision_diagnosis of the final model on the training set and on dev (a
    # forward pass over each): whether a run at the majority class lost the classes or misplaced its threshold
    diagnose: bool = False

    def __post_init__(self):
        if self.loss not in CONTRASTIVE_LOSSES:
            raise ValueError(f"AclConfig.loss must be one of {CONTRASTIVE_LOSSES}, not {self.loss!r}.")
        if self.angle_parameters not in ("encoder", "all"):
            raise ValueError(f"AclConfig.angle_parameters must be 'encoder' or 'all', not {self.angle_parameters!r}.")
        if self.loss == "ce" and self.gradient_gate:
            raise ValueError("ACL-Grad gates a contrastive term, and loss='ce' has none. Fix: gradient_gate=False, "
                             "or loss='scl' / 'acl_embed'.")
        if int(self.angle_every) != self.angle_every or self.angle_every < 1:
            raise ValueError(f"AclConfig.angle_every must be a whole number >= 1, not {self.angle_every!r}.")
        if self.gradient_gate and self.angle_every != 1:
            raise ValueError("ACL-Grad decides every step from that step's angle, so it measures every step. Fix: "
                             "angle_every=1 with gradient_gate=True (sparser measurement is for ungated runs).")
        if self.temperature <= 0 or self.weight < 0:
            raise ValueError(f"temperature must be > 0 and weight >= 0; got {self.temperature} and {self.weight}.")


def _head(model):
    """Where h is read and the linear layer whose weight rows are the l_k: (module, hook kind, linear).

    BERT's head (``model.dropout`` then ``model.classifier``, a linear layer): h is the dropout's input, the
    pooled [CLS] state. RoBERTa's / MPNet's head (``model.classifier.dense``, tanh, dropout, ``out_proj``): h is
    tanh of the dense layer's output, the state that ``out_proj`` reads before its dropout."""
    model = getattr(model, "module", model)
    dropout, classifier = getattr(model, "dropout", None), getattr(model, "classifier", None)
    if isinstance(dropout, torch.nn.Dropout) and isinstance(classifier, torch.nn.Linear):
        return dropout, "input", classifier
    dense, out_proj = getattr(classifier, "dense", None), getattr(classifier, "out_proj", None)
    if isinstance(dense, torch.nn.Linear) and isinstance(out_proj, torch.nn.Linear):
        return dense, "tanh_output", out_proj
    raise ValueError(f"{type(model).__name__} has neither BERT's classifier head (model.dropout + linear "
                     f"model.classifier) nor RoBERTa's (classifier.dense + classifier.out_proj); ACL reads h before "
                     f"the last linear layer and l_k in its weight. Fix: use a sequence classifier of that form "
                     f"(bertsent.models.classifiers.sequence_classifier).")


class ContrastiveObjective(GlueObjective):
    """CE + lambda * (SCL or ACL-Embed) with optional ACL-Grad (:class:`AclConfig`)."""

    log_every_step = True

    def __init__(self, config: AclConfig | None = None):
        self.config = config or AclConfig()
        self.name = self.config.loss + ("+grad" if self.config.gradient_gate else "")
        self.last: dict = {}
        self.angles: list[float] = []
        self.dropped: list[bool] = []
        self.calls: list[int] = [0]  # backward passes so far (a list: the checkpointed log state refers to it)

    def describe(self) -> dict:
        # angle_every = 1 (every step) and diagnose off are left out, so the runs stored before these fields existed
        # keep their keys
        return {f"acl_{key}": value for key, value in asdict(self.config).items()
                if not (key == "angle_every" and value == 1) and not (key == "diagnose" and not value)}

    def log_state(self) -> dict:
        return {"angles": self.angles, "dropped": self.dropped, "calls": self.calls}

    def load_log_state(self, state: dict) -> None:
        # the checkpoint's own lists: the loop state keeps referring to what the next steps append to
        self.angles, self.dropped = state.setdefault("angles", []), state.setdefault("dropped", [])
        self.calls = state.setdefault("calls", [len(self.angles)])

    def build_model(self, model_path: str, num_labels: int = 2) -> torch.nn.Module:
        self.last, self.angles, self.dropped, self.calls = {}, [], [], [0]  # one fine-tuning's log
        return super().build_model(model_path, num_labels)

    def measures_now(self) -> bool:
        """Whether this backward pass measures the angle: every pass with the gate; without it, the first of every
        ``angle_every`` (none when ``measure_angle`` is off)."""
        config = self.config
        return config.loss != "ce" and (config.gradient_gate or
                                        (config.measure_angle and self.calls[0] % config.angle_every == 0))

    def loss(self, model, batch) -> dict:
        module, kind, classifier = _head(model)
        captured = []
        if kind == "input":
            handle = module.register_forward_pre_hook(lambda _, inputs: captured.append(inputs[0]))
        else:
            handle = module.register_forward_hook(lambda _, inputs, output: captured.append(torch.tanh(output)))
        try:
            output = model(**batch)
        finally:
            handle.remove()
        ce = output.loss
        if self.config.loss == "ce":
            return {"loss": ce, "ce": ce}
        features, labels = captured[-1], batch["labels"]
        if self.config.loss == "scl":
            term = scl_loss(features, labels, self.config.temperature)
        else:
            term = acl_embed_loss(features, labels, classifier.weight, self.config.temperature)
        return {"loss": ce + self.config.weight * term, "ce": ce, "contrastive": term}

    def backward(self, method, model, losses: dict) -> None:
        config = self.config
        measure = self.measures_now()
        self.calls[0] += 1
        if not measure:
            term = losses.get("contrastive")
            self.last = {"ce": float(losses["ce"].detach()),
                         "contrastive": math.nan if term is None else float(term.detach())}
            method.accelerator.backward(losses["loss"])
            return
        trainable = [p for p in model.parameters() if p.requires_grad]
        single = method.accelerator.num_processes == 1 and getattr(method.accelerator, "scaler", None) is None
        measured = trainable if single else (trainable if config.angle_parameters == "all" else encoder_parameters(model))
        g_ce = torch.autograd.grad(losses["ce"], measured, retain_graph=True, allow_unused=True)
        g_term = torch.autograd.grad(losses["contrastive"], measured, retain_graph=not single, allow_unused=True)
        if config.angle_parameters == "encoder":
            chosen = {id(p) for p in encoder_parameters(model)}
            pairs = [(a, b) for p, a, b in zip(measured, g_ce, g_term) if id(p) in chosen]
        else:
            pairs = list(zip(g_ce, g_term))
        angle = gradient_angle([a for a, _ in pairs], [b for _, b in pairs])
        drop = gated_combination(angle, config.angle_threshold, config.gradient_gate)
        if drop:
            losses["loss"] = losses["ce"]
        self.angles.append(angle)
        self.dropped.append(drop)
        self.last = {"ce": float(losses["ce"].detach()), "contrastive": float(losses["contrastive"].detach()),
                     "angle": angle, "dropped": drop}
        if single:  # the combined gradient from the two measured ones (no third backward pass)
            for parameter, a, b in zip(measured, g_ce, g_term):
                grad = a if drop or b is None else (b * config.weight if a is None else a + config.weight * b)
                if grad is not None:
                    parameter.grad = grad if parameter.grad is None else parameter.grad + grad
        else:
            method.accelerator.backward(losses["loss"])

    def step_log(self) -> dict:
        return dict(self.last)

    def result(self, method, model) -> dict:
        angles = np.array(self.angles, dtype=float)
        measured = angles[~np.isnan(angles)] if len(angles) else angles
        result = {"angle_mean": float(measured.mean()) if len(measured) else None,
                  "angle_above_threshold_share": float((measured > self.config.angle_threshold).mean())
                  if len(measured) else None,
                  "dropped_steps": int(sum(self.dropped)), "measured_steps": len(self.angles)}
        if self.config.diagnose:
            result["diagnosis"] = {
                split: decision_diagnosis(method.task, frame["label"].to_numpy(),
                                          glue_logits(model, frame, method.tokenizer, method.config.max_length))
                for split, frame in (("train", method.train), ("dev", method.dev))}
        return result


def logit_distillation(student: torch.Tensor, teacher: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """T^2 KL(softmax(teacher / T) || softmax(student / T)), batch mean; the teacher's logits are detached."""
    teacher = F.log_softmax(teacher.detach() / temperature, dim=-1)
    student = F.log_softmax(student / temperature, dim=-1)
    return F.kl_div(student, teacher, log_target=True, reduction="batchmean") * temperature ** 2


@dataclass
class MultiExitConfig:
    mode: str = "acl_cl"  # "joint", "kd", "acl_cl"
    weight: float = 0.5  # lambda of the guidance term (kd, acl_cl)
    temperature: float = 0.3  # ACL-CL's tau
    kd_temperature: float = 1.0
    detach_teacher: bool = True
    exit_thresholds: tuple = (0.0, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7)  # entropy (nats) for the result's curve

    def __post_init__(self):
        if self.mode not in MULTI_EXIT_MODES:
            raise ValueError(f"MultiExitConfig.mode must be one of {MULTI_EXIT_MODES}, not {self.mode!r}.")
        self.exit_thresholds = tuple(float(t) for t in self.exit_thresholds)


def exit_logits(model: MultiExitClassifier, frame, tokenizer, max_length: int) -> torch.Tensor:
    """Every exit's logits on every row of ``frame``: (L, N, K), eval mode, no gradient."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    parts = []
    with torch.no_grad():
        for encoded, _ in _batches(frame, tokenizer, 128, max_length):
            parts.append(model(**encoded.to(device)).exit_logits.float().cpu())
    model.train(was_training)
    return torch.cat(parts, dim=1)


class MultiExitObjective(GlueObjective):
    """A multi-exit BERT trained with joint CE, + lambda * logit KD, or + lambda * ACL-CL (:class:`MultiExitConfig`).

    The result holds each exit's dev metrics (``exit_metrics``: one dict per exit) and the early-exit curve
    (``exit_curve``: threshold, mean layers used, the task's metric); ``model`` keeps the trained model.
    """

    def __init__(self, config: MultiExitConfig | None = None):
        self.config = config or MultiExitConfig()
        self.name = f"multi_exit_{self.config.mode}"
        self.model = None
        self.last: dict = {}

    def describe(self) -> dict:
        return {f"exit_{key}": list(value) if isinstance(value, tuple) else value
                for key, value in asdict(self.config).items()}

    def build_model(self, model_path: str, num_labels: int = 2) -> torch.nn.Module:
        self.model = None
        return MultiExitClassifier(model_path, num_labels)

    def loss(self, model, batch) -> dict:
        output = model(**batch)
        losses = {"ce": output.loss}
        logits, features, labels = output.exit_logits, output.exit_features, batch["labels"]
        shallow = range(logits.shape[0] - 1)
        if self.config.mode == "joint" or not len(shallow):
            losses["loss"] = output.loss
            return losses
        if self.config.mode == "kd":
            guide = torch.stack([logit_distillation(logits[l], logits[-1], self.config.kd_temperature) for l in shallow])
        else:
            exits = getattr(model, "module", model).exits
            guide = torch.stack([acl_cl_loss(features[l], exits[l].classifier.weight, features[-1],
                                             exits[-1].classifier.weight, labels, self.config.temperature,
                                             self.config.detach_teacher) for l in shallow])
        losses["guide"] = guide.mean()
        losses["loss"] = output.loss + self.config.weight * losses["guide"]
        return losses

    def result(self, method, model) -> dict:
        self.model = model
        logits = exit_logits(model, method.dev, method.tokenizer, method.config.max_length)
        labels = method.labels_dev
        per_exit = [glue_metrics(method.task, labels, z.argmax(-1).numpy()) for z in logits]
        metric = TASK_METRICS[method.task][1]
        curve = []
        for threshold in self.config.exit_thresholds:
            predictions, layers = early_exit_decisions(logits, threshold)
            curve.append({"threshold": threshold, "mean_layers": float(layers.float().mean()),
                          metric: glue_metrics(method.task, labels, predictions.numpy())[metric]})
        return {"exit_metrics": per_exit, "exit_curve": curve}
