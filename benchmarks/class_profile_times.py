"""How long each page takes to re-run at the `class` profile: the time a student waits in a class period.

Runs every page (or the named ones) as a student would, one after the other, each in its own process::

    .venv/bin/python -m bertsent.book run NAME --profile class --output SCRATCH

with empty caches (``BERTSENT_CACHE`` and ``BERTSENT_EMBEDDINGS_CACHE`` in a scratch folder: a student's first run),
times it from start to finish (kernel start, imports, loading the backbone, tokenising, training and scoring), and
writes one row per page to
``results/benchmarks/class_profile_times.csv``: seconds, whether it ran, the machine (cores, the CPU instruction
set PyTorch uses) and the commit. ``--status-page`` also rewrites the table between its two markers on the book's
page *Status of every page* (``book/status.md``) from that CSV, so the page shows what was measured and nothing typed.

    .venv/bin/python benchmarks/class_profile_times.py [NAME ...] [--status-page]

Time the pages on an otherwise idle machine: the table is what a class's laptop would see.
"""
import argparse
import datetime
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from bertsent.book import load_config
from bertsent.paths import REPO_ROOT
from bertsent.report.io import write_csv_atomic

TIMES = REPO_ROOT / "results" / "benchmarks" / "class_profile_times.csv"
STATUS_PAGE = REPO_ROOT / "book" / "status.md"
START, END = "<!-- class-profile-times:start -->", "<!-- class-profile-times:end -->"
TARGET_MINUTES = 5.0


def machine() -> dict:
    import torch

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True)
    return {"cores": os.cpu_count(), "threads": torch.get_num_threads(),
            "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "load_average": round(os.getloadavg()[0], 2),  # other work on the machine when the page started
            "commit": commit.stdout.strip(), "date": datetime.date.today().isoformat()}


def time_page(name: str) -> dict:
    """One page re-run at the class profile, in a fresh process, timed end to end as a first run: empty caches
    (trained runs, pooled vectors, tokenised corpus) and a new output folder, so nothing of an earlier run is reused."""
    with tempfile.TemporaryDirectory(prefix=f"class-{name}-") as scratch:
        env = {**os.environ, "BERTSENT_CACHE": str(Path(scratch) / "cache"),
               "BERTSENT_EMBEDDINGS_CACHE": str(Path(scratch) / "cache" / "embeddings")}
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "bertsent.book", "run", name, "--profile", "class",
                               "--output", str(Path(scratch) / "output")], cwd=REPO_ROOT, env=env,
                              capture_output=True, text=True)
        seconds = time.perf_counter() - start
    last_line = (done.stdout.strip().splitlines() or [""])[-1] if done.returncode == 0 else \
        (done.stderr.strip().splitlines() or done.stdout.strip().splitlines() or [""])[-1]  # "NAME: done in ..."
    return {"page": name, "seconds": round(seconds, 1), "ran": done.returncode == 0, "message": last_line[:300]}


def times_table(times: pd.DataFrame) -> str:
    """The status page's table: page, minutes, within the target; the machine it was measured on."""
    rows = ["| page | minutes | within 5 min |", "|---|---:|---|"]
    for row in times.itertuples():
        verdict = "did not run" if not row.ran else ("yes" if row.seconds <= TARGET_MINUTES * 60 else "**no**")
        rows.append(f"| {row.page} | {row.seconds / 60:.1f} | {verdict} |")
    first = times.iloc[0]
    rows.append("")
    rows.append(f"Measured by `benchmarks/class_profile_times.py` on {first['cores']} cores "
                f"({first['cpu_capability']}, {first['threads']} PyTorch thread(s), load average "
                f"{times['load_average'].min():.1f}-{times['load_average'].max():.1f} when the pages started), "
                f"commit(s) {', '.join(dict.fromkeys(times['commit']))}, "
                f"{', '.join(dict.fromkeys(times['date'].astype(str)))}; "
                f"longest page {times['seconds'].max() / 60:.1f} min, all pages {times['seconds'].sum() / 60:.0f} min.")
    return "\n".join(rows)


def update_status_page(times: pd.DataFrame, page: Path = STATUS_PAGE) -> None:
    text = page.read_text()
    if START not in text or END not in text:
        raise SystemExit(f"{page} has no {START} ... {END} markers; add them where the table belongs.")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    page.write_text(f"{head}{START}\n{times_table(times)}\n{END}{tail}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pages", nargs="*", help="page names (default: every page of the class profile)")
    parser.add_argument("--output", type=Path, default=TIMES)
    parser.add_argument("--status-page", action="store_true", help="rewrite the table of book/status.md from the CSV")
    args = parser.parse_args(argv)
    known = list(load_config()["profiles"]["class"])
    unknown = [p for p in args.pages if p not in known]
    if unknown:
        parser.error(f"unknown page(s) {unknown}; the class profile has: {', '.join(known)}")
    rows = []
    for name in args.pages or known:
        before = machine()
        row = {**time_page(name), **before}
        print(f"{name}: {row['seconds'] / 60:.1f} min" + ("" if row["ran"] else f" (failed: {row['message']})"),
              flush=True)
        rows.append(row)
    times = pd.DataFrame(rows)
    if args.output.is_file() and args.pages:  # a partial re-measurement replaces only its own rows
        kept = pd.read_csv(args.output)
        times = pd.concat([kept[~kept["page"].isin(times["page"])], times], ignore_index=True)
        times = times.set_index("page").loc[[p for p in known if p in set(times["page"])]].reset_index()
    write_csv_atomic(times, args.output, index=False)
    if args.status_page:
        update_status_page(times)
    return 0 if times["ran"].all() else 1


if __name__ == "__main__":
    raise SystemExit(main())
