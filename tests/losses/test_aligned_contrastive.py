"""SCL, ACL-Embed and ACL-CL against brute-force loops over their definitions, on small random tensors."""
import math

import pytest
import torch

from bertsent.losses import acl_cl_loss, acl_embed_loss, cross_layer_batch, scl_loss, supervised_contrastive_loss

TAU = 0.3


def s(u, v, tau=TAU):
    return torch.nn.functional.cosine_similarity(u, v, dim=0).item() / tau


def brute_force(members, labels, anchors=None, tau=TAU):
    """The supervised contrastive loss written out: per anchor with a positive, the mean over its positives of
    -log(exp s(a, p) / sum_{m != a} exp s(a, m)); then the mean over those anchors."""
    size = len(members)
    anchors = range(size) if anchors is None else anchors
    terms = []
    for a in anchors:
        positives = [p for p in range(size) if p != a and labels[p] == labels[a]]
        if not positives:
            continue
        denominator = sum(math.exp(s(members[a], members[m], tau)) for m in range(size) if m != a)
        terms.append(sum(-math.log(math.exp(s(members[a], members[p], tau)) / denominator)
                         for p in positives) / len(positives))
    return sum(terms) / len(terms)


@pytest.fixture
def batch():
    generator = torch.Generator().manual_seed(0)
    features = torch.randn(6, 5, generator=generator, dtype=torch.float64)
    labels = torch.tensor([0, 1, 0, 2, 1, 1])  # class 2 has one sample: no positive in SCL
    label_embeddings = torch.randn(3, 5, generator=generator, dtype=torch.float64)
    return features, labels, label_embeddings


def test_scl_matches_the_brute_force_loop_and_skips_lonely_samples(batch):
    features, labels, _ = batch
    assert scl_loss(features, labels, TAU).item() == pytest.approx(brute_force(list(features), labels.tolist()),
                                                                   rel=1e-9)
    # the lonely sample (class 2) is no anchor, only a negative of the others
    with_lonely_anchor = brute_force(list(features), labels.tolist()[:3] + [0] + labels.tolist()[4:])
    assert scl_loss(features, labels, TAU).item() != pytest.approx(with_lonely_anchor)


def test_scl_is_invariant_to_scale_and_zero_without_positives(batch):
    features, labels, _ = batch
    assert scl_loss(3 * features, labels).item() == pytest.approx(scl_loss(features, labels).item(), rel=1e-9)
    lonely = scl_loss(features[:3].clone().requires_grad_(), torch.tensor([0, 1, 2]))
    assert lonely.item() == 0.0 and lonely.requires_grad


def test_acl_embed_is_scl_over_samples_and_label_embeddings(batch):
    features, labels, label_embeddings = batch
    members = list(features) + list(label_embeddings)
    member_labels = labels.tolist() + [0, 1, 2]
    expected = brute_force(members, member_labels)
    assert acl_embed_loss(features, labels, label_embeddings, TAU).item() == pytest.approx(expected, rel=1e-9)
    assert acl_embed_loss(features, labels, label_embeddings, TAU).item() != pytest.approx(
        scl_loss(features, labels, TAU).item())


def test_acl_embed_pulls_samples_to_their_label_embedding():
    labels = torch.tensor([0, 1])
    label_embeddings = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    aligned = acl_embed_loss(torch.tensor([[1.0, 0.1], [0.1, 1.0]]), labels, label_embeddings)
    swapped = acl_embed_loss(torch.tensor([[0.1, 1.0], [1.0, 0.1]]), labels, label_embeddings)
    assert aligned < swapped


def test_acl_embed_gradients_reach_the_classifier_rows(batch):
    features, labels, _ = batch
    classifier = torch.nn.Linear(5, 3).double()
    acl_embed_loss(features, labels, classifier.weight).backward()
    assert classifier.weight.grad is not None and classifier.weight.grad.abs().sum() > 0


def test_acl_embed_refuses_labels_without_an_embedding(batch):
    features, _, label_embeddings = batch
    with pytest.raises(ValueError, match="labels must lie in 0..2"):
        acl_embed_loss(features, torch.tensor([0, 1, 3, 0, 1, 2]), label_embeddings)
    with pytest.raises(ValueError, match="classifier's weight"):
        acl_embed_loss(features, torch.tensor([0, 1, 2, 0, 1, 2]), label_embeddings[:, :4])


def test_cross_layer_batch_has_both_layers_samples_and_label_embeddings(batch):
    features, labels, label_embeddings = batch
    teacher, teacher_labels = features + 1, label_embeddings - 1
    members, member_labels, anchors = cross_layer_batch(features, label_embeddings, teacher, teacher_labels, labels)
    assert torch.equal(members, torch.cat([features, label_embeddings, teacher, teacher_labels]))
    assert member_labels.tolist() == labels.tolist() + [0, 1, 2] + labels.tolist() + [0, 1, 2]
    assert anchors.tolist() == [True] * 9 + [False] * 9


def test_acl_cl_matches_the_brute_force_loop_and_detaches_the_last_layer(batch):
    features, labels, label_embeddings = batch
    generator = torch.Generator().manual_seed(1)
    teacher = torch.randn(6, 5, generator=generator, dtype=torch.float64, requires_grad=True)
    teacher_rows = torch.randn(3, 5, generator=generator, dtype=torch.float64, requires_grad=True)
    student = features.clone().requires_grad_()
    members = list(features) + list(label_embeddings) + list(teacher.detach()) + list(teacher_rows.detach())
    member_labels = (labels.tolist() + [0, 1, 2]) * 2
    loss = acl_cl_loss(student, label_embeddings, teacher, teacher_rows, labels, TAU)
    assert loss.item() == pytest.approx(brute_force(members, member_labels, anchors=range(9)), rel=1e-9)
    loss.backward()
    assert student.grad.abs().sum() > 0 and teacher.grad is None and teacher_rows.grad is None
    acl_cl_loss(student, label_embeddings, teacher, teacher_rows, labels, TAU, detach_teacher=False).backward()
    assert teacher.grad.abs().sum() > 0


def test_bad_shapes_and_temperatures_are_refused(batch):
    features, labels, _ = batch
    with pytest.raises(ValueError, match="one label per member"):
        supervised_contrastive_loss(features, labels[:4])
    with pytest.raises(ValueError, match="temperature must be positive"):
        scl_loss(features, labels, 0.0)
