"""The published BERT's model card says what the model can and cannot do."""
import pandas as pd

from bertsent.experiments.bert_publish import model_card

SUMMARY = {"config": {"size": "mini", "batch_size": 64, "learning_rate": 5e-4, "betas": [0.9, 0.999],
                      "weight_decay": 0.01, "warmup_ratio": 0.06, "mixed_precision": "bf16"},
           "final": {"heldout_mlm_loss": 6.44, "heldout_nsp_accuracy": 0.70}, "steps": 2500, "tokens": 18_858_097,
           "train_pairs": 1000, "heldout_pairs": 10, "eval_pairs": 2048, "device": "cpu", "torch_threads": 1,
           "seconds": 6000.0}


def mlm_tables(mask_accuracy: float) -> dict:
    accuracy = pd.DataFrame([
        {"positions": "mask", "count": 100, "accuracy": mask_accuracy, "majority_floor": 0.059,
         "best_constant_floor": 0.06, "copy_floor": 0.0, "text": "held-out corpus", "majority_token": ","},
        {"positions": "unchanged", "count": 10, "accuracy": 0.85, "majority_floor": 0.06,
         "best_constant_floor": 0.1, "copy_floor": 1.0, "text": "held-out corpus", "majority_token": ","}])
    probes = pd.DataFrame({"sentence": ["The capital of France is [MASK]."], "top_predictions": ["the . of in ,"]})
    return {"accuracy": accuracy, "probes": probes}


def test_a_model_at_the_floor_is_called_what_it_is():
    card = model_card("bert-mini-wiki", SUMMARY, mlm=mlm_tables(0.0654))
    assert "not yet learned to predict masked words" in card
    assert "drop-in" not in card and "not a substitute" in card
    assert "| held-out corpus | mask | 100 | 6.54% | 6.00% | 5.90% | 0.00% |" in card
    assert "| The capital of France is [MASK]. | the . of in , |" in card
    assert "18.9M tokens" in card.splitlines()[0]


def test_a_model_well_above_the_floor_is_not_called_untrained():
    card = model_card("bert-mini-wiki", SUMMARY, mlm=mlm_tables(0.30))
    assert "not yet learned" not in card and "5.0 times the best constant guess" in card


def test_glue_cells_at_the_majority_class_are_marked():
    from bertsent.evaluation.glue import majority_class_scores

    floor = majority_class_scores("MRPC")
    glue = pd.DataFrame([{"task": "MRPC", "accuracy": floor["accuracy"], "f1": floor["f1"]},
                         {"task": "SST-2", "accuracy": 75.1}])
    card = model_card("bert-mini-wiki", SUMMARY, glue=glue)
    assert f"MRPC accuracy {floor['accuracy']:.1f} (majority class)" in card
    assert "SST-2 accuracy 75.1" in card and "75.1 (majority class)" not in card


def test_the_card_states_the_sequence_lengths_of_a_two_phase_run():
    assert "max length 128" in model_card("bert-mini-wiki", SUMMARY)
    two_phase = {**SUMMARY, "config": {**SUMMARY["config"], "max_length": 128, "short_length": 64,
                                       "short_fraction": 0.9}}
    card = model_card("bert-mini-wiki", two_phase)
    assert "the first 90% of the steps on pairs of at most 64 tokens, the rest at 128" in card
    assert "max length 128" not in card


def test_a_long_run_is_published_with_its_stretches_and_reloads_as_bert_for_pretraining(tmp_path, monkeypatch,
                                                                                         committed_long_run):
    import json

    import pytest
    from transformers import AutoModelForPreTraining

    from bertsent.experiments import runs
    from bertsent.experiments.bert_publish import publish_long_run

    measured = []
    monkeypatch.setattr(runs, "published_mlm_tables",
                        lambda folder, summary, data_dir=None: measured.append(folder) or mlm_tables(0.25))
    with pytest.raises(FileNotFoundError, match="no committed long run to publish"):
        publish_long_run(tmp_path / "nothing", tmp_path / "models" / "x", "x")
    committed = committed_long_run(tmp_path / "training" / "smoke")
    target = publish_long_run(committed, tmp_path / "models" / "bert-tiny-x", "bert-tiny-x")
    card = (target / "README.md").read_text()
    assert card.splitlines()[0].startswith("# bert-tiny-x: a 2-layer BERT pre-trained here on")
    assert "warmup-stable-decay" in card and "stretch 1: steps 0-" in card
    assert "python -m bertsent.training.long_run smoke" in card and "4.2 times the best constant guess" in card
    assert json.loads((target / "config.json").read_text())["architectures"] == ["BertForPreTraining"]
    assert json.loads((target / "pretraining.json").read_text())["long_run"] == "smoke"
    model, info = AutoModelForPreTraining.from_pretrained(target, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"]
    assert not (target.parent / "bert-tiny-x.tmp").exists() and measured == [target.parent / "bert-tiny-x.tmp"]

    weights = (target / "model.safetensors").stat().st_mtime_ns
    glue = pd.DataFrame([{"task": "SST-2", "accuracy": 80.5}])
    publish_long_run(committed, target, "bert-tiny-x", glue)  # the same weights: only the card is written again
    assert (target / "model.safetensors").stat().st_mtime_ns == weights and measured[-1] == target
    assert "SST-2 accuracy 80.5" in (target / "README.md").read_text()

