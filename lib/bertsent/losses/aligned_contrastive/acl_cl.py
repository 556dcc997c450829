import torch

from .cross_layer_batch import cross_layer_batch
from .supervised import supervised_contrastive_loss

METHOD_VERSION = 1  # bump when the maths changes


def acl_cl_loss(student_features: torch.Tensor, student_label_embeddings: torch.Tensor,
                teacher_features: torch.Tensor, teacher_label_embeddings: torch.Tensor, labels: torch.Tensor,
                temperature: float = 0.3, detach_teacher: bool = True) -> torch.Tensor:
    r"""ACL-CL: the contrastive loss of one shallow exit s over its members and the last exit T's together.

    Members X = {h^s_i} U {l^s_k} U {h^T_i} U {l^T_k} (:func:`cross_layer_batch`), anchors A = the shallow
    exit's members:

    .. math::

        L_{CL}^{s} = \frac{1}{|A'|} \sum_{a \in A'} \frac{-1}{|P(a)|} \sum_{p \in P(a)}
            \log \frac{\exp(s(x_a, x_p))}{\sum_{m \ne a} \exp(s(x_a, x_m))}

    so h^s_i is pulled to l^s_{y_i}, l^T_{y_i}, h^T_i (its own last-layer state) and every same-class member of
    both layers, and pushed from the rest. Open choices: the last exit's members are detached (it guides and
    is not pulled toward the shallow one; ``detach_teacher=False`` lets gradients through); only the shallow
    exit's members are anchors; cosine, tau = 0.3, mean over anchors. The multi-exit objective averages this
    over the shallow exits (:class:`bertsent.training.aligned_contrastive.MultiExitObjective`).

    Args:
        student_features, teacher_features: (N, d) pooled [CLS] states of the shallow and the last exit;
        student_label_embeddings, teacher_label_embeddings: (K, d) the two exits' classifier weights;
        labels: (N,) classes in 0..K-1.
    """
    members, member_labels, anchors = cross_layer_batch(student_features, student_label_embeddings,
                                                        teacher_features, teacher_label_embeddings, labels,
                                                        detach_teacher)
    return supervised_contrastive_loss(members, member_labels, temperature, anchors)
