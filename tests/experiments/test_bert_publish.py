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
