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


def constructed_step(a, b, processes=1, weight=0.5, gate=True, objective=None):
    model = Constructed()
    w = model.bert.weight[0]
    ce, term = w @ torch.tensor(a), w @ torch.tensor(b)
    losses = {"ce": ce, "contrastive": term, "loss": ce + weight * term}
    accelerator = SimpleNamespace(num_processes=processes, scaler=None, backward=lambda loss: loss.backward())
    objective = objective or ContrastiveObjective(AclConfig(weight=weight, gradient_gate=gate))
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


@pytest.mark.parametrize("processes", [1, 2])
def test_a_sparser_angle_measures_every_nth_step_and_leaves_the_update_as_it_was(processes):
    objective = ContrastiveObjective(AclConfig(gradient_gate=False, angle_every=2))
    logged = []
    for _ in range(3):
        grad, objective, _ = constructed_step([1.0, 0.0], [-1.0, 0.1], processes, objective=objective)
        assert grad == pytest.approx([0.5, 0.05])  # CE + lambda * term, measured or not
        logged.append(dict(objective.last))
    assert ["angle" in row for row in logged] == [True, False, True]
    assert len(objective.angles) == 2 and objective.calls == [3]
    assert "acl_angle_every" not in ContrastiveObjective(AclConfig()).describe()  # the keys stored before it
    assert ContrastiveObjective(AclConfig(gradient_gate=False, angle_every=3)).describe()["acl_angle_every"] == 3


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
    with pytest.raises(ValueError, match="angle_every=1 with gradient_gate=True"):
        AclConfig(angle_every=2)
    with pytest.raises(ValueError, match="whole number >= 1"):
        AclConfig(gradient_gate=False, angle_every=0)


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


# --- how the trainers wire the losses (issue 37: each test below fails with one wiring mistake put back) -------

class TwoPart(torch.nn.Module):
    """An encoder vector w and a classifier weight v: CE = w . a + v c, contrastive = w . b + v d."""

    def __init__(self):
        super().__init__()
        self.bert = torch.nn.Linear(2, 1, bias=False)
        self.classifier = torch.nn.Linear(1, 1, bias=False)


@pytest.mark.parametrize("processes", [1, 2])
def test_the_gradient_angle_is_measured_on_the_encoder_only(processes):
    """Encoder gradients 45 degrees apart, classifier gradients opposed: the default angle (the encoder's) is 45
    and the term is kept; over every parameter it would be above 90 and dropped."""
    a, b, c, d = [1.0, 0.0], [1.0, 1.0], 1.0, -5.0
    every = math.degrees(math.acos((1 * 1 + 0 * 1 + c * d) / (math.sqrt(1 + c * c) * math.sqrt(2 + d * d))))
    assert every > 90
    for config, expected in [(AclConfig(), 45.0), (AclConfig(angle_parameters="encoder"), 45.0),
                             (AclConfig(angle_parameters="all"), every)]:
        model = TwoPart()
        w, v = model.bert.weight[0], model.classifier.weight[0, 0]
        ce, term = w @ torch.tensor(a) + v * c, w @ torch.tensor(b) + v * d
        losses = {"ce": ce, "contrastive": term, "loss": ce + config.weight * term}
        accelerator = SimpleNamespace(num_processes=processes, scaler=None, backward=lambda loss: loss.backward())
        objective = ContrastiveObjective(config)
        objective.backward(SimpleNamespace(accelerator=accelerator), model, losses)
        assert objective.last["angle"] == pytest.approx(expected, abs=1e-4), \
            f"angle_parameters={config.angle_parameters!r} measured {objective.last['angle']:.2f} degrees, " \
            f"expected {expected:.2f} (45: the encoder's gradients; {every:.2f}: every parameter's)"
        assert objective.last["dropped"] == (expected > 90)


def head_model(tmp_path, left_to_right: bool):
    """A tiny BERT classifier ([CLS] -> pooler -> dropout -> linear) or a left-to-right one (last token ->
    dropout -> linear), with its head's dropout at 0.5."""
    from transformers import BertConfig, BertModel

    from bertsent.models.classifiers import sequence_classifier

    torch.manual_seed(0)
    config = BertConfig(vocab_size=60, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=32, hidden_dropout_prob=0.5,
                        classifier_dropout=0.5, is_decoder=left_to_right)
    BertModel(config, add_pooling_layer=not left_to_right).save_pretrained(tmp_path)
    return sequence_classifier(str(tmp_path))


