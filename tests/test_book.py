"""The notebook runner: smoke runs of every notebook, parameter checks, result reuse."""
import json
import os
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from bertsent import book
from bertsent.book import ParameterError, load_config, resolve_parameters, run_fingerprint, run_notebook
from bertsent.paths import REPO_ROOT


# The smoke profile's outputs, stored once: tests/fixtures/smoke_results/<notebook>/<path under results/> (the
# reference copy, made on an AVX-512 machine).
SMOKE_FIXTURES = Path(__file__).parent / "fixtures" / "smoke_results"
# Float32 sums depend on the CPU: PyTorch dispatches AVX-512, AVX2 or other kernels, which add in another order, so the
# same smoke run differs between kinds of CPU in the last bits, and a 2-step training or a 24-pair Spearman can turn
# that into points (measured: up to 2.7 Spearman points on the STS page's trained rows, one of 120 transfer test
# examples flipped; even two AVX-512 machines, one with AMX, differ on 8 of the 23 pages). Copies made on the other
# kinds the project's machines have had are kept in SMOKE_FIXTURES_BY_CPU/<kind>/ (AVX2, AVX512-AMX): the runs do not
# compare with them; they are what the cross-CPU spread is measured from (:func:`measure_smoke_spread`), and the
# SG-OPT claims page's smoke profile reads its inputs from the AVX2 copy. They may hold an older rule's claims.
SMOKE_FIXTURES_CAPABILITY = "AVX512"
SMOKE_FIXTURES_BY_CPU = Path(__file__).parent / "fixtures" / "smoke_results_by_cpu"
# The measured spread, per file and numeric column: the largest difference between two kinds' copies of the same
# version of a file (regenerate with ``.venv/bin/python -m tests.test_book`` after adding a kind's copy or changing
# which columns a page writes; it is committed). A number passes when it is within
# SPREAD_MULTIPLIER x spread + one unit of its last stored decimal of the reference (:func:`smoke_tolerance`).
SMOKE_TOLERANCES = Path(__file__).parent / "fixtures" / "smoke_tolerances.json"
# Three kinds measured give a lower bound of the spread over all CPUs. A kind never measured, PyTorch's portable
# kernels (ATEN_CPU_CAPABILITY=default; test_smoke_run_passes_on_an_unseen_kind_of_cpu), moved 2 of the 1,080
# Spearman cells of layer_pooling by 2.4 times their column's spread (the rest by at most 1x; sts_baselines and
# sg_opt_sts within 2x): 2 failed it, 3 leaves a quarter of headroom (measured 2026-12-04).
SPREAD_MULTIPLIER = 3.0


def cpu_kind(cpu_flags: set[str] | None = None) -> str:
    """The kind of CPU a smoke failure names, and the name of a kind's copy in :data:`SMOKE_FIXTURES_BY_CPU`:
    PyTorch's instruction set (``torch.backends.cpu.get_cpu_capability()``), with ``-AMX`` on an AVX-512 CPU that
    has AMX tiles."""
    import torch

    capability = torch.backends.cpu.get_cpu_capability()
    if cpu_flags is None:
        cpuinfo = Path("/proc/cpuinfo")
        cpu_flags = set(cpuinfo.read_text().split()) if cpuinfo.is_file() else set()
    return f"{capability}-AMX" if capability == "AVX512" and "amx_tile" in cpu_flags else capability


# Columns that measure the machine, not the method: left out of the fixtures and of the comparison (with every
# column named ``seconds...``, ``..._seconds`` or ``...per_second...``).
VOLATILE_COLUMNS = {"ratio_to_peer", "ratio_sd", "threads", "torch_threads", "overhead_ratio", "overhead_percent"}
# Files whose numbers are all timings (claims about the machine's speed): only their other columns are compared.
VOLATILE_BY_FILE = {"cost/inference_claims.csv": {"our_effect", "ratio", "tolerance"}}


def _volatile(column: str) -> bool:
    return (column in VOLATILE_COLUMNS or column.startswith("seconds") or column.endswith("_seconds")
            or "per_second" in column)


def _read_text_table(path: Path, relative: str = "") -> pd.DataFrame:
    table = pd.read_csv(path, dtype=str, keep_default_na=False)
    timed = VOLATILE_BY_FILE.get(relative, set())
    return table.drop(columns=[c for c in table.columns if _volatile(c) or c in timed])


def _smoke_outputs(results: Path) -> dict[str, Path]:
    """The CSVs a notebook wrote, by path under its results folder (the per-run store ``runs/`` left out)."""
    return {p.relative_to(results).as_posix(): p for p in sorted(results.rglob("*.csv"))
            if p.relative_to(results).parts[0] != "runs"}


def _store_smoke_fixtures(name: str, outputs: dict[str, Path], fixtures: Path = SMOKE_FIXTURES) -> None:
    import shutil

    target = fixtures / name
    shutil.rmtree(target, ignore_errors=True)
    for relative, path in outputs.items():
        (target / relative).parent.mkdir(parents=True, exist_ok=True)
        _read_text_table(path, relative).to_csv(target / relative, index=False)


def _numeric(column: pd.Series) -> bool:
    """Every non-blank value parses as a number (blank: a claim with no paper effect, ratio or tolerance)."""
    values = [v for v in column if v != ""]
    try:
        return bool(values) and all(float(v) == float(v) or v.lower() == "nan" for v in values)
    except ValueError:
        return False


def _same_version(a: pd.DataFrame, b: pd.DataFrame) -> bool:
    """Two kinds' copies of one file that the same code wrote: the same columns and rows, and every text cell equal
    (a rule change rewrites noise sources, claim names or blank tolerances; a verdict flipped by the CPU alone would
    keep the pair out too, which only loses a measurement)."""
    if list(a.columns) != list(b.columns) or a.shape != b.shape:
        return False
    return all(a[c].tolist() == b[c].tolist() for c in a.columns if not (_numeric(a[c]) and _numeric(b[c])))


def measure_smoke_spread(folders: dict[str, Path] | None = None) -> dict:
    """The cross-CPU spread of every numeric column of every stored smoke CSV: the largest difference of a cell
    between two kinds' copies (:data:`SMOKE_FIXTURES` and each folder of :data:`SMOKE_FIXTURES_BY_CPU`), over the
    pairs of copies of the same version (:func:`_same_version`; e.g. the AVX2 and AVX512-AMX claims, both of the
    older rule, while the reference holds the current one)."""
    import itertools

    if folders is None:
        folders = {SMOKE_FIXTURES_CAPABILITY: SMOKE_FIXTURES,
                   **{p.name: p for p in sorted(SMOKE_FIXTURES_BY_CPU.glob("*")) if p.is_dir()}}
    files = sorted({p.relative_to(f).as_posix() for f in folders.values() for p in f.rglob("*.csv")})
    spread, pairs = {}, {}
    for relative in files:
        page, inner = relative.split("/", 1)
        copies = {kind: _read_text_table(folder / relative, inner)
                  for kind, folder in folders.items() if (folder / relative).is_file()}
        for (kind_a, a), (kind_b, b) in itertools.combinations(copies.items(), 2):
            if not _same_version(a, b):
                continue
            pairs.setdefault(relative, []).append(f"{kind_a}/{kind_b}")
            for column in a.columns:
                if not (_numeric(a[column]) and _numeric(b[column])):
                    continue
                gaps = [abs(float(x) - float(y)) for x, y in zip(a[column], b[column]) if x != "" and y != ""]
                gaps = [g for g in gaps if g == g]  # nan beside nan: no gap
                top = spread.setdefault(relative, {}).get(column, 0.0)
                spread[relative][column] = round(max([top, *gaps]), 6)
    return {"about": "Largest difference of each numeric column between two kinds of CPU's stored smoke outputs "
                     "(tests/fixtures/smoke_results*, same-version copies only); written by "
                     "`.venv/bin/python -m tests.test_book`; read by tests/test_book.py (smoke_tolerance)",
            "kinds": sorted(folders), "pairs": pairs, "spread": spread}


