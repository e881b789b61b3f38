"""xops.nn: modules, layers, losses and initialisers built from xops ops.

``import xops as xo``; ``xo.nn.Conv2d(1, 16, 3, padding=1)``, ``xo.nn.functional.relu``,
``xo.nn.init.kaiming_normal_``, ``xo.nn.save`` / ``xo.nn.load`` (``.npz``). Everything is
a composite of StableHLO ops, so the tape differentiates it with no rules of its own.
Parameters are leaf tensors updated in place only by :func:`assign_` (see
``xops/nn/parameter.py``), which keeps their identity across optimizer steps.
"""

from . import functional, init, modules
from .init import Generator
from .modules import *  # noqa: F403  (the layers: modules.__all__)
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
    *modules.__all__,
    "softmax_cross_entropy",
    "cross_entropy",
    "mse",
]
