"""The run cache: SG / SG-OPT trainings, BERT pre-trainings and GLUE fine-tunings, trained once and reused.

A run is keyed by what determines its numbers: the method and its full configuration (seed included), the
backbone (and, for a model directory such as ``models/bert-mini-wiki``, the sha256 of its weights), the training
data's name and the data manifest's digest, the STS-B dev pairs that select an SG run's checkpoint, and the
``METHOD_VERSION`` of every module on its training path (:mod:`bertsent.versions`); never the library's file
contents. Its small results are committed under ``results/runs/<kind>/<key>/`` (:mod:`bertsent.experiments.store`);
its weights and checkpoints stay in ``.cache`` (``.cache/runs/<key>/``, ``.cache/pretraining/runs/...``), where an
interrupted run resumes.

A page that asks for a run whose results are committed uses them without training, even on a machine without the
weights. Only a page that needs the model itself (its embeddings, its timing, its publication) trains again when
the weights are gone, and says so in one line.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

import pandas as pd

from ..data.sts import STSDataset
from ..paths import CACHE_DIR, REPO_ROOT
from ..report.io import write_csv_atomic, write_json_atomic
from ..training.self_guided import SelfGuidedConfig
from ..versions import manifest_digest, method_versions, versions_digest
from .store import (MANIFEST, StoredRun, StoreError, digest_of, manifest_problem, run_key, weights_digest,
                    write_manifest)

METHOD_VERSION = 1  # bump when the maths changes (here: the readout scored by trained_transfer_scores)

# the modules whose METHOD_VERSIONs key each kind of run (everything they import is followed)
SG_TRAINING_PATH = ("bertsent.training.self_guided", "bertsent.data.sentences")
PRETRAINING_PATH = ("bertsent.training.pretraining",)
GLUE_PATH = ("bertsent.training.glue",)


# The verdict modules judge results; they never change a trained weight or a measured score. A trained run's key and
# a stored measurement's settings read them at these fixed versions (the ones they had when the run store began), so
# that bumping the verdict rule re-judges every page from the stored numbers instead of making every measurement,
# and with it every training run whose weights are gone, look new. A page's own fingerprint (bertsent.book) still
# follows their real versions: a page is re-executed, cheaply, when its verdicts change.
VERDICT_MODULES_IN_KEYS = {"bertsent.report.claims": 2, "bertsent.report.reported": 1,
                           "bertsent.experiments.claims_overview": 1}


def measurement_versions(roots) -> dict[str, int]:
    """:func:`~bertsent.versions.method_versions` of ``roots`` with the verdict modules at their fixed versions
    (:data:`VERDICT_MODULES_IN_KEYS`): what enters a run key or a stored measurement's settings."""
    versions = method_versions(roots)
    return {name: VERDICT_MODULES_IN_KEYS.get(name, version) for name, version in versions.items()}


def path_versions(path: tuple[str, ...]) -> dict:
    """The method versions of a training path and their digest (what enters a run key)."""
    versions = measurement_versions(path)
    return {"digest": versions_digest(versions), "modules": versions}


def backbone_identity(backbone: str) -> dict:
    """What names a backbone's weights: its name; for a model kept in the repository's ``models/`` (e.g.
    ``bert-mini-wiki``) or given as a local directory, also the digest of its weights, which are not pinned by a
    package version. Nothing is loaded or unpacked."""
    for directory in (REPO_ROOT / "models" / backbone, Path(backbone)):
        if (directory / "config.json").is_file():
            return {"backbone": backbone, "weights": weights_digest(directory)}
    return {"backbone": backbone}


# --- untrained backbones ----------------------------------------------------------------------------------------

def untrained_identity(backbone: str) -> dict:
    """What an untrained backbone's scores depend on besides the evaluation's settings: its weights and the data."""
    return {"kind": "untrained", **backbone_identity(backbone), "data": manifest_digest()}


def untrained_record(backbone: str, results_dir=None) -> StoredRun:
    """Where the evaluations of ``backbone`` as published (nothing trained) are committed:
    ``results/runs/untrained/<backbone>-<hash of untrained_identity>/``. It has no ``train.json`` (there was no
    training); ``identity.json`` says what its scores belong to."""
    identity = untrained_identity(backbone)
    return StoredRun.at("untrained", run_key(f"{backbone.replace('/', '_')}-untrained", identity), results_dir)