def _load_smoke_spread() -> dict:
    return json.loads(SMOKE_TOLERANCES.read_text())["spread"] if SMOKE_TOLERANCES.is_file() else {}


def _last_digit(value: str) -> float:
    """One unit of the last digit ``value`` was written with (0 for an integer: counts are compared exactly)."""
    mantissa, _, exponent = value.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    if not decimals and not exponent:
        return 0.0
    return 10.0 ** (int(exponent or 0) - decimals)


def smoke_tolerance(spread: dict, relative: str, column: str) -> float:
    """The measured spread of ``column`` in ``relative`` (<page>/<file>) times :data:`SPREAD_MULTIPLIER`. A column
    not measured (a file or column no other kind's copy has yet) takes the largest spread of the same column name in
    the same page's other files, else 0 (compared to the rounding of its last digit only)."""
    measured = spread.get(relative, {})
    if column in measured:
        return SPREAD_MULTIPLIER * measured[column]
    page = relative.split("/", 1)[0]
    same_name = [columns[column] for path, columns in spread.items()
                 if path.split("/", 1)[0] == page and column in columns]
    return SPREAD_MULTIPLIER * max(same_name, default=0.0)


def _same_number(a: str, b: str, absolute: float = 0.0) -> bool:
    """Equal text, or numbers within ``absolute`` plus one unit of the last digit either is written with (the CSVs
    round, e.g. to 4 decimals: a difference far below it can still move the last digit by one)."""
    if a == b:
        return True
    try:
        x, y = float(a), float(b)
    except ValueError:
        return False
    return abs(x - y) <= absolute + max(_last_digit(a), _last_digit(b)) + 1e-12 * max(abs(x), abs(y))


def _verdict_follows_the_numbers(now: pd.Series, before: pd.Series) -> bool:
    """A verdict that differs from the stored one, accepted only where both are what the claims rule
    (:func:`bertsent.report.claims._verdict`) gives for their own row's ``our_effect``, ``paper_effect`` and
    ``tolerance`` (whose closeness the caller checks): a number at a threshold that the CPU moves across. Verdicts
    the rule does not compute from the numbers (at floor, not testable, explained by the control, a range claim with no
    ratio) must be equal."""
    from bertsent.report.claims import _verdict

    def verdicts(row: pd.Series, direction: int) -> str | None:
        try:
            ours, tolerance = float(row["our_effect"]), float(row["tolerance"] or "nan")
            paper = float(row["paper_effect"]) if row.get("paper_effect", "") != "" else None
        except (KeyError, ValueError):
            return None
        if paper is not None and row.get("ratio", "") == "":
            return None  # a range claim (judge_range): its bounds are not in the row
        return _verdict(ours, paper, (1 if paper > 0 else -1) if paper else direction, tolerance)

    return any(verdicts(now, d) == now["verdict"] and verdicts(before, d) == before["verdict"] for d in (1, -1))


def _compare_with_smoke_fixtures(name: str, outputs: dict[str, Path], fixtures: Path = SMOKE_FIXTURES,
                                 spread: dict | None = None) -> list[str]:
    """Problems found comparing a run's CSVs with the reference copy in ``fixtures``: the same files, columns and
    row counts, text cells exactly, numbers within :func:`smoke_tolerance` of the measured ``spread`` (default: the
    committed :data:`SMOKE_TOLERANCES`), a verdict only where it follows its row's numbers
    (:func:`_verdict_follows_the_numbers`); where one did, the page's claims scoreboards are compared on their
    chapters and totals only (the counts per verdict move with it)."""
    spread = _load_smoke_spread() if spread is None else spread
    stored = {p.relative_to(fixtures / name).as_posix(): p for p in sorted((fixtures / name).rglob("*.csv"))}
    problems = [f"{name}: {path} is written but has no stored copy" for path in sorted(set(outputs) - set(stored))]
    problems += [f"{name}: {path} is stored but no longer written" for path in sorted(set(stored) - set(outputs))]
    flipped = []
    common = sorted(set(outputs) & set(stored), key=lambda path: (Path(path).name == "claims_scoreboard.csv", path))
    for relative in common:
        ours = _read_text_table(outputs[relative], relative)
        theirs = _read_text_table(stored[relative], relative)
        if Path(relative).name == "claims_scoreboard.csv" and flipped:
            keep = [c for c in ("chapter", "total") if c in ours.columns and c in theirs.columns]
            ours, theirs = ours[keep], theirs[keep]
        if list(ours.columns) != list(theirs.columns) or ours.shape != theirs.shape:
            problems.append(f"{name}: {relative}: columns or rows differ: {list(ours.columns)} x {len(ours)} now, "
                            f"{list(theirs.columns)} x {len(theirs)} stored")
            continue
        for column in ours.columns:
            tolerance = smoke_tolerance(spread, f"{name}/{relative}", column)
            for row, (now, before) in enumerate(zip(ours[column], theirs[column])):
                if _same_number(now, before, tolerance):
                    continue
                if column == "verdict" and _verdict_follows_the_numbers(ours.iloc[row], theirs.iloc[row]):
                    flipped.append(f"{relative}, row {row}: {before!r} stored, {now!r} now")
                    continue
                problems.append(f"{name}: {relative}, row {row}, {column}: {now!r} now, {before!r} stored"
                                + (f" (tolerance {tolerance:.4g})" if tolerance else ""))
    return problems


