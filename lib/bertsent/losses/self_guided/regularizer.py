import torch

METHOD_VERSION = 1  # bump when the maths changes


def weight_distance_regularizer(trained: torch.nn.Module, frozen: torch.nn.Module, weight: float = 0.1) -> torch.Tensor:
    r"""L^reg = lambda * sum over parameters ||theta_T - theta_F||^2: keeps the trained copy near the frozen one.

    Parameters are matched by name; both modules must have the same architecture.
    """
    frozen_parameters = dict(frozen.named_parameters())
    total = None
    for name, parameter in trained.named_parameters():
        if not parameter.requires_grad:
            continue  # frozen in the trained copy too (its embedding layer): identical, contributes 0
        term = (parameter - frozen_parameters[name].detach()).pow(2).sum()
        total = term if total is None else total + term
    if total is None:
        return torch.zeros(())
    return weight * total
