"""Quantized element types, uniform_quantize / uniform_dequantize, and other ops on
quantized tensors (dequantize -> op -> quantize, data movement on storage, bodies).

The reference below is written from the spec's formulas with exact rational arithmetic
(fractions.Fraction) and an explicit table of the expressed type's values, so it shares
no rounding code with xops.
"""

import bisect
import functools
from fractions import Fraction

import numpy as np
import pytest

import xops as xo
from conftest import assert_tensor, raises_spec

Q8 = "!quant.uniform<i8:f32, 0.1:-30>"
AXIS = "!quant.uniform<i8:f32:0, {0.1:-30,0.5:-20}>"


# ---------------------------------------------------------------------------------------
# Reference: the spec's quantize / dequantize, exactly
# ---------------------------------------------------------------------------------------


@functools.lru_cache(None)
def _finite_values(np_dtype):
    """Every finite value of a float type of <= 16 bits, sorted, as Python floats."""
    np_dtype = np.dtype(np_dtype)
    if np_dtype == np.float32:
        return None
    bits = np.arange(1 << (8 * np_dtype.itemsize), dtype=np.uint64).astype(
        {1: np.uint8, 2: np.uint16}[np_dtype.itemsize]
    )
    with np.errstate(invalid="ignore"):  # NaN payloads
        v = bits.view(np_dtype).astype(np.float64)
    return sorted(set(float(x) for x in v[np.isfinite(v)]))


def round_to(q, np_dtype):
    """Fraction q rounded to nearest-even in the float type (NaN/inf not produced here)."""
    if np.dtype(np_dtype) == np.float32:
        lo = np.float32(float(q))  # within one ulp; the exact distances decide below
        cands = {
            float(lo),
            float(np.nextafter(lo, np.float32(np.inf))),
            float(np.nextafter(lo, np.float32(-np.inf))),
        }
        vals = sorted(cands)
    else:
        vals = _finite_values(np_dtype)
    i = bisect.bisect_left(vals, float(q))
    best = None
    for c in vals[max(i - 2, 0) : i + 2]:
        d = abs(Fraction(c) - q)
        if best is None or d < best[0] or (d == best[0] and _even(c, np_dtype)):
            best = (d, c)
    return best[1]


def _even(c, np_dtype):
    bits = (
        np.asarray(c)
        .astype(np_dtype)
        .reshape(1)
        .view({1: np.uint8, 2: np.uint16, 4: np.uint32}[np.dtype(np_dtype).itemsize])
    )
    return int(bits[0]) % 2 == 0


def ref_quantize(x, qt, slice_index=0):
    """quantize(x) for one real value ``x`` (a value of the expressed type)."""
    if np.isnan(x):
        r = 0
    else:
        ex = qt.expressed_type.np
        s = Fraction(qt.scales[slice_index])
        if np.isinf(x):
            r = int(np.sign(x)) * (1 << 40)
        else:
            qv = round_to(Fraction(float(x)) / s, ex)
            r = int(np.rint(qv))  # round_nearest_even of a representable value (exact)
    r += qt.zero_points[slice_index]
    return min(max(r, qt.storage_min), qt.storage_max)


def ref_dequantize(i, qt, slice_index=0):
    diff = int(i) - qt.zero_points[slice_index]
    ex = qt.expressed_type.np
    f = round_to(Fraction(diff), ex)
    return round_to(Fraction(f) * Fraction(qt.scales[slice_index]), ex)


TYPES = [
    "!quant.uniform<i8:f32, 0.1:-30>",
    "!quant.uniform<ui8:f32, 0.0392157:128>",
    "!quant.uniform<i8<-127:127>:f32, 0.25:0>",
    "!quant.uniform<i16:f32, 3.0e-4:7>",
    "!quant.uniform<i4:bf16, 0.3:2>",
    "!quant.uniform<i8:f16, 1.7:-3>",
    "!quant.uniform<ui4<1:14>:bf16, 1.5:5>",
]