@pytest.fixture(scope="session")
def smoke_embeddings(tmp_path_factory) -> Path:
    """The pooled-vector cache of this session's smoke runs, shared by the workers of ``make test``.

    Readouts of one encoder ([CLS], mean, whitening) encode each sentence once instead of once each, and an untrained
    backbone's vectors of the same sentences are encoded by the first page that asks (all-MiniLM-L6-v2 on the 24-pair
    STS subsets: four pages). The vectors are those computed (float32 stored exactly; a trained model's entries are
    keyed by its own folder), so every number is that of an uncached run, and nothing from an earlier session (or an
    older library) is ever read."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the session's folder, above each worker's own
    path = root / "smoke-embeddings"
    path.mkdir(exist_ok=True)
    return path


def _smoke_outputs_of(name: str, tmp_path: Path, monkeypatch, embeddings: Path) -> dict[str, Path]:
    """Run ``name`` at the smoke profile (one thread, float32, empty run folders in ``tmp_path``); its CSVs."""
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # inherited by the notebook's kernel: one thread, same sums
    monkeypatch.setenv("MKL_NUM_THREADS", "1")
    monkeypatch.setenv("ACCELERATE_MIXED_PRECISION", "no")
    monkeypatch.setenv("BERTSENT_EMBEDDINGS_CACHE", str(embeddings))
    source = REPO_ROOT / load_config()["notebooks"][name]["source"]
    declared = book.notebook_parameters(source)
    overrides = {key: str(tmp_path / key) for key in ("runs_dir", "run_dir") if key in declared}
    if "cache_embeddings" in declared:
        overrides["cache_embeddings"] = True
    executed = run_notebook(name, "smoke", overrides, output=tmp_path / f"{name}.ipynb",
                            results_dir=tmp_path / "results", log=lambda *_: None)
    notebook = nbformat.read(executed, as_version=4)
    errors = [o for c in notebook.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
    outputs = _smoke_outputs(tmp_path / "results")
    assert outputs
    for csv in outputs.values():
        assert len(pd.read_csv(csv)) > 0
    return outputs


def _fail_on_smoke_problems(name: str, problems: list[str]) -> None:
    if problems:
        pytest.fail(f"smoke outputs of {name} differ from the reference ({SMOKE_FIXTURES.name}/{name}) beyond the "
                    f"cross-CPU spread measured in {SMOKE_TOLERANCES.name} (this CPU: {cpu_kind()}; if the change is "
                    "meant to change numbers, see the docstring of test_smoke_run):\n" + "\n".join(problems[:20]))


@pytest.mark.parametrize("name", list(load_config()["notebooks"]))
def test_smoke_run(name, tmp_path, monkeypatch, request, smoke_embeddings):
    """Every notebook runs at the smoke profile, and the CSVs it writes match the stored reference
    (``tests/fixtures/smoke_results/<notebook>/``) on any CPU: a refactor that changes a number fails here.

    The smoke runs compute in float32 (the smoke profiles use no bf16) on one thread (set here), so they are
    deterministic on one machine; every run starts from empty run folders (``runs_dir`` / ``run_dir`` in
    ``tmp_path``), so the training paths run too. Across kinds of CPU the float32 sums differ in the last bits, which
    a 2-step training turns into points (see :data:`SMOKE_FIXTURES`), so :func:`_compare_with_smoke_fixtures` checks:

    * exactly: which CSVs are written, their columns, their row counts, every text cell (labels, backbones, claims,
      noise sources) and every integer (counts, sizes, steps);
    * each number within ``SPREAD_MULTIPLIER`` (3) x the largest difference measured in that column between two kinds'
      stored copies of the same version of the file (``tests/fixtures/smoke_tolerances.json``), plus one unit of its
      last stored decimal (rounding). The spread is 0 for most columns (deterministic arithmetic: compared to the
      last digit), a fraction of a point for untrained readouts (0.0085 on ``sts_baselines``' scores: tolerance
      0.026) and points only where two training steps amplify it (2.66 on ``sg_opt_sts``' scores: tolerance 8.0;
      0.83 on a transfer accuracy: 2.5). The tolerance is per column, so a change smaller than that in such a
      column (even in its untrained rows) is caught only elsewhere: the same readouts on the pages that do not
      train (``sts_baselines``, ``layer_pooling``: tolerances of hundredths), the training loss and other columns
      of the page; a planted one-point change in an untrained score fails there
      (``test_a_planted_change_fails_the_smoke_comparison``);
    * a verdict exactly, unless both it and the stored one are what the claims rule gives for their own row's
      numbers (then a number sat at a threshold and the CPU moved it across, within the tolerances above); the
      page's claims scoreboards are then compared on chapters and totals only;
    * the columns that time the machine (:func:`_volatile`) not at all.

    A kind of CPU never seen passes unchanged (``test_smoke_run_passes_on_an_unseen_kind_of_cpu`` runs a page on
    PyTorch's portable kernels). After a change that is meant to change numbers (and bumps the METHOD_VERSION of the
    modules it changes), regenerate the reference on any machine, check it twice, and commit it with the change::

        .venv/bin/python -m pytest tests/test_book.py -k smoke_run --update-smoke-fixtures   # rewrite
        .venv/bin/python -m pytest tests/test_book.py -k smoke_run                           # reproducible?
        git add tests/fixtures/smoke_results

    The copies of other kinds (``tests/fixtures/smoke_results_by_cpu/<kind>/``) are not compared with; they measure
    the spread. To add a kind's copy, run the smoke tests there with ``--update-smoke-fixtures`` and move the
    rewritten ``smoke_results`` to ``smoke_results_by_cpu/<kind>`` (``git stash`` the reference back), then
    remeasure with ``.venv/bin/python -m tests.test_book`` (only copies written by the same code are paired, so a
    kind's copy left at an older rule still measures the files that rule did not touch).
    """
    outputs = _smoke_outputs_of(name, tmp_path, monkeypatch, smoke_embeddings)
    if request.config.getoption("--update-smoke-fixtures"):
        _store_smoke_fixtures(name, outputs, SMOKE_FIXTURES)
    assert (SMOKE_FIXTURES / name).is_dir(), (
        f"no smoke reference of {name} ({SMOKE_FIXTURES / name}); make it with --update-smoke-fixtures "
        "(see this test's docstring) and check it with a second run")
    _fail_on_smoke_problems(name, _compare_with_smoke_fixtures(name, outputs))


@pytest.mark.parametrize("name", ["sts_baselines", "layer_pooling", "sg_opt_sts"])
def test_smoke_run_passes_on_an_unseen_kind_of_cpu(name, tmp_path, monkeypatch):
    """A kind of CPU whose copy was never stored nor measured (an Apple M-series laptop would be one), simulated by
    PyTorch's portable kernels (``ATEN_CPU_CAPABILITY=default``, set for the notebook's kernel): its smoke outputs
    pass the comparison unchanged. Its own vector cache: the session's one holds this CPU's vectors."""
    import subprocess
    import sys

    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "default")
    capability = subprocess.run([sys.executable, "-c", "import torch; print(torch.backends.cpu.get_cpu_capability())"],
                                capture_output=True, text=True, check=True).stdout.strip()
    assert capability == "DEFAULT"  # the kernel, started with the same environment, runs on the portable kernels
    (tmp_path / "embeddings").mkdir()
    outputs = _smoke_outputs_of(name, tmp_path, monkeypatch, tmp_path / "embeddings")
    _fail_on_smoke_problems(name, _compare_with_smoke_fixtures(name, outputs))


def test_smoke_comparison_tolerates_only_rounding_noise(tmp_path):
    assert _same_number("71.2345", "71.2345") and _same_number("71.2345", "71.2346") and _same_number("", "")
    assert not _same_number("71.2345", "71.2347") and not _same_number("a", "b") and not _same_number("3", "4")
    assert _same_number("71.2345", "71.3345", 0.1) and not _same_number("71.2345", "71.3347", 0.1)
    written, fixtures = tmp_path / "t.csv", tmp_path / "fixtures"
    written.write_text("backbone,spearman,seconds,run_seconds,tokens_per_second\nm,71.2345,3.2,4,5\n")
    _store_smoke_fixtures("nb", {"t.csv": written}, fixtures)
    assert (fixtures / "nb" / "t.csv").read_text() == "backbone,spearman\nm,71.2345\n"  # times left out
    written.write_text("backbone,spearman,seconds\nm,71.2345,9.9\n")
    assert _compare_with_smoke_fixtures("nb", {"t.csv": written}, fixtures, {}) == []
    written.write_text("backbone,spearman,seconds\nm,71.2399,3.2\n")
    assert _compare_with_smoke_fixtures("nb", {"t.csv": written}, fixtures, {}) == [
        "nb: t.csv, row 0, spearman: '71.2399' now, '71.2345' stored"]
    assert _compare_with_smoke_fixtures("nb", {"t.csv": written}, fixtures, {"nb/t.csv": {"spearman": 0.003}}) == []
    assert _compare_with_smoke_fixtures("nb", {}, fixtures, {}) == ["nb: t.csv is stored but no longer written"]
    written.write_text("backbone,spearman\nM,71.2345\n")  # text exactly, whatever the tolerance
    assert _compare_with_smoke_fixtures("nb", {"t.csv": written}, fixtures, {"nb/t.csv": {"spearman": 9}}) == [
        "nb: t.csv, row 0, backbone: 'M' now, 'm' stored"]


def test_a_planted_change_fails_the_smoke_comparison(tmp_path):
    """The stored reference of the STS baselines page passes against itself; the same outputs with one score moved
    by 1.0 (or a row dropped, a label changed, a verdict changed where the numbers do not call for it) fail."""
    page = SMOKE_FIXTURES / "sts_baselines"
    outputs = {p.relative_to(page).as_posix(): p for p in sorted(page.rglob("*.csv"))}
    assert _compare_with_smoke_fixtures("sts_baselines", outputs) == []
    spread = _load_smoke_spread()
    assert 0 < smoke_tolerance(spread, "sts_baselines/sts_baselines.csv", "spearman") < 0.1

    def planted(relative: str, edit) -> list[str]:
        table = pd.read_csv(page / relative, dtype=str, keep_default_na=False)
        copy = tmp_path / relative
        copy.parent.mkdir(parents=True, exist_ok=True)
        edit(table).to_csv(copy, index=False)
        return _compare_with_smoke_fixtures("sts_baselines", {**outputs, relative: copy})

    def moved(table):
        table.loc[5, "spearman"] = f"{float(table.loc[5, 'spearman']) + 1.0:.4f}"
        return table

    problems = planted("sts_baselines.csv", moved)
    assert len(problems) == 1 and problems[0].startswith("sts_baselines: sts_baselines.csv, row 5, spearman:")
    assert planted("sts_baselines.csv", lambda t: t.drop(index=3)) != []
    assert planted("sts_baselines.csv", lambda t: t.assign(method=t["method"].str.replace("cls", "mean"))) != []
    claims = pd.read_csv(page / "sts_baselines_claims.csv", dtype=str, keep_default_na=False)
    other = "reproduced" if claims.loc[0, "verdict"] != "reproduced" else "not reproduced"
    assert planted("sts_baselines_claims.csv", lambda t: t.assign(verdict=[other] + list(t["verdict"][1:]))) != []


def test_a_verdict_may_follow_its_numbers_across_a_threshold_only(tmp_path):
    fixtures, written = tmp_path / "fixtures", tmp_path / "claims.csv"
    header = "claim,paper_effect,our_effect,ratio,tolerance,verdict\n"
    written.write_text(header + "a > b,4.0000,1.0000,0.2500,1.0010,within noise\n")
    _store_smoke_fixtures("nb", {"claims.csv": written}, fixtures)
    spread = {"nb/claims.csv": {"our_effect": 0.002, "ratio": 0.001, "tolerance": 0.001}}
    written.write_text(header + "a > b,4.0000,1.0030,0.2507,1.0010,direction only\n")  # across |ours| = tolerance
    assert _compare_with_smoke_fixtures("nb", {"claims.csv": written}, fixtures, spread) == []
    written.write_text(header + "a > b,4.0000,1.0030,0.2507,1.0010,reproduced\n")  # not what the rule gives
    assert _compare_with_smoke_fixtures("nb", {"claims.csv": written}, fixtures, spread) == [
        "nb: claims.csv, row 0, verdict: 'reproduced' now, 'within noise' stored"]
    written.write_text(header + "a > b,4.0000,1.5000,0.3750,1.0010,direction only\n")  # the rule's, but moved too far
    assert _compare_with_smoke_fixtures("nb", {"claims.csv": written}, fixtures, spread) == [
        f"nb: claims.csv, row 0, our_effect: '1.5000' now, '1.0000' stored (tolerance {SPREAD_MULTIPLIER * 0.002:.4g})",
        f"nb: claims.csv, row 0, ratio: '0.3750' now, '0.2500' stored (tolerance {SPREAD_MULTIPLIER * 0.001:.4g})"]


def test_the_measured_spread_pairs_only_copies_of_the_same_version(tmp_path):
    a, b, c = (tmp_path / kind for kind in ("A", "B", "C"))
    for folder, text in ((a, "x,1.0000,within noise\n"), (b, "x,1.0100,within noise\n"), (c, "y,3.0000,reproduced\n")):
        (folder / "nb").mkdir(parents=True)
        (folder / "nb" / "t.csv").write_text("claim,our_effect,verdict\n" + text)
    measured = measure_smoke_spread({"A": a, "B": b, "C": c})
    assert measured["pairs"] == {"nb/t.csv": ["A/B"]} and measured["spread"] == {"nb/t.csv": {"our_effect": 0.01}}


def test_unknown_parameter_is_refused():
    with pytest.raises(ParameterError, match=r"Unknown parameter\(s\) \['batchsize'\].*batch_size"):
        resolve_parameters("layer_pooling", "quick", {"batchsize": 8})
    with pytest.raises(ParameterError, match="Unknown profile"):
        resolve_parameters("layer_pooling", "fast")
    with pytest.raises(ParameterError, match="Unknown notebook"):
        resolve_parameters("heatmap", "quick")


def test_profiles_only_set_declared_parameters():
    config = load_config()
    for profile in config["profiles"]:
        for name in config["notebooks"]:
            resolve_parameters(name, profile, config=config)  # raises on a typo or a wrong type in profiles.yml


@pytest.mark.parametrize("profile", ["quick", "paper"])
def test_the_acl_angle_page_reads_the_runs_the_glue_page_trains(profile):
    """The angle page trains nothing of its own in the book: at a canonical profile every recipe parameter it shares
    with the GLUE page (seeds, recipe and contrastive grids, the baseline gate, angle_every, ...) has the GLUE
    page's value, so both key the same runs (a profile that sets one and not the other fails here)."""
    config = load_config()
    glue, angles = (resolve_parameters(page, profile, config=config) for page in ("acl_glue", "acl_gradient_angles"))
    shared = set(book.notebook_parameters(_notebook("acl_glue"))) & set(book.notebook_parameters(_notebook(
        "acl_gradient_angles"))) - {"profile", "data_dir", "results_dir", "methods"}
    assert "baseline_gate" in shared and "contrastive_grid_weights" in shared
    assert {name: angles[name] for name in shared} == {name: glue[name] for name in shared}


