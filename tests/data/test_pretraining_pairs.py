"""BERT's pre-training examples (``bertsent.data.pretraining_pairs``): tokenised shards and next-sentence pairs."""
import numpy as np

from bertsent.data.pretraining_pairs import (
    TokenizedShard, create_instances, tokenize_documents,
)


def synthetic_shard(n_documents=40, seed=0):
    """Documents whose tokens name their document and position: id = 1000 * (doc + 1) + position."""
    rng = np.random.default_rng(seed)
    tokens, sentence_lengths, sizes = [], [], []
    for doc in range(n_documents):
        lengths = rng.integers(3, 30, size=int(rng.integers(2, 25)))
        position = 0
        for length in lengths:
            tokens.extend(1000 * (doc + 1) + position + np.arange(length))
            position += length
            sentence_lengths.append(length)
        sizes.append(len(lengths))
    return TokenizedShard(np.array(tokens, dtype=np.int64), np.concatenate([[0], np.cumsum(sentence_lengths)]),
                          np.concatenate([[0], np.cumsum(sizes)]), np.arange(n_documents))


def test_next_sentence_pairs_are_balanced_and_respect_documents():
    shard = synthetic_shard(200)
    made = create_instances(shard, np.arange(200), max_length=64, seed=3)
    assert len(made) > 500
    assert abs(made.is_next.mean() - 0.5) < 0.05
    for i in range(len(made)):
        a, b, is_next = made.pair(i)
        assert 0 < len(a) and 0 < len(b) and len(a) + len(b) <= 64 - 3
        doc_a, doc_b = set(a // 1000), set(b // 1000)
        assert len(doc_a) == 1 and len(doc_b) == 1  # a segment never crosses a document boundary
        assert np.all(np.diff(a) == 1) and np.all(np.diff(b) == 1)  # contiguous text (truncation trims ends only)
        if is_next:
            assert doc_a == doc_b and b[0] > a[-1]  # the continuation comes after A in the same document
        else:
            assert doc_a != doc_b


def test_tokenized_shard_keeps_sentence_and_document_boundaries(minilm):
    documents = [["One sentence. Two sentences here."], ["Another document.", "With two paragraphs!"]]
    shard = tokenize_documents(documents, minilm.tokenizer)
    assert shard.n_documents == 2
    assert [minilm.tokenizer.decode(s) for s in shard.document(0)] == ["one sentence.", "two sentences here."]
    assert [minilm.tokenizer.decode(s) for s in shard.document(1)] == ["another document.", "with two paragraphs!"]
