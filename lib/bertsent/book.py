"""Run the book's notebooks with papermill, with named parameter profiles and result reuse.

``notebooks/profiles.yml`` names each notebook (its source and the executed copy the book renders)
and the parameter profiles (``smoke``, ``quick``, ``paper``). A run records a fingerprint of
everything that determines its results in ``results/runs/<notebook>.json``: the notebook's code cells, the
resolved parameters, the data manifest, and the ``METHOD_VERSION`` of every library module the notebook
reaches through its imports (:mod:`bertsent.versions`), not the modules' text, so a refactor of the library
leaves every page up to date and a bumped version makes exactly the pages that reach it out of date. A later
build whose fingerprint matches and whose outputs are present reuses them instead of recomputing; one that
does not says why. ``--force`` recomputes. Trained runs are reused the same way, from their committed results
(:mod:`bertsent.experiments.runs`).

Command line::

    python -m bertsent.book run                              # every notebook, profile quick
    python -m bertsent.book run layer_pooling -p backbones '["all-minilm-l6-v2"]'   # -> .cache/reruns/...
    python -m bertsent.book run layer_pooling --profile smoke --output /tmp/lp     # anywhere
    python -m bertsent.book list                             # notebooks, profiles and parameters
    python -m bertsent.book status                           # which committed pages are up to date (runs nothing)
    python -m bertsent.book run --include-held               # also the held pages (see held_reason)
    python -m bertsent.book tidy [NAME ...] [--skip NAME]    # hide set-up code, drop stderr (no re-execution)
"""
from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import sys
import time
from pathlib import Path

import yaml

from .paths import CACHE_DIR, REPO_ROOT, RESULTS_DIR
from .experiments.store import READ_LOG_VARIABLE
from .report.io import STAGING_VARIABLE, write_json_atomic
from .report.pages import CHECK_TAG, tidy_page
from .versions import code_imports, manifest_digest, method_versions, reached_modules, versions_digest


class NotebookFailed(RuntimeError):
    """A notebook stopped (a cell raised, or Ctrl-C): one line naming the cell and the partial notebook."""


_KERNELS: set = set()  # the kernel managers of this process's page runs, while their kernels run (Ctrl-C reaches them)
INTERRUPT_GRACE_SECONDS = 15.0  # after one Ctrl-C, a run still going this much later is ended at once


def _signal_kernels(signum: int) -> None:
    """Send ``signum`` to every running kernel's process group (the kernel and whatever it started)."""
    for manager in list(_KERNELS):
        provisioner = getattr(manager, "provisioner", None)
        group = getattr(provisioner, "pgid", None) or getattr(provisioner, "pid", None)
        if group:
            try:
                os.killpg(group, signum)
            except OSError:  # gone already
                pass


class _StopOnInterrupt:
    """While a page executes: one Ctrl-C (SIGINT) stops it. The kernel runs in a session of its own, so the
    terminal's Ctrl-C never reaches it: the signal is passed on to the kernel (its cell stops where it is) and
    KeyboardInterrupt is raised here (the runner stops, the kernel is shut down, and the one-line message names the
    partial notebook). Should the run still be going :data:`INTERRUPT_GRACE_SECONDS` later, or at a second Ctrl-C,
    the kernels are killed and the process ends at once with that line (exit status 130). The page itself is
    written only after the notebook has finished, so an interrupted run never writes it."""

    def __init__(self, message: str):
        self.message, self.interrupted, self._timer, self._previous = message, False, None, None

    def __enter__(self):
        import signal
        import threading

        if threading.current_thread() is threading.main_thread():  # signal handlers live in the main thread
            self._previous = signal.signal(signal.SIGINT, self._on_interrupt)
        return self

    def _on_interrupt(self, signum, frame):
        import signal
        import threading

        if self.interrupted:
            self._end_now()
        self.interrupted = True
        _signal_kernels(signal.SIGINT)
        self._timer = threading.Timer(INTERRUPT_GRACE_SECONDS, self._end_now)
        self._timer.daemon = True
        self._timer.start()
        raise KeyboardInterrupt

    def _end_now(self):
        import signal

        _signal_kernels(signal.SIGKILL)
        try:
            sys.stderr.write(f"error: {self.message}\n")
            sys.stderr.flush()
        finally:
            os._exit(130)

    def __exit__(self, *exc):
        import signal

        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
        if self._timer is not None:  # the run stopped in time
            self._timer.cancel()
        return False


def _local_kernel_manager():
    """The kernel's channels as local sockets (IPC) rather than TCP on localhost: the same kernel, without its
    warning that TCP traffic is unencrypted, and with no port open to other users of the machine."""
    from jupyter_client.manager import KernelManager
    from traitlets import default

    class LocalKernelManager(KernelManager):
        async def _async_post_start_kernel(self, **kw):
            await super()._async_post_start_kernel(**kw)
            _KERNELS.add(self)  # a Ctrl-C of the runner reaches it (_StopOnInterrupt)

        async def _async_cleanup_resources(self, restart: bool = False):  # the kernel has ended
            _KERNELS.discard(self)
            await super()._async_cleanup_resources(restart=restart)

        @default("transport")
        def _default_transport(self):
            return "ipc"

        @default("ip")
        def _default_ip(self):
            # the sockets' path prefix: a folder of this kernel's own, so that two runs started side by side never
            # pick the same socket files (the default, ./kernel-ipc-N, can collide: "Invalid Signature")
            import tempfile

            return str(Path(tempfile.mkdtemp(prefix="bertsent-kernel-")) / "kernel-ipc")

    return LocalKernelManager

PROFILES_FILE = REPO_ROOT / "notebooks" / "profiles.yml"
RUNS_DIR = RESULTS_DIR / "runs"
# Only these profiles, with no parameter override, write the book's page, results/ and results/runs/<name>.json;
# any other run goes to an output folder (default: RERUNS_DIR/<name>-<profile>-<hash of the overrides>/).
CANONICAL_PROFILES = ("quick", "paper")
RERUNS_DIR = CACHE_DIR / "reruns"
# A canonical run's result files wait here (one folder per page, laid out as results/) until its page has finished;
# see publish_page.
STAGING_DIR = CACHE_DIR / "staging"
# Parameters whose default is None, by the type their other values take (the rest: whatever the profiles give).
NONE_DEFAULT_TYPES = {**dict.fromkeys(("max_pairs", "dev_pairs", "max_fit_sentences", "max_examples"), int),
                      **dict.fromkeys(("data_dir", "corpus_dir", "results_dir", "runs_dir", "run_dir", "models_dir",
                                       "committed_root", "publish_as", "trajectory_backbone"), str)}