def _notebook(name: str) -> Path:
    return REPO_ROOT / load_config()["notebooks"][name]["source"]


def _edited_copy(source: Path, target: Path, edit) -> Path:
    notebook = nbformat.read(source, as_version=4)
    edit(notebook.cells)
    nbformat.write(notebook, target)
    return target


def _first(cells, kind: str):
    return next(c for c in cells if c.cell_type == kind and c.source.strip()
                and not {"parameters", book.CHECK_TAG} & set(c.metadata.get("tags", [])))


def test_a_claims_page_is_stale_when_a_page_it_reads_is_rerun(tmp_path, monkeypatch):
    """A claims page recomputes its verdicts from other pages' results (``reads:`` in profiles.yml): a re-run of one
    of those with other inputs (its run record's fingerprint) changes the claims page's inputs and names why; a page
    that reads nothing keeps the inputs it had."""
    monkeypatch.setattr(book, "RUNS_DIR", tmp_path)
    source = _notebook("sg_opt_claims")
    (tmp_path / "sg_opt_sts.json").write_text(json.dumps({"fingerprint": "first"}))
    before = book.page_inputs(source, {}, ("sg_opt_sts",))
    assert book.page_inputs(source, {}, ("sg_opt_sts",)) == before
    (tmp_path / "sg_opt_sts.json").write_text(json.dumps({"fingerprint": "second"}))
    after = book.page_inputs(source, {}, ("sg_opt_sts",))
    assert after["pages_read"] != before["pages_read"] and {k: after[k] for k in before if k != "pages_read"} == {
        k: before[k] for k in before if k != "pages_read"}
    assert book._stale_reason({"inputs": before}, after, {}) == "the pages it reads changed"
    assert "pages_read" not in book.page_inputs(source, {})
    # re-run with the same inputs but from runs stored since (the frozen-encoder arm's new seeds): stale too
    (tmp_path / "sg_opt_sts.json").write_text(json.dumps({"fingerprint": "second", "stored_runs": {"sg/a": "1"}}))
    more = book.page_inputs(source, {}, ("sg_opt_sts",))
    assert more["pages_read"] != after["pages_read"]


