"""xops.nn: modules, layers, losses and initialisers built from xops ops.

``import xops as xo``; ``xo.nn.Conv2d(1, 16, 3, padding=1)``, ``xo.nn.functional.relu``,
``xo.nn.init.kaiming_normal_``, ``xo.nn.save`` / ``xo.nn.load`` (``.npz``). Everything is
a composite of StableHLO ops, so the tape differentiates it with no rules of its own.
Parameters are leaf tensors updated in place only by :func:`assign_` (see
``xops/nn/parameter.py``), which keeps their identity across optimizer steps.
"""

from . import functional, init  # noqa: F401
from .init import Generator
from .modules import (
    AvgPool2d,
    BatchNorm1d,
    BatchNorm2d,
    Conv1d,
    Conv2d,
    CrossEntropyLoss,
    Dropout,
    Embedding,
    Flatten,
    GELU,
    Identity,
    IncompatibleKeys,
    Linear,
    LogSoftmax,
    MaxPool2d,
    Module,
    ModuleList,
    MSELoss,
    ReLU,
    Sequential,
    Sigmoid,
    Softmax,
    Tanh,
)
from .parameter import Parameter, assign_
from .functional import softmax_cross_entropy, mse, cross_entropy
from .serialization import CheckpointError, load, save

__all__ = [
    "functional",
    "init",
    "Generator",
    "Parameter",
    "assign_",
    "save",
    "load",
    "CheckpointError",
    "Module",
    "Sequential",
    "ModuleList",
    "Linear",
    "Conv1d",
    "Conv2d",
    "BatchNorm1d",
    "BatchNorm2d",
    "MaxPool2d",
    "AvgPool2d",
    "ReLU",
    "GELU",
    "Sigmoid",
    "Tanh",
    "Softmax",
    "LogSoftmax",
    "Dropout",
    "Flatten",
    "Identity",
    "Embedding",
    "CrossEntropyLoss",
    "MSELoss",
    "IncompatibleKeys",
    "softmax_cross_entropy",
    "cross_entropy",
    "mse",
]
