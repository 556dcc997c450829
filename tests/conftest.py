import os

# No model hub is reachable where these tests run; fail fast instead of retrying downloads.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# `make test` runs the tests in one process per core (pytest-xdist): one thread each, or two workers' PyTorch
# thread pools would share 2 cores four ways (measured here: training about 2.5x slower oversubscribed)
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = "1"

import pytest


# The words the tiny Gemma's tokenizer knows (one token each; anything else is <unk>).
WORDS = ["This", "sentence", ":", '"', "means", "in", "one", "word", "a", "man", "plays", "guitar", "dogs", "run", "."]


def word_tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {token: i for i, token in enumerate(["<pad>", "<eos>", "<bos>", "<unk>"] + WORDS)}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()])
    core.post_processor = processors.TemplateProcessing(single="<bos> $A", special_tokens=[("<bos>", 2)])
    # left padding on purpose: the backbone must switch it to the right (the GGUF tokenizer also comes left-padded)
    return PreTrainedTokenizerFast(tokenizer_object=core, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>",
                                   unk_token="<unk>", padding_side="left")


@pytest.fixture(scope="module")
def tiny_gemma():
    """A tiny random Gemma 3 (3 layers, 16-d) with a word-level tokenizer over :data:`WORDS` that adds BOS, as a
    :class:`~bertsent.encode.backbones.CausalBackbone` (no real weights)."""
    import torch
    from transformers import Gemma3TextConfig, Gemma3TextModel

    from bertsent.encode.backbones import CausalBackbone

    torch.manual_seed(0)
    config = Gemma3TextConfig(vocab_size=4 + len(WORDS), hidden_size=16, intermediate_size=32, num_hidden_layers=3,
                              num_attention_heads=2, num_key_value_heads=1, head_dim=8, sliding_window=4,
                              layer_types=["sliding_attention", "sliding_attention", "full_attention"],
                              max_position_embeddings=64, pad_token_id=0, bos_token_id=2, eos_token_id=1)
    model = Gemma3TextModel(config).eval()
    return CausalBackbone.from_loaded("tiny-gemma", word_tokenizer(), model)


@pytest.fixture(scope="module")
def tiny_gemma_dir(tiny_gemma, tmp_path_factory):
    """:func:`tiny_gemma` saved with ``save_pretrained`` (model and tokenizer): a causal checkpoint directory whose
    tokenizer pads on the left, as the GGUF one does (whoever loads it must switch to right padding)."""
    import json

    path = tmp_path_factory.mktemp("tiny-gemma")
    tiny_gemma.model.save_pretrained(path)
    tiny_gemma.tokenizer.save_pretrained(path)
    settings = json.loads((path / "tokenizer_config.json").read_text())
    (path / "tokenizer_config.json").write_text(json.dumps({**settings, "padding_side": "left"}))
    return str(path)


@pytest.fixture(scope="session")
def minilm():
    from bertsent.encode.backbones import load_backbone

    return load_backbone("all-minilm-l6-v2")


def pytest_addoption(parser):
    parser.addoption("--update-smoke-fixtures", action="store_true", default=False,
                     help="rewrite tests/fixtures/smoke_results from this run's smoke outputs (tests/test_book.py)")


@pytest.fixture
def library_copy(tmp_path, monkeypatch):
    """A copy of lib/ that fingerprints and run keys read instead of the real one (edit it freely)."""
    import shutil

    from bertsent import versions
    from bertsent.paths import REPO_ROOT

    copy = tmp_path / "lib"
    shutil.copytree(REPO_ROOT / "lib" / "bertsent", copy / "bertsent", ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(versions, "LIBRARY_DIR", copy)
    return copy / "bertsent"


# the longest tests (5-55 s each; the rest take under 15 s, most under 1 s)
LONG_TESTS = ("test_smoke_run", "test_smoke_run_passes_on_an_unseen_kind_of_cpu",
              "test_two_processes_share_each_step_and_keep_one_schedule",
              "test_two_cpu_processes_under_accelerate")


def pytest_collection_modifyitems(config, items):
    """The longest tests first, the rest in their usual order: `make test`'s workers each start on a contiguous
    chunk of this order and steal from the end of each other's queue, so a long test left near the end would keep
    one core busy while the other waits."""
    items.sort(key=lambda item: getattr(item, "originalname", item.name) not in LONG_TESTS)
