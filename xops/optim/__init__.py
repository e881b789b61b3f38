"""xops.optim: SGD, Adam, AdamW, RMSprop, Adagrad and learning-rate schedules
(``xo.optim.lr_scheduler``).

``opt = xo.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)``; per batch
``opt.zero_grad(); loss.backward(); opt.step()``. Steps run under ``xo.no_grad()`` and
rebind each parameter in place with ``xo.nn.assign_``: parameter objects keep their
identity across steps.
"""

from . import lr_scheduler  # noqa: F401
from .lr_scheduler import CosineAnnealingLR, ExponentialLR, LambdaLR, LinearLR, LRScheduler
from .lr_scheduler import MultiStepLR, StepLR
from .optimizer import SGD, Adagrad, Adam, AdamW, Optimizer, RMSprop

__all__ = [
    "Optimizer",
    "SGD",
    "Adam",
    "AdamW",
    "RMSprop",
    "Adagrad",
    "lr_scheduler",
    "LRScheduler",
    "StepLR",
    "MultiStepLR",
    "ExponentialLR",
    "LinearLR",
    "CosineAnnealingLR",
    "LambdaLR",
]
