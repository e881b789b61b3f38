"""Programs of the shape JAX emits (``jax.jit(f).lower(...).as_text()``), run by xops.

* The sample of the StableHLO project's JAX-generated test programs under
  ``../shared/conformance/jax-testdata-sample/`` (read at test time, never copied):
  every function of every file is one test and must pass.
* Programs built here in the same shape, so the behaviour is covered without the shared
  data: ``@main`` calling ``@inputs()``/``@expected()`` (constants returned directly,
  several results), hex literals, ``func.call`` inside reduction bodies, unsigned
  literals written negative, ``chlo`` ops, ``custom_call @check.*`` with the reference
  runner's defaults, the generic form, sharding attributes, dynamic shapes.
"""

from pathlib import Path

import numpy as np
import pytest
import scipy.special as sp

import xops as xo
from xops.stablehlo.checks import _ulp_diff
from xops.stablehlo.runner import collect, run_entry

SAMPLE = Path(__file__).parents[1].parent / "shared" / "conformance" / "jax-testdata-sample"


# ---------------------------------------------------------------------------------------
# The shared sample
# ---------------------------------------------------------------------------------------


def _sample_entries():
    if not SAMPLE.is_dir():
        return []
    out = []
    for path in sorted(SAMPLE.glob("*.mlir")):
        out.extend(collect(str(path)))
    return out


_ENTRIES = _sample_entries()
_PROGRAMS = {}


@pytest.mark.skipif(not SAMPLE.is_dir(), reason=f"no JAX test programs at {SAMPLE}")
@pytest.mark.parametrize("entry", _ENTRIES, ids=[e.test_id for e in _ENTRIES])
def test_jax_testdata_sample(entry):
    r = run_entry(entry, programs=_PROGRAMS)
    assert r.status == "pass", f"{r.status}: {r.reason}" + (f" (line {r.line})" if r.line else "")


@pytest.mark.skipif(not SAMPLE.is_dir(), reason=f"no JAX test programs at {SAMPLE}")
def test_jax_testdata_sample_is_complete():
    """All 30 files, 90 functions (main, inputs, expected per file) are collected."""
    assert len({e.file for e in _ENTRIES}) == 30
    assert len(_ENTRIES) == 90


# ---------------------------------------------------------------------------------------
# Building programs of JAX's shape
# ---------------------------------------------------------------------------------------


def ttype(a, spec):
    return "tensor<" + "".join(f"{d}x" for d in a.shape) + spec + ">"


def blob(a):
    """``dense<"0x...">``: the raw little-endian bytes, as JAX prints most constants."""
    return 'dense<"0x' + np.ascontiguousarray(a).tobytes().hex().upper() + '">'


def jax_program(main_ops, inputs, expected, results=None):
    """A module like jax.jit(f).lower(...) in the StableHLO test data: ``inputs`` and
    ``expected`` are lists of (literal text, type); ``main_ops`` uses %in#i / %ex#i."""

    def fn(name, vals):
        types = ", ".join(f'{t} {{mhlo.layout_mode = "default"}}' for _, t in vals)
        names = ["%cst"] + [f"%cst_{i - 1}" for i in range(1, len(vals))]
        body = "\n".join(
            f"    {n} = stablehlo.constant {lit} : {t}" for n, (lit, t) in zip(names, vals)
        )
        ret = ", ".join(names) + " : " + ", ".join(t for _, t in vals)
        return f"  func.func private @{name}() -> ({types}) {{\n{body}\n    return {ret}\n  }}\n"

    def call(var, name, vals):
        n = len(vals)
        ts = ", ".join(t for _, t in vals)
        head = f"{var}:{n}" if n > 1 else var
        return f"    {head} = call @{name}() : () -> ({ts})\n"

    res = results or "()"
    ins = call("%in", "inputs", inputs) + call("%ex", "expected", expected)
    if len(inputs) == 1:
        main_ops = main_ops.replace("%in#0", "%in")
    if len(expected) == 1:
        main_ops = main_ops.replace("%ex#0", "%ex")
    return (
        "module @jit_main attributes {mhlo.num_partitions = 1 : i32, "
        "mhlo.num_replicas = 1 : i32} {\n"
        f"  func.func public @main() -> {res} {{\n{ins}{main_ops}\n  }}\n"
        + fn("inputs", inputs)
        + fn("expected", expected)
        + "}\n"
    )


def run_main(text):
    return xo.stablehlo.load(text).call("main")


def test_constant_directly_followed_by_return():
    """`%c = stablehlo.constant ... : t` then `return %c : t`: the return is its own op
    (the constant's type was read with its literal; nothing else ends it)."""
    prog = xo.stablehlo.load("""
func.func public @main() -> (tensor<2xf32> {jax.result_info = ""}) {
  %c = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  return %c : tensor<2xf32>
}""")
    np.testing.assert_array_equal(np.asarray(prog()), [1.0, 2.0])


