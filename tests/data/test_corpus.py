"""The pre-training corpus (``bertsent.data.corpus``): documents, sentences, the held-out split, clear errors."""
import lzma

import numpy as np
import pytest

from bertsent.data.corpus import (
    CorpusChecksumError, CorpusNotFoundError, corpus_file, corpus_root, held_out_documents, iter_documents,
    split_sentences,
)


def test_corpus_documents_are_separated_by_blank_lines(tmp_path):
    path = tmp_path / "tiny.txt.xz"
    with lzma.open(path, "wt", encoding="utf-8") as handle:
        handle.write("First doc, para one.\nPara two.\n\nSecond doc.\n\n\nThird doc.\n")
    assert list(iter_documents(path)) == [["First doc, para one.", "Para two."], ["Second doc."], ["Third doc."]]


def test_sentence_split():
    assert split_sentences('He said "Go." Then he left. Why? 3 cats came.') == [
        'He said "Go."', "Then he left.", "Why?", "3 cats came."]
    assert split_sentences("no end mark here") == ["no end mark here"]


def test_held_out_documents_are_one_percent_and_at_least_two():
    flags = held_out_documents(np.arange(10_000))
    assert flags.sum() == 100
    few = held_out_documents(np.array([57, 3, 99, 12, 45, 78, 31]))
    assert few.sum() == 2 and few[1] and few[3]


def test_missing_or_damaged_corpus_gives_a_clear_error(tmp_path, monkeypatch):
    with pytest.raises(CorpusNotFoundError, match="BERTSENT_CORPUS"):
        corpus_root(tmp_path)
    (tmp_path / "enwiki-2018.txt.xz").write_bytes(b"not the corpus")
    with pytest.raises(CorpusChecksumError, match="sha256"):
        corpus_file("enwiki-2018.txt.xz", tmp_path)
    with pytest.raises(ValueError, match="Unknown corpus file"):
        corpus_file("books.txt", tmp_path)