def test_claims_pages_read_exactly_their_chapters_pages():
    from bertsent.experiments.claims_overview import CHAPTERS

    config = load_config()
    for name, entry in config["notebooks"].items():
        chapter = book.notebook_parameters(REPO_ROOT / entry["source"]).get("chapter")
        if chapter is not None:
            assert tuple(entry.get("reads", ())) == CHAPTERS[chapter].pages, name
        else:
            assert "reads" not in entry, f"{name} reads other pages but is not a claims page"


def test_fingerprint_follows_parameters_and_code_cells_only(tmp_path):
    source = _notebook("layer_pooling")
    base = run_fingerprint(source, {"a": 1})
    assert run_fingerprint(source, {"a": 1}) == base
    assert run_fingerprint(source, {"a": 2}) != base

    def code(cells):
        _first(cells, "code").source += "\nunused = 1"

    def markdown(cells):
        _first(cells, "markdown").source += " More words."

    def comment_and_layout(cells):
        cell = _first(cells, "code")
        cell.source = "# a comment\n" + cell.source.replace(", ", ",  ") + "\n\n"

    def import_path(cells):  # a library module moved: only the import line changes
        cell = next(c for c in cells if "from bertsent.experiments.sts_tables import" in c.source)
        cell.source = cell.source.replace("from bertsent.experiments.sts_tables import", "from bertsent.tables import")

    assert run_fingerprint(_edited_copy(source, tmp_path / "code.ipynb", code), {"a": 1}) != base
    for edit in (markdown, comment_and_layout, import_path):
        assert run_fingerprint(_edited_copy(source, tmp_path / f"{edit.__name__}.ipynb", edit), {"a": 1}) == base


def _fingerprints() -> dict[str, str]:
    config = load_config()
    return {name: run_fingerprint(_notebook(name), resolve_parameters(name, "quick", config=config))
            for name in ("layer_pooling", "sg_opt_sts", "sg_opt_ablations")}


def test_library_refactors_leave_fingerprints_alone(library_copy):
    """A docstring edit, a rename and a move of library modules change no page's fingerprint."""
    before = _fingerprints()
    opt3 = library_copy / "losses" / "self_guided" / "opt3.py"
    opt3.write_text(opt3.read_text().replace('"""', '"""Reworded. ', 1))  # docstring
    opt3.rename(opt3.with_name("contrastive_opt3.py"))  # rename, and the one import that names it
    package = library_copy / "losses" / "self_guided" / "__init__.py"
    package.write_text(package.read_text().replace("from .opt3 import", "from .contrastive_opt3 import"))
    pooling = library_copy / "encode" / "pooling.py"  # a move to another package, importers updated
    pooling.rename(library_copy / "evaluation" / "pooling.py")
    encoder = library_copy / "encode" / "encoder.py"
    encoder.write_text(encoder.read_text().replace("from .pooling import", "from ..evaluation.pooling import"))
    assert not any("contrastive" in str(p) for p in book.library_files(_notebook("layer_pooling")))
    assert any("contrastive_opt3" in str(p) for p in book.library_files(_notebook("sg_opt_sts")))
    assert _fingerprints() == before


def test_a_version_bump_makes_exactly_the_pages_that_reach_it_stale(library_copy):
    before = _fingerprints()
    opt3 = library_copy / "losses" / "self_guided" / "opt3.py"
    opt3.write_text(opt3.read_text().replace("METHOD_VERSION = 1", "METHOD_VERSION = 2"))
    after = _fingerprints()
    assert after["layer_pooling"] == before["layer_pooling"]  # inference only: never reaches the losses
    assert after["sg_opt_sts"] != before["sg_opt_sts"]
    assert after["sg_opt_ablations"] != before["sg_opt_ablations"]
    pooling = library_copy / "encode" / "pooling.py"
    pooling.write_text(pooling.read_text().replace("METHOD_VERSION = 1", "METHOD_VERSION = 2"))
    assert all(_fingerprints()[name] != after[name] for name in after)  # every page pools


def test_stale_page_says_which_method_changed(library_copy):
    source = _notebook("sg_opt_sts")
    parameters = resolve_parameters("sg_opt_sts", "quick")
    record = {"inputs": book.page_inputs(source, parameters),
              "method_versions": book.method_versions(book.notebook_modules(source))}
    opt3 = library_copy / "losses" / "self_guided" / "opt3.py"
    opt3.write_text(opt3.read_text().replace("METHOD_VERSION = 1", "METHOD_VERSION = 2"))
    reason = book._stale_reason(record, book.page_inputs(source, parameters),
                                book.method_versions(book.notebook_modules(source)))
    assert reason == "the method versions it reaches (bertsent.losses.self_guided.opt3 1 -> 2) changed"


# Modules whose code decides no number: loading and checking files, paths, plotting, the runners.
UNVERSIONED = {"__init__.py", "__main__.py", "manifest.py", "fetch.py", "io.py", "plots.py", "store.py", "claims.py",
               "sts_runs.py", "acl_runs.py"}


def test_every_module_that_computes_declares_its_method_version():
    from bertsent.versions import declared_version

    library = REPO_ROOT / "lib" / "bertsent"
    missing = [str(path.relative_to(library))
               for package in ("data", "encode", "models", "losses", "training", "evaluation", "experiments")
               for path in sorted((library / package).rglob("*.py"))
               if path.name not in UNVERSIONED and declared_version(path) is None]
    assert not missing, f"declare METHOD_VERSION = 1 (bump when the maths changes) in {missing}"
    assert declared_version(library / "losses" / "self_guided" / "__init__.py") == 1  # LOSSES: name -> function


def test_declared_version_must_be_a_literal(tmp_path):
    from bertsent.versions import declared_version

    module = tmp_path / "m.py"
    module.write_text("METHOD_VERSION = 3  # bump when the maths changes\n")
    assert declared_version(module) == 3
    module.write_text("VERSION = 3\n")
    assert declared_version(module) is None
    module.write_text("METHOD_VERSION = '3'\n")
    with pytest.raises(ValueError, match="literal integer"):
        declared_version(module)