def test_multi_value_returns_and_results_named_as_pairs():
    x = np.array([[1.5, -2.0, 0.25], [3.0, 9.0, -1.0]], np.float32)
    vals = -np.sort(-x, axis=1)[:, :2]
    idx = np.argsort(-x, axis=1)[:, :2].astype(np.int32)
    text = jax_program(
        "    %values, %indices = chlo.top_k(%in, k = 2) : tensor<2x3xf32> -> "
        "(tensor<2x2xf32>, tensor<2x2xi32>)\n"
        "    stablehlo.custom_call @check.expect_eq(%values, %ex#0) {has_side_effect = true}"
        " : (tensor<2x2xf32>, tensor<2x2xf32>) -> ()\n"
        "    stablehlo.custom_call @check.expect_eq(%indices, %ex#1) {has_side_effect = true}"
        " : (tensor<2x2xi32>, tensor<2x2xi32>) -> ()\n"
        "    return %values, %indices : tensor<2x2xf32>, tensor<2x2xi32>",
        [(blob(x), ttype(x, "f32"))],
        [(blob(vals), ttype(vals, "f32")), (blob(idx), ttype(idx, "i32"))],
        "(tensor<2x2xf32>, tensor<2x2xi32>)",
    )
    v, i = run_main(text)
    np.testing.assert_array_equal(np.asarray(v), vals)
    np.testing.assert_array_equal(np.asarray(i), idx)
    ins = xo.stablehlo.load(text).call("inputs")
    np.testing.assert_array_equal(np.asarray(ins), x)


LOGADDEXP = """
  func.func private @logaddexp(%arg0: tensor<f32>, %arg1: tensor<f32>) -> tensor<f32> {
    %0 = stablehlo.maximum %arg0, %arg1 : tensor<f32>
    %1 = stablehlo.subtract %arg0, %arg1 : tensor<f32>
    %2 = stablehlo.abs %1 : tensor<f32>
    %3 = stablehlo.negate %2 : tensor<f32>
    %4 = stablehlo.exponential %3 : tensor<f32>
    %5 = stablehlo.log_plus_one %4 : tensor<f32>
    %6 = stablehlo.add %0, %5 : tensor<f32>
    %7 = stablehlo.compare NE, %1, %1, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %8 = stablehlo.select %7, %0, %6 : tensor<i1>, tensor<f32>
    return %8 : tensor<f32>
  }
}
"""


def test_func_call_inside_reduction_bodies():
    """A reduce/reduce_window body calling @logaddexp(tensor<f32>, tensor<f32>) (JAX's
    cumlogsumexp and logsumexp): the callee runs on the body's arguments as the body
    does, its declared shapes checked per element."""
    x = np.array([[0.5, -1.0, 2.0], [1.0, 3.0, -2.0], [0.0, 0.25, 1.5]], np.float32)
    cum = np.logaddexp.accumulate(x.astype(np.float64), axis=0).astype(np.float32)
    red = np.logaddexp.reduce(x.astype(np.float64), axis=1).astype(np.float32)
    text = jax_program(
        "    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>\n"
        '    %0 = "stablehlo.reduce_window"(%in, %cst) <{padding = dense<[[2, 0], [0, 0]]>'
        " : tensor<2x2xi64>, window_dimensions = array<i64: 3, 1>}> ({\n"
        "    ^bb0(%arg0: tensor<f32>, %arg1: tensor<f32>):\n"
        "      %2 = func.call @logaddexp(%arg0, %arg1) : (tensor<f32>, tensor<f32>) -> "
        "tensor<f32>\n      stablehlo.return %2 : tensor<f32>\n"
        "    }) : (tensor<3x3xf32>, tensor<f32>) -> tensor<3x3xf32>\n"
        "    %1 = stablehlo.reduce(%in init: %cst) across dimensions = [1] : "
        "(tensor<3x3xf32>, tensor<f32>) -> tensor<3xf32>\n"
        "     reducer(%a: tensor<f32>, %b: tensor<f32>)  {\n"
        "      %3 = func.call @logaddexp(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>\n"
        "      stablehlo.return %3 : tensor<f32>\n    }\n"
        "    stablehlo.custom_call @check.expect_close(%0, %ex#0) {has_side_effect = true} "
        ": (tensor<3x3xf32>, tensor<3x3xf32>) -> ()\n"
        "    stablehlo.custom_call @check.expect_close(%1, %ex#1) {has_side_effect = true} "
        ": (tensor<3xf32>, tensor<3xf32>) -> ()\n"
        "    return %0, %1 : tensor<3x3xf32>, tensor<3xf32>",
        [(blob(x), ttype(x, "f32"))],
        [(blob(cum), ttype(cum, "f32")), (blob(red), ttype(red, "f32"))],
        "(tensor<3x3xf32>, tensor<3xf32>)",
    )
    text = text.rstrip().rstrip("}") + LOGADDEXP
    a, b = run_main(text)
    np.testing.assert_allclose(np.asarray(a), cum, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(b), red, rtol=1e-6)


@pytest.mark.parametrize(
    "spec,np_dtype",
    [
        ("f32", np.float32),
        ("f64", np.float64),
        ("f16", np.float16),
        ("i16", np.int16),
        ("ui64", np.uint64),
        ("c64", np.complex64),
    ],
)
def test_hex_blob_literals(spec, np_dtype):
    x = (np.arange(6).reshape(2, 3) * 3 - 5).astype(np_dtype)
    elem = {"c64": "complex<f32>"}.get(spec, spec)
    prog = xo.stablehlo.load(f"""
func.func public @main() -> tensor<2x3x{elem}> {{
  %cst = stablehlo.constant {blob(x)} : tensor<2x3x{elem}>
  return %cst : tensor<2x3x{elem}>
}}""")
    np.testing.assert_array_equal(np.asarray(prog()), x)


