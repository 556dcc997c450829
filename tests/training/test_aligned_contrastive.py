"""ACL fine-tuning: the gradient angle on hand-made gradients, ACL-Grad's drop rule, the GLUE objectives for 2 steps."""
import math
from types import SimpleNamespace

import pytest
import torch

from bertsent.training.aligned_contrastive import (AclConfig, ContrastiveObjective, MultiExitConfig,
                                                   MultiExitObjective, gated_combination, gradient_angle,
                                                   logit_distillation)
from bertsent.training.glue import GlueConfig, finetune_glue


def test_gradient_angle_on_hand_made_gradients():
    assert gradient_angle([torch.tensor([1.0, 0.0])], [torch.tensor([0.0, 2.0])]) == pytest.approx(90.0)
    assert gradient_angle([torch.tensor([1.0, 1.0])], [torch.tensor([-3.0, -3.0])]) == pytest.approx(180.0)
    assert gradient_angle([torch.tensor([1.0, 1.0])], [torch.tensor([2.0, 2.0])]) == pytest.approx(0.0, abs=1e-6)
    assert gradient_angle([torch.tensor([1.0, 0.0])], [torch.tensor([1.0, 1.0])]) == pytest.approx(45.0)
    # several tensors are one flattened vector; a missing gradient is zeros: (1, 0 | 1) vs (0, 1 | 0) -> 90,
    # (1 | 1) vs (1 | -1) -> 90, (1 | 0) vs (1 | None) -> 0
    assert gradient_angle([torch.tensor([1.0, 0.0]), torch.tensor([1.0])],
                          [torch.tensor([1.0, 1.0]), torch.tensor([-1.0])]) == pytest.approx(90.0)
    assert gradient_angle([torch.tensor([1.0]), torch.tensor([3.0])],
                          [torch.tensor([1.0]), None]) == pytest.approx(math.degrees(math.acos(1 / math.sqrt(10))))
    assert math.isnan(gradient_angle([torch.tensor([1.0])], [torch.tensor([0.0])]))
    with pytest.raises(ValueError, match="same parameter list"):
        gradient_angle([torch.tensor([1.0])], [])


def test_the_drop_rule_is_strictly_above_the_threshold():
    assert gated_combination(90.001, 90.0, True) and not gated_combination(90.0, 90.0, True)
    assert not gated_combination(120.0, 90.0, False) and not gated_combination(math.nan, 90.0, True)


class Constructed(torch.nn.Module):
    """A "classifier" whose encoder is one vector w: CE = w . a, contrastive = w . b (gradients a and b)."""

    def __init__(self):
        super().__init__()
        self.bert = torch.nn.Linear(2, 1, bias=False)
        self.classifier = torch.nn.Linear(1, 1, bias=False)


def constructed_step(a, b, processes=1, weight=0.5, gate=True):
    model = Constructed()
    w = model.bert.weight[0]
    ce, term = w @ torch.tensor(a), w @ torch.tensor(b)
    losses = {"ce": ce, "contrastive": term, "loss": ce + weight * term}
    accelerator = SimpleNamespace(num_processes=processes, scaler=None, backward=lambda loss: loss.backward())
    objective = ContrastiveObjective(AclConfig(weight=weight, gradient_gate=gate))
    objective.backward(SimpleNamespace(accelerator=accelerator), model, losses)
    return model.bert.weight.grad[0].tolist(), objective, losses


@pytest.mark.parametrize("processes", [1, 2])
def test_acl_grad_drops_the_term_exactly_above_90_degrees(processes):
    grad, objective, losses = constructed_step([1.0, 0.0], [-1.0, 0.1], processes)  # about 174 degrees
    assert grad == pytest.approx([1.0, 0.0])
    assert objective.last["dropped"] and objective.last["angle"] == pytest.approx(174.29, abs=0.01)
    assert losses["loss"] is losses["ce"]  # the running loss shows what was backpropagated
    grad, objective, _ = constructed_step([1.0, 0.0], [-0.1, 1.0], processes)  # about 95.7 degrees
    assert grad == pytest.approx([1.0, 0.0]) and objective.last["dropped"]
    grad, objective, _ = constructed_step([1.0, 0.0], [0.1, 1.0], processes)  # about 84.3 degrees: kept
    assert grad == pytest.approx([1.05, 0.5]) and not objective.last["dropped"]
    grad, objective, _ = constructed_step([1.0, 0.0], [-1.0, 0.1], processes, gate=False)  # measured, not gated
    assert grad == pytest.approx([0.5, 0.05]) and not objective.last["dropped"]
    assert objective.last["angle"] > 90


def test_logit_distillation_is_zero_on_the_teacher_and_positive_elsewhere():
    teacher = torch.tensor([[2.0, -1.0], [0.0, 1.0]])
    assert logit_distillation(teacher.clone(), teacher).item() == pytest.approx(0.0, abs=1e-7)
    assert logit_distillation(-teacher, teacher).item() > 0.1


def test_bad_configurations_are_refused():
    with pytest.raises(ValueError, match="loss must be one of"):
        AclConfig(loss="supcon")
    with pytest.raises(ValueError, match="gradient_gate=False"):
        AclConfig(loss="ce")
    with pytest.raises(ValueError, match="mode must be one of"):
        MultiExitConfig(mode="pabee")


SMALL = dict(max_train_examples=16, batch_size=8, epochs=1, max_length=32, learning_rate=1e-3)


