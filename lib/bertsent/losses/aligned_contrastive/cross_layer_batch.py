import torch

METHOD_VERSION = 1  # bump when the maths changes


def cross_layer_batch(student_features: torch.Tensor, student_label_embeddings: torch.Tensor,
                      teacher_features: torch.Tensor, teacher_label_embeddings: torch.Tensor, labels: torch.Tensor,
                      detach_teacher: bool = True) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    r"""ACL-CL's enlarged batch: (members, member labels, anchor mask), 2 (N + K) members in the order

    h^s_1..h^s_N, l^s_1..l^s_K, h^T_1..h^T_N, l^T_1..l^T_K

    (s: the shallow exit, T: the last exit) labelled y_1..y_N, 0..K-1, y_1..y_N, 0..K-1; the anchors are the
    shallow exit's N + K members. ``detach_teacher``: the last exit's members carry no gradient (the last layer
    guides; it is trained by its own CE only).
    """
    if student_features.shape != teacher_features.shape or student_label_embeddings.shape != teacher_label_embeddings.shape:
        raise ValueError(f"the shallow and last exits must give the same shapes; got features "
                         f"{tuple(student_features.shape)} vs {tuple(teacher_features.shape)}, label embeddings "
                         f"{tuple(student_label_embeddings.shape)} vs {tuple(teacher_label_embeddings.shape)}. "
                         f"Fix: give every exit the same hidden width and number of classes.")
    if detach_teacher:
        teacher_features, teacher_label_embeddings = teacher_features.detach(), teacher_label_embeddings.detach()
    classes = torch.arange(student_label_embeddings.shape[0], device=labels.device)
    members = torch.cat([student_features, student_label_embeddings, teacher_features, teacher_label_embeddings])
    member_labels = torch.cat([labels, classes, labels, classes])
    half = student_features.shape[0] + classes.shape[0]
    anchors = torch.arange(2 * half, device=labels.device) < half
    return members, member_labels, anchors