def test_hex_element_literals_keep_nan_payloads_and_signed_zero():
    prog = xo.stablehlo.load("""
func.func public @main() -> tensor<4xf32> {
  %cst = stablehlo.constant dense<[0x7FC00001, 0xFF800000, 0x80000000, 0x3F800000]> : tensor<4xf32>
  return %cst : tensor<4xf32>
}""")
    bits = np.asarray(prog()).view(np.uint32)
    np.testing.assert_array_equal(bits, [0x7FC00001, 0xFF800000, 0x80000000, 0x3F800000])


def test_unsigned_literal_written_negative_is_twos_complement():
    """MLIR negates a negative literal in the type's width: -2 : ui8 is 254; below
    -2^(bits-1) the literal does not fit."""
    prog = xo.stablehlo.load("""
func.func public @main() -> tensor<4xui8> {
  %c = stablehlo.constant dense<[-2, -1, -128, 7]> : tensor<4xui8>
  return %c : tensor<4xui8>
}""")
    np.testing.assert_array_equal(np.asarray(prog()), [254, 255, 128, 7])
    with pytest.raises(xo.SpecError, match="integer literal -129 does not fit ui8"):
        xo.stablehlo.load("""
func.func public @main() -> tensor<1xui8> {
  %c = stablehlo.constant dense<[-129]> : tensor<1xui8>
  return %c : tensor<1xui8>
}""")()


def test_optimization_barrier_with_one_operand_returns_the_tensor():
    prog = xo.stablehlo.load("""
func.func public @main() -> tensor<2xi32> {
  %c = stablehlo.constant dense<[3, 4]> : tensor<2xi32>
  %0 = stablehlo.optimization_barrier %c : tensor<2xi32>
  %1 = stablehlo.add %0, %0 : tensor<2xi32>
  return %1 : tensor<2xi32>
}""")
    np.testing.assert_array_equal(np.asarray(prog()), [6, 8])


# ---------------------------------------------------------------------------------------
# custom_call @check.* with the reference runner's defaults
# ---------------------------------------------------------------------------------------


def _check_program(target, actual, expected, spec="f32"):
    return f"""
func.func public @main() {{
  %a = stablehlo.constant dense<{actual}> : tensor<2x{spec}>
  %b = stablehlo.constant dense<{expected}> : tensor<2x{spec}>
  stablehlo.custom_call @{target}(%a, %b) {{has_side_effect = true}} : (tensor<2x{spec}>, tensor<2x{spec}>) -> ()
  return
}}"""


def test_custom_call_expect_close_allows_three_ulp():
    one = np.float32(1.0)
    three = np.nextafter(np.nextafter(np.nextafter(one, 2), 2), 2)
    four = np.nextafter(three, np.float32(2))
    ok = _check_program("check.expect_close", f"[{float(three)!r}, 2.0]", "[1.0, 2.0]")
    xo.stablehlo.load(ok)()
    bad = _check_program("check.expect_close", f"[{float(four)!r}, 2.0]", "[1.0, 2.0]")
    with pytest.raises(xo.stablehlo.CheckFailure, match=r"ULP difference must be in \[0, 3\]"):
        xo.stablehlo.load(bad)()


def test_custom_call_expect_almost_eq_tolerance_is_a_thousandth():
    xo.stablehlo.load(
        _check_program("check.expect_almost_eq", "[1.0009, 2.0]", "[1.0, 2.0]", "f64")
    )()
    with pytest.raises(xo.stablehlo.CheckFailure, match="tolerance 0.001"):
        xo.stablehlo.load(
            _check_program("check.expect_almost_eq", "[1.002, 2.0]", "[1.0, 2.0]", "f64")
        )()


def test_custom_call_check_eq_returns_true_i1():
    """The older test programs: %r = custom_call @check.eq(a, b) -> tensor<i1>."""
    prog = xo.stablehlo.load("""
func.func public @main() -> tensor<i1> {
  %a = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %b = stablehlo.constant dense<[1.00001, 2.0]> : tensor<2xf32>
  %0 = stablehlo.custom_call @check.eq(%a, %b) : (tensor<2xf32>, tensor<2xf32>) -> tensor<i1>
  return %0 : tensor<i1>
}""")
    assert bool(np.asarray(prog())) is True


def test_shape_assertion():
    text = """
func.func public @main(%arg0: tensor<?x3xf32>) -> tensor<3xf32> {
  %c = stablehlo.constant dense<2> : tensor<i32>
  %0 = stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<?x3xf32>) -> tensor<i32>
  %1 = stablehlo.compare GE, %0, %c, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
  stablehlo.custom_call @shape_assertion(%1, %0) {api_version = 2 : i32, error_message = "Expected value >= 2 for 'a', got {0}", has_side_effect = true} : (tensor<i1>, tensor<i32>) -> ()
  %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
  %2 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<?x3xf32>, tensor<f32>) -> tensor<3xf32>
  return %2 : tensor<3xf32>
}"""
    prog = xo.stablehlo.load(text)
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_array_equal(np.asarray(prog(x)), x.sum(0))
    with pytest.raises(xo.SpecError, match="shape_assertion: Expected value >= 2 for 'a', got 1"):
        prog(x[:1])


