"""A trained encoder + layer-wise attention pooler saved in the sentence-transformers format loads and agrees."""
import numpy as np
import pytest
import torch

from bertsent.models.layer_attention import LayerAttentionModel, encode_sentences
from bertsent.models.layer_attention_export import save_layer_attention_model

SENTENCES = ["A man is playing a guitar.", "Two dogs run on the beach.", "Hi", "The stock market fell sharply today."]


def tiny_model(minilm, pooling="att_both_cls"):
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    encoder = BertModel(BertConfig(vocab_size=minilm.tokenizer.vocab_size, hidden_size=16, num_hidden_layers=2,
                                   num_attention_heads=2, intermediate_size=32, max_position_embeddings=64),
                        add_pooling_layer=False)
    return LayerAttentionModel(encoder, pooling)


@pytest.mark.parametrize("pooling", ["att_both_cls", "att_mean", "cls_mean_last"])
def test_export_round_trips_through_sentence_transformer(tmp_path, minilm, pooling):
    from sentence_transformers import SentenceTransformer

    model = tiny_model(minilm, pooling)
    encoder = model.encoder
    if pooling != "cls_mean_last":
        with torch.no_grad():  # not the initial weights: the saved ones must be the ones read back
            for p in model.pooler.parameters():
                p.add_(torch.randn_like(p) * 0.5)
    ours = encode_sentences(model, minilm.tokenizer, SENTENCES, max_length=32)
    path = save_layer_attention_model(model, minilm.tokenizer, tmp_path / "model", max_length=32)
    assert encoder.config.output_hidden_states is False  # the caller's model is left as it was

    loaded = SentenceTransformer(str(path), device="cpu", trust_remote_code=True)
    theirs = loaded.encode(SENTENCES, convert_to_numpy=True)
    assert theirs.shape == ours.shape == (4, 32 if pooling == "cls_mean_last" else 16)
    np.testing.assert_allclose(theirs, ours, rtol=1e-4, atol=1e-5)
    assert not np.allclose(theirs[0], theirs[1])
    assert loaded.get_embedding_dimension() == ours.shape[1]


def test_loading_without_trust_remote_code_names_the_fix(tmp_path, minilm):
    from sentence_transformers import SentenceTransformer

    path = save_layer_attention_model(tiny_model(minilm), minilm.tokenizer, tmp_path / "model", max_length=32)
    with pytest.raises(ValueError, match="trust_remote_code=True"):
        SentenceTransformer(str(path), device="cpu")


@pytest.mark.parametrize("readout", ["cls_last", "mean_last"])
def test_the_encoder_alone_exports_with_standard_pooling(tmp_path, minilm, readout):
    from sentence_transformers import SentenceTransformer

    model = tiny_model(minilm)
    ours = encode_sentences(model, minilm.tokenizer, SENTENCES, max_length=32, readout=readout)
    path = save_layer_attention_model(model, minilm.tokenizer, tmp_path / "model", max_length=32, readout=readout)
    theirs = SentenceTransformer(str(path), device="cpu").encode(SENTENCES, convert_to_numpy=True)
    np.testing.assert_allclose(theirs, ours, rtol=1e-4, atol=1e-5)


def test_a_causal_mean_readout_is_refused(tmp_path, minilm):
    model = tiny_model(minilm)
    model.causal = True
    with pytest.raises(ValueError, match="readout='cls_last'"):
        save_layer_attention_model(model, minilm.tokenizer, tmp_path / "model", readout="mean_last")