def untrained_scores(backbone: str, evaluation: str, settings: dict, compute: Callable[[], pd.DataFrame],
                     results_dir=None) -> pd.DataFrame:
    """The scores of evaluation ``evaluation`` (with ``settings``) of the untrained ``backbone``: committed ones when
    present, under ``results_dir`` or else in the book's own ``results/`` (a re-run that writes elsewhere reads the
    book's committed scores, never writes them); else ``compute()``, then committed under ``results_dir``, so that a
    page re-renders without encoding again (Gemma 3 270M's untrained readouts and whitening are most of the STS
    page's 45 minutes)."""
    record = untrained_record(backbone, results_dir)
    for source in dict.fromkeys([record, untrained_record(backbone)]):
        found = source.scores(evaluation, settings)
        if found is not None:
            return found
    scores = compute()
    identity_file = record.directory / "identity.json"
    if not identity_file.is_file():
        write_json_atomic(identity_file, untrained_identity(backbone))
    return record.add_scores(evaluation, settings, scores)


# --- SG / SG-OPT -----------------------------------------------------------------------------------------------

def run_identity(backbone: str, train_data: str, config: SelfGuidedConfig, dev_pairs: int | None = None) -> dict:
    """What an SG / SG-OPT run's numbers depend on (``dev_pairs``: the STS-B dev pairs that select its checkpoint)."""
    return {"kind": "sg", **backbone_identity(backbone), "train_data": train_data, "data": manifest_digest(),
            "dev_pairs": dev_pairs, "config": asdict(config), "methods": path_versions(SG_TRAINING_PATH)["digest"]}


def run_id(backbone: str, train_data: str, config: SelfGuidedConfig, dev_pairs: int | None = None) -> str:
    """``<backbone>-<loss>-<train_data>-s<seed>-<hash of run_identity>``: the run's key in ``.cache/runs`` and
    ``results/runs/sg``."""
    return run_key(f"{backbone.replace('/', '_')}-{config.loss}-{train_data}-s{config.seed}",
                   run_identity(backbone, train_data, config, dev_pairs))


def stored_run(backbone: str, train_data: str, config: SelfGuidedConfig, results_dir=None,
               dev_pairs: int | None = None) -> StoredRun:
    return StoredRun.at("sg", run_id(backbone, train_data, config, dev_pairs), results_dir)


def readable_run(backbone: str, train_data: str, config: SelfGuidedConfig, results_dir=None,
                 dev_pairs: int | None = None) -> StoredRun:
    """The run's committed results to read: its record under ``results_dir``, or the book's own in ``results/``
    when only that one exists (a re-run that writes elsewhere reuses the book's runs, and writes nothing there)."""
    own = stored_run(backbone, train_data, config, results_dir, dev_pairs)
    if own.exists or results_dir is None:
        return own
    book = stored_run(backbone, train_data, config, None, dev_pairs)
    return book if book.exists else own


def _dev_set(dev, data_dir):
    """The selection set: ``dev`` as given, or all of STS-B dev."""
    from ..data.sts import load_stsb

    return dev if dev is not None else load_stsb("dev", data_dir)


def record_sg_run(stored: StoredRun, directory: Path, backbone: str, train_data: str, config: SelfGuidedConfig,
               dev_pairs: int) -> None:
    """Commit a finished run's results from its ``.cache`` directory."""
    summary = json.loads((directory / "train.json").read_text(encoding="utf-8"))
    history = pd.DataFrame(summary.pop("history"))
    history["best"] = history["step"] == summary["best_step"]
    step0 = history.loc[history["step"] == 0, "dev"]
    dev_step0 = float(step0.iloc[0]) if len(step0) else None
    train = {**summary, "dev_step0": dev_step0, "identity": run_identity(backbone, train_data, config, dev_pairs),
             "method_versions": path_versions(SG_TRAINING_PATH)["modules"],
             "summary": {"backbone": backbone, "loss": config.loss, "train_data": train_data, "seed": config.seed,
                         "steps": summary["step"], "best_step": summary["best_step"],
                         "best_dev": summary["best_dev"], "dev_step0": dev_step0,
                         "seconds": round(summary["seconds"], 1), "threads": summary.get("torch_threads")}}
    stored.record(train, history)


def _finished(directory: Path) -> bool:
    return (directory / "train.json").is_file() and (directory / "model").is_dir()


