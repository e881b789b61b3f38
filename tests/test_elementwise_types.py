"""The type matrix and one negative test per constraint label of each elementwise op.

``SPEC_KINDS`` is written from the spec's Inputs tables (seed 004; XLA seed 002 for erf
and tan), independently of xops: every element type outside an op's set must raise
``SpecError`` labelled with the input's label, every type inside must work. The op name
in messages is the spec's (``and``, ``or``, ``not``).
"""

import numpy as np
import pytest

import xops as xo
from conftest import raises_spec

B, SI, UI, F, C = "bool", "si", "ui", "float", "complex"
INT = {SI, UI}
ANY = {B, SI, UI, F, C}

# op -> (spec name, arity, accepted kinds); "integer" in the spec is signed or unsigned,
# never i1 ("boolean" is named separately)
SPEC_KINDS = {
    "abs": ("abs", 1, {SI, F, C}),
    "negate": ("negate", 1, INT | {F, C}),
    "sign": ("sign", 1, {SI, F, C}),
    "exponential": ("exponential", 1, {F, C}),
    "exponential_minus_one": ("exponential_minus_one", 1, {F, C}),
    "log": ("log", 1, {F, C}),
    "log_plus_one": ("log_plus_one", 1, {F, C}),
    "logistic": ("logistic", 1, {F, C}),
    "sqrt": ("sqrt", 1, {F, C}),
    "rsqrt": ("rsqrt", 1, {F, C}),
    "cbrt": ("cbrt", 1, {F, C}),
    "sine": ("sine", 1, {F, C}),
    "cosine": ("cosine", 1, {F, C}),
    "tan": ("tan", 1, {F, C}),
    "tanh": ("tanh", 1, {F, C}),
    "erf": ("erf", 1, {F}),
    "floor": ("floor", 1, {F}),
    "ceil": ("ceil", 1, {F}),
    "round_nearest_afz": ("round_nearest_afz", 1, {F}),
    "round_nearest_even": ("round_nearest_even", 1, {F}),
    "is_finite": ("is_finite", 1, {F}),
    "not_": ("not", 1, {B} | INT),
    "popcnt": ("popcnt", 1, INT),
    "count_leading_zeros": ("count_leading_zeros", 1, INT),
    "real": ("real", 1, {F, C}),
    "imag": ("imag", 1, {F, C}),
    "add": ("add", 2, ANY),
    "subtract": ("subtract", 2, INT | {F, C}),
    "multiply": ("multiply", 2, ANY),
    "divide": ("divide", 2, INT | {F, C}),
    # the Inputs table lists complex, but its semantics are "TBD" (#997): an error
    "remainder": ("remainder", 2, INT | {F}),
    "power": ("power", 2, INT | {F, C}),
    "maximum": ("maximum", 2, ANY),
    "minimum": ("minimum", 2, ANY),
    "atan2": ("atan2", 2, {F, C}),
    "and_": ("and", 2, {B} | INT),
    "or_": ("or", 2, {B} | INT),
    "xor": ("xor", 2, {B} | INT),
    "shift_left": ("shift_left", 2, INT),
    "shift_right_arithmetic": ("shift_right_arithmetic", 2, INT),
    "shift_right_logical": ("shift_right_logical", 2, INT),
    "compare": ("compare", 2, ANY),
}
BINARY = [n for n, (_, arity, _) in SPEC_KINDS.items() if arity == 2]


def sample(dt, shape=(3,)):
    """A tensor of element type ``dt`` (values 1, or True)."""
    return xo.tensor(
        np.ones(shape, np.float32).astype(dt.np) if dt.kind != "bool" else np.ones(shape, bool), dt
    )


def call(name, *xs):
    if name == "compare":
        return xo.compare(*xs, "EQ")
    return getattr(xo, name)(*xs)


def test_every_elementwise_op_is_in_the_matrix():
    ops = {
        "abs",
        "negate",
        "sign",
        "exponential",
        "exponential_minus_one",
        "log",
        "log_plus_one",
        "logistic",
        "sqrt",
        "rsqrt",
        "cbrt",
        "sine",
        "cosine",
        "tan",
        "tanh",
        "erf",
        "floor",
        "ceil",
        "round_nearest_afz",
        "round_nearest_even",
        "is_finite",
        "not_",
        "popcnt",
        "count_leading_zeros",
        "real",
        "imag",
        "add",
        "subtract",
        "multiply",
        "divide",
        "remainder",
        "power",
        "maximum",
        "minimum",
        "atan2",
        "and_",
        "or_",
        "xor",
        "shift_left",
        "shift_right_arithmetic",
        "shift_right_logical",
        "compare",
    }
    assert set(SPEC_KINDS) == ops
    assert all(callable(getattr(xo, n)) for n in ops | {"complex", "select", "clamp"})


