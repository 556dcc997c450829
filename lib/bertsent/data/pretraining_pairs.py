"""From documents to BERT's pre-training examples: tokenised shards and next-sentence pairs.

A *tokenised shard* holds every sentence of one corpus file as WordPiece ids (uncased, no special
tokens), with the boundaries of sentences and documents; it is computed once and cached on disk.

An *instance* is one pre-training example before masking: segment A, segment B, and whether B is the
text that really follows A (IsNext, 50%) or a segment of another document (NotNext, 50%); BERT
(Devlin et al. 2019, section 3.1 and appendix A.2). Following BERT's data generation, a document is
cut into chunks of whole sentences that fill ``max_length - 3`` tokens ([CLS] A [SEP] B [SEP]); 10% of
chunks get a shorter random target length, so the model also sees short inputs; A is a random prefix
of the chunk's sentences, B the rest (IsNext) or a random stretch of a random other document (NotNext,
and the sentences not used for A go back into the stream). A pair that is too long loses tokens from
the longer side, at its front or back at random.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..paths import CACHE_DIR
from ..report.io import atomic_savez
from .corpus import (
    CORPUS_FILES,
    corpus_file,
    document_hash,
    held_out_documents,
    verify_corpus,
    iter_documents,
    split_sentences,
)

METHOD_VERSION = 1  # bump when the maths changes

INSTANCE_FORMAT_VERSION = 2


@dataclass
class TokenizedShard:
    """Sentences of one corpus file as WordPiece ids.

    ``tokens``: all ids, concatenated (uint16: the 30,522-entry vocabulary fits);
    ``sentence_starts``: offset of each sentence in ``tokens`` plus a final end offset;
    ``document_starts``: index of each document's first sentence plus a final end index;
    ``document_hashes``: a stable hash per document, which decides the validation documents.
    """
    tokens: np.ndarray
    sentence_starts: np.ndarray
    document_starts: np.ndarray
    document_hashes: np.ndarray

    @property
    def held_out(self) -> np.ndarray:
        return held_out_documents(self.document_hashes)

    @property
    def n_documents(self) -> int:
        return len(self.document_starts) - 1

    def document(self, index: int) -> list[np.ndarray]:
        first, last = self.document_starts[index], self.document_starts[index + 1]
        starts = self.sentence_starts
        return [self.tokens[starts[s]:starts[s + 1]] for s in range(first, last)]


@dataclass
class Instances:
    """Pre-training pairs: ``tokens[starts[i]:starts[i+1]]`` is A followed by B, A has ``a_lengths[i]`` ids."""
    tokens: np.ndarray
    starts: np.ndarray
    a_lengths: np.ndarray
    is_next: np.ndarray

    def __len__(self) -> int:
        return len(self.a_lengths)

    def pair(self, index: int) -> tuple[np.ndarray, np.ndarray, bool]:
        whole = self.tokens[self.starts[index]:self.starts[index + 1]]
        cut = self.a_lengths[index]
        return whole[:cut], whole[cut:], bool(self.is_next[index])

    def n_tokens(self) -> int:
        """Ids in all pairs, plus the three special tokens of each."""
        return int(len(self.tokens) + 3 * len(self))

    @staticmethod
    def concatenate(parts: list["Instances"]) -> "Instances":
        offsets = np.cumsum([0] + [len(p.tokens) for p in parts])
        starts = np.concatenate([p.starts[:-1] + o for p, o in zip(parts, offsets)] + [offsets[-1:]])
        return Instances(np.concatenate([p.tokens for p in parts]), starts.astype(np.int64),
                         np.concatenate([p.a_lengths for p in parts]), np.concatenate([p.is_next for p in parts]))


def tokenize_documents(documents, tokenizer, batch_documents: int = 2000) -> TokenizedShard:
    """Split each document into sentences and tokenise them (no special tokens)."""
    token_blocks, sentence_lengths, document_sizes, hashes = [], [], [], []

    def flush(batch):
        per_document = [[s for paragraph in document for s in split_sentences(paragraph)] for document in batch]
        sentences = [s for document in per_document for s in document]
        ids = tokenizer(sentences, add_special_tokens=False)["input_ids"] if sentences else []
        # a sentence of only characters the tokenizer drops keeps its place, with length 0
        sentence_lengths.extend(len(x) for x in ids)
        token_blocks.append(np.fromiter((t for x in ids for t in x), dtype=np.uint16))
        document_sizes.extend(len(document) for document in per_document)
        hashes.extend(document_hash(document) for document in batch)

    batch = []
    for document in documents:
        batch.append(document)
        if len(batch) == batch_documents:
            flush(batch)
            batch = []
    if batch:
        flush(batch)
    return TokenizedShard(np.concatenate(token_blocks) if token_blocks else np.zeros(0, np.uint16),
                          np.concatenate([[0], np.cumsum(sentence_lengths)]).astype(np.int64),
                          np.concatenate([[0], np.cumsum(document_sizes)]).astype(np.int64),
                          np.array(hashes, dtype=np.int64))


def create_instances(shard: TokenizedShard, documents: np.ndarray, max_length: int = 128, seed: int = 0,
                     short_seq_prob: float = 0.1, next_sentence: bool = True) -> Instances:
    """Next-sentence pairs from the given documents of a shard (see the module docstring).

    ``next_sentence=False`` makes every B the true continuation (the "no NSP" ablation keeps the same
    inputs, only without the NSP loss).
    """
    rng = np.random.default_rng(seed)
    max_tokens = max_length - 3
    documents = [int(d) for d in documents]
    loaded = {d: [s for s in shard.document(d) if len(s)] for d in documents}
    documents = [d for d in documents if loaded[d]]
    if len(documents) < 2 and next_sentence:
        raise ValueError("Next-sentence pairs need at least two non-empty documents.")
    pieces, a_lengths, is_next = [], [], []
    for position, doc in enumerate(documents):
        sentences = loaded[doc]
        target = max_tokens if rng.random() >= short_seq_prob else int(rng.integers(2, max_tokens + 1))
        chunk, chunk_length, i = [], 0, 0
        while i < len(sentences):
            chunk.append(sentences[i])
            chunk_length += len(sentences[i])
            if i == len(sentences) - 1 or chunk_length >= target:
                take_next = (not next_sentence) or rng.random() < 0.5
                if len(chunk) == 1:
                    # one sentence fills the chunk: its two halves make the true-continuation pair
                    whole = chunk[0][:max_tokens]
                    if len(whole) < 2 and take_next:
                        chunk, chunk_length, i = [], 0, i + 1
                        continue
                    cut = int(rng.integers(1, len(whole))) if len(whole) > 1 else 1
                    a, rest = whole[:cut], whole[cut:]
                    a_end = 1
                else:
                    a_end = int(rng.integers(1, len(chunk)))
                    a = np.concatenate(chunk[:a_end])
                    rest = np.concatenate(chunk[a_end:])
                if take_next:
                    b = rest
                else:
                    other = documents[(position + int(rng.integers(1, len(documents)))) % len(documents)]
                    other_sentences = loaded[other]
                    start = int(rng.integers(0, len(other_sentences)))
                    b_parts, b_length = [], 0
                    for sentence in other_sentences[start:]:
                        b_parts.append(sentence)
                        b_length += len(sentence)
                        if b_length >= max(1, target - len(a)):
                            break
                    b = np.concatenate(b_parts)
                    if len(chunk) > 1:
                        i -= len(chunk) - a_end  # the unused sentences are read again
                a, b = _truncate_pair(a, b, max_tokens, rng)
                if len(a) and len(b):
                    pieces.append(np.concatenate([a, b]))
                    a_lengths.append(len(a))
                    is_next.append(take_next)
                target = max_tokens if rng.random() >= short_seq_prob else int(rng.integers(2, max_tokens + 1))
                chunk, chunk_length = [], 0
            i += 1
    tokens = np.concatenate(pieces) if pieces else np.zeros(0, shard.tokens.dtype)
    starts = np.concatenate([[0], np.cumsum([len(p) for p in pieces])]).astype(np.int64)
    return Instances(tokens, starts, np.array(a_lengths, dtype=np.int32), np.array(is_next, dtype=bool))


def _truncate_pair(a: np.ndarray, b: np.ndarray, max_tokens: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """Drop tokens from the longer segment, at its front or back at random, until the pair fits."""
    a_start, a_end, b_start, b_end = 0, len(a), 0, len(b)
    while (a_end - a_start) + (b_end - b_start) > max_tokens:
        front = rng.random() < 0.5
        if a_end - a_start > b_end - b_start:
            a_start, a_end = (a_start + 1, a_end) if front else (a_start, a_end - 1)
        else:
            b_start, b_end = (b_start + 1, b_end) if front else (b_start, b_end - 1)
    return a[a_start:a_end], b[b_start:b_end]


def _vocab_digest(tokenizer) -> str:
    vocab = json.dumps(sorted(tokenizer.get_vocab().items()), ensure_ascii=False)
    return hashlib.sha256(vocab.encode()).hexdigest()[:12]


def tokenized_shard(name: str, tokenizer, corpus_dir=None, cache_dir: Path | None = None) -> TokenizedShard:
    """The tokenised shard of corpus file ``name``, from the cache or computed (and cached) now."""
    cache = Path(cache_dir or CACHE_DIR / "pretraining") / "tokens"
    key = f"{name.split('.')[0]}-{CORPUS_FILES[name][:12]}-{_vocab_digest(tokenizer)}-v{INSTANCE_FORMAT_VERSION}"
    path = cache / f"{key}.npz"
    if not path.is_file():
        source = corpus_file(name, corpus_dir)
        shard = tokenize_documents(iter_documents(source), tokenizer)
        atomic_savez(path, dict(tokens=shard.tokens, sentence_starts=shard.sentence_starts,
                                 document_starts=shard.document_starts, document_hashes=shard.document_hashes))
    with np.load(path) as data:
        return TokenizedShard(data["tokens"], data["sentence_starts"], data["document_starts"], data["document_hashes"])


def shard_instances(name: str, tokenizer, split: str, max_length: int = 128, seed: int = 0,
                    next_sentence: bool = True, corpus_dir=None, cache_dir: Path | None = None) -> Instances:
    """The instances of one corpus file's ``train`` or ``heldout`` documents, cached on disk."""
    if split not in ("train", "heldout"):
        raise ValueError(f"split must be 'train' or 'heldout', not {split!r}")
    cache = Path(cache_dir or CACHE_DIR / "pretraining") / "instances"
    key = (f"{name.split('.')[0]}-{CORPUS_FILES[name][:12]}-{_vocab_digest(tokenizer)}-{split}-L{max_length}"
           f"-s{seed}-{'nsp' if next_sentence else 'contiguous'}-v{INSTANCE_FORMAT_VERSION}")
    path = cache / f"{key}.npz"
    if not path.is_file():
        shard = tokenized_shard(name, tokenizer, corpus_dir, cache_dir)
        wanted = shard.held_out if split == "heldout" else ~shard.held_out
        # a different seed per file and split, so two files never share a random stream
        file_seed = seed * 1000 + list(CORPUS_FILES).index(name) * 2 + (split == "heldout")
        made = create_instances(shard, np.flatnonzero(wanted), max_length, file_seed, next_sentence=next_sentence)
        atomic_savez(path, dict(tokens=made.tokens, starts=made.starts, a_lengths=made.a_lengths, is_next=made.is_next))
    with np.load(path) as data:
        return Instances(data["tokens"], data["starts"], data["a_lengths"], data["is_next"])


def corpus_instances(tokenizer, split: str, files=None, max_length: int = 128, seed: int = 0,
                     next_sentence: bool = True, corpus_dir=None, cache_dir=None) -> Instances:
    """Instances of several corpus files (default: all of them), concatenated."""
    files = list(files or CORPUS_FILES)
    # the files checked (sha256, a share of known words) before any work; once per file while it is unchanged
    verify_corpus(files, corpus_dir, tokenizer.get_vocab())
    return Instances.concatenate([shard_instances(f, tokenizer, split, max_length, seed, next_sentence,
                                                  corpus_dir, cache_dir) for f in files])