def train_or_reuse(backbone: str, train_data: str, config: SelfGuidedConfig, data_dir=None,
                   dev: STSDataset | None = None, root: Path | None = None, show_progress: bool = True,
                   results_dir=None, log: Callable[[str], None] = print) -> Path:
    """The ``.cache`` directory of a finished run, with its model in ``<dir>/model``: for pages that need the model
    itself. Trained now (or resumed) when its weights are absent; its results are committed when they are not yet
    (``results_dir``: where, default the repository's ``results/``)."""
    from ..data.sentences import training_sentences
    from ..training.self_guided import train_self_guided

    dev = _dev_set(dev, data_dir)
    stored = stored_run(backbone, train_data, config, results_dir, len(dev))
    directory = Path(root or CACHE_DIR / "runs") / stored.key
    if not _finished(directory):
        if stored.exists:
            log(f"retraining {stored.key}: its results are committed ({stored.kind}/{stored.key}) but its weights "
                f"are not in {directory}, and this page needs the model itself")
        train_self_guided(backbone, training_sentences(train_data, data_dir), dev, directory, config,
                          show_progress=show_progress)
    if not stored.exists:  # the first finished run is the record; a retrained one keeps its own train.json in .cache
        record_sg_run(stored, directory, backbone, train_data, config, len(dev))
    return directory


def sg_results(backbone: str, train_data: str, config: SelfGuidedConfig, data_dir=None,
               dev: STSDataset | None = None, root: Path | None = None, results_dir=None) -> StoredRun:
    """A run's committed results (:func:`readable_run`), trained first only when there are none (nor a finished run in
    ``.cache``)."""
    dev = _dev_set(dev, data_dir)
    stored = readable_run(backbone, train_data, config, results_dir, len(dev))
    if not stored.exists:
        train_or_reuse(backbone, train_data, config, data_dir, dev, root, show_progress=False,
                       results_dir=results_dir)
    return stored


def run_history(backbone: str, train_data: str, config: SelfGuidedConfig, runs_dir: Path | None = None,
                results_dir=None, data_dir=None, dev: STSDataset | None = None) -> pd.DataFrame:
    """A run's evaluations: ``step``, ``dev`` (STS-B dev Spearman x 100 of [CLS]) and the running ``loss``, with
    ``best`` marking the checkpoint that was kept; read from its committed results."""
    return sg_results(backbone, train_data, config, data_dir, dev, runs_dir, results_dir).history()


def run_scores(backbone: str, train_data: str, config: SelfGuidedConfig, evaluation: str, settings: dict,
               compute: Callable[[Path], pd.DataFrame], data_dir=None, dev: STSDataset | None = None,
               runs_dir: Path | None = None, results_dir=None) -> pd.DataFrame:
    """The scores of evaluation ``evaluation`` (with ``settings``: what decides them besides the run) of one run:
    committed ones when present; else ``compute(model_dir)`` on the run's model, then committed."""
    dev = _dev_set(dev, data_dir)
    stored = sg_results(backbone, train_data, config, data_dir, dev, runs_dir, results_dir)
    found = stored.scores(evaluation, settings)
    if found is not None:
        return found
    directory = train_or_reuse(backbone, train_data, config, data_dir, dev, runs_dir, show_progress=False,
                               results_dir=results_dir)
    own = stored_run(backbone, train_data, config, results_dir, len(dev))  # never the book's, on a re-run
    return own.add_scores(evaluation, settings, compute(directory / "model"))


def evaluation_settings(module: str, **settings) -> dict:
    """An evaluation's settings with the method versions of the scoring code (``module`` and what it imports)."""
    return {**settings, "methods": versions_digest(measurement_versions([module]))}


def trained_transfer_scores(backbone: str, train_data: str, config: SelfGuidedConfig, tasks: dict, data_dir=None,
                            runs_dir: Path | None = None, results_dir=None, batch_size: int = 64,
                            max_length: int = 128, dev: STSDataset | None = None) -> pd.DataFrame:
    """Transfer accuracy (one row per task: ``task``, ``accuracy``) of one run's last-layer sentence token ([CLS];
    a causal LM's last token; the evaluation keeps its name ``transfer_cls``, its settings record the readout),
    from its committed results or computed and committed. ``tasks``: name -> loaded (possibly subsampled) task;
    ``dev``: the run's model-selection set (default all of STS-B dev, as the STS page's runs)."""
    from ..encode.backbones import backbone_sentence_pooling

    readout = backbone_sentence_pooling(backbone)
    settings = evaluation_settings("bertsent.experiments.runs", readout=readout, layer=-1, max_length=max_length,
                                   tasks={name: {split: len(examples) for split, examples in task.splits.items()}
                                          for name, task in tasks.items()})

    def compute(model_dir: Path) -> pd.DataFrame:
        from ..encode.backbones import load_backbone
        from ..encode.encoder import Encoder

        return transfer_scores(Encoder(load_backbone(str(model_dir)), batch_size, max_length, show_progress=False),
                               tasks, readout)

    return run_scores(backbone, train_data, config, "transfer_cls", settings, compute, data_dir, dev, runs_dir,
                      results_dir)