def test_up_to_date_run_is_reused(monkeypatch, tmp_path):
    """A matching record and present outputs: no execution; a changed parameter: execution."""
    config = load_config()
    entry = config["notebooks"]["layer_pooling"]
    output = tmp_path / "executed.ipynb"
    output.write_text("{}")
    config["notebooks"]["layer_pooling"] = {**entry, "output": str(output)}  # absolute: REPO_ROOT / it == it
    monkeypatch.setattr(book, "load_config", lambda *_: config)
    monkeypatch.setattr(book, "RUNS_DIR", tmp_path)
    monkeypatch.setattr(book, "RERUNS_DIR", tmp_path / "reruns")  # the run with an override goes there
    parameters = resolve_parameters("layer_pooling", "quick", config=config)
    record = {"fingerprint": run_fingerprint(REPO_ROOT / entry["source"], parameters), "profile": "quick",
              "finished": "now", "outputs": []}
    (tmp_path / "layer_pooling.json").write_text(json.dumps(record))
    import papermill

    def executed(*args, **kwargs):
        raise RuntimeError("executed")

    monkeypatch.setattr(papermill, "execute_notebook", executed)
    assert run_notebook("layer_pooling", "quick", log=lambda *_: None) == output
    with pytest.raises(RuntimeError, match="executed"):
        run_notebook("layer_pooling", "quick", {"batch_size": 7}, log=lambda *_: None)
    with pytest.raises(RuntimeError, match="executed"):
        run_notebook("layer_pooling", "quick", force=True, log=lambda *_: None)
    output.unlink()  # results gone: recompute
    with pytest.raises(RuntimeError, match="executed"):
        run_notebook("layer_pooling", "quick", log=lambda *_: None)


def test_fingerprint_covers_exactly_the_modules_a_notebook_imports():
    from bertsent.book import library_files

    source = REPO_ROOT / load_config()["notebooks"]["layer_pooling"]["source"]
    names = {p.relative_to(REPO_ROOT / "lib").as_posix() for p in library_files(source)}
    assert {"bertsent/encode/encoder.py", "bertsent/encode/pooling.py", "bertsent/encode/__init__.py",
            "bertsent/report/io.py", "bertsent/data/manifest.py", "bertsent/__init__.py"} <= names
    assert not {n for n in names if n.startswith("bertsent/losses") or n == "bertsent/book.py"}


def _hashes(paths) -> dict[str, str]:
    import hashlib

    files = [f for p in paths for f in ([p] if p.is_file() else sorted(p.rglob("*")) if p.is_dir() else [])]
    return {str(f.relative_to(REPO_ROOT)): hashlib.sha256(f.read_bytes()).hexdigest() for f in files if f.is_file()}


def test_smoke_run_leaves_the_book_and_results_alone(tmp_path, monkeypatch, capsys):
    """A profile other than quick/paper writes to its output folder (default under RERUNS_DIR), never to the
    book's page, results/ or results/runs/<name>.json, and says where it wrote. The page: SG-OPT's claims overview,
    the cheapest (it reads CSVs), and one that writes under the very names the book's results/ holds."""
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setattr(book, "RERUNS_DIR", tmp_path / "reruns")
    committed = [REPO_ROOT / load_config()["notebooks"]["sg_opt_claims"]["output"], REPO_ROOT / "results",
                 book.RUNS_DIR / "sg_opt_claims.json"]
    before = _hashes(committed)
    assert book.main(["run", "sg_opt_claims", "--profile", "smoke"]) == 0
    assert _hashes(committed) == before
    folder = book.rerun_folder("sg_opt_claims", "smoke", {})
    assert folder.parent == tmp_path / "reruns"
    assert (folder / "sg_opt_claims.ipynb").is_file() and (folder / "run.json").is_file()
    assert list((folder / "results").rglob("*.csv"))
    assert json.loads((folder / "run.json").read_text())["parameters"]["results_dir"] == str(folder / "results")
    assert str(folder) in capsys.readouterr().out


def test_overrides_and_other_profiles_are_not_canonical():
    assert book.is_canonical("quick", {}) and book.is_canonical("paper", None)
    assert not book.is_canonical("smoke", {}) and not book.is_canonical("quick", {"max_pairs": 24})
    assert book.rerun_folder("layer_pooling", "quick", {"max_pairs": 24}) != book.rerun_folder("layer_pooling", "quick", {"max_pairs": 25})
    assert book.rerun_folder("layer_pooling", "smoke", {}).parent == book.RERUNS_DIR


def test_command_line_lists_parse_as_lists():
    assert book.parse_value('["all-minilm-l6-v2"]') == ["all-minilm-l6-v2"]
    assert book.parse_value("[all-minilm-l6-v2, glove-6b-50d]") == ["all-minilm-l6-v2", "glove-6b-50d"]
    assert book.parse_value("['all-minilm-l6-v2']") == ["all-minilm-l6-v2"]
    assert book.parse_value('{"max_steps": 2}') == {"max_steps": 2}
    assert book.parse_value("24") == 24 and book.parse_value("stsb_all") == "stsb_all"
    resolve_parameters("layer_pooling", "smoke", {"backbones": book.parse_value('["all-minilm-l6-v2"]')})


