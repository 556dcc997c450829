"""One Ctrl-C stops a page run: a real ``python -m bertsent.book run`` in a subprocess gets one SIGINT while its
kernel trains, and must end within a bounded time with one line, leaving the book's pages and ``results/``
untouched (issue 39, item 7)."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from bertsent.book import _book_snapshot
from bertsent.paths import REPO_ROOT

STOP_SECONDS = 30  # from the one SIGINT to the runner's exit


def _cell_running(notebook, marker: str) -> bool:
    """Whether the partial notebook says the code cell containing ``marker`` is executing."""
    try:
        cells = json.loads(notebook.read_text())["cells"]
    except (OSError, ValueError):  # not written yet, or being written
        return False
    return any(marker in "".join(cell["source"]) and cell["metadata"].get("papermill", {}).get("status") == "running"
               for cell in cells if cell["cell_type"] == "code")


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (Linux's /proc; none elsewhere): the runner's kernel."""
    found = []
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                found.append(int(entry))
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a process is POSIX")
def test_one_sigint_stops_a_page_run_while_its_kernel_trains(tmp_path):
    before = _book_snapshot()
    output = tmp_path / "rerun"
    # the cheapest page, its smoke profile, with training steps enough to still be training when the signal comes
    command = [sys.executable, "-m", "bertsent.book", "run", "contrastive_in_ten_minutes", "--profile", "smoke",
               "-p", "steps", "1000000", "--output", str(output)]
    runner = subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "OMP_NUM_THREADS": "1"}, start_new_session=True)
    partial = output / "contrastive_in_ten_minutes.running.ipynb"
    try:
        deadline = time.time() + 300  # the kernel's start and imports, on a busy machine
        while not _cell_running(partial, "temperature_sweep(") and runner.poll() is None and time.time() < deadline:
            time.sleep(0.5)
        assert runner.poll() is None, f"the run ended before its training cell: {runner.communicate()}"
        assert _cell_running(partial, "temperature_sweep("), "the training cell never started"
        time.sleep(3)  # inside the training loop
        kernels = _children(runner.pid)
        runner.send_signal(signal.SIGINT)  # one Ctrl-C, to the runner alone (as a terminal sends it)
        sent = time.time()
        try:
            stdout, stderr = runner.communicate(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            pytest.fail(f"one SIGINT did not stop the run within {STOP_SECONDS} s")
        stopped = time.time() - sent
    finally:
        if runner.poll() is None:
            os.killpg(runner.pid, signal.SIGKILL)
            runner.wait()
    assert runner.returncode != 0 and stopped < STOP_SECONDS
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert "Traceback" not in stderr, stderr
    assert lines[-1].startswith("error: contrastive_in_ten_minutes: interrupted (the partial notebook:"), stderr
    assert not (output / "contrastive_in_ten_minutes.ipynb").exists()  # no finished page from an interrupted run
    time.sleep(2)
    assert not [pid for pid in kernels if _alive(pid)], "the kernel outlived the run"
    # the book's pages and results/ untouched: the page's own files exactly, and nothing else written by this run
    # (other work in the same checkout may change unrelated files meanwhile, so those are matched by name)
    after = _book_snapshot()
    record = json.loads((REPO_ROOT / "results" / "runs" / "contrastive_in_ten_minutes.json").read_text())
    own = ["book/teaching/contrastive_in_ten_minutes.ipynb", "results/runs/contrastive_in_ten_minutes.json",
           *record["outputs"]]
    assert [after.get(path) for path in own] == [before.get(path) for path in own]
    changed = {path for path in set(before) | set(after) if before.get(path) != after.get(path)}
    assert not {path for path in changed if "teaching" in path or "contrastive_in_ten_minutes" in path}, changed


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a process is POSIX")
def test_a_run_that_swallows_the_interrupt_is_ended_after_the_grace_period():
    """Should something between the runner and the kernel catch the KeyboardInterrupt (or wait on a kernel that
    ignores it), the run still ends: the process exits with the one line shortly after the grace period."""
    code = ("import time, bertsent.book as book\n"
            "book.INTERRUPT_GRACE_SECONDS = 2\n"
            "with book._StopOnInterrupt('page: interrupted'):\n"
            "    print('ready', flush=True)\n"
            "    while True:\n"
            "        try:\n"
            "            time.sleep(0.1)\n"
            "        except KeyboardInterrupt:\n"
            "            pass  # swallowed\n")
    runner = subprocess.Popen([sys.executable, "-c", code], cwd=REPO_ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert runner.stdout.readline().strip() == "ready"
        time.sleep(0.5)  # in its loop
        runner.send_signal(signal.SIGINT)
        sent = time.time()
        _, stderr = runner.communicate(timeout=STOP_SECONDS)
        assert time.time() - sent < 10
    finally:
        if runner.poll() is None:
            os.killpg(runner.pid, signal.SIGKILL)
            runner.wait()
    assert runner.returncode == 130 and stderr.strip() == "error: page: interrupted"
