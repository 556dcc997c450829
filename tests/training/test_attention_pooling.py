"""The layer-wise attention pooling trainer: its batches, its two dropout views, a short run and its outputs."""
import json

import numpy as np
import pytest
import torch

from bertsent.training.attention_pooling import (
    AttentionPoolingConfig,
    dropout_views,
    epoch_batches,
    train_attention_pooling,
)

from tests.toy_nli import DEV, TRIPLETS

SENTENCES = TRIPLETS.anchors + TRIPLETS.positives


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


# --- how the trainer wires the losses (issue 37: each test below fails with one wiring mistake put back) --------

class RecordingTokenizer:
    """Stands in for a tokenizer: each text gets its own fixed row of 6 token ids (no padding), and every call's
    texts are recorded."""

    def __init__(self):
        self.calls = []

    def __call__(self, texts, **kwargs):
        import zlib

        from transformers import BatchEncoding

        self.calls.append(list(texts))
        ids = torch.stack([torch.randint(1, 60, (6,), generator=torch.Generator().manual_seed(zlib.crc32(t.encode())))
                           for t in texts])
        return BatchEncoding({"input_ids": ids, "attention_mask": torch.ones_like(ids)})


def pooling_method(config, triplets=TRIPLETS, sentences=None):
    from types import SimpleNamespace

    from transformers import BertConfig, BertModel

    from bertsent.models.layer_attention import LayerAttentionModel
    from bertsent.training.attention_pooling import AttentionPoolingMethod

    torch.manual_seed(0)
    encoder = BertModel(BertConfig(vocab_size=60, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                   intermediate_size=32, max_position_embeddings=32), add_pooling_layer=False)
    model = LayerAttentionModel(encoder, config.pooling)
    method = AttentionPoolingMethod(model, RecordingTokenizer(), config, triplets, sentences, None, steps_per_epoch=2)
    method.accelerator = SimpleNamespace(device=torch.device("cpu"), num_processes=1, process_index=0)
    return method, model


def test_supervised_training_contrasts_each_anchor_with_its_hard_negative():
    """A step's batch is (anchors, entailments, contradictions) and its loss is the supervised InfoNCE with the
    contradictions as hard negatives (here with the release's weight 1 on each anchor's own)."""
    from bertsent.losses.attention_pooling import supervised_infonce_loss

    config = AttentionPoolingConfig(batch_size=3, hard_negative_weight=1.0)
    method, model = pooling_method(config)
    model.eval()  # deterministic: the loss can be recomputed here
    batch = method.batches(0)
    rows = epoch_batches(len(TRIPLETS), 3, config.seed, 0)[0]
    texts = ([TRIPLETS.anchors[i] for i in rows] + [TRIPLETS.positives[i] for i in rows]
             + [TRIPLETS.negatives[i] for i in rows])
    assert method.tokenizer.calls == [texts], "the triplet batch is not anchors + entailments + contradictions"
    losses = method.loss(model, batch)
    with torch.no_grad():
        anchor, positive, negative = (model(**method.tokenizer(part)) for part in (texts[:3], texts[3:6], texts[6:]))
        expected = supervised_infonce_loss(anchor, positive, negative, config.temperature, 1.0)
        without = supervised_infonce_loss(anchor, positive, None, config.temperature)
    assert abs(expected - without) > 1e-3  # the hard negatives change the loss here
    assert losses["supervised"].item() == pytest.approx(expected.item(), rel=1e-5), \
        f"supervised loss {losses['supervised'].item():.5f}: with the hard negatives it is {expected.item():.5f}, " \
        f"without them {without.item():.5f}"
    assert losses["loss"] is losses["supervised"]


def test_the_hybrid_objective_weighs_the_unsupervised_term():
    """hybrid: L = L_sup + unsupervised_weight * L_unsup (here 0.25), both terms from the same step."""
    config = AttentionPoolingConfig(objective="hybrid", batch_size=3, unsupervised_weight=0.25)
    method, model = pooling_method(config, sentences=SENTENCES)
    model.train()
    batch = method.batches(0)
    assert set(batch) == {"triplets", "sentences"}
    losses = method.loss(model, batch)
    supervised, unsupervised = losses["supervised"].item(), losses["unsupervised"].item()
    assert unsupervised > 1e-3
    assert losses["loss"].item() == pytest.approx(supervised + 0.25 * unsupervised, rel=1e-6), \
        f"hybrid loss {losses['loss'].item():.5f}: L_sup + 0.25 L_unsup is {supervised + 0.25 * unsupervised:.5f}, " \
        f"L_sup + L_unsup {supervised + unsupervised:.5f}"
