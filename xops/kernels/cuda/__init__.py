"""CUDA kernels (numba.cuda) behind the device seam of :mod:`xops.registry`.

Importing this package imports no numba.cuda: :func:`register` runs when the first CUDA
device is asked for (:func:`xops.device.as_device`), imports the kernel modules and plugs
each kernel into its op with ``registry.set_kernel(name, "cuda", impl)``. Once the first
tensor is placed on the device (:func:`xops.kernels.cuda._storage.to_cuda`
calls ``registry.use_device("cuda")``), every primitive picks its kernel by its operands'
device.

Storage: a CUDA tensor's holder is a numba device array, C-contiguous, in the holder
dtype; narrow types (bf16, f8, int4, ...) are stored as their integer bit patterns
(uint8/uint16) and viewed back on the way to the host. Each kernel function takes the op's
own arguments, runs the CPU op's checks, then launches (see docs/gpu.md).
"""

from ... import device as _device
from ._storage import numba_cuda, to_cuda

__all__ = ["register", "numba_cuda", "to_cuda", "OPS", "VERIFIED_ON"]

_state = {}

# The ops with a CUDA kernel (kept equal to the kernel modules' KERNELS by
# tests/test_cuda.py, so that docs/status.md can list them without importing numba.cuda),
# and what verified them: "simulator" (numba's CUDA simulator, tests/test_cuda.py) or
# "GPU" once the tests have run on a real one.
OPS = (
    "abs",
    "add",
    "and",
    "atan2",
    "broadcast",
    "broadcast_in_dim",
    "ceil",
    "clamp",
    "collapse",
    "compare",
    "concatenate",
    "convert",
    "cosine",
    "count_leading_zeros",
    "divide",
    "dot_general",
    "dynamic_slice",
    "dynamic_update_slice",
    "erf",
    "exponential",
    "exponential_minus_one",
    "floor",
    "is_finite",
    "log",
    "log_plus_one",
    "logistic",
    "maximum",
    "minimum",
    "multiply",
    "negate",
    "not",
    "or",
    "pad",
    "popcnt",
    "power",
    "reduce",
    "remainder",
    "reshape",
    "reverse",
    "round_nearest_afz",
    "round_nearest_even",
    "rsqrt",
    "select",
    "shift_left",
    "shift_right_arithmetic",
    "sign",
    "sine",
    "slice",
    "sqrt",
    "subtract",
    "tan",
    "tanh",
    "transpose",
    "xor",
)
VERIFIED_ON = "simulator"


def register():
    """Import the kernel modules and plug their kernels into the registry (once)."""
    if _state.get("registered"):
        return
    from ... import registry
    from . import elementwise, linalg, movement, reduction

    for module in (elementwise, movement, reduction, linalg):
        for name, impl in module.KERNELS.items():
            registry.set_kernel(name, "cuda", impl)
    _state["registered"] = True


_device._on_cuda.append(register)
_device._movers["cuda"] = to_cuda
_device._movers["cpu"] = to_cuda
