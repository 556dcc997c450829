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


def publish_checkpoint(run_dir: str | Path, target: str | Path, name: str, glue: pd.DataFrame | None = None) -> Path:
    """Copy the final model of ``run_dir`` (a finished :func:`~bertsent.training.pretraining.pretrain` run) to
    ``target`` with a model card.

    ``glue``: optional table of chosen GLUE dev scores (columns task and metric values) for the card.
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
    (staging / "README.md").write_text(model_card(name, summary, glue))
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    return target


def model_card(name: str, summary: dict, glue: pd.DataFrame | None = None) -> str:
    config, final = summary["config"], summary["final"]
    layers, hidden = BERT_SIZES[config["size"]]
    lines = [
        f"# {name}: a small BERT pre-trained from scratch on 2 CPU cores", "",
        "Masked LM + next-sentence prediction exactly as BERT (Devlin et al. 2019): 15% of WordPiece tokens chosen, "
        "80% [MASK] / 10% random / 10% unchanged; 50% true next segment; max length 128. Uncased WordPiece vocabulary "
        "of bert-base-uncased (30,522 entries), so it is a drop-in for `bert-base-uncased` code, but it is **not "
        "BERT-base**: it is far smaller and saw a tiny fraction of BERT's text.", "",
        "| | |", "|---|---|",
        f"| size | {config['size']}: {layers} layers, hidden size {hidden}, {max(1, hidden // 64)} heads, "
        f"feed-forward {4 * hidden} |",
        f"| corpus | English Wikipedia (2015 and 2018 extracts) + 99 English novels (ELTeC); {CORPUS_SOURCES} |",
        f"| training pairs available | {summary['train_pairs']:,} (held out: {summary['heldout_pairs']:,}) |",
        f"| steps x batch | {summary['steps']:,} x {config['batch_size']} |",
        f"| tokens seen | {summary['tokens']:,} (non-padding, special tokens included) |",
        f"| optimiser | AdamW, lr {config['learning_rate']}, betas {tuple(config['betas'])}, weight decay "
        f"{config['weight_decay']}, {config['warmup_ratio']:.0%} warm-up then linear decay, clip 1.0 |",
        f"| precision | {config['mixed_precision']} autocast, float32 master weights; stored here in float16 |",
        f"| hardware | {summary['device']} ({cpu_name()}); {summary['torch_threads']} torch thread(s) when the run "
        f"finished (a resumed run may have used another number earlier); {summary['seconds'] / 60:.0f} minutes |",
        f"| held-out MLM accuracy | {100 * final['heldout_mlm_accuracy']:.2f}% (loss {final['heldout_mlm_loss']:.3f}, "
        f"{summary['eval_pairs']:,} held-out pairs) |",
    ]
    if "heldout_nsp_accuracy" in final:
        lines.append(f"| held-out NSP accuracy | {100 * final['heldout_nsp_accuracy']:.2f}% |")
    if glue is not None and len(glue):
        scores = "; ".join(
            f"{row['task']} " + ", ".join(f"{k} {row[k]:.1f}" for k in ("mcc", "accuracy", "f1") if k in row and pd.notna(row[k]))
            for _, row in glue.iterrows())
        lines.append(f"| GLUE dev (fine-tuned, BERT recipe) | {scores} |")
    lines += ["", "Load it with `transformers.AutoModel.from_pretrained(path)` or, in this repository, as the "
              f"backbone `{name}`. Re-create it with the book's BERT chapter (`python -m bertsent.book run bert_pretraining`).", ""]
    return "\n".join(lines)