# Number parameters that may also be given per task, as a JSON object task -> number (the GLUE pages' recipe).
PER_TASK_PARAMETERS = ("learning_rate", "epochs", "seeds")
# Dict parameters whose keys are the fields of a configuration class (module, class).
CONFIG_PARAMETERS = {"config": ("bertsent.training.self_guided", "SelfGuidedConfig"),
                     "pretraining_overrides": ("bertsent.training.pretraining", "PretrainingConfig"),
                     "base_overrides": ("bertsent.training.pretraining", "PretrainingConfig")}
_EXAMPLES = {int: "24", float: "0.5", bool: "true", str: "stsb_all", list: '\'["all-minilm-l6-v2"]\'',
             dict: "'{}'"}
_ITEM_WORDS = {int: "integers", float: "numbers", bool: "true/false values", str: "strings", list: "lists",
               dict: "objects"}
_TYPE_WORDS = {int: "an integer", float: "a number", bool: "true or false", str: "a string", list: "a JSON list",
               dict: "a JSON object"}


class ParameterError(ValueError):
    pass


def load_config(path: Path = PROFILES_FILE) -> dict:
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def notebook_parameters(source: Path) -> dict:
    """The parameters a notebook declares (its cell tagged ``parameters``), with their defaults."""
    import papermill

    # papermill reports each default as its source text; the defaults are Python literals
    return {name: ast.literal_eval(spec["default"]) for name, spec in papermill.inspect_notebook(str(source)).items()}


def resolve_parameters(name: str, profile: str, overrides: dict | None = None, config: dict | None = None) -> dict:
    """Every parameter's value: notebook defaults, then the profile's, then explicit overrides (unknown names are an error)."""
    config = config or load_config()
    if name not in config["notebooks"]:
        raise ParameterError(f"Unknown notebook {name!r}. Known: {', '.join(config['notebooks'])}.")
    if profile not in config["profiles"]:
        raise ParameterError(f"Unknown profile {profile!r}. Known: {', '.join(config['profiles'])}.")
    declared = notebook_parameters(REPO_ROOT / config["notebooks"][name]["source"])
    chosen = {"profile": profile}
    chosen.update(config["profiles"][profile].get(name, {}) or {})
    chosen.update(overrides or {})
    _refuse_unknown(name, chosen, declared)
    for key, value in chosen.items():
        check_parameter(name, key, value, declared[key], _profile_values(config, name, key))
    return {**declared, **chosen}


def _profile_values(config: dict, name: str, key: str) -> list:
    """The values the profiles give notebook ``name``'s parameter ``key`` (the type of one whose default is None)."""
    return [values[name][key] for values in config["profiles"].values() if key in (values.get(name) or {})]


def _refuse_unknown(name: str, given, declared) -> None:
    unknown = sorted(set(given) - set(declared))
    if unknown:
        raise ParameterError(f"Unknown parameter(s) {unknown} for notebook {name!r}. Known: {', '.join(declared)}. "
                             f"Fix: check the spelling, or list them with `python -m bertsent.book list`.")


def _type_of(value) -> type | None:
    """The parameter type a value stands for (None: any)."""
    for kind in (bool, int, float, str, list, dict):  # bool before int: True is an int
        if isinstance(value, kind):
            return kind
    return None


def _fits(value, kind: type) -> bool:
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def _shown(value) -> str:
    return f"the string {value!r}" if isinstance(value, str) else json.dumps(value)


def check_parameter(notebook: str, key: str, value, default, profile_values=()) -> None:
    """Refuses (:class:`ParameterError`, one line naming the parameter, the type expected and an example) a value
    whose type is not its default's (a string for a list, a word for a number), a list whose items are not the
    default's items' type, and a configuration dict (:data:`CONFIG_PARAMETERS`) with a key that is not a field of
    its class. A number (or a list of seeds) of :data:`PER_TASK_PARAMETERS` may be a dict task -> value. ``None``
    is accepted except for lists and dicts; a parameter whose default is None takes the type in
    :data:`NONE_DEFAULT_TYPES`, else that of the profiles' values, else any."""
    kind = _type_of(default)
    if kind is None:
        kind = NONE_DEFAULT_TYPES.get(key) or next((_type_of(v) for v in profile_values if v is not None), None)
    if kind is None or key == "profile":
        return
    if value is None and kind not in (list, dict):
        return
    example = json.dumps(default) if kind in (list, dict) and default else _EXAMPLES[kind]
    if kind in (list, dict) and default:
        example = f"'{example}'"
    where = f"parameter {key!r} of {notebook}"
    if key in PER_TASK_PARAMETERS and kind in (int, float) and isinstance(value, dict):
        wrong = {task: v for task, v in value.items() if not _fits(v, kind)}
        if wrong:
            task, bad = next(iter(wrong.items()))
            raise ParameterError(f"{where}: expected {_TYPE_WORDS[kind]} per task, got {_shown(bad)} for {task}; "
                                 f"e.g. -p {key} '{{\"CoLA\": {_EXAMPLES[kind]}}}'")
        _check_range(where, key, value, example=f"-p {key} '{{\"CoLA\": {json.dumps(default)}}}'")
        return
    if key in PER_TASK_PARAMETERS and kind is list and isinstance(value, dict):
        wrong = {task: v for task, v in value.items()
                 if not isinstance(v, list) or not all(_fits(item, int) for item in v)}
        if wrong:
            task, bad = next(iter(wrong.items()))
            raise ParameterError(f"{where}: expected a JSON list of integers per task, got {_shown(bad)} for {task}; "
                                 f"e.g. -p {key} '{{\"CoLA\": [1, 2, 3, 4, 5]}}'")
        return
    if not _fits(value, kind):
        raise ParameterError(f"{where}: expected {_TYPE_WORDS[kind]}, got {_shown(value)}; "
                             f"e.g. -p {key} {example}")
    if kind is list and default:
        item = _type_of(default[0])
        if item is not None and all(_fits(d, item) for d in default):
            wrong = [v for v in value if not _fits(v, item)]
            if wrong:
                raise ParameterError(f"{where}: expected a JSON list of {_ITEM_WORDS[item]}, got the item "
                                     f"{_shown(wrong[0])}; e.g. -p {key} {example}")
    if kind is dict and key in CONFIG_PARAMETERS:
        import dataclasses
        import importlib

        module, cls = CONFIG_PARAMETERS[key]
        declared = {f.name: f for f in dataclasses.fields(getattr(importlib.import_module(module), cls))}
        fields = list(declared)
        unknown = sorted(set(value) - set(fields))
        if unknown:
            raise ParameterError(f"{where}: {unknown} not field(s) of {cls}; expected a JSON object of {cls} "
                                 f"fields ({', '.join(fields)}), e.g. -p {key} '{{\"max_steps\": 2}}'")
        for name, given in value.items():
            field = declared[name]
            default = field.default if field.default is not dataclasses.MISSING else None
            expected = _type_of(default) or (int if "int" in str(field.type) else float if "float" in str(field.type)
                                             else None)
            if given is not None and expected in (int, float, bool, str) and not _fits(given, expected):
                raise ParameterError(f"{where}: field {name!r} of {cls} expected {_TYPE_WORDS[expected]}, got "
                                     f"{_shown(given)}; e.g. -p {key} '{{\"{name}\": {json.dumps(default)}}}'")
            _check_range(f"{where}, field {name!r}", name, given, example=f"-p {key} '{{\"{name}\": "
                                                                          f"{json.dumps(default)}}}'")
    _check_range(where, key, value, default)
    if key in CLOSED_LISTS and isinstance(value, list):
        known = set(default or []) | {item for values in profile_values if isinstance(values, list) for item in values}
        unknown = [item for item in value if item not in known]
        if unknown:
            raise ParameterError(f"{where}: unknown value {_shown(unknown[0])}; known: "
                                 f"{', '.join(map(str, sorted(known)))}")