def transfer_scores(encoder, tasks: dict, pooling: str) -> pd.DataFrame:
    """Transfer accuracy of an encoder's last-layer ``pooling`` on every task."""
    from ..evaluation.transfer import evaluate_transfer

    def embed(sentences):
        pooled = encoder.encode(sentences, [pooling])
        return pooled.lookup(sentences, pooling, pooled.n_layers - 1)

    return pd.DataFrame([(name, evaluate_transfer(task, embed)) for name, task in tasks.items()],
                        columns=["task", "accuracy"])


# --- BERT pre-training -----------------------------------------------------------------------------------------

def pretraining_identity(config) -> dict:
    from ..data.corpus import CORPUS_FILES
    from ..training.pretraining import LATER_FIELD_DEFAULTS, TOKENIZER_SOURCE

    files = config.corpus_files or tuple(CORPUS_FILES)
    settings = asdict(config)
    if settings["short_length"] is None:  # one phase: the key of a run made before the two-phase option existed
        del settings["short_length"], settings["short_fraction"]
    for name, default in LATER_FIELD_DEFAULTS.items():  # likewise for the options added later, at their defaults
        if settings.get(name, default) == default:
            settings.pop(name, None)
    return {"kind": "pretraining", "config": settings, "corpus": {f: CORPUS_FILES.get(f) for f in files},
            "tokenizer": TOKENIZER_SOURCE, "methods": path_versions(PRETRAINING_PATH)["digest"]}


def pretraining_key(config) -> str:
    return run_key(f"bert-{config.size}-{config.objective}-{config.max_steps}", pretraining_identity(config))


def pretraining_run_dir(root, config) -> Path:
    """Where a pre-training run's weights and checkpoints go under ``root``: one folder per run key, so a changed
    configuration starts a new run instead of meeting another configuration's checkpoint."""
    return Path(root) / pretraining_key(config)


@dataclass(frozen=True)
class ModelSource:
    """What GLUE fine-tunes: ``key`` names the weights (it enters the fine-tuning's key), ``locate()`` returns
    their directory, making them (or training them again) only when called."""

    key: str
    locate: Callable[[], Path]


@dataclass
class PretrainingRun:
    """A pre-training run's committed results (``summary``: its ``train.json``; ``history``), and its weights on
    demand (:meth:`model_dir`)."""

    key: str
    stored: StoredRun
    run_dir: Path
    config: object
    corpus_dir: object = None
    cache_dir: object = None

    @property
    def summary(self) -> dict:
        return self.stored.train()

    @property
    def history(self) -> pd.DataFrame:
        return self.stored.history()

    @property
    def steps(self) -> int:
        return self.summary["steps"]

    @property
    def tokens(self) -> int:
        return self.summary["tokens"]

    @property
    def seconds(self) -> float:
        return self.summary["seconds"]

    def model_dir(self, log: Callable[[str], None] = print) -> Path:
        """The trained weights (``<run_dir>/model``), pre-trained again if they are gone."""
        from ..training.pretraining import pretrain

        if not _pretraining_finished(self.run_dir, self.config):
            log(f"pre-training {self.key} again: its results are committed (pretraining/{self.key}) but its weights "
                f"are not in {self.run_dir}, and this page needs the model itself")
            pretrain(self.run_dir, self.config, corpus_dir=self.corpus_dir, cache_dir=self.cache_dir,
                     show_progress=False)
        return self.run_dir / "model"

    @property
    def model(self) -> ModelSource:
        return ModelSource(f"pretraining-{self.key}", self.model_dir)

    def mlm_evaluation(self, pairs: int = 2048, data_dir=None, files=None,
                       log: Callable[[str], None] = print) -> dict[str, pd.DataFrame]:
        """The masked-LM evaluation of the final weights (:func:`~bertsent.evaluation.mlm.evaluate_checkpoint`:
        ``accuracy`` by position type beside the floors, and ``probes``), kept with the run's committed results
        (``mlm_accuracy.csv``, ``mlm_probes.csv`` and ``mlm_evaluation.json``, which says for which held-out pairs,
        corpus files and evaluation method version), so a page re-renders without the weights. Evaluated (the
        weights pre-trained again first, if gone) only when missing or made another way."""
        from ..evaluation import mlm

        wanted = {"pairs": int(pairs), "files": list(files) if files else None, "method_version": mlm.METHOD_VERSION}
        directory = self.stored.directory
        meta, names = directory / "mlm_evaluation.json", {"accuracy": "mlm_accuracy.csv", "probes": "mlm_probes.csv"}
        if meta.is_file() and all((directory / name).is_file() for name in names.values()):
            kept = json.loads(meta.read_text(encoding="utf-8"))
            if {key: kept.get(key) for key in wanted} == wanted:
                return {part: pd.read_csv(directory / name, keep_default_na=False, na_values=[""])
                        for part, name in names.items()}
        tables = mlm.evaluate_checkpoint(self.model_dir(log), pairs, corpus_dir=self.corpus_dir,
                                         cache_dir=self.cache_dir, data_dir=data_dir, files=files)
        problem = manifest_problem(directory) if (directory / MANIFEST).is_file() else None
        if problem:  # never bless an altered file by listing it anew
            raise StoreError(f"stored run {directory}: {problem}. Fix: restore it with `git checkout -- {directory}`, "
                             f"or delete it and train the run again.")
        for part, name in names.items():
            write_csv_atomic(tables[part], directory / name, index=False)
        write_json_atomic(meta, {**wanted, "source": f"evaluate_checkpoint on {self.key}'s final weights"})
        write_manifest(directory)  # the evaluation's files join the run's verified files
        return {part: pd.read_csv(directory / name, keep_default_na=False, na_values=[""])
                for part, name in names.items()}  # as a later call reads them: the same numbers either way