def _matrix():
    return [
        pytest.param(name, dt, id=f"{name}-{dt.name}")
        for name in SPEC_KINDS
        for dt in xo.all_dtypes()
    ]


@pytest.mark.parametrize("name, dt", _matrix())
def test_type_matrix(name, dt):
    """Accepted types run and keep the spec's result type; the others raise (I1)."""
    spec, arity, kinds = SPEC_KINDS[name]
    args = [sample(dt)] * arity
    if dt.kind in kinds:
        out = call(name, *args)
        assert out.shape == (3,)
        if name in ("is_finite", "compare"):
            assert out.dtype == xo.bool_
        elif name in ("abs", "real", "imag") and dt.kind == C:
            assert out.dtype == (xo.float32 if dt.name == "c64" else xo.float64)
        else:
            assert out.dtype == dt
    else:
        with raises_spec(spec, "I1"):
            call(name, *args)


@pytest.mark.parametrize("dt", xo.all_dtypes(), ids=str)
def test_complex_accepts_only_f32_f64(dt):
    if dt.name in ("f32", "f64"):
        out = xo.complex(sample(dt), sample(dt))
        assert out.dtype == (xo.complex64 if dt.name == "f32" else xo.complex128)
    else:
        with raises_spec("complex", "I1"):
            xo.complex(sample(dt), sample(dt))


@pytest.mark.parametrize("dt", xo.all_dtypes(), ids=str)
def test_select_and_clamp_accept_every_type(dt):
    pred = xo.tensor([True, False, True])
    assert xo.select(pred, sample(dt), sample(dt)).dtype == dt
    assert xo.clamp(sample(dt), sample(dt), sample(dt)).dtype == dt
    assert xo.clamp(sample(dt, ()), sample(dt), sample(dt, ())).dtype == dt


# ---------------------------------------------------------------------------------------
# One negative test per constraint label
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", BINARY + ["complex"])
def test_binary_C1_element_type_mismatch(name):
    spec = SPEC_KINDS[name][0] if name in SPEC_KINDS else "complex"
    a, b = (xo.tensor([1.0, 2.0], "f32"), xo.tensor([1.0, 2.0], "f64"))
    if name in (
        "and_",
        "or_",
        "xor",
        "shift_left",
        "shift_right_arithmetic",
        "shift_right_logical",
        "popcnt",
    ):
        a, b = xo.tensor([1, 2], "i32"), xo.tensor([1, 2], "i64")
    with raises_spec(spec, "C1"):
        call(name, a, b) if name != "complex" else xo.complex(a, b)
    with raises_spec(spec, "C1"):  # and the other way round
        call(name, b, a) if name != "complex" else xo.complex(b, a)


@pytest.mark.parametrize("name", BINARY + ["complex"])
def test_binary_shape_mismatch(name):
    """C1 (baseline_type / type equality) for every binary op but compare, where shape
    equality is C2."""
    spec = SPEC_KINDS[name][0] if name in SPEC_KINDS else "complex"
    label = "C2" if name == "compare" else "C1"
    dtype = (
        "i32"
        if name
        in ("and_", "or_", "xor", "shift_left", "shift_right_arithmetic", "shift_right_logical")
        else "f64"
    )
    for sa, sb in [((2,), (3,)), ((2, 3), (3, 2)), ((1,), ()), ((), (4,)), ((0,), (1,))]:
        a, b = xo.tensor(np.ones(sa), dtype), xo.tensor(np.ones(sb), dtype)
        with raises_spec(spec, label):
            call(name, a, b) if name != "complex" else xo.complex(a, b)


def test_element_type_mismatch_is_reported_before_shape_mismatch():
    with raises_spec("add", "C1") as e:
        xo.add(xo.tensor([1.0], "f32"), xo.tensor([1.0, 2.0], "bf16"))
    assert "element type" in str(e.value) and "f32[1]" in str(e.value)


def test_messages_name_the_types():
    with pytest.raises(xo.SpecError) as e:
        xo.shift_left(xo.tensor([1.0], "f32"), xo.tensor([1.0], "f32"))
    assert str(e.value).startswith("shift_left (I1): ") and "f32[1]" in str(e.value)
    with pytest.raises(xo.SpecError) as e:
        xo.not_(xo.tensor([1.0, 2.0], "bf16"))
    assert str(e.value).startswith("not (I1): ") and "bf16[2]" in str(e.value)
    assert e.value.op == "not" and e.value.label == "I1"
    assert isinstance(e.value, ValueError) and isinstance(e.value, TypeError)