# Ranges, checked with the types (:func:`check_parameter`) before any work, for parameters and configuration
# fields of these names: sizes and counts are at least 1, rates and temperatures above 0, a list whose default is
# not empty must not be empty, and a backbone must be a registered name, a local folder or a hub id (owner/name).
POSITIVE_INTEGERS = {"ablation_steps", "alpha_sentences", "angle_every", "batch_size", "deep_exit", "epochs", "glue_epochs",
                     "hidden", "latency_examples", "max_dev_examples", "max_examples", "max_fit_sentences",
                     "max_length", "max_pairs", "max_points", "max_triplets", "mlm_eval_pairs", "n_clusters",
                     "n_eval", "n_pairs", "n_train", "overhead_sentences", "repeats", "resamples", "steps", "tokens",
                     "dev_pairs", "max_steps", "eval_every", "head_dim", "eval_instances", "max_train_examples"}
POSITIVE_NUMBERS = {"learning_rate", "lr", "temperature", "fast_head_learning_rate", "learning_rates",
                    "temperatures", "head_learning_rate", "pooler_learning_rate"}
BACKBONE_PARAMETERS = {"backbone", "backbones", "trained_backbones", "histogram_backbone", "trajectory_backbone",
                       "deep_backbone"}


# lists that must not be empty (others, e.g. probe_tasks, may be: that part of the page is off)
NON_EMPTY_LISTS = {"backbones", "seeds", "methods", "datasets", "glue_tasks", "tasks", "train_sets", "temperatures",
                   "learning_rates", "main_seeds", "variants", "objectives", "recipes", "sizes", "lambdas",
                   "lambda_seeds", "glue_seeds", "reference_seeds", "main_poolings", "train_data"}
# list parameters whose items are names the notebook knows: the default's and the profiles' items
CLOSED_LISTS = {"methods", "modes", "deep_modes", "objectives"}


def _check_range(where: str, key: str, value, default=None, example: str | None = None) -> None:
    if value is None:
        return
    if isinstance(value, list) and not value and key in NON_EMPTY_LISTS:
        raise ParameterError(f"{where}: an empty list leaves the page nothing to compute; give at least one, e.g. "
                             f"-p {key} '{json.dumps(default[:1])}'")
    items = value if isinstance(value, list) else list(value.values()) if isinstance(value, dict) and \
        key in POSITIVE_INTEGERS | POSITIVE_NUMBERS else [value]
    for item in items:
        if key in POSITIVE_INTEGERS and _fits(item, int) and item < 1:
            raise ParameterError(f"{where}: expected a size of at least 1, got {item}; e.g. "
                                 f"{example or f'-p {key} 24'}")
        if key in POSITIVE_NUMBERS and _fits(item, float) and not item > 0:
            raise ParameterError(f"{where}: expected a number above 0, got {item}; e.g. "
                                 f"{example or f'-p {key} 5e-05'}")
        if key in BACKBONE_PARAMETERS and isinstance(item, str):
            check_backbone_name(item, where)


def check_backbone_name(name: str, where: str = "backbone") -> None:
    """Refuses, without touching the network, a backbone that is not a registered name, a local folder (with a
    ``config.json``) or a hub id (``owner/name``)."""
    from .encode.backbones import REGISTRY, known_backbones

    if name in REGISTRY or Path(name).is_dir() or (REPO_ROOT / "models" / name).is_dir():
        return
    if "/" in name and not name.startswith(("/", ".")) and len(name.split("/")) == 2:
        return  # a hub id: the hub is asked when the model is loaded
    raise ParameterError(f"{where}: unknown backbone {name!r}: not a registered name, a local folder or a hub id "
                         f"(owner/name); known: {', '.join(known_backbones())}")


# CHECK_TAG marks the cell that follows every notebook's parameters cell and calls check_page_parameters: the
# same checks for a notebook run by plain papermill as for one run by this runner. It computes nothing, so it is
# left out of the page's fingerprint (code_cells) and off the rendered page (report.pages).

# Names an IPython kernel defines by itself (the rest of its own start with an underscore).
_KERNEL_NAMES = {"In", "Out", "get_ipython", "exit", "quit", "open"}


def check_page_parameters(name: str, namespace: dict) -> None:
    """The runner's checks (:func:`check_parameter`, unknown names) on the parameters as a notebook's kernel holds
    them after papermill injected its values: a run by plain papermill, which only warns about an unknown name and
    reads ``-p NAME VALUE`` as a number or a string, stops in its first cell with one line naming the parameter
    instead of failing later (or reading a list letter by letter). ``namespace``: the kernel's ``globals()``."""
    import types

    config = load_config()
    declared = notebook_parameters(REPO_ROOT / config["notebooks"][name]["source"])
    given = {key: value for key, value in namespace.items()
             if not key.startswith("_") and key not in _KERNEL_NAMES
             and not isinstance(value, (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, type))}
    _refuse_unknown(name, given, declared)
    for key, default in declared.items():
        try:
            check_parameter(name, key, given.get(key, default), default, _profile_values(config, name, key))
        except ParameterError as error:
            if not isinstance(default, (list, dict)):
                raise
            # papermill's -p passes a list or dict as its text: the way that works there, on the same line
            raise ParameterError(f"{error} (with papermill: -y '{key}: VALUE', not -p)") from None


def is_canonical(profile: str, overrides: dict | None) -> bool:
    """Whether a run writes the book's page, results/ and its run record: a canonical profile, no override."""
    return profile in CANONICAL_PROFILES and not overrides


def rerun_folder(name: str, profile: str, overrides: dict | None) -> Path:
    """The default output folder of a non-canonical run: ``.cache/reruns/<name>-<profile>-<hash of overrides>``."""
    digest = hashlib.sha256(json.dumps(overrides or {}, sort_keys=True).encode()).hexdigest()[:8]
    return RERUNS_DIR / f"{name}-{profile}-{digest}"


def page_results_dir(name: str, profile: str, overrides: dict | None, results_dir=None) -> Path | None:
    """Where a command that trains a page's runs ahead writes them: ``results_dir`` when given, else the book's
    ``results/`` (None) for a canonical run, else the re-run folder's ``results`` (as the runner would)."""
    if results_dir is not None:
        return Path(results_dir)
    return None if is_canonical(profile, overrides) else rerun_folder(name, profile, overrides) / "results"