def _pretraining_finished(run_dir: Path, config) -> bool:
    summary = Path(run_dir) / "train.json"
    return (summary.is_file() and (Path(run_dir) / "model").is_dir()
            and json.loads(summary.read_text(encoding="utf-8"))["config"] == json.loads(json.dumps(asdict(config))))


def pretraining_run(run_dir, config, corpus_dir=None, results_dir=None, cache_dir=None) -> PretrainingRun:
    """Pre-train (or resume) in ``run_dir`` unless the run's results are committed; returns the run.

    ``run_dir``: where the weights and checkpoints go (``.cache/pretraining/runs/...``); the results go to
    ``results/runs/pretraining/<key>/`` (``results_dir``: another results root)."""
    from ..training.pretraining import pretrain

    key = pretraining_key(config)
    run = PretrainingRun(key, StoredRun.at("pretraining", key, results_dir), Path(run_dir), config, corpus_dir,
                         cache_dir)
    if not run.stored.exists:
        result = pretrain(run_dir, config, corpus_dir=corpus_dir, cache_dir=cache_dir, show_progress=False)
        summary = json.loads((Path(run_dir) / "train.json").read_text(encoding="utf-8"))
        record_pretraining(run.stored, config, summary, pd.DataFrame(result.history))
    return run


def record_pretraining(stored: StoredRun, config, summary: dict, history: pd.DataFrame) -> None:
    """Commit a finished pre-training's results: its run folder's ``summary`` (``train.json``) and evaluation
    ``history``, with its identity and the held-out metric that judges it (also for a run trained on another
    machine and brought here: :mod:`bertsent.experiments.remote_pretraining`)."""
    # the masked LM is judged at [MASK] positions only (the pooled accuracy counts copied inputs)
    dev = ("heldout_ltr_accuracy" if config.objective == "ltr" else
           "heldout_mlm_mask_accuracy" if "heldout_mlm_mask_accuracy" in history else "heldout_mlm_accuracy")
    train = {**summary, "identity": pretraining_identity(config),
             "method_versions": path_versions(PRETRAINING_PATH)["modules"],
             "selection": "none: the final model is kept", "best_step": summary["steps"], "dev_metric": dev,
             "best_dev": history[dev].iloc[-1], "dev_step0": history.loc[history["step"] == 0, dev].iloc[0],
             "summary": {"size": config.size, "objective": config.objective, "steps": summary["steps"],
                         "tokens": summary["tokens"], "dev_metric": dev, "dev_step0": None, "best_dev": None,
                         "seconds": round(summary["seconds"], 1), "threads": summary["torch_threads"]}}
    train["summary"].update(dev_step0=train["dev_step0"], best_dev=train["best_dev"])
    stored.record(json.loads(json.dumps(train, default=float)), history)


def untrained_model(size: str, path, seed: int = 0) -> ModelSource:
    """The "no pre-training" control: a randomly initialised BERT of ``size``, saved to ``path`` when needed."""
    from ..training.pretraining import save_untrained

    key = run_key(f"untrained-{size}-s{seed}", {"size": size, "seed": seed,
                                                "methods": path_versions(PRETRAINING_PATH)["digest"]})
    return ModelSource(key, lambda: save_untrained(size, path, seed))


def model_at(path) -> ModelSource:
    """Any local model directory, named by the digest of its weights."""
    return ModelSource(f"weights-{weights_digest(Path(path))}", lambda: Path(path))


