"""Classifier heads for GLUE fine-tuning (``bertsent.models.classifiers``)."""


def test_a_left_to_right_model_is_classified_from_its_last_token(tmp_path):
    import torch

    from bertsent.models.bert_pretraining import new_pretraining_model
    from bertsent.models.classifiers import LastTokenClassifier, sequence_classifier
    from bertsent.training.pretraining import save_untrained

    path = tmp_path / "ltr"
    new_pretraining_model("tiny", 30522, 0, "ltr").save_pretrained(path)
    classifier = sequence_classifier(str(path)).eval()
    assert isinstance(classifier, LastTokenClassifier)
    ids = torch.tensor([[101, 2000, 2001, 102, 0], [101, 2002, 102, 0, 0]])
    mask = (ids != 0).long()
    logits = classifier(ids, mask).logits
    changed = ids.clone()
    changed[0, 2] = 2050  # a change before the last token reaches the classifier
    assert not torch.allclose(classifier(changed, mask).logits[0], logits[0])
    assert torch.allclose(classifier(changed, mask).logits[1], logits[1])
    assert not isinstance(sequence_classifier(str(save_untrained("tiny", tmp_path / "bi"))), LastTokenClassifier)
