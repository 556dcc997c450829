"""Publish a pre-training run as a plain BERT checkpoint in the repository, with a model card.

The weights are stored in float16 (half the size in git) and the configuration says ``float32``, so
``AutoModel.from_pretrained`` returns a float32 model, as bert-base-uncased does. The MLM and NSP heads are
kept (``AutoModelForPreTraining`` reads them); ``AutoModel`` reads the encoder and its pooler.
"""
from __future__ import annotations

import json
import platform
import shutil
from pathlib import Path

import pandas as pd
import torch

from ..data.corpus import CORPUS_SOURCES
from ..models.bert_pretraining import BERT_SIZES

METHOD_VERSION = 1  # bump when the maths changes

MODELS_DIR_NAME = "models"


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def publish_checkpoint(run_dir: str | Path, target: str | Path, name: str, glue: pd.DataFrame | None = None,
                       mlm: dict | None = None, corpus_dir=None, data_dir=None) -> Path:
    """Copy the final model of ``run_dir`` (a finished :func:`~bertsent.training.pretraining.pretrain` run) to
    ``target`` with a model card.

    ``glue``: optional table of chosen GLUE dev scores (columns task and metric values) for the card.
    ``mlm``: :func:`~bertsent.evaluation.mlm.evaluate_checkpoint`'s tables; measured here on the published
    (float16-stored) weights when not given.
    """
    from transformers import AutoModelForPreTraining, AutoTokenizer

    run_dir, target = Path(run_dir), Path(target)
    summary_path = run_dir / "train.json"
    if not summary_path.is_file():
        raise FileNotFoundError(f"{run_dir} holds no finished pre-training run (no train.json). Fix: run "
                                f"`python -m bertsent.training.pretraining --output {run_dir}` to the end first.")
    summary = json.loads(summary_path.read_text())
    model = AutoModelForPreTraining.from_pretrained(run_dir / "model", dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(run_dir / "model")
    staging = target.with_name(target.name + ".tmp")
    shutil.rmtree(staging, ignore_errors=True)
    model.config.architectures = ["BertForPreTraining"]
    model.half().save_pretrained(staging)
    config_path = staging / "config.json"
    config = json.loads(config_path.read_text())
    config["dtype"] = "float32"  # weights stored in half precision, loaded as float32
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    tokenizer.save_pretrained(staging)
    (staging / "pretraining.json").write_text(json.dumps(summary, indent=2) + "\n")
    if mlm is None:
        from ..evaluation.mlm import evaluate_checkpoint

        mlm = evaluate_checkpoint(staging, corpus_dir=corpus_dir, data_dir=data_dir,
                                  files=summary["config"].get("corpus_files"))
    mlm["accuracy"].to_csv(staging / "mlm_accuracy.csv", index=False)
    mlm["probes"].to_csv(staging / "mlm_probes.csv", index=False)
    (staging / "README.md").write_text(model_card(name, summary, glue, mlm))
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    return target


def mlm_sentence(accuracy: pd.DataFrame) -> str:
    """One sentence on whether the model predicts masked words, from the held-out position-type table: it has
    learned when its accuracy at [MASK] positions is at least twice the best constant guess's."""
    row = accuracy[(accuracy["positions"] == "mask")].iloc[0]
    ratio = row["accuracy"] / row["best_constant_floor"]
    if ratio < 2:
        return (f"It has **not yet learned to predict masked words**: at [MASK] positions of held-out text it is "
                f"right {100 * row['accuracy']:.2f}% of the time, against {100 * row['best_constant_floor']:.2f}% for "
                f"the best constant guess and {100 * row['majority_floor']:.2f}% for always guessing the corpus's "
                f"most frequent word piece ({row['majority_token']!r}).")
    return (f"At [MASK] positions of held-out text it is right {100 * row['accuracy']:.2f}% of the time, "
            f"{ratio:.1f} times the best constant guess ({100 * row['best_constant_floor']:.2f}%).")


def sequence_lengths(config: dict) -> str:
    """How long the pre-training pairs were: one length, or BERT's two phases (short pairs first)."""
    if config.get("short_length"):
        return (f"the first {config['short_fraction']:.0%} of the steps on pairs of at most {config['short_length']} "
                f"tokens, the rest at {config.get('max_length', 128)} (BERT's two phases, scaled down)")
    return f"max length {config.get('max_length', 128)}"  # the configuration's default when not recorded


def model_card(name: str, summary: dict, glue: pd.DataFrame | None = None, mlm: dict | None = None) -> str:
    """The model card (Markdown): what the model is, how it was trained, and what it can and cannot do, from
    the run's summary, the masked-LM tables of :func:`~bertsent.evaluation.mlm.evaluate_checkpoint` and the GLUE
    dev scores (a score at the majority class is marked as such)."""
    config, final = summary["config"], summary["final"]
    layers, hidden = BERT_SIZES[config["size"]]
    tokens = summary["tokens"] + summary.get("continued_from_tokens", 0)
    lines = [
        f"# {name}: a {layers}-layer BERT pre-trained here on {tokens / 1e6:.1f}M tokens", "",
        "Masked LM + next-sentence prediction as BERT (Devlin et al. 2019): 15% of WordPiece tokens chosen, "
        f"80% [MASK] / 10% random / 10% unchanged; 50% true next segment; {sequence_lengths(config)}; the uncased "
        "WordPiece vocabulary of bert-base-uncased (30,522 entries). It is **not BERT-base and not a substitute for it**: "
        f"{layers} layers of width {hidden} against 12 of 768, and {tokens / 1e6:.1f}M tokens seen against BERT's "
        "~128,000M (3.3B words x 40 epochs).", "",
    ]
    if mlm is not None:
        lines += [mlm_sentence(mlm["accuracy"][mlm["accuracy"]["text"] == "held-out corpus"]), "",
                  "Masked-LM top-1 accuracy by what the model was shown at the predicted position, beside the floors "
                  "(`python -m bertsent.evaluation.mlm MODEL_DIR` prints this table):", "",
                  "| text | positions | count | accuracy | best constant | corpus's most frequent | copy the input |",
                  "|---|---|---:|---:|---:|---:|---:|"]
        for row in mlm["accuracy"].itertuples():
            lines.append(f"| {row.text} | {row.positions} | {row.count:,} | {100 * row.accuracy:.2f}% | "
                         f"{100 * row.best_constant_floor:.2f}% | {100 * row.majority_floor:.2f}% | "
                         f"{100 * row.copy_floor:.2f}% |")
        lines += ["", "Top-5 predictions at [MASK] for probe sentences:", "", "| sentence | top 5 |", "|---|---|"]
        lines += [f"| {row.sentence} | {row.top_predictions} |" for row in mlm["probes"].itertuples()]
        lines.append("")
    lines += [
        "| training | |", "|---|---|",
        f"| size | {config['size']}: {layers} layers, hidden size {hidden}, {max(1, hidden // 64)} heads, "
        f"feed-forward {4 * hidden} |",
        f"| corpus | English Wikipedia (2015 and 2018 extracts) + 99 English novels (ELTeC); {CORPUS_SOURCES} |",
    ]
    if "train_pairs" in summary:  # a long run's record does not count them
        lines.append(f"| training pairs available | {summary['train_pairs']:,} (held out: {summary['heldout_pairs']:,}) |")
    lines += [
        f"| steps x batch | {summary['steps']:,} x {config['batch_size']} |",
        f"| tokens seen | {summary['tokens']:,} (non-padding, special tokens included) |",
    ]
    if config.get("init_from"):
        lines.append(f"| continued from | `{Path(config['init_from']).name}` "
                     f"({summary.get('continued_from_tokens', 0):,} tokens before this run) |")
    lines += [f"| optimiser | AdamW, lr {config['learning_rate']}, betas {tuple(config['betas'])}, weight decay "
              f"{config['weight_decay']}, {schedule_words(config)}, clip 1.0; dropout {config.get('dropout', 0.1)} "
              "during pre-training (0.1 in the saved configuration) |",
              f"| precision | {config['mixed_precision']} autocast, float32 master weights; stored here in float16 |"]
    if summary.get("stretches"):
        lines.append(f"| hardware | {stretches_words(summary['stretches'])}; {summary['seconds'] / 60:.0f} minutes of "
                     "training in all |")
    else:
        lines.append(f"| hardware | {summary['device']} ({cpu_name()}); {summary['torch_threads']} torch thread(s) when "
                     f"the run finished (a resumed run may have used another number earlier); "
                     f"{summary['seconds'] / 60:.0f} minutes |")
    lines.append(f"| held-out MLM loss | {final['heldout_mlm_loss']:.3f} ({summary['eval_pairs']:,} held-out pairs) |")
    if "heldout_nsp_accuracy" in final:
        lines.append(f"| held-out NSP accuracy | {100 * final['heldout_nsp_accuracy']:.2f}% (chance 50%) |")
    if glue is not None and len(glue):
        from ..evaluation.glue import format_glue_cell, mark_majority_class

        marked = mark_majority_class(glue)
        scores = "; ".join(
            f"{row['task']} " + ", ".join(f"{k} {format_glue_cell(row[k], row['at_majority_class'])}"
                                          for k in ("mcc", "accuracy", "f1") if k in row and pd.notna(row[k]))
            for _, row in marked.iterrows())
        lines.append(f"| GLUE dev (fine-tuned, BERT recipe) | {scores} |")
    recreate = (f"`python -m bertsent.training.long_run {summary['long_run']}`, stretch by stretch, then "
                "`python -m bertsent.book run bert_long_run`" if summary.get("long_run")
                else "`python -m bertsent.book run bert_pretraining`")
    lines += ["", "Load it with `transformers.AutoModel.from_pretrained(path)` or, in this repository, as the "
              f"backbone `{name}`. Re-create it with the book's BERT chapter ({recreate}).", ""]
    return "\n".join(lines)


def schedule_words(config: dict) -> str:
    """The learning-rate schedule in words: BERT's warm-up and linear decay, or warmup-stable-decay (a long run's)."""
    if config.get("schedule") == "wsd":
        decay = (f"a linear decay to 0 over the last {config['decay_steps']:,} steps (from step {config['decay_start']:,})"
                 if config.get("decay_start") is not None else "no decay")
        return (f"{config['warmup_steps']:,}-step warm-up, then constant (warmup-stable-decay), {decay}; a stretch that "
                "continued from saved weights with a fresh optimiser warmed up again, and a decay started before the "
                "last one is in the stretch records")
    return f"{config['warmup_ratio']:.0%} warm-up then {config.get('schedule', 'linear')} decay"


def stretches_words(stretches: list[dict]) -> str:
    """Where a long run's stretches ran: each stretch's steps, CPU, processes and tokens/s."""
    return "; ".join(f"stretch {s['stretch']}: steps {s['start_step']:,}-{s['end_step']:,} on {s['cpu']}, "
                     f"{s['processes']} process(es) of {s['threads_per_process']} thread, "
                     f"{s['tokens_per_second']:,.0f} tokens/s" for s in stretches)


def long_run_summary(record: dict) -> dict:
    """A long run's committed record (:mod:`bertsent.training.long_run`'s ``record.json``) in the shape of a finished
    pre-training's summary (``train.json``), which :func:`model_card` reads; ``stretches`` says where it ran."""
    config, stretches = record["config"], record["stretches"]
    return {"config": config, "final": record["last_evaluation"], "tokens": record["tokens"], "steps": record["step"],
            "seconds": record["seconds"], "device": "cpu", "torch_threads": stretches[-1]["threads_per_process"],
            "eval_pairs": config["eval_instances"], "long_run": record["run"], "stretches": stretches}


LONG_RUN_FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json")


def publish_long_run(committed_dir: str | Path, target: str | Path, name: str, glue: pd.DataFrame | None = None,
                     data_dir=None) -> Path:
    """Publish a long run's committed weights (``models/training/<run>/``) as the plain BERT checkpoint ``target``
    (``models/<name>/``): the same float16 weights file, a configuration that ``AutoModelForPreTraining`` reads, the
    tokenizer, ``pretraining.json`` (:func:`long_run_summary`), the masked-LM tables measured on these weights
    (:func:`~bertsent.evaluation.mlm.evaluate_checkpoint`) and the model card (with ``glue``, chosen GLUE dev scores).

    When ``target`` already holds these weights, only the model card is written again (the stored tables are kept);
    otherwise the files are staged beside it and moved in at once, so an interruption leaves the old copy whole."""
    from .runs import published_mlm_tables, weights_digest

    committed_dir, target = Path(committed_dir), Path(target)
    missing = [f for f in LONG_RUN_FILES + ("record.json",) if not (committed_dir / f).is_file()]
    if missing:
        raise FileNotFoundError(f"{committed_dir} lacks {', '.join(missing)}: no committed long run to publish. Fix: "
                                f"train a stretch with `python -m bertsent.training.long_run {committed_dir.name} "
                                "--minutes 60 --commit`, or check out the repository's models/training/ folder.")
    summary = long_run_summary(json.loads((committed_dir / "record.json").read_text(encoding="utf-8")))
    if (target / "pretraining.json").is_file() and weights_digest(target) == weights_digest(committed_dir):
        folder = target
    else:
        folder = target.with_name(target.name + ".tmp")
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        for file in LONG_RUN_FILES:
            shutil.copy2(committed_dir / file, folder / file)
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        config.update(architectures=["BertForPreTraining"], dtype="float32")  # float16 on disk, float32 when loaded
        (folder / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    (folder / "pretraining.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    mlm = published_mlm_tables(folder, summary, data_dir=data_dir)
    (folder / "README.md").write_text(model_card(name, summary, glue, mlm), encoding="utf-8")
    if folder != target:
        shutil.rmtree(target, ignore_errors=True)
        folder.rename(target)
    return target