@pytest.mark.parametrize("left_to_right", [False, True])
def test_acl_reads_the_representation_before_the_heads_dropout_in_training(tmp_path, monkeypatch, left_to_right):
    """In training mode (the encoder held in eval mode so that it is deterministic), h is the pooled state the
    classifier's dropout receives, not what comes out of it."""
    import bertsent.training.aligned_contrastive as acl
    from bertsent.models.classifiers import LastTokenClassifier

    model = head_model(tmp_path, left_to_right)
    assert isinstance(model, LastTokenClassifier) == left_to_right
    model.train()
    model.bert.eval()
    ids = torch.randint(1, 60, (6, 7), generator=torch.Generator().manual_seed(0))
    mask = torch.ones_like(ids)
    mask[0, 4:] = 0
    batch = {"input_ids": ids, "attention_mask": mask, "labels": torch.tensor([0, 1, 0, 1, 1, 0])}
    seen = []
    original = acl.acl_embed_loss
    monkeypatch.setattr(acl, "acl_embed_loss", lambda f, y, l, t: seen.append(f) or original(f, y, l, t))
    torch.manual_seed(1)
    ContrastiveObjective(AclConfig()).loss(model, batch)
    with torch.no_grad():
        if left_to_right:
            states = model.bert(input_ids=ids, attention_mask=mask, use_cache=False).last_hidden_state
            expected = states[torch.arange(len(ids)), mask.sum(1) - 1]
        else:
            expected = model.bert(input_ids=ids, attention_mask=mask).pooler_output
    features, = seen
    assert features.shape == expected.shape
    assert torch.allclose(features, expected, atol=1e-6), \
        "ACL's h is not the representation the head's dropout receives (taken after the dropout?)"
    torch.manual_seed(2)
    first = model(**batch).logits
    assert not torch.allclose(model(**batch).logits, first), "the head has no active dropout: the test shows nothing"


@pytest.fixture(scope="module")
def three_exit_path(tmp_path_factory):
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("three-exits")
    BertModel(BertConfig(vocab_size=100, hidden_size=16, num_hidden_layers=3, num_attention_heads=2,
                         intermediate_size=32, max_position_embeddings=32),
              add_pooling_layer=False).save_pretrained(path)
    return str(path)


EXIT_BATCH = {"input_ids": torch.randint(1, 100, (6, 7), generator=torch.Generator().manual_seed(0)),
              "attention_mask": torch.ones(6, 7, dtype=torch.long), "labels": torch.tensor([0, 1, 2, 0, 1, 2])}


def three_exit_model(path):
    """A 3-exit model in eval mode (the objective's forward pass and the test's give the same features), its
    classifiers drawn large so that the exits disagree and the guidance terms are far from zero."""
    from bertsent.models.multi_exit import MultiExitClassifier

    torch.manual_seed(1)
    model = MultiExitClassifier(path, num_labels=3).eval()
    with torch.no_grad():
        for head in model.exits:
            head.classifier.weight.normal_(0.0, 3.0)
    return model


def guided(monkeypatch, model, mode):
    """The objective's losses and the acl_cl_loss calls it made: (losses, [(args, kwargs)]), and the model's output."""
    import bertsent.training.aligned_contrastive as acl

    calls = []
    original = acl.acl_cl_loss
    monkeypatch.setattr(acl, "acl_cl_loss", lambda *args, **kwargs: calls.append((args, kwargs))
                        or original(*args, **kwargs))
    config = MultiExitConfig(mode=mode)
    losses = MultiExitObjective(config).loss(model, EXIT_BATCH)
    with torch.no_grad():
        output = model(**EXIT_BATCH)
    return losses, calls, output, config


def which_exit(model, weight):
    matches = [l + 1 for l, head in enumerate(model.exits) if head.classifier.weight is weight]
    return matches[0] if matches else None


