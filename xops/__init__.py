"""xops: an eager array framework for the XLA / StableHLO operation set.

``import xops as xo``; every StableHLO op is ``xo.<stablehlo_name>`` with the spec's
operands and attributes, Python keywords get a trailing underscore (``xo.and_``).
"""

import os as _os
import sys as _sys


def _tune_openmp():
    """Numba's OpenMP threads (the omp threading layer, GNU libgomp) wait ~0.3 ms
    spinning after a parallel region (``GOMP_SPINCOUNT=10000``), then sleep: long
    enough that the next kernel's region finds them awake (a sleeping thread's wake-up
    cost the digits training step a quarter of its time at batch 32), short enough
    not to hold a core from BLAS's threads for long (libgomp's default spins ~10 ms).
    libgomp reads the variable once, when it loads: it is set only while the system
    libgomp that Numba's omp layer links is loaded here (no thread starts: fork-safe as
    before), then removed, so that another library's OpenMP (PyTorch's own libgomp,
    imported later) keeps its defaults. Set by the user (or OMP_WAIT_POLICY): left
    alone. See docs/kernels.md."""
    import ctypes

    if "GOMP_SPINCOUNT" in _os.environ or "OMP_WAIT_POLICY" in _os.environ:
        return
    _os.environ["GOMP_SPINCOUNT"] = "10000"
    try:
        ctypes.CDLL("libgomp.so.1")  # (the soname Numba's omppool links)
    except OSError:
        return  # (left set: read whenever an OpenMP runtime loads)
    del _os.environ["GOMP_SPINCOUNT"]


_tune_openmp()

from .errors import SpecError  # noqa: E402
from .limits import config, debug_nans, deterministic, NonFiniteError  # noqa: E402,F401
from . import dtypes  # noqa: E402
from .dtypes import DType, as_dtype, all_dtypes  # noqa: E402
from .dtypes import *  # noqa: E402,F401,F403  (xo.float32, xo.bfloat16, ...)
from . import qtype  # noqa: E402,F401  (quantized types: as_dtype reads "!quant.uniform<...>")
from .tensor import Tensor, tensor  # noqa: E402
from .ops.elementwise import *  # noqa: E402,F401,F403
from .ops.movement import *  # noqa: E402,F401,F403
from .ops.conversion import *  # noqa: E402,F401,F403
from .ops.misc import *  # noqa: E402,F401,F403
from .ops.linalg import *  # noqa: E402,F401,F403
from .ops.convolution import *  # noqa: E402,F401,F403
from .ops.reduction import *  # noqa: E402,F401,F403
from .ops.windows import *  # noqa: E402,F401,F403
from .ops.normalization import *  # noqa: E402,F401,F403
from .ops.indexing import *  # noqa: E402,F401,F403
from .ops.sorting import *  # noqa: E402,F401,F403
from .ops.fft import *  # noqa: E402,F401,F403
from .ops.solve import *  # noqa: E402,F401,F403
from .ops.rng import *  # noqa: E402,F401,F403
from .ops.control import *  # noqa: E402,F401,F403
from .ops.quantization import *  # noqa: E402,F401,F403
from .ops.collectives import *  # noqa: E402,F401,F403
from .ops.channels import *  # noqa: E402,F401,F403
from .ops.composite import *  # noqa: E402,F401,F403
from .ops import elementwise as _elementwise, movement as _movement  # noqa: E402
from .ops import conversion as _conversion, misc as _misc, linalg as _linalg  # noqa: E402
from .ops import convolution as _convolution, reduction as _reduction  # noqa: E402
from .ops import normalization as _normalization, indexing as _indexing  # noqa: E402
from .ops import windows as _windows, sorting as _sorting  # noqa: E402
from .ops import fft as _fft, solve as _solve, rng as _rng, control as _control  # noqa: E402
from .ops import quantization as _quantization  # noqa: E402
from .ops import collectives as _collectives, channels as _channels  # noqa: E402
from .ops import composite as _composite  # noqa: E402

from .autodiff import (  # noqa: E402
    backward,
    enable_grad,
    grad,
    is_grad_enabled,
    no_grad,  # noqa: F401
    value_and_grad,
    vjp,
)
from .autodiff.transforms import hessian, jacfwd, jacrev, jvp, stop_gradient  # noqa: E402
from .ops import operators as _operators  # noqa: E402
from . import numpy as _numpy  # noqa: E402  (the everyday layer: built on the ops)
from . import _interop, _numpy_indexing  # noqa: E402
from .autodiff import tape as _tape  # noqa: E402
from .autodiff.local import alias as _alias  # noqa: E402
from .ops import scatter as _ops_scatter  # noqa: E402  (Tensor.index_add_)
from .device import Device, default_device  # noqa: E402,F401
from .kernels import cuda as _cuda_kernels  # noqa: E402,F401  (registers on first CUDA use)

_operators._install(_numpy)  # Python operators and indexing on Tensor
from . import _torch_methods  # noqa: E402

_torch_methods.install()  # PyTorch's method spellings (t.float(), t.gather(1, i), ...)
# Tensor's methods reach the layers above xops.tensor through these (it imports none):
_tensor_module = _sys.modules[Tensor.__module__]
_tensor_module._xnp, _tensor_module._tape = _numpy, _tape
_tensor_module._interop, _tensor_module._indexing = _interop, _numpy_indexing
_tensor_module._alias = _alias
_tensor_module._index_add_ = _ops_scatter.index_add_
del _tensor_module

__version__ = "0.1.0"

__all__ = [
    "SpecError",
    "DType",
    "as_dtype",
    "all_dtypes",
    "Tensor",
    "tensor",
    "grad",
    "value_and_grad",
    "vjp",
    "jvp",
    "jacrev",
    "jacfwd",
    "hessian",
    "stop_gradient",
    "no_grad",
    "enable_grad",
    "is_grad_enabled",
    *dtypes.__all__,
    *_elementwise.__all__,
    *_movement.__all__,
    *_conversion.__all__,
    *_misc.__all__,
    *_linalg.__all__,
    *_convolution.__all__,
    *_reduction.__all__,
    *_windows.__all__,
    *_normalization.__all__,
    *_indexing.__all__,
    *_sorting.__all__,
    *_fft.__all__,
    *_solve.__all__,
    *_rng.__all__,
    *_control.__all__,
    *_quantization.__all__,
    *_collectives.__all__,
    *_channels.__all__,
    *_composite.__all__,
]


def __getattr__(name):  # lazy subpackages: xo.stablehlo, xo.nn, xo.optim (keep `import xops` fast)
    if name in ("stablehlo", "nn", "optim", "distributed"):
        import importlib

        return importlib.import_module(f"xops.{name}")
    raise AttributeError(f"module 'xops' has no attribute {name!r}")