# --- GLUE fine-tuning ------------------------------------------------------------------------------------------

def glue_finetuning(model: ModelSource, task: str, config, data_dir=None, results_dir=None, objective=None) -> dict:
    """One fine-tuning's dev metrics and costs (:func:`bertsent.training.glue.finetune_glue`'s row), from its
    committed results or fine-tuned now (the model's weights made only then) and committed.

    ``objective``: a :class:`bertsent.training.glue.GlueObjective` (e.g. ACL's); its name and configuration join
    the run's identity and key, and the method versions of its module join the training path's (a plain
    fine-tuning's key is as before)."""
    return glue_run(model, task, config, data_dir, results_dir, objective).train()["result"]


def _glue_identity(model: ModelSource, task: str, config, objective=None) -> tuple[tuple, dict, str]:
    """A GLUE fine-tuning's training path, identity and run key."""
    path = GLUE_PATH if objective is None else GLUE_PATH + (type(objective).__module__,)
    from ..training.glue import config_identity

    identity = {"kind": "glue", "model": model.key, "task": task, "config": config_identity(config),
                "data": manifest_digest(),
                "methods": path_versions(path)["digest"]}
    name = ""
    if objective is not None:
        identity["objective"] = {"name": objective.name, **objective.describe()}
        name = f"-{objective.name}"
    return path, identity, run_key(f"{model.key[:60]}-{task}{name}-lr{config.learning_rate:g}-s{config.seed}",
                                   identity)


def glue_run_handle(model: ModelSource, task: str, config, results_dir=None, objective=None) -> StoredRun:
    """The stored run :func:`glue_run` would read or write (its key, and ``exists`` when finished), without
    fine-tuning anything: what a command that trains a page's runs ahead lists."""
    return StoredRun.at("glue", _glue_identity(model, task, config, objective)[2], results_dir)


def glue_run(model: ModelSource, task: str, config, data_dir=None, results_dir=None, objective=None) -> StoredRun:
    """:func:`glue_finetuning`'s stored run (fine-tuned first when absent): its ``train()`` (the result under
    ``"result"``) and its ``history()`` (the dev metric at step 0 and the end, and an objective's per-step
    columns, e.g. ACL's gradient angles). While it trains, a checkpoint every few minutes in
    :func:`glue_run_dir` (removed once the run is recorded): asked again after an interruption, it resumes from there
    and says from which step."""
    from ..training.glue import TASK_METRICS, finetune_glue

    path, identity, key = _glue_identity(model, task, config, objective)
    stored = StoredRun.at("glue", key, results_dir)
    if not stored.exists:
        import torch

        history: list[dict] = []
        extra = {} if objective is None else {"objective": objective}
        # checkpoints every few minutes in the run's own .cache folder: an interrupted run resumes there
        run_dir = glue_run_dir(key)
        result = finetune_glue(str(model.locate()), task, config, data_dir, history=history, run_dir=run_dir,
                               **extra)
        metric = TASK_METRICS[task][1]
        frame = pd.DataFrame(history)
        train = {"identity": identity, "method_versions": path_versions(path)["modules"], "result": result,
                 "selection": "none: the final model is evaluated", "steps": int(frame["step"].max()),
                 "best_step": int(frame["step"].max()), "dev_metric": metric,
                 "best_dev": result[metric], "dev_step0": frame.loc[frame["step"] == 0, "dev"].iloc[0],
                 "seconds": result["train_seconds"], "torch_threads": torch.get_num_threads(),
                 "summary": {"model": model.key, "task": task, "learning_rate": config.learning_rate,
                             "seed": config.seed, "max_train_examples": config.max_train_examples,
                             "dev_metric": metric, "dev_step0": None, "best_dev": result[metric],
                             "steps": int(frame["step"].max()), "seconds": result["train_seconds"],
                             "threads": torch.get_num_threads()}}
        train["summary"]["dev_step0"] = train["dev_step0"]
        if objective is not None:
            train["summary"]["objective"] = objective.name
        if config.max_dev_examples is not None:  # a dev subsample: say so wherever the run is listed
            train["summary"]["max_dev_examples"] = config.max_dev_examples
            train["summary"]["dev_examples"] = result["dev_examples"]
        if getattr(config, "head_learning_rate", None) is not None:
            train["summary"]["head_learning_rate"] = config.head_learning_rate
        stored.record(json.loads(json.dumps(train, default=float)), frame)
        import shutil

        shutil.rmtree(run_dir, ignore_errors=True)  # recorded: its checkpoint would only take room
    return stored


