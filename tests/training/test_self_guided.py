"""SG / SG-OPT model and trainer, on a tiny randomly initialised BERT (seconds, not minutes)."""
import subprocess
import sys

import numpy as np
import pytest
import torch
from torch import nn

from bertsent.data.sts import load_stsb
from bertsent.models import SelfGuidedModel
from bertsent.training import SelfGuidedConfig, train_self_guided
from bertsent.training.self_guided import TrainingDivergedError

SENTENCES = load_stsb("train").subsets["train"].sentences1[:96]
DEV = load_stsb("dev").head(40)


def tiny_config(**overrides):
    base = dict(head_dim=64, batch_size=8, max_length=32, eval_every=3, max_steps=6, learning_rate=1e-3)
    return SelfGuidedConfig(**{**base, **overrides})


def test_frozen_parts_stay_frozen(tiny_bert, tmp_path):
    from bertsent.models import load_encoder

    before = load_encoder(tiny_bert).state_dict()
    train_self_guided(tiny_bert, SENTENCES, DEV, tmp_path, tiny_config(), show_progress=False, keep_checkpoints=True)
    checkpoint = torch.load(tmp_path / "checkpoint.pt", weights_only=False)
    model = SelfGuidedModel(load_encoder(tiny_bert), head_dim=64)
    model.load_state_dict(checkpoint["model"], strict=False)
    for name, value in model.frozen.state_dict().items():
        assert torch.equal(value, before[name]), f"frozen {name} changed"
    for name, value in model.trained.state_dict().items():
        if name.startswith("embeddings."):
            assert torch.equal(value, before[name]), f"trained embedding {name} changed"
    changed = [n for n, v in model.trained.state_dict().items() if not torch.equal(v, before[n])]
    assert any(n.startswith("encoder.layer.") for n in changed)
    assert all(not p.requires_grad for p in model.frozen.parameters())


def test_best_checkpoint_is_reloaded_and_round_trips_through_sentence_transformers(tiny_bert, tmp_path):
    from sentence_transformers import SentenceTransformer
    from transformers import AutoTokenizer

    from bertsent.models import load_encoder

    result = train_self_guided(tiny_bert, SENTENCES, DEV, tmp_path, tiny_config(eval_every=1, max_steps=8),
                               show_progress=False, keep_checkpoints=True)
    scores = [h["dev"] for h in result.history]
    assert result.best_dev == max(scores)
    assert result.best_step == result.history[int(np.argmax(scores))]["step"]
    best = torch.load(tmp_path / "best.pt")
    saved = load_encoder(tmp_path / "model")
    assert saved.state_dict().keys() == best.keys()
    for name, value in saved.state_dict().items():
        assert torch.equal(value, best[name]), name
    # sentence-transformers loads it and gives BERT_T's last-layer [CLS] vectors
    tokenizer = AutoTokenizer.from_pretrained(tmp_path / "model")
    encoded = tokenizer(SENTENCES[:5], padding=True, return_tensors="pt")
    with torch.no_grad():
        ours = saved.eval()(**encoded).last_hidden_state[:, 0].numpy()
    theirs = SentenceTransformer(str(tmp_path / "model"), device="cpu").encode(SENTENCES[:5])
    assert np.abs(ours - theirs).max() < 1e-5


def test_resume_after_interruption_matches_an_uninterrupted_run(tiny_bert, tmp_path):
    config = tiny_config(loss="opt2", frozen_dropout=True, eval_every=2, max_steps=6)  # random view sampling and dropout
    train_self_guided(tiny_bert, SENTENCES, DEV, tmp_path / "straight", config, show_progress=False,
                      keep_checkpoints=True)

    def interrupt(step, *_):
        if step == 4:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train_self_guided(tiny_bert, SENTENCES, DEV, tmp_path / "resumed", config, show_progress=False,
                          callbacks=[interrupt], checkpoint_every=2)
    assert torch.load(tmp_path / "resumed" / "checkpoint.pt", weights_only=False)["state"]["step"] == 2
    train_self_guided(tiny_bert, SENTENCES, DEV, tmp_path / "resumed", config, show_progress=False,
                      checkpoint_every=2, keep_checkpoints=True)
    straight = torch.load(tmp_path / "straight" / "checkpoint.pt", weights_only=False)
    resumed = torch.load(tmp_path / "resumed" / "checkpoint.pt", weights_only=False)
    assert resumed["state"]["step"] == straight["state"]["step"] == 6
    for name, value in straight["model"].items():
        assert torch.allclose(value, resumed["model"][name], atol=1e-6, rtol=0), name


def test_nan_loss_stops_with_a_clear_error(tiny_bert, tmp_path):
    with pytest.raises(TrainingDivergedError, match="lower the learning rate"):
        train_self_guided(tiny_bert, SENTENCES, DEV, tmp_path, tiny_config(temperature=0.0, max_steps=3),
                          show_progress=False)


