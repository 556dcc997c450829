"""The layer-wise attention pooling trainer: its batches, its two dropout views, a short run and its outputs."""
import json

import numpy as np
import pytest
import torch

from bertsent.data.nli import Triplets
from bertsent.data.sts import SentencePairs, STSDataset
from bertsent.training.attention_pooling import (
    AttentionPoolingConfig,
    dropout_views,
    epoch_batches,
    train_attention_pooling,
)

TRIPLETS = Triplets(
    ["A man plays a guitar.", "Two dogs run on a beach.", "A woman is cooking dinner.", "Kids play football.",
     "A plane takes off.", "The cat sleeps on the sofa."],
    ["A person plays music.", "Dogs are outside.", "Someone prepares food.", "Children play a sport.",
     "An aircraft leaves.", "An animal rests."],
    ["Nobody is playing.", "The dogs sleep inside.", "The woman is asleep.", "The kids are in class.",
     "The plane is parked.", "The cat is running."])
SENTENCES = TRIPLETS.anchors + TRIPLETS.positives
DEV = STSDataset("stsb", "dev", {"dev": SentencePairs(TRIPLETS.anchors, TRIPLETS.positives,
                                                        np.array([4.5, 3.0, 4.0, 2.0, 1.0, 0.5]))})


def test_epoch_batches_are_seeded_and_drop_a_lone_row():
    assert epoch_batches(7, 3, 0, 0) == epoch_batches(7, 3, 0, 0)
    assert epoch_batches(7, 3, 0, 0) != epoch_batches(7, 3, 0, 1)
    assert [len(b) for b in epoch_batches(7, 3, 0, 0)] == [3, 3]
    assert sorted(i for b in epoch_batches(8, 3, 0, 0) for i in b) == list(range(8))


def test_the_unsupervised_loss_gets_two_different_dropout_views(tiny_bert):
    from bertsent.encode.backbones import load_backbone
    from bertsent.models.layer_attention import LayerAttentionModel

    backbone = load_backbone(tiny_bert)
    model = LayerAttentionModel(backbone.model, "cls_last").train()  # no RReLU: the difference is dropout's
    tokens = backbone.tokenizer(SENTENCES[:4], padding=True, return_tensors="pt")
    view1, view2 = dropout_views(model, tokens)
    assert view1.requires_grad and view2.requires_grad
    assert not torch.allclose(view1, view2)
    model.eval()
    with torch.no_grad():  # without dropout the two passes agree: the difference above is dropout's
        torch.testing.assert_close(model(tokens["input_ids"], tokens["attention_mask"]),
                                   model(tokens["input_ids"], tokens["attention_mask"]))
    with pytest.raises(ValueError, match="model.train"):
        dropout_views(model, tokens)