def expected_acl_cl(model, output, config):
    """ACL-CL's guide as the method defines it: mean over the shallow exits l of L_CL(h^l, l^l; h^L, l^L)."""
    from bertsent.losses import acl_cl_loss

    features, last = output.exit_features, model.num_exits - 1
    return torch.stack([acl_cl_loss(features[l], model.exits[l].classifier.weight, features[last],
                                    model.exits[last].classifier.weight, EXIT_BATCH["labels"], config.temperature)
                        for l in range(last)]).mean()


def test_acl_cl_pairs_each_shallow_exit_with_its_own_label_embeddings(three_exit_path, monkeypatch):
    model = three_exit_model(three_exit_path)
    losses, calls, output, config = guided(monkeypatch, model, "acl_cl")
    for l, (args, _) in enumerate(calls[:model.num_exits - 1]):
        assert torch.allclose(args[0], output.exit_features[l], atol=1e-6), f"call {l + 1}: student is not exit {l + 1}"
        assert args[1] is model.exits[l].classifier.weight, \
            f"exit {l + 1}'s student label embeddings are exit {which_exit(model, args[1])}'s classifier rows"
    assert losses["guide"].item() == pytest.approx(expected_acl_cl(model, output, config).item(), rel=1e-5)


def test_acl_cl_is_guided_by_the_last_exit(three_exit_path, monkeypatch):
    model = three_exit_model(three_exit_path)
    losses, calls, output, config = guided(monkeypatch, model, "acl_cl")
    last = model.num_exits - 1
    assert calls, "ACL-CL made no contrastive call"
    for l, (args, _) in enumerate(calls[:last]):
        assert torch.allclose(args[2], output.exit_features[last], atol=1e-6), \
            f"exit {l + 1}'s teacher features are not the last exit's"
        assert args[3] is model.exits[last].classifier.weight, \
            f"exit {l + 1}'s teacher label embeddings are exit {which_exit(model, args[3])}'s, not the last exit's"
    assert losses["guide"].item() == pytest.approx(expected_acl_cl(model, output, config).item(), rel=1e-5)


def kd_term(student, teacher):
    """KL(softmax(teacher) || softmax(student)) by hand, batch mean (T = 1)."""
    p = torch.softmax(teacher, dim=-1)
    return (p * (torch.log_softmax(teacher, dim=-1) - torch.log_softmax(student, dim=-1))).sum(-1).mean()


@pytest.mark.parametrize("mode", ["acl_cl", "kd"])
def test_the_guide_covers_the_shallow_exits_only(three_exit_path, monkeypatch, mode):
    """The guide is the mean over exits 1..L-1; the last exit is not guided by itself."""
    model = three_exit_model(three_exit_path)
    losses, calls, output, config = guided(monkeypatch, model, mode)
    last = model.num_exits - 1
    if mode == "acl_cl":
        students = [next(l for l in range(model.num_exits) if torch.allclose(args[0], output.exit_features[l]))
                    for args, _ in calls]
        assert students == list(range(last)), f"ACL-CL guides exits {[l + 1 for l in students]}, not 1..{last}"
        expected = expected_acl_cl(model, output, config)
    else:
        expected = torch.stack([kd_term(output.exit_logits[l], output.exit_logits[last]) for l in range(last)]).mean()
    assert losses["guide"].item() == pytest.approx(expected.item(), rel=1e-5), \
        f"{mode}'s guide is not the mean over the {last} shallow exits"
    assert losses["loss"].item() == pytest.approx((losses["ce"] + config.weight * losses["guide"]).item(), rel=1e-6)