def test_two_cpu_processes_under_accelerate(tiny_bert, tmp_path):
    accelerate = [sys.executable, "-m", "accelerate.commands.launch", "--num_processes", "2", "--cpu",
                  "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no"]
    done = subprocess.run(accelerate + ["-m", "bertsent.training.self_guided", "--backbone", tiny_bert,
                                        "--output", str(tmp_path), "--train-data", "stsb_train", "--dev-pairs", "40",
                                        "--max-steps", "3", "--eval-every", "3", "--head-dim", "64", "--batch-size", "8",
                                        "--max-length", "32"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "best STS-B dev" in done.stdout
    assert (tmp_path / "model" / "modules.json").is_file()


# The wiring of a training step, observed inside the unchanged trainer: BERT_F without dropout, BERT_T with it,
# every hidden state (layer 0 = embeddings included) reaching the loss, one head reached by both branches.

def record_training_steps(tiny_bert, output_dir, config):
    """Run the trainer unchanged and record, at every training step (not the evaluations): the modes of BERT_F's
    and BERT_T's modules, each branch's output called twice, the model's projected views ``h``, the ``(c, h)``
    the loss receives, and which of the one head's parameters each branch's term reaches."""
    from bertsent.training import self_guided as trainer

    steps, model = [], {}
    loss_fn = trainer.LOSSES[config.loss]

    def after_forward(module, args, output):
        input_ids, attention_mask = args
        with torch.no_grad():
            steps.append({
                "frozen_training": {m.training for m in module.frozen.modules()},
                "trained_dropout_training": {m.training for m in module.trained.modules() if isinstance(m, nn.Dropout)},
                "views": [module.views(input_ids, attention_mask) for _ in range(2)],
                "cls": [module.sentence_vectors(input_ids, attention_mask) for _ in range(2)],
                "h": output[1].detach().clone(),
            })

    def recording_loss(c, h, temperature):
        head = list(model["sg"].head.parameters())
        reached = {}
        for branch, (c_term, h_term) in {"c": (c, h.detach()), "h": (c.detach(), h)}.items():
            term = loss_fn(c_term, h_term, temperature)
            grads = (torch.autograd.grad(term, head, retain_graph=True, allow_unused=True) if term.requires_grad
                     else [None] * len(head))
            reached[branch] = all(g is not None and g.abs().sum() > 0 for g in grads)
        steps[-1].update(loss_h=h.detach().clone(), head_reached=reached)
        return loss_fn(c, h, temperature)

    def hook_once(step, sg_model, tokenizer):  # called at step 0's evaluation, before the first training step
        if not model:
            model["sg"] = sg_model
            sg_model.register_forward_hook(after_forward)

    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(trainer.LOSSES, config.loss, recording_loss)
        train_self_guided(tiny_bert, SENTENCES, DEV, output_dir, config, show_progress=False, callbacks=[hook_once])
    assert len(steps) == config.max_steps
    return steps, model["sg"]


@pytest.fixture(scope="module")
def sg_opt_steps(tiny_bert, tmp_path_factory):
    return record_training_steps(tiny_bert, tmp_path_factory.mktemp("sg-opt"), tiny_config())


def test_frozen_copy_is_deterministic_in_training_steps_and_trained_copy_gets_dropout(sg_opt_steps):
    steps, _ = sg_opt_steps
    for number, step in enumerate(steps):
        assert step["frozen_training"] == {False}, f"step {number}: BERT_F has modules in training mode"
        assert torch.equal(*step["views"]), f"step {number}: BERT_F's views change between two calls (dropout on)"
        assert step["trained_dropout_training"] == {True}, f"step {number}: BERT_T's dropout is off"
        assert not torch.equal(*step["cls"]), f"step {number}: BERT_T's [CLS] is deterministic (no dropout)"


def test_frozen_dropout_option_reaches_the_training_steps(tiny_bert, tmp_path):
    steps, _ = record_training_steps(tiny_bert, tmp_path, tiny_config(frozen_dropout=True, max_steps=2, eval_every=2))
    for step in steps:
        assert not torch.equal(*step["views"])


def test_sg_opt_loss_gets_every_hidden_state_embedding_layer_included(sg_opt_steps):
    steps, model = sg_opt_steps
    states = model.frozen.config.num_hidden_layers + 1  # the embedding layer and every transformer layer
    for number, step in enumerate(steps):
        assert step["views"][0].shape[1] == states, f"step {number}: the model built {step['views'][0].shape[1]} views"
        assert step["loss_h"].shape[1] == states, f"step {number}: the loss got {step['loss_h'].shape[1]} views"
        assert torch.equal(step["loss_h"], step["h"])


def test_sampled_layer_of_sg_includes_the_embedding_layer(tiny_bert, tmp_path):
    steps, model = record_training_steps(tiny_bert, tmp_path, tiny_config(loss="base"))
    states = model.frozen.config.num_hidden_layers + 1
    drawn = []
    for step in steps:
        full, given = step["h"], step["loss_h"]
        assert full.shape[1] == states
        for row in range(given.shape[0]):
            matches = [k for k in range(full.shape[1]) if torch.equal(given[row], full[row, k])]
            assert len(matches) == 1
            drawn.append(matches[0])
    assert set(drawn) == set(range(states)), f"layers drawn over {len(drawn)} draws: {sorted(set(drawn))}"


def test_one_head_gets_gradients_from_both_branches_in_training_steps(sg_opt_steps):
    steps, _ = sg_opt_steps
    for number, step in enumerate(steps):
        assert step["head_reached"] == {"c": True, "h": True}, f"step {number}"


# ---------------------------------------------------------------- a causal LM backbone (tiny random Gemma 3)

GEMMA_SENTENCES = ["a man plays guitar .", "dogs run .", "a man runs", "dogs plays one guitar", "This sentence means",
                   "one word", "a dog", "man in one word .", "guitar man", "a man plays"]


def gemma_dev():
    from bertsent.data.sts import SentencePairs, STSDataset

    return STSDataset("tiny-gemma", "dev", {"one": SentencePairs(
        ["a man plays guitar .", "dogs run .", "one word", "a man", "This sentence"],
        ["a man plays .", "a man plays guitar .", "one word .", "dogs run", "means in one word"],
        np.array([4.5, 1.0, 5.0, 2.0, 0.5]))})


def test_two_steps_on_a_causal_lm_train_the_last_token_and_round_trip_through_sentence_transformers(
        tiny_gemma_dir, tmp_path):
    import json

    from sentence_transformers import SentenceTransformer
    from transformers import AutoTokenizer

    from bertsent.encode.causal_pooling import last_positions
    from bertsent.models import load_encoder

    config = tiny_config(batch_size=4, max_steps=2, eval_every=1, head_dim=24)
    result = train_self_guided(tiny_gemma_dir, GEMMA_SENTENCES, gemma_dev(), tmp_path, config, show_progress=False,
                               keep_checkpoints=True)
    assert result.steps == 2 and all(np.isfinite(h["dev"]) for h in result.history)
    summary = json.loads((tmp_path / "train.json").read_text())
    assert summary["readout"] == "last" and summary["skip_bos"] is True
    assert summary["peak_rss_mib"] > 50  # torch alone takes more
    modules = json.loads((tmp_path / "model" / "modules.json").read_text())
    pooling = json.loads((tmp_path / "model" / modules[1]["path"] / "config.json").read_text())
    assert pooling.get("pooling_mode") == "lasttoken" or pooling.get("pooling_mode_lasttoken") is True, pooling

    # our sentence vector: the saved BERT_T's last-layer last real token, batch right-padded
    sentences = ["a man plays guitar .", "dogs run .", "one word"]
    tokenizer = AutoTokenizer.from_pretrained(tmp_path / "model")
    assert tokenizer.padding_side == "right"
    saved = load_encoder(tmp_path / "model").eval()
    batch = tokenizer(sentences, padding=True, return_tensors="pt")
    with torch.no_grad():
        hidden = saved(**batch).last_hidden_state
    ours = hidden[torch.arange(len(sentences)), last_positions(batch["attention_mask"])].numpy()
    for row, sentence in enumerate(sentences):  # the same as each sentence alone: padding never read
        with torch.no_grad():
            alone = saved(**tokenizer(sentence, return_tensors="pt")).last_hidden_state[0, -1].numpy()
        assert np.abs(ours[row] - alone).max() < 1e-5, sentence
    theirs = SentenceTransformer(str(tmp_path / "model"), device="cpu").encode(sentences)
    assert np.abs(ours - theirs).max() < 1e-5
    # the steps moved the trained copy's layers, not its (shared, frozen) embedding table
    start = load_encoder(tiny_gemma_dir)
    trained = torch.load(tmp_path / "checkpoint.pt", weights_only=False)["model"]
    assert not torch.equal(start.layers[0].mlp.up_proj.weight, trained["trained.layers.0.mlp.up_proj.weight"])
    assert not any("embed_tokens" in name for name in trained)
    assert torch.equal(start.embed_tokens.weight, saved.embed_tokens.weight)


def test_a_finished_run_keeps_only_its_model_and_is_not_trained_again(tiny_bert, tmp_path, monkeypatch):
    from bertsent.training import self_guided

    first = train_self_guided(tiny_bert, SENTENCES, DEV, tmp_path, tiny_config(), show_progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model", "train.json"]  # no checkpoint.pt, no best.pt

    def no_training(*_, **__):
        raise AssertionError("a finished run was trained again")

    monkeypatch.setattr(self_guided, "train_loop", no_training)
    again = train_self_guided(tiny_bert, SENTENCES, DEV, tmp_path, tiny_config(), show_progress=False)
    assert (again.best_step, again.best_dev, again.steps) == (first.best_step, first.best_dev, first.steps)
    with pytest.raises(ValueError, match="another configuration"):
        train_self_guided(tiny_bert, SENTENCES, DEV, tmp_path, tiny_config(temperature=0.05), show_progress=False)