def add_train_ahead_options(parser) -> None:
    """The options every command that trains a page's runs ahead shares (``experiments.sts_runs``, ``acl_runs``):
    profile, ``-p`` overrides, results folder, a cap on new runs, PyTorch threads, list only."""
    parser.add_argument("--profile", default="quick")
    parser.add_argument("-p", "--parameter", nargs=2, action="append", metavar=("NAME", "VALUE"), default=[],
                        help="override a page parameter (VALUE is JSON), as for python -m bertsent.book run")
    parser.add_argument("--results-dir", help="where the runs' results go (default: see the module doc)")
    parser.add_argument("--max-runs", type=int, help="train at most this many missing runs, then stop")
    parser.add_argument("--threads", type=int, help="PyTorch threads (default: PyTorch's)")
    parser.add_argument("--list", action="store_true", help="list the runs and whether each is stored; train nothing")


def train_ahead_overrides(args) -> dict | None:
    """The ``-p`` overrides of parsed :func:`add_train_ahead_options` (None: none), after setting ``--threads``."""
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    return {name: parse_value(value) for name, value in args.parameter} or None


class _DropLibraryImports(ast.NodeTransformer):
    """Removes the statements that import from bertsent, collecting the names they bind: where a name comes from
    is the library's layout, which the method versions cover (:func:`page_inputs`)."""

    def __init__(self):
        self.names: set[tuple] = set()

    @staticmethod
    def _library(module: str) -> bool:
        return module == "bertsent" or module.startswith("bertsent.")

    def visit_Import(self, node):
        kept = [alias for alias in node.names if not self._library(alias.name)]
        self.names.update(("import", alias.asname or "bertsent") for alias in node.names if self._library(alias.name))
        if not kept:
            return None
        node.names = kept
        return node

    def visit_ImportFrom(self, node):
        if node.level == 0 and self._library(node.module or ""):
            self.names.update(("from", alias.name, alias.asname) for alias in node.names)
            return None
        return node


def code_cells(notebook: Path) -> list[str]:
    """The sources of a notebook's code cells (markdown cells never change a result), but for the parameter check
    (:data:`CHECK_TAG`), which computes nothing."""
    import nbformat

    return [cell.source for cell in nbformat.read(notebook, as_version=4).cells
            if cell.cell_type == "code" and CHECK_TAG not in cell.metadata.get("tags", [])]


def code_digest(notebook: Path) -> str:
    """sha256 of what the notebook's code does: each code cell's syntax tree (so comments and layout do not
    count), with the statements importing from bertsent replaced by the sorted set of names they import (so a
    module moving inside the library, which changes an import line, does not count either). A cell that does not
    parse (IPython magics) counts as its text."""
    digest = hashlib.sha256()
    names: set[tuple] = set()
    for source in code_cells(notebook):
        try:
            tree = ast.parse(source)
        except SyntaxError:
            digest.update(source.encode())
            continue
        dropper = _DropLibraryImports()
        digest.update(ast.dump(dropper.visit(tree)).encode())
        names |= dropper.names
    digest.update(json.dumps(sorted(names, key=repr)).encode())
    return digest.hexdigest()


def notebook_modules(notebook: Path) -> set[str]:
    """The bertsent modules a notebook's code cells import."""
    return code_imports(code_cells(notebook))


def library_files(notebook: Path) -> list[Path]:
    """The library modules a notebook reaches: its bertsent imports, followed transitively, with the packages'
    ``__init__`` files."""
    return sorted(set(reached_modules(notebook_modules(notebook)).values()))


def page_inputs(source: Path, parameters: dict, reads: tuple[str, ...] = ()) -> dict:
    """What a page's results depend on, each as a digest: its ``code`` (:func:`code_digest`), its resolved
    ``parameters``, the data ``manifest`` (each file's path and sha256) and the ``methods``: the
    ``METHOD_VERSION`` of every library module it reaches (:mod:`bertsent.versions`), not the modules' text.
    A page that reads other pages' results (``reads``: their names, ``reads:`` in profiles.yml; the claims pages)
    also depends on ``pages_read``: the fingerprints of those pages' run records and the stored runs each read, so
    re-running one of them with other inputs, or with runs stored since, makes it out of date."""
    inputs = {"code": code_digest(source),
              "parameters": hashlib.sha256(json.dumps(parameters, sort_keys=True).encode()).hexdigest(),
              "manifest": manifest_digest(),
              "methods": versions_digest(method_versions(notebook_modules(source)))}
    if reads:
        inputs["pages_read"] = hashlib.sha256(json.dumps(
            {page: recorded_state(page) for page in sorted(reads)}, sort_keys=True).encode()).hexdigest()
    return inputs


def recorded_state(name: str) -> list | None:
    """Page ``name``'s committed run record as another page depends on it: its fingerprint, and the stored runs it
    read (a page re-run from newly stored runs keeps its fingerprint but writes other results); None without one."""
    path = RUNS_DIR / f"{name}.json"
    if not path.is_file():
        return None
    record = json.loads(path.read_text())
    return [record.get("fingerprint"), record.get("stored_runs", {})]


def code_fingerprint(notebook: Path) -> str:
    """What a page's results depend on besides its notebook and parameters: the method versions of the library
    modules it reaches and the data manifest."""
    versions = versions_digest(method_versions(notebook_modules(notebook)))
    return hashlib.sha256(f"{versions}|{manifest_digest()}".encode()).hexdigest()


def run_fingerprint(source: Path, parameters: dict) -> str:
    """The page's fingerprint: sha256 of :func:`page_inputs`. A rename, a move, a docstring or any refactor of the
    library leaves it as it is; bumping the ``METHOD_VERSION`` of a module the page reaches changes it."""
    return hashlib.sha256(json.dumps(page_inputs(source, parameters), sort_keys=True).encode()).hexdigest()


def _stale_reason(record: dict, inputs: dict, versions: dict) -> str:
    """Which of a page's inputs changed since its record, in words (``versions``: module -> version now)."""
    recorded = record.get("inputs")
    if not recorded:
        return "recorded before pages were fingerprinted by method versions"
    words = {"code": "its code", "parameters": "its parameters", "manifest": "the data manifest",
             "methods": "the method versions it reaches", "pages_read": "the pages it reads"}
    changed = [words[key] for key in words if recorded.get(key) != inputs.get(key)]
    if recorded.get("methods") != inputs.get("methods"):
        before = record.get("method_versions", {})
        bumped = [f"{name} {before.get(name, '-')} -> {version}" for name, version in versions.items()
                  if before.get(name) != version and version != 1]
        if bumped:
            changed[-1] += f" ({', '.join(bumped)})"
    return ", ".join(changed) + " changed" if changed else "its outputs are missing"