def test_acl_embed_reads_the_pooled_cls_state_and_the_classifier_rows(tiny_bert):
    from bertsent.models.classifiers import sequence_classifier
    from transformers import AutoTokenizer

    model = sequence_classifier(tiny_bert).eval()
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    batch = {**tokenizer(["a cat", "the dog sat", "no", "yes it is"], padding=True, return_tensors="pt"),
             "labels": torch.tensor([0, 1, 0, 1])}
    seen = []
    import bertsent.training.aligned_contrastive as acl

    original = acl.acl_embed_loss
    acl.acl_embed_loss = lambda f, y, l, t: seen.append((f, l)) or original(f, y, l, t)
    try:
        losses = ContrastiveObjective(AclConfig()).loss(model, batch)
    finally:
        acl.acl_embed_loss = original
    features, label_embeddings = seen[0]
    pooled = model.bert(**{k: v for k, v in batch.items() if k != "labels"}).pooler_output
    assert torch.allclose(features, pooled, atol=1e-6)
    assert label_embeddings.data_ptr() == model.classifier.weight.data_ptr()
    gradient, = torch.autograd.grad(losses["contrastive"], model.classifier.weight)
    assert gradient.abs().sum() > 0
    assert losses["loss"].item() == pytest.approx((losses["ce"] + 0.5 * losses["contrastive"]).item())


@pytest.mark.parametrize("loss, gate", [("acl_embed", True), ("scl", False)])
def test_glue_fine_tuning_with_acl_runs_two_steps_and_logs_the_angle(tiny_bert, loss, gate):
    history = []
    result = finetune_glue(tiny_bert, "RTE", GlueConfig(**SMALL), history=history,
                           objective=ContrastiveObjective(AclConfig(loss=loss, gradient_gate=gate)))
    steps = [row for row in history if row["step"] > 0]
    assert [row["step"] for row in steps] == [1, 2]
    assert all(0.0 <= row["angle"] <= 180.0 and isinstance(row["dropped"], bool) for row in steps)
    assert all(row["dropped"] == (gate and row["angle"] > 90) for row in steps)
    assert result["objective"] == (loss + ("+grad" if gate else "")) and result["measured_steps"] == 2
    assert result["acl_loss"] == loss and result["dropped_steps"] == sum(row["dropped"] for row in steps)
    assert 0.0 <= result["accuracy"] <= 100.0


def test_the_recipe_is_unchanged_without_an_objective(tiny_bert):
    history = []
    result = finetune_glue(tiny_bert, "RTE", GlueConfig(**SMALL), history=history)
    assert "objective" not in result and set(history[-1]) == {"step", "loss", "dev"}


@pytest.mark.parametrize("mode", ["acl_cl", "kd"])
def test_multi_exit_fine_tuning_runs_two_steps_and_scores_every_exit(tiny_bert, mode):
    objective = MultiExitObjective(MultiExitConfig(mode=mode, exit_thresholds=(0.0, 10.0)))
    result = finetune_glue(tiny_bert, "MRPC", GlueConfig(**SMALL), objective=objective)
    assert len(result["exit_metrics"]) == 2 and set(result["exit_metrics"][0]) == {"accuracy", "f1"}
    assert result["exit_metrics"][-1]["accuracy"] == pytest.approx(result["accuracy"])
    never, always = result["exit_curve"]
    assert never["mean_layers"] == 2.0 and never["accuracy"] == pytest.approx(result["accuracy"])
    assert always["mean_layers"] == 1.0 and always["accuracy"] == pytest.approx(result["exit_metrics"][0]["accuracy"])
    assert objective.model is not None and objective.model.num_exits == 2


def test_a_roberta_style_head_is_read_before_its_last_linear_layer(tmp_path):
    from transformers import AutoModelForSequenceClassification, MPNetConfig, MPNetModel

    torch.manual_seed(0)
    MPNetModel(MPNetConfig(vocab_size=50, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                           intermediate_size=16, max_position_embeddings=20)).save_pretrained(tmp_path)
    model = AutoModelForSequenceClassification.from_pretrained(tmp_path, num_labels=2).eval()
    batch = {"input_ids": torch.randint(3, 50, (4, 5)), "attention_mask": torch.ones(4, 5, dtype=torch.long),
             "labels": torch.tensor([0, 1, 1, 0])}
    losses = ContrastiveObjective(AclConfig()).loss(model, batch)
    gradient, = torch.autograd.grad(losses["contrastive"], model.classifier.out_proj.weight)
    assert gradient.abs().sum() > 0 and torch.isfinite(losses["loss"])


def test_a_model_without_a_known_head_is_refused():
    model = torch.nn.Module()
    model.classifier = torch.nn.Sequential(torch.nn.Linear(2, 2))
    with pytest.raises(ValueError, match="neither BERT's classifier head"):
        ContrastiveObjective(AclConfig()).loss(model, {"labels": torch.tensor([0])})


def test_a_reused_objective_logs_each_fine_tuning_on_its_own(tiny_bert):
    objective = ContrastiveObjective(AclConfig(loss="scl", gradient_gate=False))
    first = finetune_glue(tiny_bert, "RTE", GlueConfig(**SMALL), objective=objective)
    second = finetune_glue(tiny_bert, "RTE", GlueConfig(**SMALL), objective=objective)
    assert first["measured_steps"] == second["measured_steps"] == 2
    assert first["angle_mean"] == pytest.approx(second["angle_mean"])  # same seed, same run
