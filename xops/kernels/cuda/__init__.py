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

__all__ = [
    "register",
    "numba_cuda",
    "to_cuda",
    "OPS",
    "GPU_VERIFIED",
    "SIMULATOR_SINCE",
    "verified_on",
]

_state = {}

# The ops with a CUDA kernel (kept equal to the kernel modules' KERNELS by
# tests/test_cuda.py, so that docs/status.md can list them without importing numba.cuda);
# what verified each: see verified_on below.
OPS = (
    "abs",
    "add",
    "and",
    "atan2",
    "batch_norm_grad",
    "batch_norm_inference",
    "batch_norm_training",
    "bitcast_convert",
    "broadcast",
    "broadcast_in_dim",
    "cbrt",
    "ceil",
    "cholesky",
    "clamp",
    "collapse",
    "compare",
    "complex",
    "concatenate",
    "conv",
    "conv_with_general_padding",
    "convert",
    "convolution",
    "cosine",
    "count_leading_zeros",
    "divide",
    "dot",
    "dot_general",
    "dynamic_slice",
    "dynamic_update_slice",
    "erf",
    "exponential",
    "exponential_minus_one",
    "floor",
    "gather",
    "imag",
    "iota",
    "is_finite",
    "log",
    "log_plus_one",
    "logistic",
    "map",
    "maximum",
    "minimum",
    "multiply",
    "negate",
    "nn.functional.relu",
    "nn.functional.softmax_cross_entropy",
    "not",
    "or",
    "pad",
    "popcnt",
    "power",
    "real",
    "reduce",
    "reduce_precision",
    "reduce_window",
    "remainder",
    "reshape",
    "reverse",
    "rng",
    "rng_bernoulli",
    "rng_bit_generator",
    "rng_normal",
    "rng_uniform",
    "round_nearest_afz",
    "round_nearest_even",
    "rsqrt",
    "scatter",
    "select",
    "select_and_scatter",
    "shift_left",
    "shift_right_arithmetic",
    "shift_right_logical",
    "sign",
    "sine",
    "slice",
    "sort",
    "sqrt",
    "subtract",
    "tan",
    "tanh",
    "top_k",
    "transpose",
    "triangular_solve",
    "xor",
    "autodiff.local.alias",  # the tape's identity primitive (t.to(its own device))
)
# The ops whose every CUDA test passed on a real GPU: every tests/test_cuda*.py module on an
# NVIDIA H100 (2026-11-26, numba 0.68.0, numba-cuda 0.30.4; docs/gpu.md "Real-GPU runs" says
# how) with a record of which kernels each test ran (tests/cuda_record.py): all of OPS,
# first with 422 tests, then again with the float -> integer convert, TOTALORDER compare and
# the complex sign, power, tanh, sine, cosine, tan, exponential_minus_one, log_plus_one,
# rsqrt and logistic kernels (451 passed; c128 power failed there, one test expected an
# error the new kernels no longer raise: both mended; c128 power was withdrawn, then
# rewritten in double-double with c128 atan2, simulator only: SIMULATOR_SINCE).
# conv and conv_with_general_padding are convolution's kernel under their own names.
# Session 11, on an H100 again: every module with the relu and cross-entropy kernels
# (xops.nn), the host-cost changes and the 16-byte f32 maps, 508 tests passed; the one
# failure was a wrong expectation in a new test (mended, then that module passed alone).
GPU_VERIFIED = frozenset(OPS)

# Ops run by CUDA tests added after the last GPU run, so far run on the simulator only
# (recorded by running those modules under the simulator with tests/cuda_record.py; docs/
# status.md says "GPU+sim" for them). Empty it after a GPU run passes them. Session 14,
# after its last GPU run: the one-launch batch norm kernels, the max-pool gradient's
# fused NaN mask (select_and_scatter's rule), convolution's split threshold and complex
# maximum / minimum / clamp; session 15: complex cbrt (c64, c128) and atan2 (c64; c128
# with power later, in double-double, more accurate than the CPU);
# session 18: complex dot_general, convolution, reduce and reduce_window (add, multiply)
# on c64 / c128; session 22: complex compare GE / GT / LE / LT and select_and_scatter,
# and f4E2M1FN, f6E2M3FN, f6E3M2FN, f8E8M0FNU in dot_general, convolution, reduce,
# reduce_window, select_and_scatter, the batch norm ops and imag; reduce, reduce_window
# with any body and several inputs, select_and_scatter with any select body and sort with
# any comparator (the CPU's generic algorithms in xops ops); session 23: scatter with any
# body, several inputs or an element type its kernel does not take (the CPU's rounds), and
# the complex functions' special values (C99 Annex G as glibc gives them, c64 / c128) and
# complex multiply fused as NumPy's loop.
SIMULATOR_SINCE = frozenset(
    {
        "compare",
        "imag",
        "sort",
        "scatter",
        "batch_norm_inference",
        "dot_general",
        "reduce",
        "reduce_window",
        "batch_norm_training",
        "batch_norm_grad",
        "select_and_scatter",
        "convolution",
        "conv",
        "conv_with_general_padding",
        "maximum",
        "minimum",
        "clamp",
        "cbrt",
        "atan2",
        "exponential",
        "log",
        "sqrt",
        "rsqrt",
        "abs",
        "divide",
        "tanh",
        "tan",
        "sine",
        "cosine",
        "exponential_minus_one",
        "log_plus_one",
        "logistic",
        "sign",
        "power",
        "multiply",
    }
)


def verified_on(name):
    """What ran op ``name``'s CUDA tests: ``"GPU"`` (all of them on a real GPU),
    ``"GPU+sim"`` (those of the GPU run there, newer ones on the simulator only) or
    ``"simulator"``."""
    if name not in GPU_VERIFIED:
        return "simulator"
    return "GPU+sim" if name in SIMULATOR_SINCE else "GPU"


def register():
    """Import the kernel modules and plug their kernels into the registry (once)."""
    if _state.get("registered"):
        return
    from ... import registry
    from ._pool import install

    install()  # the caching allocator, before numba makes its CUDA context
    from . import convolution, elementwise, linalg, movement, normalization, reduction
    from . import indexing, rng, solve, sorting, windows
    from . import complex as complex_ops, conversion, dot, optim
    from . import losses, nn_fused
    from ... import nn as _nn  # noqa: F401  (declares the xops.nn primitives nn_fused serves)

    modules = (elementwise, movement, reduction, linalg, convolution, rng, sorting, windows)
    modules += (normalization, indexing, complex_ops, solve, conversion, dot, nn_fused, losses)
    for module in modules:
        for name, impl in module.KERNELS.items():
            registry.set_kernel(name, "cuda", impl)
    for name, update in {**optim.UPDATES, **nn_fused.UPDATES, **losses.FUSED}.items():
        _device._updates["cuda", name] = update
    _state["registered"] = True


_device._on_cuda.append(register)
_device._movers["cuda"] = to_cuda
_device._movers["cpu"] = to_cuda