def run_notebook(name: str, profile: str = "quick", overrides: dict | None = None, force: bool = False,
                 output: Path | None = None, results_dir: Path | None = None, log=print,
                 output_dir: Path | None = None) -> Path:
    """Execute one notebook (or reuse its committed results); returns the executed notebook's path.

    Only a canonical run (:func:`is_canonical`: profile quick or paper, no override, no ``output_dir``) writes the
    book's page, ``results/`` and ``results/runs/<name>.json``. Any other run goes to ``output_dir`` (default
    :func:`rerun_folder`): ``<output_dir>/<name>.ipynb``, ``<output_dir>/results/`` and ``<output_dir>/run.json``.
    With ``output``/``results_dir`` given (tests, experiments), the run goes there and is not recorded.

    A canonical run's notebook writes its result files into :data:`STAGING_DIR`/``<name>`` (the kernel inherits
    :data:`~bertsent.report.io.STAGING_VARIABLE`); :func:`publish_page` moves them, the page and the run record into
    place only once the notebook has finished. A run that fails or is interrupted changes nothing in ``book/`` or
    ``results/`` (but for the trained runs it stored in ``results/runs/``, kept as each one finishes) and names
    where its files wait.
    """
    import papermill

    config = load_config()
    parameters = resolve_parameters(name, profile, overrides, config)  # checks names and types first
    entry = config["notebooks"][name]
    source = REPO_ROOT / entry["source"]
    canonical = output is None and results_dir is None and output_dir is None and is_canonical(profile, overrides)
    if output_dir is not None:
        check_output_folder(Path(output_dir))
    if not canonical and output is None and results_dir is None:
        output_dir = Path(output_dir) if output_dir else rerun_folder(name, profile, overrides)
        output = output_dir / f"{name}.ipynb"
        if not (overrides or {}).get("results_dir"):
            results_dir = output_dir / "results"
        if "models_dir" in parameters and not (overrides or {}).get("models_dir"):
            parameters["models_dir"] = str(output_dir / "models")  # a published checkpoint stays there too
    output = Path(output) if output else REPO_ROOT / entry["output"]
    staging = STAGING_DIR / name if canonical else None
    if results_dir is not None:
        parameters["results_dir"] = str(results_dir)
    inputs = page_inputs(source, parameters, tuple(entry.get("reads", ())))
    versions = method_versions(notebook_modules(source))
    fingerprint = hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()  # = run_fingerprint
    record_path = RUNS_DIR / f"{name}.json"
    weights = repository_model_weights(parameters)
    if canonical and not force and record_path.is_file():
        record = json.loads(record_path.read_text())
        outputs_present = output.is_file() and all((REPO_ROOT / p).is_file() for p in record.get("outputs", []))
        runs_changed = (stored_runs_changed(record, source) or model_weights_changed(record, weights)
                        if outputs_present else None)
        if record.get("fingerprint") == fingerprint and outputs_present and not runs_changed:
            log(f"{name}: up to date (profile {record['profile']}, run {record['finished']}); reusing its results")
            return output
        log(f"{name}: out of date: " + (runs_changed if outputs_present and record.get("fingerprint") == fingerprint
                                        else _stale_reason(record, inputs, versions) if outputs_present
                                        else "its outputs are missing"))
    shown = output.relative_to(REPO_ROOT) if output.is_relative_to(REPO_ROOT) else output
    log(f"{name}: running {entry['source']} with profile {profile} -> {shown}")
    check_output_folder(output.parent)
    for folder in ([RESULTS_DIR, RUNS_DIR] if canonical else [Path(results_dir)] if results_dir else []):
        check_output_folder(folder)
    output.parent.mkdir(parents=True, exist_ok=True)
    started = time.time()
    book_before = _book_snapshot() if output_dir is not None else None
    # the partial notebook (saved after every cell; kept for inspection if a cell fails) lives under .cache, never
    # beside the book's page
    tmp_output = partial_notebook(output)
    tmp_output.parent.mkdir(parents=True, exist_ok=True)
    read_log = tmp_output.with_suffix(".reads")
    read_log.unlink(missing_ok=True)
    previous = os.environ.get(READ_LOG_VARIABLE)
    os.environ[READ_LOG_VARIABLE] = str(read_log)  # the kernel inherits it: the stored runs the page reads
    unpublished = ""
    if staging is not None:
        import shutil

        shutil.rmtree(staging, ignore_errors=True)  # an earlier failed run's files are not this run's
        staging.mkdir(parents=True)
        os.environ[STAGING_VARIABLE] = str(staging)  # the kernel inherits it: the page's results/ files go there
        unpublished = (f"; book/ and results/ are as they were, the result files it wrote wait unpublished in "
                       f"{_shown_path(staging)}/")
    interrupted = (f"{name}: interrupted (the partial notebook: {_shown_path(tmp_output)}{unpublished}; trained runs "
                   "resume from their checkpoints when you run it again)")
    stop = _StopOnInterrupt(interrupted)
    try:
        # at a terminal, a bar of the cells run; in a log, the partial notebook (saved after every cell) shows them
        with stop:
            papermill.execute_notebook(str(source), str(tmp_output), parameters=parameters, cwd=str(REPO_ROOT),
                                       kernel_name="python3", progress_bar=sys.stderr.isatty(),
                                       kernel_manager_class=_local_kernel_manager())
    except papermill.PapermillExecutionError as error:
        if stop.interrupted:  # the kernel's KeyboardInterrupt came back first
            raise NotebookFailed(interrupted) from None
        raise NotebookFailed(f"{name}: cell {error.exec_count} raised {error.ename}: {error.evalue} "
                             f"(the partial notebook: {_shown_path(tmp_output)}{unpublished})") from None
    except KeyboardInterrupt:
        for manager in list(_KERNELS):  # one interrupted while it started, before papermill could shut it down
            try:
                manager.shutdown_kernel(now=True)
            except Exception:  # noqa: BLE001 - gone already; the kernel also ends when its parent does
                pass
            _KERNELS.discard(manager)
        raise NotebookFailed(interrupted) from None
    finally:
        if previous is None:
            os.environ.pop(READ_LOG_VARIABLE, None)
        else:
            os.environ[READ_LOG_VARIABLE] = previous
        os.environ.pop(STAGING_VARIABLE, None)
    try:  # between the notebook's end and the publication a Ctrl-C still stops the run in one line
        stored_runs = _read_log(read_log)
        tidy_page(tmp_output)  # tags that hide set-up code, no stderr or progress bars (sources stay as they are)
        if not canonical:
            _move(tmp_output, output)
        seconds = time.time() - started
        record = None
        if canonical or output_dir is not None:
            import torch, transformers

            record = {
                "notebook": name, "profile": profile, "parameters": parameters, "fingerprint": fingerprint,
                "finished": time.strftime("%Y-%m-%d %H:%M:%S"), "seconds": round(seconds, 1),
                "outputs": sorted(str(p.relative_to(REPO_ROOT))
                                  for p in _outputs_of(tmp_output if canonical else output, staging)),
                "inputs": inputs, "method_versions": versions, "stored_runs": stored_runs, "model_weights": weights,
                "library_files": [str(p.relative_to(REPO_ROOT)) for p in library_files(source)],
                "versions": {"python": sys.version.split()[0], "torch": torch.__version__, "transformers": transformers.__version__},
            }
    except KeyboardInterrupt:
        raise NotebookFailed(interrupted) from None
    if canonical:
        publish_page(name, staging, tmp_output, output, record_path, record)
    elif record is not None:
        record["overrides"] = overrides or {}
        write_json_atomic(output_dir / "run.json", record)
    log(f"{name}: done in {seconds:.0f} s")
    if output_dir is not None:
        changed = _changed_since(book_before)
        touched = ("the book's page, results/ and results/runs/ are untouched" if not changed else
                   f"warning: {len(changed)} file(s) of the book or results/ changed while it ran (another process, "
                   f"or a parameter pointing there): {', '.join(changed[:3])}")
        log(f"{name}: not a canonical run (profiles {' and '.join(CANONICAL_PROFILES)} without -p): {touched}; "
            f"wrote {output_dir}/ ({output.name}, results/, run.json)")
    return output