# ---------------------------------------------------------------------------------------
# Syntax JAX and its exporters produce
# ---------------------------------------------------------------------------------------


def test_generic_form_module():
    """The generic form of a whole module ("builtin.module", "func.func" with
    function_type/sym_name properties), as some tools print JAX's programs."""
    prog = xo.stablehlo.load("""
"builtin.module"() <{sym_name = "jit_main"}> ({
  "func.func"() <{function_type = () -> tensor<3x2xi8>, res_attrs = [{jax.result_info = ""}], sym_name = "main", sym_visibility = "public"}> ({
    %2 = "func.call"() <{callee = @inputs}> : () -> tensor<2x3xi8>
    %4 = "stablehlo.transpose"(%2) <{permutation = array<i64: 1, 0>}> : (tensor<2x3xi8>) -> tensor<3x2xi8>
    "func.return"(%4) : (tensor<3x2xi8>) -> ()
  }) : () -> ()
  "func.func"() <{function_type = () -> tensor<2x3xi8>, sym_name = "inputs", sym_visibility = "private"}> ({
    %1 = "stablehlo.constant"() <{value = dense<[[-4, -3, -1], [0, 1, 0]]> : tensor<2x3xi8>}> : () -> tensor<2x3xi8>
    "func.return"(%1) : (tensor<2x3xi8>) -> ()
  }) : () -> ()
  "func.func"() <{function_type = (tensor<2xi8>) -> tensor<2xi8>, sym_name = "twice", sym_visibility = "private"}> ({
  ^bb0(%arg0: tensor<2xi8>):
    %0 = "stablehlo.add"(%arg0, %arg0) : (tensor<2xi8>, tensor<2xi8>) -> tensor<2xi8>
    "func.return"(%0) : (tensor<2xi8>) -> ()
  }) : () -> ()
}) {mhlo.num_partitions = 1 : i32} : () -> ()
""")
    np.testing.assert_array_equal(np.asarray(prog()), [[-4, 0], [-3, 1], [-1, 0]])
    np.testing.assert_array_equal(np.asarray(prog.call("twice", [1, 2])), [2, 4])
    assert prog.modules[0].name == "jit_main"


def test_sharding_composite_and_attributes_are_tolerated():
    prog = xo.stablehlo.load("""
#loc = loc(unknown)
module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.sharding = "{replicated}"} {
  sdy.mesh @mesh = <["x"=1, "y"=1]>
  func.func public @main(%arg0: tensor<2xf32> {mhlo.sharding = "{replicated}", sdy.sharding = #sdy.sharding<@mesh, [{}]>} loc(unknown)) -> (tensor<2xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.custom_call @Sharding(%arg0) {mhlo.sharding = "{replicated}"} : (tensor<2xf32>) -> tensor<2xf32> loc(#loc)
    %1 = stablehlo.composite "my.add" %0, %0 {composite_attributes = {alpha = 1.000000e+00 : f32}, decomposition = @my_add, version = 1 : i32} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %2 = func.call @id(%1) {mhlo.frontend_attributes = {x = "y"}} : (tensor<2xf32>) -> tensor<2xf32>
    return %2 : tensor<2xf32> loc(#loc)
  } loc(#loc)
  func.func private @my_add(%a: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<2xf32> {
    %0 = stablehlo.add %a, %b : tensor<2xf32>
    return %0 : tensor<2xf32>
  }
  func.func private @id(%a: tensor<2xf32>) -> tensor<2xf32> attributes {sdy.foo = "bar"} {
    return %a : tensor<2xf32>
  }
} loc(#loc)
#loc1 = loc("jit(f)/add")
""")
    np.testing.assert_array_equal(np.asarray(prog([1.0, 2.5])), [2.0, 5.0])


def test_gather_and_scatter_default_index_vector_dim():
    """#stablehlo.scatter<...> omits index_vector_dim when it is 0 (its default)."""
    prog = xo.stablehlo.load("""
func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  %c = stablehlo.constant dense<[2]> : tensor<1xi32>
  %u = stablehlo.constant dense<10.0> : tensor<f32>
  %0 = "stablehlo.scatter"(%arg0, %c, %u) <{indices_are_sorted = true, scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0]>, unique_indices = true}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    stablehlo.return %b : tensor<f32>
  }) : (tensor<4xf32>, tensor<1xi32>, tensor<f32>) -> tensor<4xf32>
  %1 = "stablehlo.gather"(%0, %c) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0], start_index_map = [0]>, slice_sizes = array<i64: 1>}> : (tensor<4xf32>, tensor<1xi32>) -> tensor<f32>
  %2 = stablehlo.broadcast_in_dim %1, dims = [] : (tensor<f32>) -> tensor<4xf32>
  %3 = stablehlo.add %0, %2 : tensor<4xf32>
  return %3 : tensor<4xf32>
}""")
    np.testing.assert_array_equal(np.asarray(prog([1.0, 2.0, 3.0, 4.0])), [11, 12, 20, 14])


# ---------------------------------------------------------------------------------------
# chlo ops
# ---------------------------------------------------------------------------------------

