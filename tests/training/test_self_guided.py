"""SG / SG-OPT model and trainer, on a tiny randomly initialised BERT (seconds, not minutes)."""
import subprocess
import sys

import numpy as np
import pytest
import torch

from bertsent.data.sts import load_stsb
from bertsent.models import SelfGuidedModel
from bertsent.training import SelfGuidedConfig, train_self_guided
from bertsent.training.self_guided import TrainingDivergedError

SENTENCES = load_stsb("train").subsets["train"].sentences1[:96]
DEV = load_stsb("dev").head(40)


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory, minilm):
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(vocab_size=minilm.tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64, max_position_embeddings=64)
    path = tmp_path_factory.mktemp("tiny-bert")
    BertModel(config, add_pooling_layer=False).save_pretrained(path)
    minilm.tokenizer.save_pretrained(path)
    return str(path)


def tiny_config(**overrides):
    base = dict(head_dim=64, batch_size=8, max_length=32, eval_every=3, max_steps=6, learning_rate=1e-3)
    return SelfGuidedConfig(**{**base, **overrides})


def test_frozen_parts_stay_frozen(tiny_bert, tmp_path):
    from bertsent.models import load_encoder

    before = load_encoder(tiny_bert).state_dict()
    train_self_guided(tiny_bert, SENTENCES, DEV, tmp_path, tiny_config(), show_progress=False)
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
                               show_progress=False)
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
    train_self_guided(tiny_bert, SENTENCES, DEV, tmp_path / "straight", config, show_progress=False)

    def interrupt(step, *_):
        if step == 4:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train_self_guided(tiny_bert, SENTENCES, DEV, tmp_path / "resumed", config, show_progress=False,
                          callbacks=[interrupt], checkpoint_every=2)
    assert torch.load(tmp_path / "resumed" / "checkpoint.pt", weights_only=False)["state"]["step"] == 2
    train_self_guided(tiny_bert, SENTENCES, DEV, tmp_path / "resumed", config, show_progress=False,
                      checkpoint_every=2)
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