@pytest.mark.parametrize("text", TYPES)
def test_quantize_and_dequantize_match_the_reference(text):
    qt = xo.as_dtype(text)
    rng = np.random.default_rng(7)
    span = (qt.storage_max - qt.storage_min) * qt.scale
    x = np.concatenate(
        [
            rng.uniform(-1.2 * span, 1.2 * span, 200),
            (np.arange(-40, 41) + 0.5) * qt.scale,  # ties of x / scale
            [0.0, -0.0, np.inf, -np.inf, np.nan, 1e30, -1e30],
        ]
    )
    xt = xo.tensor(x.astype(np.float64), qt.expressed_type)
    xs = np.asarray(xt).astype(np.float64)
    got = xo.uniform_quantize(xt, qt)
    assert got.dtype == qt and got.shape == x.shape
    want = [ref_quantize(v, qt) for v in xs]
    np.testing.assert_array_equal(np.asarray(got).astype(np.int64), want)
    storage = np.arange(qt.storage_min, qt.storage_max + 1)
    if storage.size > 300:
        storage = storage[:: storage.size // 300]
    back = xo.uniform_dequantize(xo.tensor(storage, qt))
    assert back.dtype == qt.expressed_type
    assert_tensor(
        back, np.array([ref_dequantize(i, qt) for i in storage]).astype(qt.expressed_type.np)
    )


def test_spec_examples():
    q = xo.uniform_quantize(xo.tensor([4.0, 15.0]), AXIS)
    assert_tensor(xo.bitcast_convert(q, "i8"), np.array([10, 10], np.int8))
    r = xo.uniform_quantize(q, "!quant.uniform<i8:f32:0, {0.1:-20,0.2:-30}>")
    assert r.numpy().tolist() == [20, 45]
    assert xo.uniform_dequantize(xo.tensor([10, 10], AXIS)).tolist() == [4.0, 15.0]


def test_per_axis_uses_each_slice_parameters():
    qt = xo.QuantizedType(
        "i8", "f32", scales=[0.5, 2.0, 0.25], zero_points=[0, 3, -4], quantization_dimension=1
    )
    x = np.array([[1.0, 4.0, 1.0], [-3.0, 10.0, 30.0]], np.float32)
    q = xo.uniform_quantize(xo.tensor(x), qt)
    want = [[ref_quantize(x[i, j], qt, j) for j in range(3)] for i in range(2)]
    assert q.numpy().tolist() == want
    back = xo.uniform_dequantize(q).tolist()
    assert back == [[ref_dequantize(want[i][j], qt, j) for j in range(3)] for i in range(2)]


def test_type_text_and_identity():
    qt = xo.as_dtype("!quant.uniform<u8<1:250>:f32:1, {0.5:3,2.0:4}>")
    assert qt.storage_type is xo.uint8 and qt.expressed_type is xo.float32
    assert (qt.storage_min, qt.storage_max, qt.quantization_dimension) == (1, 250, 1)
    assert qt.name == "!quant.uniform<ui8<1:250>:f32:1, {0.5:3,2:4}>"
    assert xo.as_dtype(qt.name) == qt and hash(xo.as_dtype(qt.name)) == hash(qt)
    assert qt != xo.uint8 and qt != qt.replace(scales=[0.5, 1.0])
    assert xo.QuantizedType("i8", "f32", 0.1, -30).name == Q8
    assert xo.is_quantized(qt) and not xo.is_quantized(xo.float32)


@pytest.mark.parametrize(
    "kwargs, label",
    [
        (dict(storage_type="f16", expressed_type="f32", scales=1.0), "C1"),
        (dict(storage_type="i8", expressed_type="i32", scales=1.0), "C1"),
        (dict(storage_type="i16", expressed_type="f16", scales=1.0), "C1"),
        (dict(storage_type="i8", expressed_type="f32", scales=1.0, storage_min=1.5), "C2"),
        (dict(storage_type="i8", expressed_type="f32", scales=1.0, storage_max="9"), "C3"),
        (
            dict(storage_type="i8", expressed_type="f32", scales=1.0, storage_min=5, storage_max=5),
            "C4",
        ),
        (dict(storage_type="i8", expressed_type="f32", scales=1.0, storage_max=128), "C4"),
        (dict(storage_type="i8", expressed_type="f32", scales=0.0), "C6"),
        (dict(storage_type="i8", expressed_type="f32", scales=-1.0), "C6"),
        (dict(storage_type="i8", expressed_type="f32", scales=np.inf), "C7"),
        (dict(storage_type="i8", expressed_type="f32", scales=1e39), "C7"),  # inf in f32 (C5)
        (
            dict(
                storage_type="i8",
                expressed_type="f32",
                scales=1.0,
                zero_points=100,
                storage_min=-10,
                storage_max=10,
            ),
            "C8",
        ),
        (dict(storage_type="i8", expressed_type="f32", scales=1.0, zero_points=200), "C9"),
        (
            dict(
                storage_type="i8",
                expressed_type="f32",
                scales=[1.0, 2.0],
                zero_points=[1, 2, 3],
                quantization_dimension=0,
            ),
            "C10",
        ),
        (dict(storage_type="i8", expressed_type="f32", scales=[1.0, 2.0]), "C11"),
        (
            dict(storage_type="i8", expressed_type="f32", scales=1.0, quantization_dimension=-1),
            "C12",
        ),
    ],
)
def test_type_constraints(kwargs, label):
    with raises_spec("quantized type", label):
        xo.QuantizedType(**kwargs)


def test_tensor_constraints_and_literals():
    qt = xo.QuantizedType("i8", "f32", [1.0, 2.0], [0, 0], quantization_dimension=1)
    with raises_spec("tensor", "C12"):
        xo.tensor([1, 2], qt)
    with raises_spec("tensor", "C13"):
        xo.tensor([[1, 2, 3]], qt)
    with raises_spec("tensor", "C1"):  # literals are storage integers
        xo.tensor([1.5, 2.0], Q8)
    with pytest.raises(xo.SpecError, match="fit"):
        xo.tensor([1000], Q8)
    with pytest.raises(xo.SpecError, match="uniform_dequantize"):
        xo.tensor(xo.tensor([1], Q8), "i8")
    q = xo.tensor([[1, 2]], qt)
    assert q.type == f"{qt.name}[1,2]" and q.tolist() == [[1, 2]]
    assert xo.iota(0, [3], Q8).numpy().tolist() == [-30, -20, -10]  # quantize(index)


def test_op_constraints():
    with raises_spec("uniform_quantize", "C2"):
        xo.uniform_quantize(xo.tensor([1.0], "f64"), Q8)
    with raises_spec("uniform_quantize", "C2"):
        xo.uniform_quantize(xo.tensor([1], Q8), "!quant.uniform<i8:f16, 0.1:-30>")
    with pytest.raises(xo.SpecError, match="quantized type"):
        xo.uniform_quantize(xo.tensor([1.0]), "i8")
    with pytest.raises(xo.SpecError, match="quantized tensor"):
        xo.uniform_dequantize(xo.tensor([1.0]))
    with raises_spec("uniform_quantize", "C13"):
        xo.uniform_quantize(xo.tensor([1.0, 2.0, 3.0]), AXIS)


# ---------------------------------------------------------------------------------------
# Other ops: dequantize -> op -> quantize
# ---------------------------------------------------------------------------------------


def q(values, text=Q8):
    return xo.uniform_quantize(xo.tensor(np.asarray(values, np.float32)), text)


def real(t):
    return np.asarray(xo.uniform_dequantize(t))


def dq_op_q(fn, *xs, out=Q8):
    """The spec's dequantize_op_quantize, spelled out with float ops."""
    return xo.uniform_quantize(fn(*[xo.uniform_dequantize(x) for x in xs]), out)


def test_conformance_add_with_the_result_type_of_rhs():
    a, b = q([1.0, 2.0]), q([3.0, 4.0], "!quant.uniform<i8:f32, 0.5:-20>")
    r = xo.dequantize_op_quantize(xo.add, a, b, b.dtype)
    assert r.dtype == b.dtype and r.numpy().tolist() == [-12, -8]
    # the default result type is the first quantized operand's
    assert (a + b).dtype == a.dtype and real(a + b).tolist() == pytest.approx([4.0, 6.0])


@pytest.mark.parametrize(
    "name",
    [
        "abs",
        "negate",
        "exponential",
        "tanh",
        "logistic",
        "sine",
        "floor",
        "round_nearest_afz",
        "sqrt",
        "sign",
        "cbrt",
    ],
)
def test_unary_ops_dequantize_op_quantize(name):
    op = getattr(xo, name)
    x = q([0.3, 1.5, 2.0, 2.6, 0.0, 5.5])
    got = op(x)
    assert got.dtype == x.dtype
    assert got.numpy().tolist() == dq_op_q(op, x).numpy().tolist()


@pytest.mark.parametrize(
    "name",
    ["add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "atan2", "remainder"],
)
def test_binary_ops_dequantize_op_quantize(name):
    op = getattr(xo, name)
    a = q([0.5, 1.5, 2.0, 3.0])
    b = q([1.0, 0.7, 2.0, 1.2], "!quant.uniform<i8:f32, 0.05:3>")
    got = op(a, b)
    assert got.numpy().tolist() == dq_op_q(op, a, b).numpy().tolist()
    with_float = op(a, 2.0)  # a Python number is a real value
    assert (
        with_float.numpy().tolist()
        == xo.uniform_quantize(op(xo.uniform_dequantize(a), 2.0), Q8).numpy().tolist()
    )


def test_compare_select_clamp():
    a, b = q([1.0, 2.0, 3.0]), q([2.0, 2.0, 2.0], "!quant.uniform<i8:f32, 0.5:0>")
    # real values compared (storage 40 > 4 although 2.0 < 2.0 is false, etc.)
    assert xo.compare(a, b, "LT").tolist() == [True, False, False]
    assert xo.compare(a, b, "EQ").tolist() == [False, True, False]
    s = xo.select(xo.tensor([True, False, True]), b, a)
    assert s.dtype == b.dtype and real(s).tolist() == [2.0, 2.0, 2.0]
    c = xo.clamp(q([1.5])[0], b, q([2.5])[0])
    assert c.dtype == b.dtype and real(c).tolist() == [2.0, 2.0, 2.0]


def test_dot_general_and_convolution():
    rng = np.random.default_rng(3)
    a = q(rng.uniform(-1, 1, (2, 3)))
    b = q(rng.uniform(-1, 1, (3, 2)), "!quant.uniform<i8:f32, 0.02>")
    got = xo.dot_general(a, b, lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[0])
    want = dq_op_q(
        lambda x, y: xo.dot_general(
            x, y, lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[0]
        ),
        a,
        b,
    )
    assert got.numpy().tolist() == want.numpy().tolist()
    x, w = q(rng.uniform(-1, 1, (1, 1, 4, 4))), q(rng.uniform(-1, 1, (2, 1, 3, 3)))
    assert xo.convolution(x, w).numpy().tolist() == dq_op_q(xo.convolution, x, w).numpy().tolist()


def test_batch_norm_training_results_take_matching_types():
    x = q(np.arange(12.0).reshape(2, 3, 2) / 4)
    scale = q([1.0, 0.5, 2.0], "!quant.uniform<i8:f32, 0.05:0>")
    offset = q([0.0, 0.1, -0.2], "!quant.uniform<i8:f32, 0.05:0>")
    out, mean, var = xo.batch_norm_training(x, scale, offset, 1e-3, 1)
    assert out.dtype == x.dtype and mean.dtype == scale.dtype and var.dtype == scale.dtype
    fo, fm, fv = xo.batch_norm_training(*map(xo.uniform_dequantize, (x, scale, offset)), 1e-3, 1)
    assert out.numpy().tolist() == xo.uniform_quantize(fo, x.dtype).numpy().tolist()
    assert mean.numpy().tolist() == xo.uniform_quantize(fm, scale.dtype).numpy().tolist()


# ---------------------------------------------------------------------------------------
# Data movement on storage integers
# ---------------------------------------------------------------------------------------


def test_movement_keeps_storage_and_type():
    x = xo.tensor(np.arange(-6, 6, dtype=np.int8).reshape(3, 4), Q8)
    s = x.numpy()
    cases = [
        (xo.reshape(x, [4, 3]), s.reshape(4, 3)),
        (xo.transpose(x, [1, 0]), s.T),
        (xo.slice(x, [0, 1], [2, 3]), s[0:2, 1:3]),
        (xo.reverse(x, [1]), s[:, ::-1]),
        (xo.broadcast_in_dim(x, [1, 2], [2, 3, 4]), np.broadcast_to(s, (2, 3, 4))),
        (xo.concatenate([x, x], 0), np.concatenate([s, s])),
        (
            xo.pad(x, xo.tensor(-30, Q8), [1, 0], [0, 0], [0, 0]),
            np.pad(s, [(1, 0), (0, 0)], constant_values=-30),
        ),
        (xo.dynamic_slice(x, [xo.tensor(5), xo.tensor(1)], [2, 2]), s[1:3, 1:3]),  # clamped
        (
            xo.gather(
                x,
                xo.tensor([[2], [0]]),
                offset_dims=[1],
                collapsed_slice_dims=[0],
                start_index_map=[0],
                index_vector_dim=1,
                slice_sizes=[1, 4],
            ),
            s[[2, 0]],
        ),
        (x[1:, ::2], s[1:, ::2]),
    ]
    for got, want in cases:
        assert got.dtype == x.dtype
        np.testing.assert_array_equal(got.numpy(), want)
    assert x[0, 1].dtype == x.dtype


def test_movement_constraints():
    x = xo.tensor([1, 2], Q8)
    with raises_spec("concatenate", "C1"):
        xo.concatenate([x, xo.tensor([1, 2], "!quant.uniform<i8:f32, 0.2:-30>")], 0)
    with pytest.raises(xo.SpecError, match="padding_value must be a quantized tensor"):
        xo.pad(x, 0, [1], [0], [0])  # 0 has no quantized meaning
    with pytest.raises(xo.SpecError, match="update"):
        xo.dynamic_update_slice(x, xo.tensor([1], "i8"), [0])


def test_per_axis_dimension_follows_the_data():
    qt = xo.QuantizedType("i8", "f32", [0.5, 2.0, 4.0], [0, 1, 2], quantization_dimension=1)
    x = xo.tensor(np.arange(6, dtype=np.int8).reshape(2, 3), qt)
    t = xo.transpose(x, [1, 0])
    assert t.dtype == qt.replace(quantization_dimension=0)
    np.testing.assert_array_equal(real(t), real(x).T)
    b = xo.broadcast_in_dim(x, [0, 2], [2, 5, 3])
    assert b.dtype.quantization_dimension == 2
    np.testing.assert_array_equal(real(b), np.broadcast_to(real(x)[:, None], (2, 5, 3)))
    r = xo.reshape(x, [1, 2, 3, 1])
    assert r.dtype.quantization_dimension == 2
    one = xo.tensor(np.ones((2, 1), np.int8), qt.replace(scales=[0.5], zero_points=[0]))
    wide = xo.broadcast_in_dim(one, [0, 1], [2, 3])  # C6: one scale for every slice
    assert wide.dtype.scales == (0.5, 0.5, 0.5)
    with raises_spec("reshape", "C3"):
        xo.reshape(x, [3, 2])
    with raises_spec("slice", "C13"):
        xo.slice(x, [0, 0], [2, 2])


def test_bitcast_convert_uses_storage_types():
    x = xo.tensor([-3, 7], Q8)
    np.testing.assert_array_equal(xo.bitcast_convert(x, "ui8").numpy(), [253, 7])
    assert xo.bitcast_convert(xo.tensor([253, 7], "ui8"), Q8).numpy().tolist() == [-3, 7]
    with raises_spec("bitcast_convert", "C1"):
        xo.bitcast_convert(x, "i32")


# ---------------------------------------------------------------------------------------
# Ops with bodies: the body sees quantized values
# ---------------------------------------------------------------------------------------


def test_reduce_requantizes_after_every_application():
    qt = xo.as_dtype("!quant.uniform<i8:f32, 0.3:0>")
    vals = [0.31, 0.44, 0.9, 1.2, -0.6]
    x = q(vals, qt)
    init = q([0.0], qt)[0]
    got = xo.reduce(x, init, [0], xo.add)
    acc = init
    for i in range(len(vals)):
        acc = xo.add(acc, x[i])  # each add is dequantize -> add -> quantize
    assert got.dtype == qt and got.numpy() == acc.numpy()
    m = xo.reduce(x, q([-10.0], qt)[0], [0], lambda a, b: xo.maximum(a, b))
    assert real(m) == pytest.approx(max(real(x)))


def test_sort_reduce_window_scatter_on_quantized():
    x = q([0.4, -1.0, 2.5, 0.0, 1.1])
    s = xo.sort(x)
    assert s.dtype == x.dtype and real(s).tolist() == sorted(real(x).tolist())
    w = xo.reduce_window(x, q([-5.0])[0], [2], [1], body=xo.maximum)
    np.testing.assert_array_equal(real(w), np.maximum(real(x)[:-1], real(x)[1:]))
    upd = q([1.0, 1.0])
    sc = xo.scatter(
        x,
        xo.tensor([[1], [1]]),
        upd,
        update_window_dims=[],
        inserted_window_dims=[0],
        scatter_dims_to_operand_dims=[0],
        index_vector_dim=1,
        update_computation=xo.add,
    )
    assert real(sc).tolist() == pytest.approx([0.4, 1.0, 2.5, 0.0, 1.1])


def test_ops_without_a_quantized_form_refuse_clearly():
    x = xo.tensor([1, 2], Q8)
    for fn in (xo.popcnt, lambda t: xo.convert(t, "f32"), xo.not_, xo.fft if False else xo.imag):
        with pytest.raises(xo.SpecError, match="no quantized form.*uniform_dequantize"):
            fn(x)
    with pytest.raises(xo.SpecError, match="gradient"):
        x.requires_grad_()


def test_round_trip_check_for_bodies():
    # bf16 cannot hold (i - zp) * 0.3 exactly enough for every i8 value to round-trip
    qt = xo.as_dtype("!quant.uniform<i8:bf16, 0.3:0>")
    x = xo.tensor([1, 2, 3], qt)
    with pytest.raises(xo.SpecError, match="round|quantize\\(dequantize"):
        xo.reduce(x, xo.tensor(0, qt), [0], xo.add)


def test_top_k_returns_the_operand_values():
    x = q([0.4, -1.0, 2.5, 0.0, 1.1])
    values, indices = xo.top_k(x, 2)
    assert values.dtype == x.dtype and indices.tolist() == [2, 4]
    assert values.numpy().tolist() == x.numpy()[[2, 4]].tolist()


def test_contraction_constraints():
    a, b = q([[1.0, 2.0]]), q([[1.0], [0.5]], "!quant.uniform<i8:f32, 0.05>")
    dims = dict(lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[0])
    out = xo.dot_general(a, b, **dims, preferred_element_type="!quant.uniform<i8:f32, 0.05:5>")
    assert out.dtype.zero_point == 5 and real(out).tolist() == [[2.0]]
    with raises_spec("dot_general", "C14"):
        xo.dot_general(a, xo.uniform_dequantize(b), **dims)
    with raises_spec("dot_general", "C14"):
        xo.dot_general(xo.tensor([[1.0]]), xo.tensor([[1.0]]), preferred_element_type=Q8)
    with raises_spec("dot_general", "C15"):
        xo.dot_general(a, q([[1.0], [0.5]], "!quant.uniform<i16:f32, 0.05>"), **dims)
    with raises_spec("dot_general", "C16"):
        xo.dot_general(
            a,
            q([[1.0], [0.5]], "!quant.uniform<i8:f32, 0.05>"),
            **dims,
            preferred_element_type="!quant.uniform<i8:f64, 0.05>",
        )
    with raises_spec("dot_general", "C17"):
        xo.dot_general(a, q([[1.0], [0.5]]), **dims)
    x = q(np.ones((1, 1, 3, 3)))
    w_axis = xo.tensor(
        np.ones((2, 1, 2, 2), np.int8),
        xo.QuantizedType("i8", "f32", [0.5, 0.25], [0, 0], quantization_dimension=0),
    )
    assert xo.convolution(x, w_axis).shape == (1, 2, 2, 2)
    with raises_spec("convolution", "C28"):
        xo.convolution(xo.tensor(np.ones((1, 1, 3, 3), np.float32)), w_axis)
    with raises_spec("convolution", "C29"):
        xo.convolution(x, q(np.ones((1, 1, 2, 2)), "!quant.uniform<ui8:f32, 0.5>"))
    with raises_spec("convolution", "C31"):
        xo.convolution(
            x,
            q(np.ones((2, 1, 2, 2))),
            preferred_element_type=w_axis.dtype.replace(quantization_dimension=1),
        )
    with raises_spec("convolution", "C32"):
        xo.convolution(
            x,
            xo.tensor(
                np.ones((2, 2, 2, 2), np.int8), w_axis.dtype.replace(quantization_dimension=1)
            ),
        )
    with raises_spec("convolution", "C33"):
        xo.convolution(
            x,
            w_axis,
            preferred_element_type=xo.QuantizedType(
                "i8", "f32", [1.0, 1.0], [0, 0], quantization_dimension=0
            ),
        )