_X = np.array([-0.75, -0.3, 0.0, 0.2, 0.5, 0.9], np.float64)
_POS = np.array([0.1, 0.5, 1.0, 2.5, 7.0, 30.0], np.float64)
_BIG = np.array([1.0, 1.5, 2.0, 10.0, 100.0, 3.0], np.float64)
CHLO_UNARY = [
    ("acos", np.arccos, _X),
    ("asin", np.arcsin, _X),
    ("atan", np.arctan, _X * 4),
    ("acosh", np.arccosh, _BIG),
    ("asinh", np.arcsinh, _X * 9),
    ("atanh", np.arctanh, _X),
    ("sinh", np.sinh, _X * 5),
    ("cosh", np.cosh, _X * 5),
    ("lgamma", sp.gammaln, _POS - 3.2),
    ("digamma", sp.psi, _POS - 0.05),
    ("erfc", sp.erfc, _X * 4),
    ("erf_inv", sp.erfinv, _X),
    ("bessel_i1e", sp.i1e, _X * 6),
    ("erf", sp.erf, _X * 2),
    ("tan", np.tan, _X),
]


def _unary_program(name, spec, x):
    lit = "[" + ", ".join(repr(float(v)) for v in x) + "]"
    return f"""
func.func public @main() -> tensor<{len(x)}x{spec}> {{
  %cst = stablehlo.constant dense<{lit}> : tensor<{len(x)}x{spec}>
  %0 = chlo.{name} %cst : tensor<{len(x)}x{spec}> -> tensor<{len(x)}x{spec}>
  return %0 : tensor<{len(x)}x{spec}>
}}"""


@pytest.mark.parametrize("name,ref,x", CHLO_UNARY, ids=[c[0] for c in CHLO_UNARY])
@pytest.mark.parametrize("spec", ["f32", "f64", "bf16"])
def test_chlo_unary_ops_round_the_exact_value_once(name, ref, x, spec):
    dt = xo.as_dtype(spec)
    xs = np.asarray(xo.tensor(x, dt)).astype(np.float64)  # the literal in the type
    got = xo.stablehlo.load(_unary_program(name, spec, x))()
    with np.errstate(all="ignore"):
        want = xo.convert(xo.tensor(ref(xs)), dt)
    d = _ulp_diff(got, want)
    assert int(d.max()) <= (1 if name in ("erf", "tan") else 0), (np.asarray(got), want)


def test_chlo_complex_inverse_functions_follow_c99_branch_cuts():
    z = np.array([0.5 + 0.5j, -2.0 + 0.0j, -2.0 - 0.0j, 3.0 - 1.0j], np.complex128)
    lit = ", ".join(f"({float(v.real)!r}, {float(v.imag)!r})" for v in z)
    for name, ref in (
        ("asin", np.arcsin),
        ("acos", np.arccos),
        ("asinh", np.arcsinh),
        ("acosh", np.arccosh),
        ("atanh", np.arctanh),
        ("cosh", np.cosh),
    ):
        prog = xo.stablehlo.load(f"""
func.func public @main() -> tensor<4xcomplex<f64>> {{
  %cst = stablehlo.constant dense<[{lit}]> : tensor<4xcomplex<f64>>
  %0 = chlo.{name} %cst : tensor<4xcomplex<f64>> -> tensor<4xcomplex<f64>>
  return %0 : tensor<4xcomplex<f64>>
}}""")
        np.testing.assert_allclose(np.asarray(prog()), ref(z), rtol=1e-15, err_msg=name)


def test_chlo_binary_and_predicate_ops():
    prog = xo.stablehlo.load("""
func.func public @main() -> (tensor<3xbf16>, tensor<3xf64>, tensor<3xf64>, tensor<3xi1>, tensor<2x3xf32>, tensor<2x3xi1>) {
  %a = stablehlo.constant dense<[1.0, 0.0, -2.0]> : tensor<3xbf16>
  %b = stablehlo.constant dense<[2.0, -1.0, -2.0]> : tensor<3xbf16>
  %0 = chlo.next_after %a, %b : tensor<3xbf16>, tensor<3xbf16> -> tensor<3xbf16>
  %n = stablehlo.constant dense<[0.0, 1.0, 2.0]> : tensor<3xf64>
  %x = stablehlo.constant dense<[1.0, 1.0, 3.5]> : tensor<3xf64>
  %1 = chlo.polygamma %n, %x : tensor<3xf64>, tensor<3xf64> -> tensor<3xf64>
  %s = stablehlo.constant dense<[2.0, 3.0, 1.5]> : tensor<3xf64>
  %2 = chlo.zeta %s, %x : tensor<3xf64>, tensor<3xf64> -> tensor<3xf64>
  %i = stablehlo.constant dense<[0x7F800000, 0xFF800000, 1.0]> : tensor<3xf32>
  %3 = chlo.is_inf %i : tensor<3xf32> -> tensor<3xi1>
  %m = stablehlo.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %v = stablehlo.constant dense<[10.0, 20.0]> : tensor<2xf32>
  %4 = chlo.broadcast_add %m, %v {broadcast_dimensions = array<i64: 0>} : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  %r = stablehlo.constant dense<[1.0, 5.0, 3.0]> : tensor<3xf32>
  %5 = chlo.broadcast_compare %m, %r {comparison_direction = #chlo<comparison_direction GT>} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  return %0, %1, %2, %3, %4, %5 : tensor<3xbf16>, tensor<3xf64>, tensor<3xf64>, tensor<3xi1>, tensor<2x3xf32>, tensor<2x3xi1>
}""")
    nxt, pg, zt, inf, add, gt = prog()
    np.testing.assert_array_equal(
        np.asarray(nxt).astype(np.float32), [1.0078125, -(2.0**-133), -2.0]
    )  # bf16 steps
    np.testing.assert_allclose(
        np.asarray(pg), [sp.psi(1.0), sp.polygamma(1, 1.0), sp.polygamma(2, 3.5)], rtol=1e-15
    )
    np.testing.assert_allclose(
        np.asarray(zt), [sp.zeta(2.0, 1.0), sp.zeta(3.0, 1.0), sp.zeta(1.5, 3.5)], rtol=1e-15
    )
    np.testing.assert_array_equal(np.asarray(inf), [True, True, False])
    np.testing.assert_array_equal(np.asarray(add), [[11, 12, 13], [24, 25, 26]])
    np.testing.assert_array_equal(np.asarray(gt), [[False, False, False], [True, False, True]])