def _shown_path(path: Path) -> str:
    path = Path(path)
    return str(path.relative_to(REPO_ROOT)) if path.is_relative_to(REPO_ROOT) else str(path)


def partial_notebook(output: Path) -> Path:
    """Where a run keeps its notebook while it executes: under ``.cache/partial/`` for a page of the book (or any
    output inside the repository), so that an interrupted or failed run never leaves a file in ``book/``; beside the
    output for one written elsewhere."""
    output = Path(output).resolve()
    if output.is_relative_to(REPO_ROOT.resolve()) and not output.is_relative_to(CACHE_DIR.resolve()):
        relative = output.relative_to(REPO_ROOT.resolve())
        return CACHE_DIR / "partial" / relative.with_suffix(".running.ipynb")
    return output.with_suffix(".running.ipynb")


def _same_file_system(a: Path, b: Path) -> bool:
    return os.stat(a).st_dev == os.stat(b).st_dev


class _HoldInterrupt:
    """While a finished page is published: a Ctrl-C waits until the last file is in place (``held`` says whether one
    came), so that an interrupt never leaves half a publication."""

    def __init__(self):
        self.held, self._previous = False, None

    def __enter__(self):
        import signal
        import threading

        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._hold)
        return self

    def _hold(self, signum, frame):
        self.held = True

    def __exit__(self, *exc):
        import signal

        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
        return False


def publish_page(name: str, staging: Path, executed: Path, page: Path, record_path: Path, record: dict) -> None:
    """Publish a canonical run that has finished: every result file it staged (:data:`STAGING_DIR`, see
    :func:`bertsent.report.io.staged`) into ``results/``, then the page into ``book/``, then its run record.

    The page and its record go last because they are what says a run finished: the book renders the page and
    ``status`` reads the record, so at no moment does either stand beside results older than itself. Each file is
    first brought beside its target (a copy only where ``.cache`` is on another file system), so that what changes
    ``book/`` and ``results/`` is one :func:`os.replace` per file, in a row, with Ctrl-C held off meanwhile. Should a
    file fail to be brought there, nothing has changed, and the message names where the files wait."""
    import shutil

    moves = [(path, RESULTS_DIR / path.relative_to(staging)) for path in sorted(staging.rglob("*")) if path.is_file()]
    moves.append((executed, page))
    ready: list[tuple[Path, Path]] = []
    done = 0
    with _HoldInterrupt() as hold:
        try:
            for source, target in moves:
                target.parent.mkdir(parents=True, exist_ok=True)
                if _same_file_system(source, target.parent):
                    ready.append((source, target))
                else:  # a rename cannot cross file systems: a copy beside the target, renamed below
                    beside = target.with_name(f".{target.name}.publishing")
                    ready.append((beside, target))  # before the copy: a copy cut short is removed too
                    shutil.copyfile(source, beside)
            for source, target in ready:
                os.replace(source, target)
                done += 1
            write_json_atomic(record_path, record)
        except OSError as error:
            for source, target in ready[done:]:
                if source.name.endswith(".publishing"):
                    source.unlink(missing_ok=True)
            if done == len(moves):
                raise NotebookFailed(f"{name}: page and results published, but its run record could not be written "
                                     f"({error}); fix: run it again") from None
            changed = ("book/ and results/ are as they were" if not done else
                       f"{done} of {len(moves)} file(s) were published, up to {_shown_path(ready[done - 1][1])}")
            raise NotebookFailed(f"{name}: finished, but publishing it failed ({error}); {changed}; the page: "
                                 f"{_shown_path(executed)}, the result files left: {_shown_path(staging)}/") from None
    shutil.rmtree(staging, ignore_errors=True)
    if hold.held:
        raise NotebookFailed(f"{name}: interrupted after it finished; its page, result files and run record were "
                             f"published whole")


def _move(source: Path, target: Path) -> None:
    """``os.replace``, or a copy and an atomic replace where the two are on different file systems."""
    try:
        os.replace(source, target)
    except OSError:
        import shutil

        staged = target.with_name(target.name + ".tmp")
        shutil.copyfile(source, staged)
        os.replace(staged, target)
        source.unlink()


def check_output_folder(folder: Path) -> None:
    """Refuses, in one line before a kernel starts (:class:`ParameterError`), an output folder that cannot be
    written: it, or the nearest folder above it that exists, must be a writable folder."""
    from .report.io import output_folder_problem

    problem = output_folder_problem(folder)
    if problem and "not a folder" in problem:
        raise ParameterError(f"output folder {folder}: {problem}; fix: choose another --output")
    if problem:
        raise ParameterError(f"output folder {folder}: {problem}; fix: choose a writable --output (or change the "
                             f"folder's permissions)")


def check_output_choice(folder: Path) -> None:
    """Refuses an ``--output`` inside the repository other than a folder under ``.cache/`` that is new, empty, or an
    earlier re-run's (it has a ``run.json``): a re-run never writes over the book's pages, ``results/`` or anything
    else committed."""
    folder = Path(folder).resolve()
    if not folder.is_relative_to(REPO_ROOT.resolve()):
        return
    under_cache = folder.is_relative_to(CACHE_DIR.resolve()) and folder != CACHE_DIR.resolve()
    fresh = not folder.exists() or (folder.is_dir() and (not any(folder.iterdir()) or (folder / "run.json").is_file()))
    if not (under_cache and fresh):
        raise ParameterError(f"--output {folder.relative_to(REPO_ROOT.resolve()) if folder != REPO_ROOT.resolve() else '.'}"
                             f" is inside the repository, where a re-run would write over the book's files; fix: "
                             f"give a folder outside it, or a new one under .cache/ (the default, "
                             f"{RERUNS_DIR.relative_to(REPO_ROOT) if RERUNS_DIR.is_relative_to(REPO_ROOT) else RERUNS_DIR}"
                             f"/<name>-<profile>-<hash>, is one)")


