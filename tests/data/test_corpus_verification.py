"""The pre-training corpus is checked before the first step (``bertsent.data.corpus.verify_corpus``): its sha256
against ``SHA256SUMS`` and the library's list, a share of known word pieces, each file once while it is unchanged;
a garbage corpus stops in one line within seconds."""
import lzma
import os
import random
import subprocess
import sys
import time

import pytest

from bertsent.data import corpus
from bertsent.data.corpus import CorpusChecksumError, CorpusContentError, CorpusNotFoundError, verify_corpus
from bertsent.report.io import sha256_of

NAME = "enwiki-2018.txt.xz"
VOCABULARY = {"the", "cat", "sat", "on", "a", "mat", "and", "dog", "ran"}


@pytest.fixture(autouse=True)
def own_record(tmp_path, monkeypatch):
    monkeypatch.setattr(corpus, "_verified_file", lambda: tmp_path / "verified.json")


def _folder(tmp_path, payload: bytes, listed: bool = True):
    """A corpus folder holding ``payload`` as NAME, accepted by checksum (the library's list patched to it)."""
    folder = tmp_path / "corpus"
    folder.mkdir(exist_ok=True)
    (folder / NAME).write_bytes(payload)
    if listed:
        (folder / "SHA256SUMS").write_text(f"{sha256_of(folder / NAME)}  {NAME}\n")
    return folder


def test_random_bytes_fail_the_checksum_in_one_line_within_seconds(tmp_path):
    folder = _folder(tmp_path, os.urandom(1 << 20), listed=False)
    started = time.time()
    with pytest.raises(CorpusChecksumError) as caught:
        verify_corpus([NAME], folder, VOCABULARY)
    assert time.time() - started < 5
    message = str(caught.value)
    assert "\n" not in message and NAME in message and corpus.CORPUS_FILES[NAME] in message and "Fix:" in message


def test_sha256sums_that_disagree_with_the_library_are_refused(tmp_path):
    folder = _folder(tmp_path, b"whatever")
    with pytest.raises(CorpusChecksumError, match=r"SHA256SUMS lists enwiki-2018.txt.xz with sha256 .* the library "
                                                  r"expects"):
        verify_corpus([NAME], folder)


def test_a_missing_file_is_named(tmp_path):
    folder = _folder(tmp_path, b"x", listed=False)
    with pytest.raises(CorpusNotFoundError, match="eltec-eng-novels.txt.xz is missing"):
        verify_corpus(["eltec-eng-novels.txt.xz", NAME], folder)


def _accept(monkeypatch, folder):
    monkeypatch.setitem(corpus.CORPUS_FILES, NAME, sha256_of(folder / NAME))


def test_the_content_check_refuses_text_of_unknown_words_and_non_xz_bytes(tmp_path, monkeypatch):
    letters = "".join(random.Random(0).choice("abcdefghijklmnopqrstuvwxyz   ") for _ in range(50_000))
    folder = _folder(tmp_path, lzma.compress(letters.encode()))
    _accept(monkeypatch, folder)
    with pytest.raises(CorpusContentError, match=r"only \d+% of its first words are in the tokenizer's vocabulary"):
        verify_corpus([NAME], folder, VOCABULARY)
    folder = _folder(tmp_path, os.urandom(4096))
    _accept(monkeypatch, folder)
    with pytest.raises(CorpusContentError, match="cannot be read as xz-compressed text"):
        verify_corpus([NAME], folder, VOCABULARY)


def test_each_file_is_hashed_once_while_unchanged(tmp_path, monkeypatch):
    folder = _folder(tmp_path, lzma.compress(b"The cat sat on a mat.\n\nA dog ran.\n" * 100))
    _accept(monkeypatch, folder)
    assert verify_corpus([NAME], folder, VOCABULARY) == {NAME: 1.0}
    hashed = []
    monkeypatch.setattr(corpus, "corpus_file", lambda *a, **k: hashed.append(a))
    monkeypatch.setattr(corpus, "known_word_share", lambda *a: pytest.fail("read again"))
    verify_corpus([NAME], folder, VOCABULARY)
    assert hashed == []
    os.utime(folder / NAME, ns=(1, 1))  # touched: checked again
    verify_corpus([NAME], folder)
    assert len(hashed) == 1


def test_the_shared_corpus_passes_when_present():
    try:
        root = corpus.corpus_root()
    except CorpusNotFoundError:
        pytest.skip("no pre-training corpus on this machine")
    from bertsent.training.pretraining import load_tokenizer

    shares = verify_corpus(None, root, load_tokenizer().get_vocab())
    assert all(share > corpus.KNOWN_WORD_SHARE for share in shares.values())


def test_the_pretraining_command_line_refuses_a_garbage_corpus_in_one_line(tmp_path):
    folder = _folder(tmp_path, os.urandom(1 << 20), listed=False)
    done = subprocess.run([sys.executable, "-m", "bertsent.training.pretraining", "--output", str(tmp_path / "run"),
                           "--corpus-dir", str(folder), "--set", "corpus_files", f'["{NAME}"]', "--set", "size",
                           "tiny"], capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 1 and done.stdout == "", done.stderr[-2000:]
    assert len(done.stderr.splitlines()) == 1, done.stderr[-2000:]  # the whole of stderr: no warning, no traceback
    line = done.stderr.strip()
    assert line.startswith(f"error: {folder / NAME} has sha256 ") and f"expected {corpus.CORPUS_FILES[NAME]}" in line
    assert "Fix: copy it again from the source (" in line
    assert not (tmp_path / "run").exists()  # refused before the run folder is made


def test_the_pretraining_command_checks_the_corpus_before_torch_loads(tmp_path):
    """What makes a garbage corpus fail within seconds: the command refuses it before importing torch or
    transformers (which alone take about 10 s)."""
    folder = _folder(tmp_path, os.urandom(1 << 10), listed=False)
    code = ("import runpy, sys\n"
            f"sys.argv = ['pretraining', '--profile', 'smoke', '--output', {str(tmp_path / 'run')!r}, "
            f"'--corpus-dir', {str(folder)!r}]\n"
            "try:\n"
            "    runpy.run_module('bertsent.training.pretraining', run_name='__main__', alter_sys=True)\n"
            "except SystemExit as stop:\n"
            "    print(stop.code, sorted(m for m in ('torch', 'transformers') if m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.stdout.strip() == "1 []", (done.stdout, done.stderr[-2000:])
    assert "has sha256" in done.stderr


def test_the_pretraining_command_refuses_an_output_it_cannot_write_before_torch_loads(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    code = ("import runpy, sys\n"
            f"sys.argv = ['pretraining', '--profile', 'smoke', '--output', {str(blocker / 'run')!r}]\n"
            "try:\n"
            "    runpy.run_module('bertsent.training.pretraining', run_name='__main__', alter_sys=True)\n"
            "except SystemExit as stop:\n"
            "    print(stop.code, sorted(m for m in ('torch', 'transformers') if m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.stdout.strip() == "1 []", (done.stdout, done.stderr[-2000:])
    assert done.stderr.strip() == f"error: --output {blocker / 'run'}: {blocker} is a file, not a folder. Fix: choose " \
                                  "a writable --output."