def test_chlo_ops_differentiate():
    """Loaded programs differentiate through chlo ops (lgamma' = digamma, ...)."""
    prog = xo.stablehlo.load("""
func.func public @main(%x: tensor<3xf64>) -> tensor<f64> {
  %0 = chlo.lgamma %x : tensor<3xf64> -> tensor<3xf64>
  %1 = chlo.asinh %0 : tensor<3xf64> -> tensor<3xf64>
  %z = stablehlo.constant dense<0.0> : tensor<f64>
  %2 = stablehlo.reduce(%1 init: %z) applies stablehlo.add across dimensions = [0] : (tensor<3xf64>, tensor<f64>) -> tensor<f64>
  return %2 : tensor<f64>
}""")
    x = np.array([0.7, 2.5, 4.0])
    g = np.asarray(xo.grad(lambda t: prog(t))(xo.tensor(x)))
    lg = sp.gammaln(x)
    np.testing.assert_allclose(g, sp.psi(x) / np.sqrt(lg * lg + 1), rtol=1e-12)


def test_complex64_unary_ops_are_rounded_once_from_double():
    """The complex expect_close failure of JAX's log1p test: where a part cancels
    (|1 + z| near 1), complex64 log1p must still be within 3 ULP; xops evaluates
    complex64 functions in complex128 and rounds once, as the reference does."""
    z = np.array(
        [-1.6273057 + 0.7790277j, 2.0078018 - 1.4345685j, -0.95312405 - 0.0008702864j], np.complex64
    )
    for name, ref in (
        ("log_plus_one", np.log1p),
        ("exponential_minus_one", np.expm1),
        ("rsqrt", lambda v: 1 / np.sqrt(v)),
    ):
        got = np.asarray(getattr(xo, name)(xo.tensor(z)))
        want = ref(z.astype(np.complex128)).astype(np.complex64)
        for part in ("real", "imag"):
            d = _ulp_diff(
                xo.tensor(getattr(got, part).copy()), xo.tensor(getattr(want, part).copy())
            )
            assert int(d.max()) == 0, (name, part, got, want)
    w = np.array(
        [1.8967816 - 0.5979906j, 5.203409 + 5.987896j, 4.0934744 - 2.1016166j], np.complex64
    )
    for name, ref in (("divide", np.divide), ("power", np.power)):
        got = np.asarray(getattr(xo, name)(xo.tensor(z), xo.tensor(w)))
        want = ref(z.astype(np.complex128), w.astype(np.complex128)).astype(np.complex64)
        for part in ("real", "imag"):
            d = _ulp_diff(
                xo.tensor(getattr(got, part).copy()), xo.tensor(getattr(want, part).copy())
            )
            assert int(d.max()) == 0, (name, part, got, want)


# ---------------------------------------------------------------------------------------
# Resource limit: huge tensor types are refused while parsing
# ---------------------------------------------------------------------------------------


def test_huge_tensor_type_is_refused_at_parse_time():
    text = """
func.func public @main() -> tensor<100000000000xf32> {
  %0 = stablehlo.constant dense<1.0> : tensor<100000000000xf32>
  return %0 : tensor<100000000000xf32>
}"""
    with pytest.raises(
        xo.stablehlo.ParseError,
        match=r"resource limit: "
        r"tensor<100000000000xf32> needs 400,000,000,000 bytes",
    ) as e:
        xo.stablehlo.parse(text)  # nothing runs
    assert (e.value.line, e.value.column) == (2, 29)


def test_tensor_type_limit_is_xops_config_max_bytes():
    from xops.limits import config

    old = config.max_bytes
    try:
        config.max_bytes = 4000
        xo.stablehlo.parse_type("tensor<1000xf32>")
        with pytest.raises(xo.stablehlo.ParseError, match="limit of 4,000 bytes"):
            xo.stablehlo.parse_type("tensor<1001xf32>")
    finally:
        config.max_bytes = old
    xo.stablehlo.parse_type("tensor<1001xf32>")


# ---------------------------------------------------------------------------------------
# LAPACK custom calls of JAX's CPU lowering of jnp.linalg
# ---------------------------------------------------------------------------------------