def _book_snapshot() -> dict:
    """Every file of the book's pages, ``results/`` and the run store, with its size and modification time."""
    return {str(p.relative_to(REPO_ROOT)): (p.stat().st_size, p.stat().st_mtime_ns)
            for top in (REPO_ROOT / "book", RESULTS_DIR) if top.is_dir() for p in top.rglob("*") if p.is_file()}


def _changed_since(before: dict | None) -> list[str]:
    if before is None:
        return []
    after = _book_snapshot()
    return sorted(path for path in set(before) | set(after) if before.get(path) != after.get(path))


def _read_log(path: Path) -> dict:
    """The stored runs a page's kernel read (:data:`bertsent.experiments.store.READ_LOG_VARIABLE`): name -> the
    sha256 of its manifest."""
    if not path.is_file():
        return {}
    found = dict(line.split(" ", 1) for line in path.read_text(encoding="utf-8").splitlines() if " " in line)
    path.unlink()
    return {name: digest.strip() for name, digest in sorted(found.items())}


def repository_model_weights(parameters: dict) -> dict[str, str]:
    """The (shortened) sha256 of the weights of every model in the repository's ``models/`` that a page's backbone parameters
    name. A model published again under the same name (``bert-tiny-wiki`` after more pre-training) changes what the
    page computes while its name, the page's code and its parameters stay as they were; the run record keeps these
    digests (``model_weights``) so that the page then counts as out of date."""
    from .experiments.store import weights_digest

    names = set()
    for key in BACKBONE_PARAMETERS:
        value = parameters.get(key)
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str) and (REPO_ROOT / "models" / item / "config.json").is_file():
                names.add(item)
    return {name: weights_digest(REPO_ROOT / "models" / name) for name in sorted(names)}


def model_weights_changed(record: dict, weights: dict[str, str]) -> str | None:
    """Which repository model named by the page has other weights than when its record was made, in words (None:
    none, or a record made before records kept the digests)."""
    changed = [name for name, digest in record.get("model_weights", {}).items() if weights.get(name, digest) != digest]
    if not changed:
        return None
    return ", ".join(f"models/{name}" for name in changed) + " holds other weights than when it ran"


def stored_runs_changed(record: dict, source: Path) -> str | None:
    """Why a page's stored runs no longer match its record, in words (None: they match).

    A record lists the runs its page read with the sha256 of each one's manifest (``stored_runs``): a run whose
    files no longer match (edited, missing, re-recorded) makes the page out of date, and so does a run the page
    looked for and did not find (listed as ``missing``) that is stored now. A record made before pages
    listed their runs, of a page that reaches the run store, is out of date when any stored run fails
    verification."""
    from .experiments.store import MISSING_RUN, StoreError, all_runs, stored_run_digest

    if "stored_runs" in record:
        looked_for = record["stored_runs"]
        arrived = [name for name, digest in looked_for.items()
                   if digest == MISSING_RUN and stored_run_digest(RUNS_DIR, name) is not None]
        if arrived:
            return (f"stored run {arrived[0]} was missing when the page ran and is stored now"
                    + (f" (and {len(arrived) - 1} more)" if len(arrived) > 1 else ""))
        changed = [name for name, digest in looked_for.items()
                   if digest != MISSING_RUN and stored_run_digest(RUNS_DIR, name) != digest]
        if changed:
            return (f"stored run {changed[0]} changed since it ran" + (f" (and {len(changed) - 1} more)"
                                                                       if len(changed) > 1 else "")
                    + "; `python -m bertsent.experiments.store verify` says how")
        return None
    if "bertsent.experiments.store" not in reached_modules(notebook_modules(source)):
        return None
    for run in all_runs(RUNS_DIR):
        try:
            run.verify()
        except StoreError as error:
            return f"a stored run fails verification ({str(error).split('. Fix:')[0]})"
    return None


HELD_BANNER_TAG = "held-banner"


def held_reason(name: str, config: dict | None = None) -> str | None:
    """Why a page is *held* (its ``held:`` entry in ``notebooks/profiles.yml``), or None.

    A held page is one whose re-execution would retrain hours of runs that are not in the run store. While it is
    out of date, a build of every page (``python -m bertsent.book run`` without names, as ``make book`` runs it)
    renders its committed copy, under a banner that says so, instead of retraining; naming it
    (``python -m bertsent.book run NAME``) or ``--include-held`` re-executes it."""
    config = config or load_config()
    return config["notebooks"][name].get("held")


def held_banner(name: str, reason: str, finished: str | None) -> str:
    """The banner at the top of a held page that is out of date (MyST Markdown)."""
    when = f" on {finished}" if finished else ""
    return (f"```{{warning}} This page is out of date\n"
            f"It was executed{when} with an earlier version of the library, and the book shows it as it was then: "
            f"{reason}. `make book` renders this copy instead of retraining; "
            f"`python -m bertsent.book run {name}` re-executes it.\n```")


def mark_held_page(name: str, config: dict | None = None) -> bool:
    """Put :func:`held_banner` at the top of the committed page ``name``, under its title (replacing an older
    banner); True when the file changed."""
    import nbformat

    config = config or load_config()
    reason = held_reason(name, config)
    if not reason:
        raise ValueError(f"{name} is not held (no `held:` entry in notebooks/profiles.yml)")
    output = REPO_ROOT / config["notebooks"][name]["output"]
    record_path = RUNS_DIR / f"{name}.json"
    finished = json.loads(record_path.read_text()).get("finished") if record_path.is_file() else None
    text = held_banner(name, reason, finished)
    notebook = nbformat.read(output, as_version=4)
    banners = [cell for cell in notebook.cells if HELD_BANNER_TAG in cell.metadata.get("tags", [])]
    if banners:
        if banners[0].source == text:
            return False
        banners[0].source = text
    else:
        cell = nbformat.v4.new_markdown_cell(text)
        cell.metadata["tags"] = [HELD_BANNER_TAG]
        titled = bool(notebook.cells) and notebook.cells[0].cell_type == "markdown" and \
            notebook.cells[0].source.lstrip().startswith("# ")
        notebook.cells.insert(1 if titled else 0, cell)  # under the page's title
    nbformat.write(notebook, output)
    return True