@pytest.mark.parametrize("notebook, argv, named", [
    ("layer_pooling", ["-p", "backbones", "all-minilm-l6-v2"], "'backbones' of layer_pooling: expected a JSON list"),
    ("layer_pooling", ["-p", "max_pairs", "ten"], "'max_pairs' of layer_pooling: expected an integer"),
    ("layer_pooling", ["-p", "batch_size", "[8]"], "'batch_size' of layer_pooling: expected an integer"),
    ("layer_pooling", ["-p", "backbones", '["all-minilm-l6-v2", 3]'], "'backbones' of layer_pooling: expected a JSON list of strings"),
    ("layer_pooling", ["-p", "batchsize", "8"], "Unknown parameter(s) ['batchsize']"),
    ("sg_opt_sts", ["-p", "config", '{"max_step": 2}'], "'config' of sg_opt_sts: ['max_step'] not field(s) of SelfGuidedConfig"),
    ("sg_opt_ablations", ["-p", "config", '{"temprature": 0.1}'], "'config' of sg_opt_ablations: ['temprature'] not field(s) of SelfGuidedConfig"),
    ("sg_opt_sts", ["-p", "config", '["max_steps"]'], "'config' of sg_opt_sts: expected a JSON object"),
    ("bert_stall_study", ["-p", "base_overrides", '{"sise": "tiny"}'], "'base_overrides' of bert_stall_study: ['sise'] not field(s) of PretrainingConfig"),
    ("bert_pretraining", ["-p", "pretraining_overrides", '{"max_step": 5}'], "'pretraining_overrides' of bert_pretraining: ['max_step'] not field(s) of PretrainingConfig"),
])
def test_bad_parameter_is_one_line_naming_it_before_any_work(notebook, argv, named, monkeypatch, capsys):
    import papermill

    def executed(*args, **kwargs):
        raise AssertionError("executed despite a bad parameter")

    monkeypatch.setattr(papermill, "execute_notebook", executed)
    assert book.main(["run", notebook, "--profile", "smoke", *argv]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and named in error
    if "Unknown" not in named:
        assert "e.g. -p " in error  # an example of a valid value



@pytest.mark.parametrize("name", sorted(load_config()["notebooks"]))
def test_every_notebook_checks_its_own_parameters_right_after_papermill_sets_them(name):
    """The cell after the parameters cell (where papermill injects its values) is the check, tagged so that the
    fingerprint and the rendered page leave it out, and it names its own notebook."""
    cells = nbformat.read(_notebook(name), as_version=4).cells
    at = next(i for i, c in enumerate(cells) if "parameters" in c.metadata.get("tags", []))
    check = cells[at + 1]
    assert book.CHECK_TAG in check.metadata.get("tags", [])
    assert f'check_page_parameters("{name}", globals())' in check.source
    assert sum(book.CHECK_TAG in c.metadata.get("tags", []) for c in cells) == 1


def test_the_parameter_check_cell_leaves_the_fingerprint_alone(tmp_path):
    source = _notebook("layer_pooling")

    def without_check(cells):
        cells[:] = [c for c in cells if book.CHECK_TAG not in c.metadata.get("tags", [])]

    def untagged(cells):  # the same cell, not marked as the check: it counts as code
        for cell in cells:
            cell.metadata["tags"] = [t for t in cell.metadata.get("tags", []) if t != book.CHECK_TAG]

    base = run_fingerprint(source, {"a": 1})
    assert run_fingerprint(_edited_copy(source, tmp_path / "without.ipynb", without_check), {"a": 1}) == base
    assert run_fingerprint(_edited_copy(source, tmp_path / "untagged.ipynb", untagged), {"a": 1}) != base


def _kernel_namespace(name: str, **injected) -> dict:
    """A kernel's globals after the parameters cell and papermill's injected values (and IPython's own names)."""
    import types

    declared = book.notebook_parameters(_notebook(name))
    return {**declared, **injected, "In": [""], "Out": {}, "_": "", "get_ipython": lambda: None,
            "pd": types.ModuleType("pandas"), "check_page_parameters": book.check_page_parameters}


@pytest.mark.parametrize("name, injected, named", [
    ("layer_pooling", {"backbones": '["all-minilm-l6-v2"]'},
     "'backbones' of layer_pooling: expected a JSON list, got the string"),
    ("layer_pooling", {"max_pairs": "ten"}, "'max_pairs' of layer_pooling: expected an integer"),
    ("layer_pooling", {"batchsize": 8}, "Unknown parameter(s) ['batchsize']"),
    ("sg_opt_sts", {"config": {"max_step": 2}}, "['max_step'] not field(s) of SelfGuidedConfig"),
])
def test_the_notebook_check_refuses_what_plain_papermill_lets_through(name, injected, named):
    with pytest.raises(ParameterError) as error:
        book.check_page_parameters(name, _kernel_namespace(name, **injected))
    message = str(error.value)
    assert len(message.splitlines()) == 1 and named in message
    if name == "layer_pooling" and "backbones" in injected:
        assert "-y 'backbones: VALUE'" in message  # papermill's way to pass a list


def test_the_notebook_check_accepts_the_defaults_and_every_profile():
    config = load_config()
    for name in config["notebooks"]:
        book.check_page_parameters(name, _kernel_namespace(name))
        for profile in config["profiles"]:
            book.check_page_parameters(name, _kernel_namespace(name, **resolve_parameters(name, profile,
                                                                                          config=config)))


def test_plain_papermill_stops_in_the_check_cell_and_leaves_the_book_alone(tmp_path):
    """The book's papermill examples (book/rerun.md) end to end: a word where true/false is expected stops in the
    check cell, before any work, with a line naming the parameter; the same run with ``-y`` writes where it is told, and the
    committed page, results/ and run records are byte-identical afterwards. The page: SG-OPT's claims overview
    (it reads CSVs: seconds)."""
    import subprocess
    import sys

    source = _notebook("sg_opt_claims")
    committed = [REPO_ROOT / load_config()["notebooks"]["sg_opt_claims"]["output"], REPO_ROOT / "results"]
    before = _hashes(committed)
    smoke = load_config()["profiles"]["smoke"]["sg_opt_claims"]
    common = [sys.executable, "-m", "papermill", str(source), "-p", "inputs_dir", smoke["inputs_dir"],
              "-p", "results_dir", str(tmp_path / "results"), "--cwd", str(REPO_ROOT), "--no-progress-bar"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    bad = subprocess.run([*common[:4], str(tmp_path / "bad.ipynb"), *common[4:], "-p", "per_page", "yes"],
                         capture_output=True, text=True, env=env)
    assert bad.returncode != 0
    assert "ParameterError" in bad.stderr and "'per_page' of sg_opt_claims: expected true or false" in bad.stderr
    executed = nbformat.read(tmp_path / "bad.ipynb", as_version=4)
    ran = [c for c in executed.cells if c.cell_type == "code" and c.get("execution_count")]
    assert book.CHECK_TAG in ran[-1].metadata.get("tags", [])  # the last cell that ran: nothing after it
    good = subprocess.run([*common[:4], str(tmp_path / "good.ipynb"), *common[4:], "-y", "per_page: true"],
                          capture_output=True, text=True, env=env)
    assert good.returncode == 0, good.stderr[-2000:]
    assert list((tmp_path / "results").rglob("*.csv"))
    assert _hashes(committed) == before


@pytest.mark.parametrize("name", sorted(load_config()["notebooks"]))
def test_notebook_code_defines_nothing(name):
    """A page is parameters, library calls, tables and prose: logic a page needs lives in the library, where it is
    tested and reused, so no code cell defines a function, a lambda or a class."""
    import ast

    source = REPO_ROOT / load_config()["notebooks"][name]["source"]
    found = []
    for number, cell in enumerate(nbformat.read(source, as_version=4).cells):
        if cell.cell_type != "code":
            continue
        for node in ast.walk(ast.parse(cell.source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                found.append(f"cell {number}, line {node.lineno}: {type(node).__name__}")
    assert not found, f"{source.relative_to(REPO_ROOT)} defines code; move it to lib/bertsent: {found}"



@pytest.mark.parametrize("name", sorted(load_config()["notebooks"]))
def test_a_page_that_writes_claims_ends_with_their_verdict_box(name):
    """A page that judges claims (writes a ``*claims*.csv``) shows them in the one verdict box
    (:func:`bertsent.report.claims.verdict_box`), made after the last cell that writes them: the page's last cell
    puts it in the "What we found" box that opens the page (:func:`bertsent.report.pages.findings_box`), so the
    reader finds the verdicts first, not only in a table halfway down."""
    import ast

    cells = [c.source for c in nbformat.read(REPO_ROOT / load_config()["notebooks"][name]["source"], as_version=4).cells
             if c.cell_type == "code"]
    writes = [i for i, source in enumerate(cells) if "write_table(" in source and "claims" in source]
    if not writes:
        return
    boxes = [i for i, source in enumerate(cells)
             if any(isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "verdict_box"
                    for node in ast.walk(ast.parse(source)))]  # a call, also in a cell that starts with its import
    assert boxes and boxes[-1] >= writes[-1], (f"{name} writes claims (code cell {writes[-1]}) but no verdict box "
                                               f"follows them; end the page with verdict_box(...)")

@pytest.mark.parametrize("failure", ["cell", "interrupt"])
def test_a_failed_or_interrupted_run_ends_in_one_line_naming_the_partial_notebook(failure, tmp_path, monkeypatch,
                                                                                   capsys):
    import papermill

    def execute(source, output, **_):
        if failure == "interrupt":
            raise KeyboardInterrupt
        raise papermill.PapermillExecutionError(cell_index=3, exec_count=4, source="x", ename="ValueError",
                                                evalue="bad input", traceback=[])

    monkeypatch.setattr(book, "RERUNS_DIR", tmp_path / "reruns")
    monkeypatch.setattr(papermill, "execute_notebook", execute)
    assert book.main(["run", "contrastive_in_ten_minutes", "--profile", "smoke"]) == 1
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and ".running.ipynb" in error
    assert ("cell 4 raised ValueError: bad input" if failure == "cell" else "interrupted") in error


def test_the_kind_of_cpu_is_named_and_the_reference_covers_every_notebook(monkeypatch):
    import torch

    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX512")
    assert cpu_kind({"avx512f"}) == "AVX512" and cpu_kind({"avx512f", "amx_tile"}) == "AVX512-AMX"
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX2")
    assert cpu_kind({"avx2", "amx_tile"}) == "AVX2"
    assert sorted(p.name for p in SMOKE_FIXTURES.iterdir() if p.is_dir()) == sorted(load_config()["notebooks"])


def test_a_learning_rate_may_be_given_per_task():
    from bertsent.book import ParameterError, check_parameter, resolve_parameters

    check_parameter("acl_glue", "learning_rate", {"CoLA": 1e-4, "SST-2": 5e-5}, 5e-5)
    check_parameter("acl_glue", "epochs", {"RTE": 3}, 1)
    with pytest.raises(ParameterError, match="'learning_rate' of acl_glue: expected a number per task, got the "
                                             "string 'fast' for CoLA"):
        check_parameter("acl_glue", "learning_rate", {"CoLA": "fast"}, 5e-5)
    with pytest.raises(ParameterError, match="'max_length' of acl_glue"):
        check_parameter("acl_glue", "max_length", {"CoLA": 64}, 128)  # not a per-task parameter
    assert resolve_parameters("acl_glue", "quick")["learning_rate"]["CoLA"] == 1e-4
    check_parameter("acl_glue", "seeds", {"CoLA": [1, 2, 3, 4, 5], "SST-2": [1]}, [1, 2, 3])
    with pytest.raises(ParameterError, match="'seeds' of acl_glue: expected a JSON list of integers per task, got "
                                             "the string 'five' for CoLA"):
        check_parameter("acl_glue", "seeds", {"CoLA": "five"}, [1, 2, 3])


def test_two_kernels_started_side_by_side_never_share_socket_files():
    first, second = book._local_kernel_manager()(), book._local_kernel_manager()()
    assert first.transport == "ipc" and first.ip != second.ip
    assert not Path(first.ip).is_relative_to(REPO_ROOT)  # no socket files left in the repository either


def test_every_held_page_is_out_of_date_and_its_committed_copy_says_so():
    config = load_config()
    held = [name for name in config["notebooks"] if book.held_reason(name, config)]
    for name in held:
        fresh, _ = book.page_status(name, config)
        assert not fresh, f"{name} is up to date again: delete its `held:` line in notebooks/profiles.yml"
        record = json.loads((book.RUNS_DIR / f"{name}.json").read_text())
        page = nbformat.read(REPO_ROOT / config["notebooks"][name]["output"], as_version=4)
        banners = [c.source for c in page.cells if book.HELD_BANNER_TAG in c.metadata.get("tags", [])]
        assert banners == [book.held_banner(name, book.held_reason(name, config), record["finished"])], \
            f"{name}: run `python -m bertsent.book run` (or bertsent.book.mark_held_page) to update its banner"


def test_a_build_of_every_page_renders_a_held_page_as_committed_unless_asked(tmp_path, monkeypatch):
    source = "notebooks/teaching/contrastive_in_ten_minutes.ipynb"
    page = tmp_path / "held.ipynb"
    titled = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# A page\n\nIntro."),
                                             nbformat.v4.new_code_cell("1 + 1")])
    nbformat.write(titled, page)
    config = {**load_config(), "notebooks": {"contrastive_in_ten_minutes": {
        "source": source, "output": str(page), "held": "it retrains for hours"}}}
    ran = []
    monkeypatch.setattr(book, "load_config", lambda *a, **k: config)
    monkeypatch.setattr(book, "page_status", lambda name, config=None: (False, "out of date"))
    monkeypatch.setattr(book, "run_notebook", lambda name, *a, **k: ran.append(name))
    assert book.main(["run"]) == 0 and ran == []
    cells = nbformat.read(page, as_version=4).cells
    assert cells[0].source.startswith("# A page") and cells[1].metadata["tags"] == [book.HELD_BANNER_TAG]
    assert "it retrains for hours" in cells[1].source and "```{warning} This page is out of date" in cells[1].source
    assert book.main(["run"]) == 0 and len(nbformat.read(page, as_version=4).cells) == 3  # one banner, not two
    assert book.main(["run", "contrastive_in_ten_minutes"]) == 0 and ran == ["contrastive_in_ten_minutes"]
    assert book.main(["run", "--include-held"]) == 0 and len(ran) == 2


def _recorded_page(name: str, tmp_path, monkeypatch, **record_fields) -> tuple[dict, dict, Path]:
    """Page ``name`` with an executed copy and a run record in ``tmp_path``, made from its quick profile as it is
    now: (the config that points at them, the record, the record's path); ``record_fields`` join the record."""
    config = load_config()
    entry = config["notebooks"][name]
    output = tmp_path / "executed.ipynb"
    output.write_text("{}")
    config["notebooks"][name] = {**entry, "output": str(output)}
    monkeypatch.setattr(book, "RUNS_DIR", tmp_path)
    parameters = book.resolve_parameters(name, "quick", config=config)
    record = {"fingerprint": book.run_fingerprint(REPO_ROOT / entry["source"], parameters), "profile": "quick",
              "finished": "now", "outputs": [], "parameters": parameters,
              "inputs": book.page_inputs(REPO_ROOT / entry["source"], parameters), **record_fields}
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(record))
    return config, record, path


def test_status_counts_an_edited_profile_as_a_change_of_parameters(tmp_path, monkeypatch):
    import copy

    name = "contrastive_in_ten_minutes"
    config, _, _ = _recorded_page(name, tmp_path, monkeypatch)
    fresh, words = book.page_status(name, config)
    assert fresh, words
    edited = copy.deepcopy(config)
    edited["profiles"]["quick"][name] = {"steps": 7}  # the profile now asks for something else than the record
    fresh, words = book.page_status(name, edited)
    assert not fresh and words == "its parameters changed", words
    edited["profiles"]["quick"][name] = {"no_such_parameter": 1}
    fresh, words = book.page_status(name, edited)
    assert not fresh and words.startswith("its profile no longer resolves"), words


def test_a_repository_model_published_again_makes_its_pages_out_of_date(tmp_path, monkeypatch):
    name = "sg_opt_ablations"  # its backbone, bert-tiny-wiki, is a model kept in the repository's models/
    parameters = book.resolve_parameters(name, "quick")
    weights = book.repository_model_weights(parameters)
    assert list(weights) == ["bert-tiny-wiki"] and len(weights["bert-tiny-wiki"]) == 16  # sha256, shortened
    assert book.repository_model_weights({"backbones": ["all-minilm-l6-v2"]}) == {}  # a hub model: pinned elsewhere
    config, record, path = _recorded_page(name, tmp_path, monkeypatch, stored_runs={}, model_weights=weights)
    assert book.page_status(name, config)[0]
    record["model_weights"] = {"bert-tiny-wiki": "0" * 16}  # the weights it ran with were others
    path.write_text(json.dumps(record))
    fresh, words = book.page_status(name, config)
    assert not fresh and words == "models/bert-tiny-wiki holds other weights than when it ran", words
    del record["model_weights"]  # a record from before records kept them: nothing to compare
    path.write_text(json.dumps(record))
    assert book.page_status(name, config)[0]


if __name__ == "__main__":  # .venv/bin/python -m tests.test_book: measure the spread, write SMOKE_TOLERANCES
    SMOKE_TOLERANCES.write_text(json.dumps(measure_smoke_spread(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {SMOKE_TOLERANCES}")