@pytest.mark.parametrize("objective", ["supervised", "unsupervised", "hybrid"])
def test_a_short_run_saves_a_selected_model_that_loads(tmp_path, tiny_bert, objective):
    from sentence_transformers import SentenceTransformer

    config = AttentionPoolingConfig(objective=objective, batch_size=3, epochs=2, eval_every=2, learning_rate=1e-3,
                                    max_length=16)
    result = train_attention_pooling(tiny_bert, tmp_path / "run", config, triplets=TRIPLETS, sentences=SENTENCES,
                                     dev=DEV, show_progress=False)
    steps = 2 * (12 // 3 if objective == "unsupervised" else 6 // 3)  # epochs x batches of the epoch's data
    assert result.steps == steps and [row["step"] for row in result.history] == list(range(0, steps + 1, 2))
    assert result.best_step in range(0, steps + 1, 2) and np.isfinite(result.best_dev)
    assert all(np.isfinite(row["loss"]) for row in result.history[1:])
    summary = json.loads((tmp_path / "run" / "train.json").read_text())
    assert summary["config"]["objective"] == objective
    assert summary["triplets"] == (0 if objective == "unsupervised" else 6)
    loaded = SentenceTransformer(str(result.model_dir), device="cpu", trust_remote_code=True)
    assert loaded.encode(SENTENCES[:2]).shape == (2, 32)


def test_missing_data_and_bad_options_name_the_fix(tmp_path, tiny_bert):
    with pytest.raises(ValueError, match="nli_triplets"):
        train_attention_pooling(tiny_bert, tmp_path, AttentionPoolingConfig(), sentences=SENTENCES)
    with pytest.raises(ValueError, match="wikipedia_sentences"):
        train_attention_pooling(tiny_bert, tmp_path, AttentionPoolingConfig(objective="hybrid"), triplets=TRIPLETS)
    with pytest.raises(ValueError, match="Known: supervised, unsupervised, hybrid"):
        AttentionPoolingConfig(objective="contrastive")
    with pytest.raises(ValueError, match="Unknown pooling"):
        AttentionPoolingConfig(pooling="max")


def test_the_saved_model_is_the_selected_one(tmp_path, tiny_bert):
    from sentence_transformers import SentenceTransformer

    from bertsent.encode.backbones import load_backbone
    from bertsent.models.layer_attention import LayerAttentionModel, encode_sentences

    config = AttentionPoolingConfig(batch_size=3, epochs=3, eval_every=1, learning_rate=1e-3, max_length=16)
    result = train_attention_pooling(tiny_bert, tmp_path / "run", config, triplets=TRIPLETS, dev=DEV,
                                     show_progress=False)
    backbone = load_backbone(tiny_bert)
    best = LayerAttentionModel(backbone.model)
    best.load_state_dict(torch.load(tmp_path / "run" / "best.pt"))
    ours = encode_sentences(best, backbone.tokenizer, SENTENCES, max_length=16)
    theirs = SentenceTransformer(str(result.model_dir), device="cpu", trust_remote_code=True).encode(SENTENCES)
    np.testing.assert_allclose(theirs, ours, rtol=1e-4, atol=1e-5)
    fresh = encode_sentences(LayerAttentionModel(load_backbone(tiny_bert).model), backbone.tokenizer, SENTENCES,
                             max_length=16)
    assert not np.allclose(fresh, ours, atol=1e-3)  # training changed it


@pytest.mark.parametrize("with_dev", [True, False])
def test_a_finished_run_keeps_its_weights_not_its_optimizer(tmp_path, tiny_bert, with_dev):
    """A finished run keeps best.pt (the selected weights; without dev, the last ones), model/ and train.json: the
    resumable checkpoint (weights and optimizer state) is deleted, and its weights load as the run's model."""
    from bertsent.encode.backbones import load_backbone
    from bertsent.models.layer_attention import LayerAttentionModel, encode_sentences

    config = AttentionPoolingConfig(batch_size=3, epochs=2, eval_every=1, learning_rate=1e-3, max_length=16)
    result = train_attention_pooling(tiny_bert, tmp_path / "run", config, triplets=TRIPLETS,
                                     dev=DEV if with_dev else None, show_progress=False)
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == ["best.pt", "model", "train.json"]
    backbone = load_backbone(tiny_bert)
    kept = LayerAttentionModel(backbone.model)
    kept.load_state_dict(torch.load(tmp_path / "run" / "best.pt"))
    from sentence_transformers import SentenceTransformer

    exported = SentenceTransformer(str(result.model_dir), device="cpu", trust_remote_code=True).encode(SENTENCES)
    np.testing.assert_allclose(exported, encode_sentences(kept, backbone.tokenizer, SENTENCES, max_length=16),
                               rtol=1e-4, atol=1e-5)


def test_a_causal_backbone_reads_its_last_token(tmp_path, tiny_bert):
    from sentence_transformers import SentenceTransformer
    from transformers import AutoModel, AutoTokenizer, Gemma3TextConfig

    from bertsent.encode.backbones import CausalBackbone

    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    model = AutoModel.from_config(Gemma3TextConfig(
        vocab_size=tokenizer.vocab_size, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=1, head_dim=8, max_position_embeddings=64,
        sliding_window=16, layer_types=["sliding_attention", "full_attention"]))
    backbone = CausalBackbone.from_loaded("tiny-causal", tokenizer, model)
    config = AttentionPoolingConfig(batch_size=3, epochs=1, eval_every=1, learning_rate=1e-3, max_length=16)
    result = train_attention_pooling("tiny-causal", tmp_path / "run", config, triplets=TRIPLETS, dev=DEV,
                                     show_progress=False, backbone_object=backbone)
    assert result.steps == 2
    modules = json.loads((result.model_dir / "modules.json").read_text())
    assert modules[-1]["type"].endswith("LayerAttentionPooling")
    pooling_config = json.loads((result.model_dir / modules[-1]["path"] / "config.json").read_text())
    assert pooling_config["causal"] is True
    loaded = SentenceTransformer(str(result.model_dir), device="cpu", trust_remote_code=True)
    # padding on the right, read at the last real token: a sentence's vector does not depend on its batch
    alone = loaded.encode(SENTENCES[:1])
    together = loaded.encode(SENTENCES[:1] + ["A much longer sentence that forces padding of the first one."])
    np.testing.assert_allclose(together[:1], alone, rtol=1e-4, atol=1e-5)