def page_status(name: str, config: dict | None = None) -> tuple[bool, str]:
    """Whether the committed page ``name`` is up to date, without running anything: its run record's fingerprint
    against the one its source, the parameters its recorded profile resolves to now (``notebooks/profiles.yml``
    as it is, so an edited profile counts), data manifest and method versions give now, and its outputs present.
    Returns (up to date, in words)."""
    config = config or load_config()
    entry = config["notebooks"][name]
    source, output = REPO_ROOT / entry["source"], REPO_ROOT / entry["output"]
    record_path = RUNS_DIR / f"{name}.json"
    if not record_path.is_file():
        return False, "no run record"
    record = json.loads(record_path.read_text())
    try:
        parameters = resolve_parameters(name, record.get("profile", "quick"), None, config)
    except ParameterError as error:
        return False, f"its profile no longer resolves: {error}"
    inputs = page_inputs(source, parameters, tuple(entry.get("reads", ())))
    fingerprint = hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()
    if not (output.is_file() and all((REPO_ROOT / p).is_file() for p in record.get("outputs", []))):
        return False, "its outputs are missing"
    if record.get("fingerprint") != fingerprint:
        return False, _stale_reason(record, inputs, method_versions(notebook_modules(source)))
    runs_changed = stored_runs_changed(record, source) or model_weights_changed(record,
                                                                                repository_model_weights(parameters))
    if runs_changed:
        return False, runs_changed
    return True, f"up to date (profile {record['profile']}, run {record['finished']})"


def _outputs_of(executed: Path, staging: Path | None = None) -> list[Path]:
    """The result files a notebook reports writing: lines ``wrote <path>`` in its outputs, those present (in the
    repository, or staged in ``staging`` to be published there)."""
    import nbformat

    def present(path: Path) -> bool:
        if path.is_file():
            return True
        return (staging is not None and path.is_relative_to(RESULTS_DIR.resolve())
                and (staging / path.relative_to(RESULTS_DIR.resolve())).is_file())

    found = []
    for cell in nbformat.read(executed, as_version=4).cells:
        for out in cell.get("outputs", []):
            for line in out.get("text", "").splitlines():
                if line.startswith("wrote "):
                    found.append((REPO_ROOT / line[len("wrote "):].strip()).resolve())
    return [p for p in found if p.is_relative_to(REPO_ROOT) and present(p)]


def parse_value(text: str):
    """A ``-p`` value: JSON (``'["a", "b"]'``, ``24``, ``null``); a list or object also as YAML (``[a, b]``) or a
    Python literal (``"['a']"``); anything else is a bare string."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    if text.strip()[:1] in ("[", "{"):
        try:
            return ast.literal_eval(text)
        except (ValueError, SyntaxError):
            pass
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError:
            raise ParameterError(f"-p value {text!r} is neither a JSON list nor a JSON object; "
                                 f"e.g. '[\"all-minilm-l6-v2\"]' or '{{\"max_steps\": 2}}'") from None
    return text


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bertsent.book", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="execute notebooks (reusing up-to-date results)")
    run.add_argument("notebooks", nargs="*", help="names from notebooks/profiles.yml (default: all, in order)")
    run.add_argument("--profile", default="quick")
    run.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                     help="override a parameter; VALUE is JSON (strings may be bare)")
    run.add_argument("--force", action="store_true", help="recompute even if committed results are up to date")
    run.add_argument("--include-held", action="store_true",
                     help="without names, also re-execute the out-of-date pages held in notebooks/profiles.yml "
                          "(each `held:` says what retraining that costs)")
    run.add_argument("--output", type=Path, default=None, metavar="DIR",
                     help="write the executed notebook, its results/ and run.json here (default for a profile other "
                          "than quick/paper or any -p: .cache/reruns/<name>-<profile>-<hash>/); the book, results/ "
                          "and results/runs/ are written only by quick/paper runs without -p or --output")
    run.add_argument("--check", action="store_true",
                     help="check the notebooks' names, profile, parameters and output folder, say where each run "
                          "would write, and stop without running anything")
    sub.add_parser("list", help="show notebooks, profiles and parameters")
    sub.add_parser("status", help="say which committed pages are up to date (runs nothing)")
    tidy = sub.add_parser("tidy", help="tag and clean committed pages as a run does, without re-executing them")
    tidy.add_argument("notebooks", nargs="*", help="names from notebooks/profiles.yml (default: all)")
    tidy.add_argument("--skip", action="append", default=[], metavar="NAME", help="leave this page alone")
    args = parser.parse_args(argv)
    config = load_config()
    if args.command == "status":
        stale = 0
        for name in config["notebooks"]:
            fresh, words = page_status(name, config)
            stale += not fresh
            held = held_reason(name, config)
            print(f"{name}: {words}" + (f" [held: `make book` renders the committed page; {held}]" if held else ""))
        return 1 if stale else 0
    if args.command == "tidy":
        for name in args.notebooks or list(config["notebooks"]):
            if name in args.skip:
                print(f"{name}: skipped")
                continue
            output = REPO_ROOT / config["notebooks"][name]["output"]
            if not output.is_file():
                print(f"{name}: no page at {output.relative_to(REPO_ROOT)}")
                continue
            counts = tidy_page(output)
            print(f"{name}: {counts['removed']} cell(s) removed, {counts['hidden']} input(s) hidden, "
                  f"{counts['outputs']} output(s) cleaned" if any(counts.values()) else f"{name}: already tidy")
        return 0
    if args.command == "list":
        for name, entry in config["notebooks"].items():
            print(f"{name}: {entry['source']} -> {entry['output']}")
            for key, default in notebook_parameters(REPO_ROOT / entry["source"]).items():
                print(f"    {key} = {default}")
        for profile, values in config["profiles"].items():
            print(f"profile {profile}: {json.dumps(values)}")
        return 0
    names = args.notebooks or list(config["notebooks"])
    try:
        overrides = {key: parse_value(value) for key, value in args.parameter}
        for name in names:  # every notebook's parameters are checked before any runs
            resolve_parameters(name, args.profile, overrides, config)
        if args.output is not None and len(names) > 1:
            raise ParameterError("--output takes one notebook (name it), not several")
        if args.output is not None:
            check_output_choice(args.output)
        if args.check:
            for name in names:
                target = args.output or (None if is_canonical(args.profile, overrides)
                                         else rerun_folder(name, args.profile, overrides))
                print(f"{name}: parameters valid (profile {args.profile}); would write "
                      f"{target if target is not None else 'the book page and results/'}")
            return 0
        for name in names:
            output_dir = args.output
            if output_dir is None and not is_canonical(args.profile, overrides):
                output_dir = rerun_folder(name, args.profile, overrides)
            held = held_reason(name, config)
            if (held and not args.notebooks and not args.include_held and not args.force and output_dir is None
                    and not page_status(name, config)[0]):
                mark_held_page(name, config)
                print(f"{name}: out of date, held ({held}); rendering the committed page under an out-of-date "
                      f"banner (`python -m bertsent.book run {name}` re-executes it)")
                continue
            run_notebook(name, args.profile, overrides, force=args.force, output_dir=output_dir)
    except ParameterError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except NotebookFailed as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
