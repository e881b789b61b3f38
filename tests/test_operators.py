"""Tensor API, Python operators (NumPy broadcasting through broadcast_in_dim) and basic
indexing (slice / reverse / reshape), checked against NumPy."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import xops as xo
from conftest import assert_tensor


# -- Tensor API -------------------------------------------------------------------------


def test_tensor_attributes_and_conversions():
    t = xo.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert t.shape == (2, 3) and t.ndim == 2 and t.size == 6 and t.dtype == xo.float32
    assert t.dtype == "f32" and t.dtype == np.float32 and t.type == "f32[2,3]"
    assert "f32[2,3]" in repr(t)
    copy = t.numpy()
    copy[0, 0] = 100  # numpy() is a writable copy ...
    assert t.tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]  # ... the tensor is unchanged
    view = np.asarray(t)
    assert not view.flags.writeable
    with pytest.raises(ValueError):
        view[0, 0] = 1
    assert len(t) == 2 and [r.tolist() for r in t] == [[1, 2, 3], [4, 5, 6]]
    assert xo.tensor(3.5).item() == 3.5 and float(xo.tensor([2.0])) == 2.0
    assert xo.tensor([1.5], "bf16").item() == 1.5 and xo.tensor([-3], "i4").tolist() == [-3]
    with pytest.raises(ValueError):
        bool(xo.tensor([1, 2]))
    t[0, 0] = 10.0  # rebinds t to a new buffer (copy-on-write): the view is unchanged
    assert t.tolist()[0] == [10.0, 2.0, 3.0] and view[0, 0] == 1.0


def test_tensor_never_aliases_user_memory():
    a = np.arange(4.0, dtype=np.float32)
    t = xo.tensor(a)
    a[0] = 99
    assert t.tolist() == [0, 1, 2, 3]


def test_default_element_types():
    assert xo.tensor(1.0).dtype == "f32" and xo.tensor(1).dtype == "i64"
    assert xo.tensor(True).dtype == "i1" and xo.tensor(1j).dtype == "c64"
    assert xo.tensor(np.ones(2)).dtype == "f64"  # NumPy arrays keep their dtype
    assert xo.tensor([1, 2], dtype="ui8").dtype == xo.uint8


# -- operators map to the spec's ops -----------------------------------------------------


@pytest.mark.parametrize("dtype", ["f32", "i32", "bf16", "ui8"])
def test_operators_equal_the_spec_ops(dtype):
    a = xo.tensor([7, 9, 12, 3], dtype)
    b = xo.tensor([2, 3, 5, 3], dtype)
    pairs = [
        (a + b, xo.add(a, b)),
        (a - b, xo.subtract(a, b)),
        (a * b, xo.multiply(a, b)),
        (a % b, xo.remainder(a, b)),
        (a**b, xo.power(a, b)),  # (equal for a, b > 0)
        (a < b, xo.compare(a, b, "LT")),
        (a >= b, xo.compare(a, b, "GE")),
        (a == b, xo.compare(a, b, "EQ")),
        (a != b, xo.compare(a, b, "NE")),
    ]
    if dtype != "ui8":
        pairs.append((-a, xo.negate(a)))
    if a.dtype.is_float:
        pairs.append((a / b, xo.divide(a, b)))
    else:  # `/` is true division: integers divide as the default float, f32
        pairs.append((a / b, xo.divide(xo.convert(a, "f32"), xo.convert(b, "f32"))))
    for got, want in pairs:
        assert_tensor(got, np.asarray(want), want.dtype)


def test_integer_operators_follow_python_and_the_spec_ops_stay_strict():
    a, b = xo.tensor([7, -7, 7, -7]), xo.tensor([2, 2, -2, -2])
    assert (a / b).tolist() == [3.5, -3.5, -3.5, 3.5] and (a / b).dtype == "f32"
    assert (a // b).tolist() == [3, -4, -4, 3]  # floor division
    assert (a % b).tolist() == [1, 1, -1, -1]  # remainder takes the divisor's sign
    assert xo.divide(a, b).tolist() == [3, -3, -3, 3]  # the spec op truncates
    assert xo.remainder(a, b).tolist() == [1, -1, 1, -1]  # ... and keeps the dividend's sign
    f = xo.tensor([7.0, -7.0, 7.0, -7.0], "f64")
    assert (f % 2.0).tolist() == [1.0, 1.0, 1.0, 1.0] and (f // -2.0).tolist() == [-4, 3, -4, 3]
    assert (~xo.tensor([0, -1], "i8")).tolist() == [-1, 0]
    assert (~xo.tensor([True, False])).tolist() == [False, True]
    assert (xo.tensor([-8], "i8") >> 1).tolist() == [-4]  # arithmetic for signed
    assert (xo.tensor([248], "ui8") >> 1).tolist() == [124]  # logical for unsigned
    assert (xo.tensor([1], "i8") << 9).tolist() == [0]
    assert (xo.tensor([6]) & 3).tolist() == [2] and (xo.tensor([6]) | 3).tolist() == [7]
    assert (xo.tensor([6]) ^ 3).tolist() == [5] and abs(xo.tensor([-3])).tolist() == [3]


def test_weak_python_scalars_take_the_tensor_type():
    x = xo.tensor([1.0, 2.0], "bf16")
    assert (x + 1).dtype == "bf16" and (1 + x).dtype == "bf16" and (x * 0.5).dtype == "bf16"
    assert (2 - xo.tensor([5])).tolist() == [-3]  # reflected operand order
    assert (10 / xo.tensor([3])).tolist() == [np.float32(10 / 3)]
    assert (2 ** xo.tensor([3.0])).tolist() == [8.0]
    assert (xo.tensor([1, 2], "i32") + 1.5).tolist() == [2.5, 3.5]  # int + float: default f32
    assert (xo.tensor([1, 2], "i32") + 1.5).dtype == "f32"
    with pytest.raises(xo.SpecError, match="out of range"):
        xo.tensor([1], "i8") + 300


def test_operators_promote_and_the_spec_ops_do_not():
    assert (xo.tensor([1.0]) + xo.tensor([1.0], "f64")).dtype == "f64"
    assert (xo.tensor([1.0]) + np.ones(1)).dtype == "f64"  # NumPy arrays keep their dtype
    assert (xo.tensor([1], "i8") + xo.tensor([1], "ui8")).dtype == "i16"
    assert (xo.tensor([1], "i64") + xo.tensor([1.0])).dtype == "f32"  # int with float
    with pytest.raises(xo.SpecError, match=r"^add \(C1\)"):
        xo.add(xo.tensor([1.0]), xo.tensor([1.0], "f64"))
    with pytest.raises(xo.SpecError, match="xo.convert"):  # narrow types mix only with themselves
        xo.tensor([1.0], "bf16") + xo.tensor([1.0])


def test_numpy_arrays_on_either_side():
    x = xo.tensor([1.0, 2.0])
    y = np.array([10.0, 20.0], np.float32) + x  # ndarray defers to the Tensor
    assert isinstance(y, xo.Tensor) and y.tolist() == [11.0, 22.0]
    assert (x - np.array([1.0], np.float32)).tolist() == [0.0, 1.0]


def test_incompatible_shapes_are_a_labelled_error():
    with pytest.raises(xo.SpecError, match=r"^add: .*do not broadcast"):
        xo.tensor([1.0, 2.0]) + xo.tensor([1.0, 2.0, 3.0])


_shapes = st.lists(st.integers(1, 3), min_size=0, max_size=3).map(tuple)


@st.composite
def _broadcastable(draw):
    out = draw(_shapes)

    def thin(shape):
        k = draw(st.integers(0, len(shape)))
        return tuple(1 if draw(st.booleans()) else d for d in shape[k:])

    return thin(out), thin(out)


@settings(max_examples=60, deadline=None)
@given(_broadcastable(), st.sampled_from(["f64", "i64"]))
def test_broadcasting_matches_numpy(shapes, dtype):
    rng = np.random.default_rng(0)
    a = rng.integers(-5, 6, shapes[0]).astype(dtype.replace("f", "float").replace("i", "int"))
    b = rng.integers(1, 6, shapes[1]).astype(a.dtype)
    for got, want in [
        (xo.tensor(a) + xo.tensor(b), a + b),
        (xo.tensor(a) * b, a * b),
        (xo.tensor(a) > xo.tensor(b), a > b),
    ]:
        assert_tensor(got, want)


# -- basic indexing -----------------------------------------------------------------------


@st.composite
def _index(draw):
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=0, max_size=3)))
    key = []
    for n in shape:
        kind = draw(st.sampled_from(["int", "slice", "full"] if n else ["slice", "full"]))
        if kind == "int":
            key.append(draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            bound = st.none() | st.integers(-n - 2, n + 2)
            step = draw(st.none() | st.sampled_from([1, 2, 3, -1, -2, -3]))
            key.append(slice(draw(bound), draw(bound), step))
        else:
            key.append(slice(None))
    if draw(st.booleans()):  # "..." stands for a run of dims (they become full slices)
        i = draw(st.integers(0, len(key)))
        key[i : draw(st.integers(i, len(key)))] = [Ellipsis]
    else:  # trailing dims left out are full slices too
        key = key[: draw(st.integers(0, len(key)))]
    for _ in range(draw(st.integers(0, 2))):
        key.insert(draw(st.integers(0, len(key))), None)
    return shape, tuple(key)


@settings(max_examples=150, deadline=None)
@given(_index())
def test_basic_indexing_matches_numpy(case):
    shape, key = case
    a = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    assert_tensor(xo.tensor(a)[key], a[key], "i32")


def test_indexing_examples_and_errors():
    t = xo.tensor(np.arange(12.0, dtype=np.float32).reshape(3, 4))
    assert t[1].tolist() == [4, 5, 6, 7] and t[-1, -1].item() == 11
    assert t[:, ::2].tolist() == [[0, 2], [4, 6], [8, 10]]
    assert t[::-1, 0].tolist() == [8, 4, 0] and t[..., None].shape == (3, 4, 1)
    assert t[xo.tensor(2)].tolist() == [8, 9, 10, 11]
    with pytest.raises(IndexError):
        t[3]
    with pytest.raises(IndexError):
        t[0, 0, 0]
    assert t[[0, 2], 1].tolist() == [1, 9]  # advanced indexing: tests/test_indexing_api.py
    with pytest.raises(IndexError, match="only integers"):
        t[1.5]


@pytest.mark.parametrize(
    "sa,sb",
    [
        ((3,), (3,)),
        ((2, 3), (3,)),
        ((3,), (3, 4)),
        ((2, 3), (3, 4)),
        ((5, 2, 3), (3, 4)),
        ((2, 1, 2, 3), (4, 3, 2)),
        ((3,), (2, 3, 4)),
    ],
)
def test_matmul_matches_numpy(sa, sb):
    rng = np.random.default_rng(1)
    a = rng.integers(-4, 5, sa).astype(np.float64)
    b = rng.integers(-4, 5, sb).astype(np.float64)
    assert_tensor(xo.tensor(a) @ xo.tensor(b), a @ b, "f64")
    assert_tensor(
        xo.tensor(a.astype(np.int32)) @ b.astype(np.int32), (a @ b).astype(np.int32), "i32"
    )


def test_matmul_errors():
    with pytest.raises(xo.SpecError, match=r"^dot_general \(C10\)"):
        xo.tensor(np.ones((2, 3))) @ xo.tensor(np.ones((2, 3)))
    with pytest.raises(xo.SpecError, match=r"^dot_general \(C12\)"):
        xo.tensor(2.0) @ xo.tensor([1.0])
