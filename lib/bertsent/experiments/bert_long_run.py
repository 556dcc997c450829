"""The long pre-training run's learning curve, stretches and floor claims, read from what each stretch committed.

:mod:`bertsent.training.long_run` trains the run in stretches and commits, after each, its weights, ``record.json``
(the recipe and every stretch: where it continued from, steps, tokens, wall time, tokens/s) and ``history.csv``
(held-out MLM loss and accuracy by position type, NSP accuracy, training loss and learning rate at every evaluation).
This module turns those into the page's tables; nothing here trains.
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ..paths import REPO_ROOT
from ..report.claims import accuracy_noise, claims_table, judge
from ..training.long_run import BRANCHES, COMMITTED_ROOT, SCRATCH_LEVERS

METHOD_VERSION = 1  # bump when the maths changes

TARGET_MASK_ACCURACY = 0.25  # what the run is for: a BERT that predicts a quarter of hidden words (held-out)


def _committed(committed_root: Path | None) -> Path:
    root = Path(committed_root or COMMITTED_ROOT)
    return root if root.is_absolute() else REPO_ROOT / root


def committed_folder(name: str, committed_root: Path | None = None) -> Path:
    """Where long run ``name`` commits its stretches (record, history, float16 weights)."""
    return _committed(committed_root) / name


def load_run(name: str, committed_root: Path | None = None) -> tuple[dict, pd.DataFrame]:
    """The committed record and history of long run ``name`` (``committed_root``: default ``models/training/``; a
    relative path is read from the repository's root, so a profile names the same folder on every machine)."""
    directory = _committed(committed_root) / name
    if not (directory / "record.json").is_file():
        raise FileNotFoundError(f"No committed stretch of the long run {name!r} in {directory}. Fix: train one with "
                                f"`python -m bertsent.training.long_run {name} --minutes 60 --processes 2`, or check "
                                f"out the repository's models/training/ folder.")
    record = json.loads((directory / "record.json").read_text(encoding="utf-8"))
    return record, pd.read_csv(directory / "history.csv")


def stretch_table(record: dict) -> pd.DataFrame:
    """One row per stretch: where it continued from, its steps and tokens, wall time and tokens/s, processes, the
    autocast it computed in (``"bf16"``, or ``"no"``: float32 on a CPU without native bf16 products) and the CPU."""
    rows = [{"stretch": s["stretch"], "started": s["started"], "continued_from": s["continued_from"],
             "steps": f"{s['start_step']:,}-{s['end_step']:,}", "tokens_millions": (s["end_tokens"] - s["start_tokens"]) / 1e6,
             "wall_minutes": s["wall_seconds"] / 60, "tokens_per_second": s["tokens_per_second"],
             "processes": s["processes"], "precision": s.get("precision", ""), "cpu": s["cpu"]}
            for s in record["stretches"]]  # precision: recorded since 2026-12-05 (blank before)
    return pd.DataFrame(rows)


def curve_table(history: pd.DataFrame) -> pd.DataFrame:
    """The learning curve at every evaluation: tokens (millions), held-out MLM loss, accuracy at [MASK], random and
    unchanged positions, NSP accuracy, training loss and learning rate."""
    columns = ["step", "tokens", "learning_rate", "train_loss", "heldout_mlm_loss", "heldout_mlm_mask_accuracy",
               "heldout_mlm_random_accuracy", "heldout_mlm_unchanged_accuracy", "heldout_nsp_accuracy"]
    table = history[[c for c in columns if c in history]].copy()
    table.insert(1, "tokens_millions", table.pop("tokens") / 1e6)
    return table


def floor_claims(history: pd.DataFrame, floors: dict) -> pd.DataFrame:
    """At the last evaluation: has the run left the unigram floor at [MASK] positions (beaten every constant guess:
    the majority word piece and the best constant on those positions), reached the target, and is NSP above chance? Each judged against the binomial noise of an accuracy on that many held-out positions/pairs
    (no paper number: the direction is "above")."""
    last = history.iloc[-1]
    positions = int(floors["mask"]["count"])
    accuracy = round(100 * float(last["heldout_mlm_mask_accuracy"]), 2)
    # the harder of the two constant floors: the training text's most frequent word piece, or the one word piece
    # that is right most often on these very positions (an oracle's constant guess)
    constant = round(100 * max(float(floors["mask"]["majority"]), float(floors["mask"]["best_constant"])), 2)
    noise = accuracy_noise(positions, accuracy, "held-out [MASK] positions")
    rows = [judge("[MASK] accuracy > the best constant guess", accuracy - constant, None, noise,
                  tokens=int(last["tokens"]), score=accuracy, reference=constant),
            judge(f"[MASK] accuracy > the target {100 * TARGET_MASK_ACCURACY:.0f}%",
                  accuracy - 100 * TARGET_MASK_ACCURACY, None, noise, tokens=int(last["tokens"]), score=accuracy,
                  reference=100 * TARGET_MASK_ACCURACY)]
    if "heldout_nsp_accuracy" in history and pd.notna(last.get("heldout_nsp_accuracy")):
        nsp = round(100 * float(last["heldout_nsp_accuracy"]), 2)
        pairs = int(floors.get("eval_pairs", 0)) or None
        if pairs:
            rows.append(judge("NSP accuracy > chance (50%)", nsp - 50.0, None,
                              accuracy_noise(pairs, nsp, "held-out pairs"), tokens=int(last["tokens"]), score=nsp,
                              reference=50.0))
    return claims_table(rows)


def run_floors(record: dict, corpus_dir=None, cache_dir=None) -> dict:
    """The floors of the run's held-out evaluation (:func:`~bertsent.training.pretraining.heldout_floors`: per
    position type, the count and the accuracy of always predicting the training text's majority word piece), with
    the number of held-out pairs NSP is scored on. Reads the corpus (tokenised once into the cache); trains nothing."""
    from ..training.pretraining import PretrainingConfig, heldout_floors

    config = PretrainingConfig(**record["config"])
    return {**heldout_floors(config, corpus_dir, cache_dir), "eval_pairs": config.eval_instances}


def floors_table(floors: dict) -> pd.DataFrame:
    """:func:`run_floors` as a table: one row per position type."""
    return pd.DataFrame([{"positions": kind, "count": floors[kind]["count"], "majority_token": floors["majority_token"],
                          "majority_floor": floors[kind]["majority"], "best_constant_floor": floors[kind]["best_constant"],
                          "copy_floor": floors[kind]["copy"]} for kind in ("mask", "random", "unchanged", "all")])


def load_levers(run: str, committed_root: Path | None = None) -> dict[str, tuple[dict, pd.DataFrame]]:
    """The committed levers of long run ``run`` (:data:`~bertsent.training.long_run.BRANCHES` whose parent it is and
    that have trained): name -> (record, history). A lever's history holds its parent's rows up to the branch step."""
    found = {}
    for name, lever in BRANCHES.items():
        if lever["parent"] == run and (_committed(committed_root) / name / "record.json").is_file():
            found[name] = load_run(name, committed_root)
    return found


def lever_change(record: dict) -> str:
    """A lever's one change, in words."""
    branch = record["branch"]
    if branch["decay"]:
        return f"learning rate decayed linearly to 0 over {branch['steps']} steps"
    return ", ".join(f"{field} {value:g}" if isinstance(value, float) else f"{field} {value}"
                     for field, value in branch["changes"].items())


def lever_table(parent_history: pd.DataFrame, levers: dict[str, tuple[dict, pd.DataFrame]]) -> pd.DataFrame:
    """One row per lever: its change, where it branched, and held-out [MASK] accuracy and MLM loss at the branch and
    at its last evaluation, beside what the parent itself did over the same number of steps before the branch (its
    own trend, the control: a lever helps when it moves the curve more than the parent moved on its own)."""
    rows = []
    for name, (record, history) in levers.items():
        branch = record["branch"]
        start = history[history["step"] == branch["branch_step"]].iloc[-1]
        end = history.iloc[-1]
        steps = int(end["step"]) - int(start["step"])
        before = parent_history[parent_history["step"] <= branch["branch_step"] - steps]
        earlier = before.iloc[-1] if len(before) else parent_history.iloc[0]
        rows.append({"lever": name, "change": lever_change(record), "branch_step": int(start["step"]),
                     "steps": steps, "tokens_millions": (end["tokens"] - start["tokens"]) / 1e6,
                     "mask_accuracy_at_branch": 100 * start["heldout_mlm_mask_accuracy"],
                     "mask_accuracy_after": 100 * end["heldout_mlm_mask_accuracy"],
                     "mlm_loss_at_branch": start["heldout_mlm_loss"], "mlm_loss_after": end["heldout_mlm_loss"],
                     "parent_steps_before": int(start["step"]) - int(earlier["step"]),
                     "parent_mlm_loss_change_before": start["heldout_mlm_loss"] - earlier["heldout_mlm_loss"],
                     "lever_mlm_loss_change": end["heldout_mlm_loss"] - start["heldout_mlm_loss"]})
    return pd.DataFrame(rows)


def lever_claims(levers: dict[str, tuple[dict, pd.DataFrame]], floors: dict) -> pd.DataFrame:
    """Per lever, the run's floor claims (:func:`floor_claims`) at its last evaluation, labelled with the lever."""
    tables = []
    for name, (_, history) in levers.items():
        table = floor_claims(history, floors)
        table.insert(0, "lever", name)
        tables.append(table)
    return pd.concat(tables, ignore_index=True) if tables else pd.DataFrame()


ORDER_REFERENCE = "all-minilm-l6-v2"  # a trained encoder that reads word order, for comparison
ORDER_SENTENCES = 200  # the first STS-B test sentences (text the corpus never saw); those of 8+ word pieces count


WORD_ORDER_COLUMNS = ["model", "sentences", "shuffled_state_cosine", "strongest_neighbour_head", "uniform_attention",
                      "neighbour_attention_by_layer"]


def word_order_table(run: str, committed_root: Path | None = None, data_dir=None, others: tuple = ()) -> pd.DataFrame:
    """Does the run's BERT read word order (:func:`bertsent.evaluation.mlm.word_order_use`)? Its committed weights
    beside the same size untrained (BERT's initialisation) and a trained encoder that does (:data:`ORDER_REFERENCE`),
    on the first :data:`ORDER_SENTENCES` STS-B test sentences. A model on the unigram plateau that has learned a
    bag of words shows a state cosine near 1 and no neighbour head above uniform. A run whose weights are not
    committed (``model.safetensors`` in its directory) gets an empty table, which the page says. ``others``: more
    committed runs (the from-scratch levers) measured the same way, each beside its own size untrained."""
    from transformers import AutoModel, AutoTokenizer

    from ..data.sts import load_stsb
    from ..encode.backbones import backbone_path
    from ..evaluation.mlm import word_order_use
    from ..models.bert_pretraining import new_pretraining_model

    directory = _committed(committed_root) / run
    if not (directory / "model.safetensors").is_file():  # a record without weights (a lever, a test fixture)
        return pd.DataFrame(columns=WORD_ORDER_COLUMNS)
    sentences = load_stsb("test", data_dir).sentences()[:ORDER_SENTENCES]
    models = {}
    for name in (run, *others):
        folder = _committed(committed_root) / name
        if not (folder / "model.safetensors").is_file():
            continue
        record = json.loads((folder / "record.json").read_text(encoding="utf-8"))
        tokenizer = AutoTokenizer.from_pretrained(folder)
        models[f"{name} (step {record['step']:,}, {record['tokens'] / 1e6:.1f}M tokens)"] = (
            AutoModel.from_pretrained(folder, attn_implementation="eager"), tokenizer)
        models[f"BERT-{record['config']['size']} untrained"] = (
            new_pretraining_model(record["config"]["size"], len(tokenizer), seed=0, dropout=0.0, attention="eager"),
            tokenizer)
    models[ORDER_REFERENCE] = (AutoModel.from_pretrained(backbone_path(ORDER_REFERENCE), attn_implementation="eager"),
                               AutoTokenizer.from_pretrained(backbone_path(ORDER_REFERENCE)))
    rows = []
    for name, (model, model_tokenizer) in models.items():
        measured = word_order_use(model, model_tokenizer, sentences)
        rows.append({"model": name, "sentences": measured["sentences"],
                     "shuffled_state_cosine": measured["shuffled_state_cosine"],
                     "strongest_neighbour_head": max(measured["neighbour_attention"]),
                     "uniform_attention": measured["uniform_attention"],
                     "neighbour_attention_by_layer": " ".join(f"{v:.2f}" for v in measured["neighbour_attention"])})
    return pd.DataFrame(rows, columns=WORD_ORDER_COLUMNS)


# a head "tracks a neighbour" when it gives the token before or after at least this many times uniform attention's
# share (trained BERTs have heads near 1.0; an untrained model and a bag-of-words run stay within 1.6x of uniform)
NEIGHBOUR_HEAD_FACTOR = 2.0


def _tracks_a_neighbour(row) -> bool:
    return row["strongest_neighbour_head"] >= NEIGHBOUR_HEAD_FACTOR * row["uniform_attention"]


def levers_and_order_in_words(levers: pd.DataFrame, word_order: pd.DataFrame) -> str:
    """One paragraph for the page's findings: what the levers did against the run's own trend, and whether the
    run reads word order, from :func:`lever_table` and :func:`word_order_table`."""
    parts = []
    if len(levers):
        lowest, highest = levers["lever_mlm_loss_change"].min(), levers["lever_mlm_loss_change"].max()
        row = levers.iloc[0]
        parts.append(
            f"{len(levers)} levers branched at step {int(row['branch_step']):,} (" + "; ".join(levers["change"]) +
            f") changed the held-out MLM loss by {lowest:+.3f} to {highest:+.3f} nats in {int(row['steps'])} steps "
            f"(the run itself: {row['parent_mlm_loss_change_before']:+.3f} over the {int(row['parent_steps_before'])} "
            f"steps before), and their [MASK] accuracy ended at {levers['mask_accuracy_after'].min():.2f}-"
            f"{levers['mask_accuracy_after'].max():.2f}%.")
    if len(word_order):
        run, untrained, reference = word_order.iloc[0], word_order.iloc[1], word_order.iloc[-1]
        reads = _tracks_a_neighbour(run)
        parts.append(
            f"The run's BERT {'reads some' if reads else 'barely reads'} word order: a word piece's state with its "
            f"context shuffled keeps a cosine of {run['shuffled_state_cosine']:.2f} with its state in the sentence "
            f"as written ({untrained['model']}: {untrained['shuffled_state_cosine']:.2f}; {reference['model']}: "
            f"{reference['shuffled_state_cosine']:.2f}), and its strongest neighbour-tracking head gives "
            f"{run['strongest_neighbour_head']:.2f} of its attention to the token before or after, against "
            f"{run['uniform_attention']:.2f} for uniform attention ({reference['model']}: "
            f"{reference['strongest_neighbour_head']:.2f})" + ("." if reads else ": it has learned a bag of words."))
        for position in range(2, len(word_order) - 1, 2):  # each other run, then its size untrained
            other = word_order.iloc[position]
            parts.append(
                f"{other['model']}: shuffled-state cosine {other['shuffled_state_cosine']:.2f}, strongest "
                f"neighbour head {other['strongest_neighbour_head']:.2f}"
                + (f" ({other['strongest_neighbour_head'] / other['uniform_attention']:.1f} times uniform): a head "
                   "that tracks a neighbouring word piece has formed, the first step out of the bag of words."
                   if _tracks_a_neighbour(other) else ": no head tracks a neighbour yet."))
    else:
        parts.append("Word order was not measured: the run's weights are not committed.")
    return " ".join(parts)


def load_scratch_levers(run: str, committed_root: Path | None = None) -> dict[str, tuple[dict, pd.DataFrame]]:
    """The committed from-scratch levers of long run ``run`` (:data:`~bertsent.training.long_run.SCRATCH_LEVERS`):
    name -> (record, history)."""
    return {name: load_run(name, committed_root) for name, parent in SCRATCH_LEVERS.items()
            if parent == run and (_committed(committed_root) / name / "record.json").is_file()}


def equal_tokens_table(run: str, history: pd.DataFrame, others: dict[str, tuple[dict, pd.DataFrame]]) -> pd.DataFrame:
    """Each other run at its last evaluation beside ``run`` at its last evaluation with no more tokens seen: tokens,
    held-out MLM loss and [MASK] accuracy, and the model size. Equal tokens, not equal steps or time: the smaller
    model trains several times more tokens a second."""
    rows = []
    for name, (record, other) in others.items():
        last = other.iloc[-1]
        same = history[history["tokens"] <= last["tokens"]].iloc[-1]
        rows.append({"lever": name, "size": record["config"]["size"], "tokens_millions": last["tokens"] / 1e6,
                     "mask_accuracy": 100 * last["heldout_mlm_mask_accuracy"], "mlm_loss": last["heldout_mlm_loss"],
                     f"{run}_tokens_millions": same["tokens"] / 1e6,
                     f"{run}_mask_accuracy": 100 * same["heldout_mlm_mask_accuracy"],
                     f"{run}_mlm_loss": same["heldout_mlm_loss"],
                     "tokens_per_second": record["stretches"][-1]["tokens_per_second"]})
    return pd.DataFrame(rows)


def equal_tokens_in_words(run: str, table: pd.DataFrame) -> str:
    """One sentence per from-scratch lever for the page's findings, from :func:`equal_tokens_table`."""
    return " ".join(
        f"BERT-{row['size']} from scratch ({row['lever']}, {row['tokens_per_second']:,.0f} tokens/s) reached "
        f"{row['mask_accuracy']:.2f}% at [MASK] and an MLM loss of {row['mlm_loss']:.3f} after "
        f"{row['tokens_millions']:.1f}M tokens, where {run} had {row[f'{run}_mask_accuracy']:.2f}% and "
        f"{row[f'{run}_mlm_loss']:.3f} after {row[f'{run}_tokens_millions']:.1f}M."
        for _, row in table.iterrows())


def glue_models(name: str, committed_root: Path | None = None, cache_dir: Path | None = None) -> dict:
    """What the page fine-tunes on GLUE: long run ``name``'s committed weights (``"pre-trained"``, named by their
    digest) and the same architecture from random weights (``"no pre-training"``, BERT's control, made in
    ``cache_dir``, default ``.cache/pretraining/runs/``, only when a fine-tuning needs it)."""
    from ..paths import CACHE_DIR
    from .runs import model_at, untrained_model

    record, _ = load_run(name, committed_root)
    size, seed = record["config"]["size"], record["config"]["seed"]
    untrained = Path(cache_dir or CACHE_DIR / "pretraining" / "runs") / f"bert-{size}-untrained"
    return {"pre-trained": model_at(committed_folder(name, committed_root)),
            "no pre-training": untrained_model(size, untrained, seed)}


def glue_in_words(name: str, published_as: str | None, claims: pd.DataFrame | None) -> str:
    """The page's GLUE sentence: the long run's model minus the no-pre-training control, per task (its metric), from
    :func:`~bertsent.experiments.bert_ablations.compare_rows`'s table (None: not fine-tuned, no sentence)."""
    if claims is None or not len(claims):
        return ""
    model = f"`{published_as}` (the long run {name})" if published_as else f"The long run {name}"
    return (f"{model} fine-tuned on GLUE dev, minus the same model fine-tuned without pre-training: "
            + "; ".join(f"{row.task} {row.our_effect:+.1f} (tolerance {row.tolerance:.1f}, {row.verdict})"
                        for row in claims.itertuples()) + ".")