@pytest.mark.parametrize(
    "dtype, bad",
    [
        ("f32", "SIGNED"),
        ("f32", "UNSIGNED"),
        ("f64", "SIGNED"),
        ("bf16", "UNSIGNED"),
        ("i32", "FLOAT"),
        ("i32", "UNSIGNED"),
        ("i32", "TOTALORDER"),
        ("ui8", "SIGNED"),
        ("ui8", "FLOAT"),
        ("i1", "SIGNED"),
        ("i1", "FLOAT"),
        ("c64", "TOTALORDER"),
        ("c128", "SIGNED"),
    ],
)
def test_compare_C3_compare_type_must_fit_element_type(dtype, bad):
    x = xo.tensor([1, 0], dtype)
    with raises_spec("compare", "C3"):
        xo.compare(x, x, "EQ", bad)


def test_compare_I3_I4_unknown_direction_or_type():
    x = xo.tensor([1.0], "f32")
    for bad in ("EQUAL", "", "<", None):
        with raises_spec("compare", "I3"):
            xo.compare(x, x, bad)
    with raises_spec("compare", "I4"):
        xo.compare(x, x, "EQ", "FLOATING")


def test_remainder_complex_is_undefined():
    z = xo.tensor([1 + 1j], "c64")
    with raises_spec("remainder", "I1") as e:
        xo.remainder(z, z)
    assert "997" in str(e.value)


def test_select_I1_pred_must_be_i1():
    x = xo.tensor([1, 2], "i32")
    for pred in (
        xo.tensor([1, 0], "i32"),
        xo.tensor([1.0, 0.0], "f32"),
        xo.tensor([1, 0], "ui8"),
        1,
        np.float64(1.0),
    ):
        with raises_spec("select", "I1"):
            xo.select(pred, x, x)


def test_select_C1_pred_shape():
    x = xo.tensor([[1, 2, 3]], "i32")
    for shape in [(3,), (1,), (1, 1), (3, 1), (1, 3, 1)]:
        with raises_spec("select", "C1"):
            xo.select(xo.tensor(np.ones(shape, bool)), x, x)
    xo.select(xo.tensor(np.ones((1, 3), bool)), x, x)  # same shape
    xo.select(xo.tensor(True), x, x)  # 0-d


def test_select_C2_on_true_on_false_same_type():
    with raises_spec("select", "C2"):
        xo.select(xo.tensor(True), xo.tensor([1, 2], "i32"), xo.tensor([1, 2], "i64"))
    with raises_spec("select", "C2"):
        xo.select(xo.tensor(True), xo.tensor([1, 2], "i32"), xo.tensor([1, 2, 3], "i32"))
    with raises_spec("select", "C2"):  # 0-d operands do not broadcast (only weak scalars)
        xo.select(xo.tensor(True), xo.tensor([1, 2], "i32"), xo.tensor(1, "i32"))


def test_clamp_C1_min_shape():
    x = xo.tensor([1.0, 2.0, 3.0], "f32")
    with raises_spec("clamp", "C1"):
        xo.clamp(xo.tensor([0.0, 1.0], "f32"), x, xo.tensor(2.0, "f32"))
    with raises_spec("clamp", "C1"):
        xo.clamp(xo.tensor([0.0], "f32"), x, xo.tensor(2.0, "f32"))  # (1,) is not 0-d


def test_clamp_C2_max_shape():
    x = xo.tensor([1.0, 2.0, 3.0], "f32")
    with raises_spec("clamp", "C2"):
        xo.clamp(xo.tensor(0.0, "f32"), x, xo.tensor([[2.0, 2.0, 2.0]], "f32"))


def test_clamp_C3_element_types():
    x = xo.tensor([1.0, 2.0, 3.0], "f32")
    with raises_spec("clamp", "C3"):
        xo.clamp(xo.tensor(0.0, "f64"), x, xo.tensor(2.0, "f32"))
    with raises_spec("clamp", "C3"):
        xo.clamp(xo.tensor(0.0, "f32"), x, xo.tensor(2, "i32"))
    with raises_spec("clamp", "C3"):
        xo.clamp(xo.tensor(0.0, "bf16"), xo.tensor([1.0], "f16"), xo.tensor(2.0, "bf16"))


def test_not_a_tensor():
    with pytest.raises(xo.SpecError, match=r"^add"):
        xo.add(xo.tensor([1.0]), "1.0")
    with pytest.raises(xo.SpecError, match=r"^sine"):
        xo.sine(object())
