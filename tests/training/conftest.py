"""Fixtures shared by the trainers' tests."""
import pytest
import torch


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory, minilm):
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(vocab_size=minilm.tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64, max_position_embeddings=64,
                        hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
    path = tmp_path_factory.mktemp("tiny-bert")
    BertModel(config, add_pooling_layer=False).save_pretrained(path)
    minilm.tokenizer.save_pretrained(path)
    return str(path)