def glue_run_dir(key: str) -> Path:
    """Where a GLUE fine-tuning keeps its checkpoint while it trains: ``.cache/runs/glue/<key>/``."""
    return CACHE_DIR / "runs" / "glue" / key


def glue_search(model: ModelSource, task: str, learning_rates, data_dir=None, results_dir=None,
                **config) -> pd.DataFrame:
    """:func:`bertsent.training.glue.glue_learning_rate_search` through the run store: one row per learning rate,
    ``chosen`` marking the best on the dev metric."""
    from ..training.glue import GlueConfig, mark_chosen

    rows = [glue_finetuning(model, task, GlueConfig(learning_rate=float(lr), **config), data_dir, results_dir)
            for lr in learning_rates]
    return mark_chosen(pd.DataFrame(rows), task)


def glue_searches(models: dict[str, ModelSource], tasks, learning_rates, data_dir=None, results_dir=None,
                  max_train_examples: dict | None = None, **config) -> pd.DataFrame:
    """:func:`glue_search` for every model (label -> :class:`ModelSource`) and task, in one table with a ``model``
    column and each chosen run's majority-class mark (:func:`~bertsent.evaluation.glue.mark_majority_class`).
    ``max_train_examples``: per task, a seeded subsample of its training set (absent: all of it)."""
    from ..evaluation.glue import mark_majority_class

    searches = [glue_search(model, task, learning_rates, data_dir, results_dir,
                            max_train_examples=(max_train_examples or {}).get(task), **config).assign(model=label)
                for label, model in models.items() for task in tasks]
    return mark_majority_class(pd.concat(searches, ignore_index=True), data_dir)



def glue_seeded(models: dict[str, ModelSource], searches: pd.DataFrame, seeds, data_dir=None, results_dir=None,
                max_train_examples: dict | None = None, **config) -> pd.DataFrame:
    """Each (model, task)'s chosen learning rate in :func:`glue_searches`' table fine-tuned again with every seed of
    ``seeds`` (a seed the search used is read back from the run store, not trained again): one row per fine-tuning,
    with ``model``, ``seed`` and the majority-class mark. The search picks the learning rate on one seed; the seeds
    measure how much the chosen recipe's score moves with the initialisation of the head and the data order alone.
    ``config``: the search's other :class:`~bertsent.training.glue.GlueConfig` fields (epochs, ...)."""
    from ..evaluation.glue import mark_majority_class
    from ..training.glue import GlueConfig

    rows = []
    for chosen in searches[searches["chosen"]].itertuples():
        for seed in seeds:
            glue_config = GlueConfig(learning_rate=float(chosen.learning_rate), seed=int(seed),
                                     max_train_examples=(max_train_examples or {}).get(chosen.task), **config)
            rows.append({**glue_finetuning(models[chosen.model], chosen.task, glue_config, data_dir, results_dir),
                         "model": chosen.model})
    return mark_majority_class(pd.DataFrame(rows), data_dir)

def published_mlm_tables(target: Path, summary: dict, data_dir=None) -> dict:
    """The masked-LM tables stored beside a published checkpoint (``mlm_accuracy.csv``, ``mlm_probes.csv``), or
    measured now on its weights (and stored) when absent."""
    accuracy, probes = target / "mlm_accuracy.csv", target / "mlm_probes.csv"
    if accuracy.is_file() and probes.is_file():
        return {"accuracy": pd.read_csv(accuracy), "probes": pd.read_csv(probes)}
    from ..evaluation.mlm import evaluate_checkpoint

    tables = evaluate_checkpoint(target, files=summary["config"].get("corpus_files"), data_dir=data_dir)
    tables["accuracy"].to_csv(accuracy, index=False)
    tables["probes"].to_csv(probes, index=False)
    return tables


def publish_run(run: PretrainingRun, target, name: str, glue: pd.DataFrame | None = None,
                log: Callable[[str], None] = print) -> Path:
    """Publish a pre-training run to ``target`` (:func:`bertsent.experiments.bert_publish.publish_checkpoint`),
    unless ``target`` already holds this run: then only its model card is written again (no weights needed).

    A checkpoint published before runs had keys counts as this run when its recorded configuration is this run's.
    """
    from ..experiments.bert_publish import model_card, publish_checkpoint

    target = Path(target)
    published = target / "pretraining.json"
    if published.is_file():
        summary = json.loads(published.read_text(encoding="utf-8"))
        same = summary.get("run_key") == run.key or (
            "run_key" not in summary and summary.get("config") == run.summary["config"])
        if same:
            log(f"{target.name}: already published from run {run.key}; model card written again, weights kept")
            if summary.get("run_key") != run.key:
                write_json_atomic(published, {**summary, "run_key": run.key})
            (target / "README.md").write_text(model_card(name, summary, glue, published_mlm_tables(target, summary)),
                                              encoding="utf-8")
            return target
    run.model_dir(log)
    publish_checkpoint(run.run_dir, target, name, glue)
    write_json_atomic(published, {**json.loads(published.read_text(encoding="utf-8")), "run_key": run.key})
    return target


