"""Learning-rate schedules: they set ``group["lr"]`` of an optimizer's param groups.

Call ``scheduler.step()`` once per epoch (or per step), after ``optimizer.step()``, as
in PyTorch. Schedules are closed-form functions of the step count ``last_epoch``, so
they can be queried (``lr_at(t)``) and restarted without drift.
"""

import bisect
import math

__all__ = [
    "LRScheduler",
    "StepLR",
    "MultiStepLR",
    "ExponentialLR",
    "LinearLR",
    "CosineAnnealingLR",
    "LambdaLR",
]


class LRScheduler:
    """Base class: ``get_lr()`` for the current ``last_epoch``; ``step()`` advances it.
    Construction sets the learning rates for epoch 0."""

    def __init__(self, optimizer, last_epoch=-1):
        self.optimizer = optimizer
        for g in optimizer.param_groups:
            g.setdefault("initial_lr", g["lr"])
        self.base_lrs = [g["initial_lr"] for g in optimizer.param_groups]
        self.last_epoch = last_epoch
        self.step()

    def lr_at(self, epoch):
        """The learning rate of each group at step ``epoch``."""
        raise NotImplementedError

    def get_lr(self):
        return self.lr_at(self.last_epoch)

    def get_last_lr(self):
        return [g["lr"] for g in self.optimizer.param_groups]

    def step(self):
        self.last_epoch += 1
        for g, lr in zip(self.optimizer.param_groups, self.get_lr()):
            g["lr"] = lr

    def state_dict(self):
        """Every attribute but the optimizer (and LambdaLR's function), as PyTorch's:
        ``last_epoch``, ``base_lrs`` and the schedule's own settings (``step_size``,
        ``gamma``, ``T_max``, ...). Plain values: ``xo.nn.save`` stores it."""
        return {
            k: (list(v) if k == "base_lrs" else v)
            for k, v in vars(self).items()
            if k not in self._not_state
        }

    def load_state_dict(self, state):
        """Restore a :meth:`state_dict` and set each group's lr to the schedule's value
        at the restored ``last_epoch``."""
        for k, v in state.items():
            if k not in self._not_state:
                setattr(self, k, list(v) if k == "base_lrs" else v)
        for g, lr in zip(self.optimizer.param_groups, self.get_lr()):
            g["lr"] = lr

    _not_state = ("optimizer", "lr_lambda")


def _at_least_one(scheduler, name, value):
    """The setting ``name`` as an int >= 1 (ValueError otherwise, as PyTorch)."""
    if int(value) < 1:
        raise ValueError(f"{scheduler}: {name} must be >= 1, got {value}")
    return int(value)


class StepLR(LRScheduler):
    """lr = base_lr * gamma ** (epoch // step_size)."""

    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        self.step_size = _at_least_one("StepLR", "step_size", step_size)
        self.gamma = float(gamma)
        super().__init__(optimizer, last_epoch)

    def lr_at(self, epoch):
        return [b * self.gamma ** (epoch // self.step_size) for b in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2 for
    epoch in [0, T_max] (the closed form of ``torch.optim.lr_scheduler.CosineAnnealingLR``),
    eta_min after T_max."""

    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1):
        self.T_max = _at_least_one("CosineAnnealingLR", "T_max", T_max)
        self.eta_min = float(eta_min)
        super().__init__(optimizer, last_epoch)

    def lr_at(self, epoch):
        e = min(epoch, self.T_max)
        c = (1 + math.cos(math.pi * e / self.T_max)) / 2
        return [self.eta_min + (b - self.eta_min) * c for b in self.base_lrs]


class LambdaLR(LRScheduler):
    """lr = base_lr * lr_lambda(epoch)."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        self.lr_lambda = lr_lambda
        super().__init__(optimizer, last_epoch)

    def lr_at(self, epoch):
        return [b * self.lr_lambda(epoch) for b in self.base_lrs]


class MultiStepLR(LRScheduler):
    """lr = base_lr * gamma ** (the number of ``milestones`` <= epoch)."""

    def __init__(self, optimizer, milestones, gamma=0.1, last_epoch=-1):
        self.milestones = sorted(int(m) for m in milestones)
        self.gamma = float(gamma)
        super().__init__(optimizer, last_epoch)

    def lr_at(self, epoch):
        k = bisect.bisect_right(self.milestones, epoch)
        return [b * self.gamma**k for b in self.base_lrs]


class ExponentialLR(LRScheduler):
    """lr = base_lr * gamma ** epoch."""

    def __init__(self, optimizer, gamma, last_epoch=-1):
        self.gamma = float(gamma)
        super().__init__(optimizer, last_epoch)

    def lr_at(self, epoch):
        return [b * self.gamma**epoch for b in self.base_lrs]


class LinearLR(LRScheduler):
    """lr = base_lr * (start_factor + (end_factor - start_factor) * min(epoch,
    total_iters) / total_iters): a linear warm-up (or decay) over ``total_iters`` steps."""

    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5,
                 last_epoch=-1):  # fmt: skip
        if not (0 < start_factor <= 1 and 0 <= end_factor <= 1):
            raise ValueError(
                f"LinearLR: start_factor must be in (0, 1] and end_factor in [0, 1], got "
                f"{start_factor}, {end_factor}"
            )
        self.start_factor, self.end_factor = float(start_factor), float(end_factor)
        self.total_iters = _at_least_one("LinearLR", "total_iters", total_iters)
        super().__init__(optimizer, last_epoch)

    def lr_at(self, epoch):
        f = (
            self.start_factor
            + (self.end_factor - self.start_factor)
            * min(epoch, self.total_iters)
            / self.total_iters
        )
        return [b * f for b in self.base_lrs]
