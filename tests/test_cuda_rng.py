"""CUDA kernel of rng_bit_generator (xops/kernels/cuda/rng.py): output bits and output
state compared with the CPU op's bit for bit, for every algorithm, state length, counter
wraparound, output type width and shape layout (XLA's split dimension for 32-bit
THREE_FRY outputs), and the same SpecError labels for bad input. Tiny shapes: the
simulator runs a Python thread per CUDA thread."""

import numpy as np
import pytest
from cuda_support import cu, needs_cuda

import xops as xo

from conftest import raises_spec

pytestmark = needs_cuda

M64 = 2**64 - 1
# every width of output the kernels write (64, 32, 16, 8 and 4 bits), ints and floats
TYPES = ("ui64", "f64", "i32", "f32", "bf16", "ui8", "f8E5M2", "i4")
# rank 0, odd and even sizes, a zero-size dim, 32-bit THREE_FRY split along dims 0, 1 and
# the largest one (no even dim)
SHAPES = ((), (1,), (5,), (2, 3), (3, 4), (3, 5), (0, 3), (5, 3, 1))


def _bits(t):
    a = t.numpy()
    return a.reshape(-1).view(np.uint8).reshape(a.shape + (a.dtype.itemsize,))


def _exact(state_dev, bits_dev, state_ref, bits_ref):
    for d, r in ((state_dev, state_ref), (bits_dev, bits_ref)):
        assert d.device == "cuda:0" and r.device == "cpu"
        assert d.dtype == r.dtype and d.shape == r.shape, (d, r)
        np.testing.assert_array_equal(_bits(d), _bits(r))


def _both(algorithm, state, shape, dtype):
    dev = xo.rng_bit_generator(algorithm, cu(state, "ui64"), shape, dtype)
    ref = xo.rng_bit_generator(algorithm, xo.tensor(state, "ui64"), shape, dtype)
    _exact(*dev, *ref)
    return dev, ref


STATES = {
    "THREE_FRY": ([1, 2], [0x0123456789ABCDEF, M64 - 3]),  # the counter wraps in the call
    "PHILOX": ([1, 2], [7, M64 - 1, 3], [5, M64 - 2]),  # carry into the high word
    "DEFAULT": ([3, 4, 5],),
}


@pytest.mark.parametrize("algorithm", sorted(STATES))
def test_bits_and_state_equal_the_cpu(algorithm):
    for state in STATES[algorithm]:
        for i, shape in enumerate(SHAPES):
            # each shape with two of the types (all of them over the shapes)
            for dtype in (TYPES[i % len(TYPES)], TYPES[(i + 3) % len(TYPES)]):
                _both(algorithm, state, shape, dtype)


def test_spec_example_and_state_threading():
    (state, bits), _ = _both("THREE_FRY", [1, 2], [2, 2], "ui64")
    assert state.tolist() == [1, 6]
    assert bits.numpy()[0, 0] == np.uint64(9236835810183407956)  # the spec's example
    for algorithm in ("THREE_FRY", "PHILOX"):
        sd = cu([11, 12, 13][: 2 if algorithm == "THREE_FRY" else 3], "ui64")
        sc = sd.to("cpu")
        for shape, dtype in (((3,), "ui64"), ((2, 3), "f32"), ((7,), "ui16")):
            sd, bd = xo.rng_bit_generator(algorithm, sd, shape, dtype)
            sc, bc = xo.rng_bit_generator(algorithm, sc, shape, dtype)
            _exact(sd, bd, sc, bc)


def test_shape_as_a_device_tensor_and_defaults():
    dev = xo.rng_bit_generator("PHILOX", cu([1, 2], "ui64"), cu([2, 3], "i32"))
    ref = xo.rng_bit_generator("PHILOX", xo.tensor([1, 2], "ui64"), [2, 3])
    _exact(*dev, *ref)
    assert dev[1].dtype == "ui64"


BAD = [  # (label, algorithm, (state values, state type), shape, dtype)
    ("I1", "MERSENNE", ([1, 2], "ui64"), [2], "ui64"),
    ("I2", "PHILOX", ([1, 2], "i64"), [2], "ui64"),
    ("I2", "PHILOX", ([[1, 2]], "ui64"), [2], "ui64"),
    ("I2", "PHILOX", ([1, 2], "ui64"), [2], "i1"),
    ("I2", "PHILOX", ([1, 2], "ui64"), [2], "c64"),
    ("I2", "PHILOX", ([1, 2], "ui64"), [-1], "ui64"),
    ("C2", "THREE_FRY", ([1, 2, 3], "ui64"), [2], "ui64"),
    ("C2", "DEFAULT", ([1], "ui64"), [2], "ui64"),
]


def test_errors_match_the_cpu():
    for label, algorithm, (values, state_type), shape, dtype in BAD:
        for state in (cu(values, state_type), xo.tensor(values, state_type)):
            with raises_spec("rng_bit_generator", label):
                xo.rng_bit_generator(algorithm, state, shape, dtype)
    with pytest.raises(xo.SpecError, match=r"^rng_bit_generator \(device\): operands live on"):
        xo.rng_bit_generator("PHILOX", xo.tensor([1, 2], "ui64"), cu([2], "i32"))