# --- layer-wise attention pooling (Oh et al., COLING 2022) -----------------------------------------------------

ATTENTION_TRAINING_PATH = ("bertsent.training.attention_pooling", "bertsent.data.nli")


def attention_identity(backbone: str, config, sources=("snli",), max_triplets: int | None = None,
                       dev_pairs: int | None = None) -> dict:
    """What an attention-pooling run's numbers depend on: backbone (and its weights' digest), the
    :class:`~bertsent.training.attention_pooling.AttentionPoolingConfig` (seed and pooling included), the NLI
    ``sources`` and how many triplets are kept (``max_triplets``: the first ones; None all), the data manifest, the
    STS-B dev pairs that select the checkpoint, and the method versions of the training path."""
    return {"kind": "attention_pooling", **backbone_identity(backbone), "sources": list(sources),
            "max_triplets": max_triplets, "data": manifest_digest(), "dev_pairs": dev_pairs, "config": asdict(config),
            "methods": path_versions(ATTENTION_TRAINING_PATH)["digest"]}


def attention_run_key(backbone: str, config, sources=("snli",), max_triplets: int | None = None,
                      dev_pairs: int | None = None) -> str:
    """``<backbone>-<objective>-<pooling>-s<seed>-<hash of attention_identity>``."""
    return run_key(f"{backbone.replace('/', '_')}-{config.objective}-{config.pooling}-s{config.seed}",
                   attention_identity(backbone, config, sources, max_triplets, dev_pairs))


def _record_attention(stored: StoredRun, directory: Path, identity: dict) -> None:
    summary = json.loads((directory / "train.json").read_text(encoding="utf-8"))
    history = pd.DataFrame(summary.pop("history"))
    history["best"] = history["step"] == summary["best_step"]
    step0 = history.loc[history["step"] == 0, "dev"] if "dev" in history else pd.Series(dtype=float)
    dev_step0 = float(step0.iloc[0]) if len(step0) else None
    config = summary["config"]
    train = {**summary, "dev_step0": dev_step0, "identity": identity,
             "method_versions": path_versions(ATTENTION_TRAINING_PATH)["modules"],
             "summary": {"backbone": summary["backbone"], "objective": config["objective"],
                         "pooling": config["pooling"], "seed": config["seed"], "triplets": summary["triplets"],
                         "steps": summary["step"], "best_step": summary["best_step"], "best_dev": summary["best_dev"],
                         "dev_step0": dev_step0, "seconds": round(summary["seconds"], 1),
                         "seconds_per_step": round(summary["seconds"] / max(summary["step"], 1), 3),
                         "threads": summary.get("torch_threads")}}
    stored.record(json.loads(json.dumps(train, default=float)), history)


def attention_run(backbone: str, config, triplets_loader: Callable[[], object], dev: STSDataset,
                  sources=("snli",), max_triplets: int | None = None, root: Path | None = None, results_dir=None,
                  need_model: bool = False, log: Callable[[str], None] = print) -> tuple[StoredRun, Path]:
    """An attention-pooling run: ``(stored results, .cache directory)``. Trained (or resumed) only when its results
    are not committed, or when ``need_model`` and its weights are gone; ``triplets_loader()`` gives the (already
    cut) triplets then. ``dev``: the selection set (its length enters the key)."""
    from ..training.attention_pooling import train_attention_pooling

    identity = attention_identity(backbone, config, sources, max_triplets, len(dev))
    stored = StoredRun.at("attention_pooling", attention_run_key(backbone, config, sources, max_triplets, len(dev)),
                          results_dir)
    directory = Path(root or CACHE_DIR / "runs") / stored.key
    finished = _finished(directory) and (directory / "best.pt").is_file()
    if (not stored.exists or need_model) and not finished:
        if stored.exists:
            log(f"retraining {stored.key}: its results are committed (attention_pooling/{stored.key}) but its "
                f"weights are not in {directory}, and this page needs the model itself")
        train_attention_pooling(backbone, directory, config, triplets=triplets_loader(), dev=dev,
                                show_progress=False)
    if not stored.exists:
        _record_attention(stored, directory, identity)
    return stored, directory