LAPACK_PROGRAM = """
func.func public @main(%a: tensor<2x3x3xf64>, %b: tensor<2x3x2xf64>) -> (tensor<2x3x3xf64>, tensor<2xi32>, tensor<2x3x3xf64>, tensor<2x3xi32>, tensor<2x3x2xf64>, tensor<2x3x3xf64>, tensor<2x3xf64>, tensor<2x3xf64>, tensor<2x3x3xf64>) {
  %0:2 = stablehlo.custom_call @lapack_dpotrf_ffi(%a) {mhlo.backend_config = {uplo = 76 : ui8}, mhlo.frontend_attributes = {num_batch_dims = "1"}, operand_layouts = [dense<[1, 2, 0]> : tensor<3xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>], result_layouts = [dense<[1, 2, 0]> : tensor<3xindex>, dense<0> : tensor<1xindex>]} : (tensor<2x3x3xf64>) -> (tensor<2x3x3xf64>, tensor<2xi32>)
  %1:3 = stablehlo.custom_call @lapack_dgetrf_ffi(%a) {mhlo.backend_config = {}, mhlo.frontend_attributes = {num_batch_dims = "1"}} : (tensor<2x3x3xf64>) -> (tensor<2x3x3xf64>, tensor<2x3xi32>, tensor<2xi32>)
  %2 = stablehlo.custom_call @lapack_dtrsm_ffi(%0#0, %b) {mhlo.backend_config = {diag = 78 : ui8, side = 76 : ui8, trans_x = 84 : ui8, uplo = 76 : ui8}, mhlo.frontend_attributes = {num_batch_dims = "1"}} : (tensor<2x3x3xf64>, tensor<2x3x2xf64>) -> tensor<2x3x2xf64>
  %3:3 = stablehlo.custom_call @lapack_dsyevd_ffi(%a) {mhlo.backend_config = {mode = 86 : ui8, uplo = 76 : ui8}, mhlo.frontend_attributes = {num_batch_dims = "1"}} : (tensor<2x3x3xf64>) -> (tensor<2x3x3xf64>, tensor<2x3xf64>, tensor<2xi32>)
  %4:5 = stablehlo.custom_call @lapack_dgesdd_ffi(%a) {mhlo.backend_config = {mode = 78 : ui8}, mhlo.frontend_attributes = {num_batch_dims = "1"}} : (tensor<2x3x3xf64>) -> (tensor<2x3x3xf64>, tensor<2x3xf64>, tensor<2x3x3xf64>, tensor<2x3x3xf64>, tensor<2xi32>)
  return %0#0, %0#1, %1#0, %1#1, %2, %3#0, %3#1, %4#1, %4#2 : tensor<2x3x3xf64>, tensor<2xi32>, tensor<2x3x3xf64>, tensor<2x3xi32>, tensor<2x3x2xf64>, tensor<2x3x3xf64>, tensor<2x3xf64>, tensor<2x3xf64>, tensor<2x3x3xf64>
}"""