def test_kd_distils_the_last_exit_into_the_shallow_ones(three_exit_path, monkeypatch):
    """KL(p_last || p_l): the last exit is the teacher; its head gets no gradient from the guide."""
    model = three_exit_model(three_exit_path)
    losses, _, output, _ = guided(monkeypatch, model, "kd")
    last = model.num_exits - 1
    logits = output.exit_logits
    teacher_to_student = torch.stack([kd_term(logits[l], logits[last]) for l in range(last)]).mean()
    student_to_teacher = torch.stack([kd_term(logits[last], logits[l]) for l in range(last)]).mean()
    assert abs(teacher_to_student - student_to_teacher) > 0.01  # the two directions differ here
    assert losses["guide"].item() == pytest.approx(teacher_to_student.item(), rel=1e-5), \
        f"KD guide {losses['guide'].item():.4f}: KL(p_l || p_last) is {student_to_teacher.item():.4f}, " \
        f"KL(p_last || p_l) is {teacher_to_student.item():.4f}"
    head = model.exits[last]
    grads = torch.autograd.grad(losses["guide"], [model.exits[0].classifier.weight, head.classifier.weight,
                                                  head.pooler.weight], allow_unused=True)
    assert grads[0] is not None and grads[0].abs().sum() > 0, "the guide does not reach the first exit"
    assert all(g is None or g.abs().sum() == 0 for g in grads[1:]), "the guide pulls the last exit (the teacher)"


@pytest.mark.parametrize("acl, measured", [({}, 10), ({"gradient_gate": False, "angle_every": 3}, 4)])
def test_an_acl_run_interrupted_by_ctrl_c_resumes_and_ends_with_the_uninterrupted_numbers(tiny_bert, tmp_path,
                                                                                           monkeypatch, capsys, acl,
                                                                                           measured):
    """A KeyboardInterrupt in the middle of step 5 (after the checkpoint of step 4, checkpoints after every step
    here): the call again resumes from step 4 and ends with the same weights, gradient angles, dropped steps and
    history as a run never interrupted."""
    from bertsent.training.glue import GlueMethod
    from .test_glue import RESUMABLE, _with_weights, assert_same_run

    config = GlueConfig(**RESUMABLE)
    straight_history, resumed_history = [], []
    straight = finetune_glue(tiny_bert, "RTE", config, history=straight_history, run_dir=tmp_path / "straight",
                             objective=_with_weights(ContrastiveObjective, AclConfig(**acl)))
    batches = GlueMethod.batches

    def interrupted(self, step):
        if step == 4:
            raise KeyboardInterrupt
        return batches(self, step)

    monkeypatch.setattr(GlueMethod, "batches", interrupted)
    with pytest.raises(KeyboardInterrupt):
        finetune_glue(tiny_bert, "RTE", config, history=[], run_dir=tmp_path / "split", checkpoint_minutes=0,
                      objective=_with_weights(ContrastiveObjective, AclConfig(**acl)))
    monkeypatch.setattr(GlueMethod, "batches", batches)
    capsys.readouterr()
    resumed = finetune_glue(tiny_bert, "RTE", config, history=resumed_history, run_dir=tmp_path / "split",
                            checkpoint_minutes=0, objective=_with_weights(ContrastiveObjective, AclConfig(**acl)))
    assert "resuming split from step 4 (checkpoint" in capsys.readouterr().err
    assert resumed["measured_steps"] == measured and straight["angle_mean"] is not None
    assert_same_run(straight, resumed)
    assert resumed_history == straight_history  # every step's angle, CE and contrastive term, and the running loss


def test_a_diagnosing_run_adds_the_final_models_decisions_and_keeps_other_runs_keys(tiny_bert):
    plain = ContrastiveObjective(AclConfig(loss="scl", gradient_gate=False))
    diagnosing = ContrastiveObjective(AclConfig(loss="scl", gradient_gate=False, diagnose=True))
    assert "acl_diagnose" not in plain.describe() and diagnosing.describe()["acl_diagnose"] is True
    result = finetune_glue(tiny_bert, "RTE", GlueConfig(**SMALL), objective=diagnosing)
    train, dev = result["diagnosis"]["train"], result["diagnosis"]["dev"]
    assert train["examples"] == SMALL["max_train_examples"] and dev["examples"] == result["dev_examples"]
    assert dev["score"] == pytest.approx(result["accuracy"])  # the final model, scored as the run scores it
    assert dev["best_threshold_score"] >= dev["score"] and sum(dev["predicted_share"]) == pytest.approx(1.0)
    assert "diagnosis" not in finetune_glue(tiny_bert, "RTE", GlueConfig(**SMALL), objective=plain)