def test_lapack_custom_calls_compute_lapack_results():
    import scipy.linalg as sl

    rng = np.random.default_rng(3)
    m = rng.standard_normal((2, 3, 3))
    a = m @ m.transpose(0, 2, 1) + 3 * np.eye(3)  # symmetric positive definite
    b = rng.standard_normal((2, 3, 2))
    chol, info, lu, piv, x, v, w, s, u = xo.stablehlo.load(LAPACK_PROGRAM)(a, b)
    for k in range(2):
        L = np.tril(np.asarray(chol)[k])
        np.testing.assert_allclose(L @ L.T, a[k], rtol=1e-12)
        # LAPACK leaves the other triangle as it was
        np.testing.assert_array_equal(np.triu(np.asarray(chol)[k], 1), np.triu(a[k], 1))
        lu_k, piv_k = sl.lu_factor(a[k])
        np.testing.assert_allclose(np.asarray(lu)[k], lu_k, rtol=1e-12)
        np.testing.assert_array_equal(np.asarray(piv)[k], piv_k + 1)  # 1-based pivots
        np.testing.assert_allclose(L.T @ np.asarray(x)[k], b[k], rtol=1e-10, atol=1e-12)
        vk, wk = np.asarray(v)[k], np.asarray(w)[k]
        np.testing.assert_allclose(a[k] @ vk, vk * wk, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(
            np.asarray(s)[k], np.linalg.svd(a[k], compute_uv=False), rtol=1e-12
        )
    np.testing.assert_array_equal(np.asarray(info), [0, 0])
    np.testing.assert_array_equal(np.asarray(u), np.zeros((2, 3, 3)))  # mode N: placeholder


def test_bf16_window_sums_round_every_step():
    """JAX's bf16 cumsum (a reduce_window whose body is stablehlo.add): each application
    of the body rounds to bf16, as the spec's body does and JAX's expected values show
    (-1.171875 - 3.28125 rounds to -4.4375; summed in f32 the column ends at 0.1171875,
    step by step at 0.1328125)."""
    col = [-2.4375, 1.265625, -3.28125, 2.28125, 3.21875, -0.9296875]
    lit = "[" + ", ".join(f"[{v!r}]" for v in col) + "]"
    prog = xo.stablehlo.load(f"""
func.func public @main() -> tensor<6x1xbf16> {{
  %x = stablehlo.constant dense<{lit}> : tensor<6x1xbf16>
  %cst = stablehlo.constant dense<0.000000e+00> : tensor<bf16>
  %0 = "stablehlo.reduce_window"(%x, %cst) <{{padding = dense<[[5, 0], [0, 0]]> : tensor<2x2xi64>, window_dimensions = array<i64: 6, 1>}}> ({{
  ^bb0(%a: tensor<bf16>, %b: tensor<bf16>):
    %1 = stablehlo.add %a, %b : tensor<bf16>
    stablehlo.return %1 : tensor<bf16>
  }}) : (tensor<6x1xbf16>, tensor<bf16>) -> tensor<6x1xbf16>
  return %0 : tensor<6x1xbf16>
}}""")
    got = np.asarray(prog()).astype(np.float32).reshape(-1)
    np.testing.assert_array_equal(got, [-2.4375, -1.171875, -4.4375, -2.15625, 1.0625, 0.1328125])


def test_approx_top_k_custom_call():
    """jax.lax.approx_max_k on CPU: custom_call @ApproxTopK with a comparator function
    in called_computations, computed exactly (as XLA does on CPU)."""
    prog = xo.stablehlo.load("""
module @jit__lambda {
  func.func @top_k_gt_f32_comparator(%arg0: tensor<f32>, %arg1: tensor<f32>, %arg2: tensor<i32>, %arg3: tensor<i32>) -> tensor<i1> {
    %0 = stablehlo.compare GT, %arg0, %arg1 : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %0 : tensor<i1>
  }
  func.func public @main(%arg0: tensor<2x5xf32>) -> (tensor<2x2xf32>, tensor<2x2xi32>) {
    %0 = stablehlo.iota dim = 1 : tensor<2x5xi32>
    %c = stablehlo.constant dense<-1> : tensor<i32>
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %1:2 = stablehlo.custom_call @ApproxTopK(%arg0, %0, %cst, %c) {backend_config = "", called_computations = [@top_k_gt_f32_comparator], mhlo.backend_config = {aggregate_to_topk = true, is_fallback = true, recall_target = 0.949999988 : f32, reduction_dim = 1 : i64, reduction_input_size_override = -1 : i64, top_k = 2 : i64}} : (tensor<2x5xf32>, tensor<2x5xi32>, tensor<f32>, tensor<i32>) -> (tensor<2x2xf32>, tensor<2x2xi32>)
    return %1#0, %1#1 : tensor<2x2xf32>, tensor<2x2xi32>
  }
}""")
    x = np.array([[0.5, 3.0, -1.0, 3.5, 2.0], [1.0, 0.0, 4.0, 2.0, 4.5]], np.float32)
    v, i = prog(x)
    np.testing.assert_array_equal(np.asarray(v), [[3.5, 3.0], [4.5, 4.0]])
    np.testing.assert_array_equal(np.asarray(i), [[3, 1], [4, 2]])


def test_bf16_reduce_folds_in_index_order():
    """stablehlo.reduce over bf16 adds one element at a time in index order, each step
    rounding to bf16 (as XLA does for jax.lax.reduce): the column above ends at
    0.1328125 step by step (0.1171875 summed exactly)."""
    col = [-2.4375, 1.265625, -3.28125, 2.28125, 3.21875, -0.9296875]
    lit = "[" + ", ".join(f"[{v!r}, {-v!r}]" for v in col) + "]"
    prog = xo.stablehlo.load(f"""
func.func public @main() -> (tensor<2xbf16>, tensor<2xbf16>, tensor<2xi32>) {{
  %x = stablehlo.constant dense<{lit}> : tensor<6x2xbf16>
  %z = stablehlo.constant dense<0.000000e+00> : tensor<bf16>
  %0 = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [0] : (tensor<6x2xbf16>, tensor<bf16>) -> tensor<2xbf16>
  %i = stablehlo.iota dim = 0 : tensor<6x2xi32>
  %m = stablehlo.constant dense<0xFF80> : tensor<bf16>
  %c = stablehlo.constant dense<0> : tensor<i32>
  %1:2 = stablehlo.reduce(%x init: %m), (%i init: %c) across dimensions = [0] : (tensor<6x2xbf16>, tensor<6x2xi32>, tensor<bf16>, tensor<i32>) -> (tensor<2xbf16>, tensor<2xi32>)
   reducer(%a: tensor<bf16>, %b: tensor<bf16>) (%ai: tensor<i32>, %bi: tensor<i32>)  {{
    %2 = stablehlo.compare GT, %a, %b, FLOAT : (tensor<bf16>, tensor<bf16>) -> tensor<i1>
    %3 = stablehlo.select %2, %a, %b : tensor<i1>, tensor<bf16>
    %4 = stablehlo.select %2, %ai, %bi : tensor<i1>, tensor<i32>
    stablehlo.return %3, %4 : tensor<bf16>, tensor<i32>
  }}
  return %0, %1#0, %1#1 : tensor<2xbf16>, tensor<2xbf16>, tensor<2xi32>
}}""")
    s, mx, arg = prog()
    np.testing.assert_array_equal(np.asarray(s).astype(np.float32), [0.1328125, -0.1328125])
    np.testing.assert_array_equal(np.asarray(mx).astype(np.float32), [3.21875, 3.28125])
    np.testing.assert_array_equal(np.asarray(arg), [4, 2])
