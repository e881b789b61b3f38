"""xo.stablehlo: the parser (types, attributes, literals, generic and pretty op forms,
modules), the executor (Program API, regions, type checks, tracing, errors, autodiff)
and the CLI."""

import io

import ml_dtypes
import numpy as np
import pytest

import xops as xo
from xops import stablehlo
from xops.stablehlo import ParseError, parse, parse_attribute, parse_type
from xops.stablehlo.executor import CheckFailure, OpNotImplemented, Unsupported
from xops.stablehlo.ir import (
    DenseAttr,
    EnumAttr,
    FunctionType,
    QuantType,
    StructAttr,
    SymbolRef,
    TensorType,
    TokenType,
    TupleType,
)
from xops.stablehlo.literals import to_array

from conftest import assert_tensor, bits


def run(text, *args, name="main"):
    return stablehlo.load(text)(name, *args)


def one_func(body, sig="()"):
    return f"func.func @main{sig} {{\n{body}\n}}"


# ---------------------------------------------------------------------------------------
# Types
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [d.spec_name for d in xo.all_dtypes()])
def test_every_element_type(name):
    t = parse_type(f"tensor<2x3x{name}>")
    assert t == TensorType((2, 3), xo.as_dtype(name))
    assert str(t) == f"tensor<2x3x{name}>"


def test_type_forms():
    assert parse_type("tensor<f32>") == TensorType((), xo.float32)
    assert parse_type("tensor<0x2xi8>").shape == (0, 2)  # '0x2' is not a hex number
    assert parse_type("tensor<?x3xbf16>").shape == (None, 3)
    assert parse_type("tensor<*xf32>").shape is None
    assert parse_type("tensor<2xsi32>").elem is xo.int32
    assert parse_type("!stablehlo.token") == TokenType()
    tt = parse_type("tuple<tensor<2xf64>, tuple<tensor<i64>>, !stablehlo.token>")
    assert isinstance(tt, TupleType) and isinstance(tt.types[1], TupleType)
    ft = parse_type("(tensor<2xf32>, tensor<i1>) -> (tensor<2xf32>, tensor<i1>)")
    assert isinstance(ft, FunctionType) and len(ft.inputs) == 2 and len(ft.results) == 2
    enc = parse_type("tensor<?xf32, #stablehlo.bounds<3>>")
    assert enc.shape == (None,) and enc.encoding is not None


def test_quantized_types():
    q = parse_type("tensor<2x!quant.uniform<i8:f32, 0.1:-30>>").elem
    assert q == QuantType(xo.int8, xo.float32, (0.1,), (-30,))
    q = parse_type("tensor<2x!quant.uniform<i8<-127:127>:f32:0, {0.1:-30,0.5:-20}>>").elem
    f32 = lambda v: float(np.float32(v))  # scales are values of the expressed type (C5)
    assert (q.quantization_dimension, q.scales, q.zero_points) == (0, (f32(0.1), 0.5), (-30, -20))
    assert (q.storage_min, q.storage_max) == (-127, 127)
    assert str(q) == "!quant.uniform<i8<-127:127>:f32:0, {0.1:-30,0.5:-20}>"
    q = parse_type("tensor<!quant.uniform<u8:f32, 2.0e-01>>").elem
    assert q.storage_type is xo.uint8 and q.zero_points == (0,)
    with pytest.raises(xo.SpecError, match=r"C6"):
        parse_type("tensor<2x!quant.uniform<i8:f32, -0.1:-30>>")


# ---------------------------------------------------------------------------------------
# Attributes and literals
# ---------------------------------------------------------------------------------------


def lit(text):
    return to_array(parse_attribute(text))


def test_dense_literals():
    np.testing.assert_array_equal(
        lit("dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>"), [[1, 2], [3, 4]]
    )
    a = lit("dense<7> : tensor<2x3xi8>")  # splat
    assert a.shape == (2, 3) and (a == 7).all()
    assert lit("dense<> : tensor<2x0xf32>").shape == (2, 0)
    np.testing.assert_array_equal(lit("dense<[true, false]> : tensor<2xi1>"), [True, False])
    np.testing.assert_array_equal(lit("dense<[-8, 7]> : tensor<2xi4>").astype(np.int8), [-8, 7])
    u = lit("dense<[0, 18446744073709551615]> : tensor<2xui64>")
    assert u.dtype == np.uint64 and int(u[1]) == 2**64 - 1
    c = lit("dense<[(1.5, -2.0), (0.0, 1.0)]> : tensor<2xcomplex<f64>>")
    np.testing.assert_array_equal(c, [1.5 - 2j, 1j])
    c = lit("dense<(3.14, 1.0)> : tensor<3xcomplex<f32>>")
    assert c.shape == (3,) and c.dtype == np.complex64


def test_hex_float_bit_patterns():
    a = lit("dense<[0x7F800000, 0xFF800000, 0x7FC00001, 0x80000000]> : tensor<4xf32>")
    assert list(bits(a)) == [0x7F800000, 0xFF800000, 0x7FC00001, 0x80000000]
    b = lit("dense<[0x7F, 0xFF, 0x01]> : tensor<3xf8E3M4>")
    assert list(bits(b)) == [0x7F, 0xFF, 0x01]
    f4 = lit("dense<[0x07, 0x0F]> : tensor<2xf4E2M1FN>")
    assert f4.astype(np.float32).tolist() == [6.0, -6.0]
    c = lit("dense<[(0x89ABCDEF, 0x01234567)]> : tensor<1xcomplex<f32>>")
    assert list(c.view(np.uint32)) == [0x89ABCDEF, 0x01234567]
    i = lit("dense<0xFF> : tensor<i8>")  # hex integers are two's-complement patterns
    assert int(i) == -1


def test_hex_blob():
    a = lit('dense<"0x0100000002000000"> : tensor<2xi32>')
    np.testing.assert_array_equal(a, [1, 2])
    s = lit('dense<"0x0000803F"> : tensor<3xf32>')  # one element: a splat
    np.testing.assert_array_equal(s, [1.0, 1.0, 1.0])


def test_decimal_literals_round_once():
    # 1.00390625 is the midpoint of bf16's 1.0 and 1.0078125; the decimal just above
    # it must round up, although its nearest float64 is the midpoint itself.
    up = lit("dense<[1.003906250000000000000001, 1.00390625]> : tensor<2xbf16>")
    assert up.astype(np.float32).tolist() == [1.0078125, 1.0]
    v = lit("dense<[0.1, -0.0, 3.1415]> : tensor<3xf8E4M3FN>")
    ref = np.array([0.1, -0.0, 3.1415], np.float32).astype(ml_dtypes.float8_e4m3fn)
    assert list(bits(v)) == list(bits(ref))
    f = lit("dense<[0.1]> : tensor<1xf32>")
    assert f[0] == np.float32(0.1)


def test_literal_errors():
    with pytest.raises(xo.SpecError, match="does not fit"):
        lit("dense<[128]> : tensor<1xi8>")
    with pytest.raises(xo.SpecError, match="does not match"):
        lit("dense<[1, 2, 3]> : tensor<2xi32>")


def test_attribute_kinds():
    assert parse_attribute("array<i64: 1, 2, 3>") == [1, 2, 3]
    assert parse_attribute("array<i64>") == []
    assert parse_attribute("array<i1: true, false>") == [True, False]
    assert parse_attribute("[1, [2, 3]]") == [1, [2, 3]]
    assert parse_attribute('{a = 1 : i64, b, c = "x"}') == {"a": 1, "b": True, "c": "x"}
    e = parse_attribute("#stablehlo<comparison_direction GE>")
    assert isinstance(e, EnumAttr) and e == "GE" and e.kind == "comparison_direction"
    g = parse_attribute(
        "#stablehlo.gather<offset_dims = [2, 3], collapsed_slice_dims = [0], "
        "start_index_map = [1, 0], index_vector_dim = 2>"
    )
    assert isinstance(g, StructAttr) and g.kind == "gather" and g.get("offset_dims") == [2, 3]
    c = parse_attribute("#stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>")
    assert c.fields == {
        "input_batch_dimension": 0,
        "input_feature_dimension": 3,
        "input_spatial_dimensions": [1, 2],
        "kernel_input_feature_dimension": 2,
        "kernel_output_feature_dimension": 3,
        "kernel_spatial_dimensions": [0, 1],
        "output_batch_dimension": 0,
        "output_feature_dimension": 3,
        "output_spatial_dimensions": [1, 2],
    }
    assert parse_attribute("@add_n.impl") == SymbolRef("add_n.impl")
    assert parse_attribute("0.5 : f64") == 0.5 and parse_attribute("3 : i32") == 3
    assert parse_attribute("[#stablehlo<precision DEFAULT>, #stablehlo<precision HIGH>]") == [
        "DEFAULT",
        "HIGH",
    ]
    d = parse_attribute("dense<[[2, 1], [0, 0]]> : tensor<2x2xi64>")
    assert isinstance(d, DenseAttr) and d.ints() == [[2, 1], [0, 0]]


# ---------------------------------------------------------------------------------------
# Ops: generic and pretty forms
# ---------------------------------------------------------------------------------------


def test_generic_and_pretty_forms_agree():
    text = """
    func.func @pretty(%a: tensor<2x3xf32>, %b: tensor<3x2xf32>) -> (tensor<2x2xf32>, tensor<2x3xi1>) {
      %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
      %1 = stablehlo.compare GE, %a, %a, FLOAT : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
      func.return %0, %1 : tensor<2x2xf32>, tensor<2x3xi1>
    }
    func.func @generic(%a: tensor<2x3xf32>, %b: tensor<3x2xf32>) -> (tensor<2x2xf32>, tensor<2x3xi1>) {
      %0 = "stablehlo.dot_general"(%a, %b) {
        dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>,
        precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
      } : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
      %1 = "stablehlo.compare"(%a, %a) {comparison_direction = #stablehlo<comparison_direction GE>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
      "func.return"(%0, %1) : (tensor<2x2xf32>, tensor<2x3xi1>) -> ()
    }
    """
    prog = stablehlo.load(text)
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.ones((3, 2), np.float32)
    p, g = prog.pretty(a, b), prog.generic(a, b)
    assert_tensor(p[0], a @ b)
    assert_tensor(g[0], a @ b)
    assert_tensor(p[1], np.ones((2, 3), bool))
    pa = parse(text)[0].funcs
    assert pa["pretty"].body.entry.ops[1].attrs["comparison_direction"] == "GE"
    assert pa["generic"].body.entry.ops[1].attrs["compare_type"] == "FLOAT"


def test_pretty_forms_run():
    text = """
    func.func @main(%x: tensor<2x3xi64>) -> (tensor<3x2xi64>, tensor<2x2xi64>, tensor<i64>, tensor<4x5xi64>, tensor<6xi64>, tensor<3x2xi64>, tensor<i32>) {
      %t = stablehlo.transpose %x, dims = [1, 0] : (tensor<2x3xi64>) -> tensor<3x2xi64>
      %s = stablehlo.slice %x [0:2, 1:3:1] : (tensor<2x3xi64>) -> tensor<2x2xi64>
      %c = stablehlo.constant dense<0> : tensor<i64>
      %r = stablehlo.reduce(%x init: %c) applies stablehlo.add across dimensions = [0, 1] : (tensor<2x3xi64>, tensor<i64>) -> tensor<i64>
      %p = stablehlo.pad %x, %c, low = [1, 1], high = [1, 1], interior = [0, 0] : (tensor<2x3xi64>, tensor<i64>) -> tensor<4x5xi64>
      %f = stablehlo.reshape %x : (tensor<2x3xi64>) -> tensor<6xi64>
      %i = stablehlo.iota dim = 0 : tensor<3x2xi64>
      %d = stablehlo.get_dimension_size %x, dim = 1 : (tensor<2x3xi64>) -> tensor<i32>
      func.return %t, %s, %r, %p, %f, %i, %d : tensor<3x2xi64>, tensor<2x2xi64>, tensor<i64>, tensor<4x5xi64>, tensor<6xi64>, tensor<3x2xi64>, tensor<i32>
    }"""
    x = np.arange(6).reshape(2, 3)
    t, s, r, p, f, i, d = run(text, x)
    assert_tensor(t, x.T)
    assert_tensor(s, x[:, 1:3])
    assert_tensor(r, np.int64(15))
    assert_tensor(p, np.pad(x, 1))
    assert_tensor(f, x.reshape(-1))
    assert_tensor(i, np.array([[0, 0], [1, 1], [2, 2]]))
    assert_tensor(d, np.int32(3))


def test_variadic_reduce_reducer_form_and_multi_results():
    """The pretty variadic reduce (reducer(...) (...) {...}), %r:2 and %r#1."""
    text = """
    func.func @argmax(%x: tensor<2x3xf32>) -> (tensor<2xf32>, tensor<2xi32>) {
      %iota = stablehlo.iota dim = 1 : tensor<2x3xi32>
      %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
      %z = stablehlo.constant dense<0> : tensor<i32>
      %r:2 = stablehlo.reduce(%x init: %ninf), (%iota init: %z) across dimensions = [1] : (tensor<2x3xf32>, tensor<2x3xi32>, tensor<f32>, tensor<i32>) -> (tensor<2xf32>, tensor<2xi32>)
       reducer(%a: tensor<f32>, %b: tensor<f32>) (%ai: tensor<i32>, %bi: tensor<i32>)  {
        %gt = stablehlo.compare GT, %a, %b, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
        %eq = stablehlo.compare EQ, %a, %b, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
        %lt = stablehlo.compare LT, %ai, %bi, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
        %tie = stablehlo.and %eq, %lt : tensor<i1>
        %pick = stablehlo.or %gt, %tie : tensor<i1>
        %v = stablehlo.select %pick, %a, %b : tensor<i1>, tensor<f32>
        %i = stablehlo.select %pick, %ai, %bi : tensor<i1>, tensor<i32>
        stablehlo.return %v, %i : tensor<f32>, tensor<i32>
      }
      return %r#0, %r#1 : tensor<2xf32>, tensor<2xi32>
    }"""
    x = np.array([[1.0, 5.0, 5.0], [-1.0, -3.0, 0.5]], np.float32)
    v, i = run(text, x, name="argmax")
    assert_tensor(v, np.array([5.0, 0.5], np.float32))
    assert_tensor(i, np.array([1, 2], np.int32))


def test_while_pretty_form_with_attributes_and_captures():
    text = """
    func.func @main(%n: tensor<i64>) -> tensor<i64> {
      %zero = stablehlo.constant dense<0> : tensor<i64>
      %one = stablehlo.constant dense<1> : tensor<i64>
      %r:2 = stablehlo.while(%i = %zero, %acc = %zero) : tensor<i64>, tensor<i64>
       attributes {mhlo.frontend_attributes = {}}
       cond {
        %p = stablehlo.compare LT, %i, %n : (tensor<i64>, tensor<i64>) -> tensor<i1>
        stablehlo.return %p : tensor<i1>
      } do {
        %j = stablehlo.add %i, %one : tensor<i64>
        %a = stablehlo.add %acc, %j : tensor<i64>
        stablehlo.return %j, %a : tensor<i64>, tensor<i64>
      }
      func.return %r#1 : tensor<i64>
    }"""
    assert run(text, np.int64(4)).item() == 10


def test_convolution_pretty_and_generic():
    pretty = """
    func.func @main(%lhs: tensor<1x4x4x1xf32>, %rhs: tensor<3x3x1x1xf32>) -> tensor<1x2x2x1xf32> {
      %r = stablehlo.convolution(%lhs, %rhs)
        dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
        window = {stride = [4, 4], pad = [[1, 1], [1, 1]], lhs_dilate = [2, 2], rhs_dilate = [1, 1], reverse = [false, false]}
        {batch_group_count = 1 : i64, feature_group_count = 1 : i64}
        : (tensor<1x4x4x1xf32>, tensor<3x3x1x1xf32>) -> tensor<1x2x2x1xf32>
      func.return %r : tensor<1x2x2x1xf32>
    }"""
    generic = """
    func.func @main(%lhs: tensor<1x4x4x1xf32>, %rhs: tensor<3x3x1x1xf32>) -> tensor<1x2x2x1xf32> {
      %r = "stablehlo.convolution"(%lhs, %rhs) {
        window_strides = array<i64: 4, 4>, padding = dense<1> : tensor<2x2xi64>,
        lhs_dilation = array<i64: 2, 2>, rhs_dilation = array<i64: 1, 1>,
        window_reversal = array<i1: false, false>,
        dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>,
        batch_group_count = 1 : i64, feature_group_count = 1 : i64,
        precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
      } : (tensor<1x4x4x1xf32>, tensor<3x3x1x1xf32>) -> tensor<1x2x2x1xf32>
      func.return %r : tensor<1x2x2x1xf32>
    }"""
    lhs = np.array([1, 2, 5, 6, 3, 4, 7, 8, 10, 11, 14, 15, 12, 13, 16, 17], np.float32).reshape(
        1, 4, 4, 1
    )
    rhs = np.ones((3, 3, 1, 1), np.float32)
    want = np.array([[1, 5], [10, 14]], np.float32).reshape(1, 2, 2, 1)
    assert_tensor(run(pretty, lhs, rhs), want)
    assert_tensor(run(generic, lhs, rhs), want)


def test_module_private_functions_calls_locations_and_aliases():
    text = """
    #loc1 = loc("x.py":3:4)
    !vec = tensor<3xf32>
    module @m attributes {mhlo.num_partitions = 1 : i32} {
      func.func public @main(%arg0: !vec loc("x")) -> (!vec {jax.result_info = ""}) {
        %0 = call @double(%arg0) : (tensor<3xf32>) -> tensor<3xf32> loc(#loc1)
        %1 = func.call @double(%0) : (tensor<3xf32>) -> tensor<3xf32>
        return %1 : tensor<3xf32> loc(#loc1)
      } loc(#loc1)
      func.func private @double(%x: tensor<3xf32>) -> tensor<3xf32> {
        %0 = stablehlo.add %x, %x : tensor<3xf32> loc(unknown)
        return %0 : tensor<3xf32>
      }
    }"""
    prog = stablehlo.load(text)
    assert prog.modules[0].name == "m"
    assert_tensor(prog.main([1.0, 2.0, 3.0]), np.array([4.0, 8.0, 12.0], np.float32))


def test_tuples_tokens_and_optimization_barrier():
    text = """
    func.func @main() -> (tensor<i64>, !stablehlo.token, tensor<f32>) {
      %a = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf64>
      %b = stablehlo.constant dense<3> : tensor<i64>
      %t1 = stablehlo.tuple %b : tuple<tensor<i64>>
      %t = stablehlo.tuple %a, %t1 : tuple<tensor<2xf64>, tuple<tensor<i64>>>
      %e = stablehlo.get_tuple_element %t[1] : (tuple<tensor<2xf64>, tuple<tensor<i64>>>) -> tuple<tensor<i64>>
      %f = stablehlo.get_tuple_element %e[0] : (tuple<tensor<i64>>) -> tensor<i64>
      %tok = stablehlo.after_all : !stablehlo.token
      %z = stablehlo.constant dense<0.5> : tensor<f32>
      %o:2 = stablehlo.optimization_barrier %z, %tok : tensor<f32>, !stablehlo.token
      func.return %f, %o#1, %o#0 : tensor<i64>, !stablehlo.token, tensor<f32>
    }"""
    f, tok, z = run(text)
    assert f.item() == 3 and isinstance(tok, xo.Token) and z.item() == 0.5


def test_generic_regions_if_case_sort_and_properties():
    text = """
    func.func @main(%p: tensor<i1>, %k: tensor<i32>, %x: tensor<4xi64>) -> (tensor<i64>, tensor<i64>, tensor<4xi64>) {
      %r = "stablehlo.if"(%p) ({
        %0 = stablehlo.constant dense<1> : tensor<i64>
        stablehlo.return %0 : tensor<i64>
      }, {
        %0 = stablehlo.constant dense<2> : tensor<i64>
        stablehlo.return %0 : tensor<i64>
      }) : (tensor<i1>) -> tensor<i64>
      %c = "stablehlo.case"(%k) ({
        stablehlo.return %r : tensor<i64>
      }, {
        %0 = stablehlo.add %r, %r : tensor<i64>
        stablehlo.return %0 : tensor<i64>
      }) : (tensor<i32>) -> tensor<i64>
      %s = "stablehlo.sort"(%x) <{dimension = 0 : i64, is_stable = true}> ({
      ^bb0(%a: tensor<i64>, %b: tensor<i64>):
        %lt = stablehlo.compare GT, %a, %b, SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
        stablehlo.return %lt : tensor<i1>
      }) : (tensor<4xi64>) -> tensor<4xi64>
      func.return %r, %c, %s : tensor<i64>, tensor<i64>, tensor<4xi64>
    }"""
    r, c, s = run(text, np.bool_(False), np.int32(1), np.array([3, 1, 4, 1]))
    assert (r.item(), c.item()) == (2, 4)
    assert_tensor(s, np.array([4, 3, 1, 1]))


def test_vectorised_bodies_with_constants():
    """A reduce body with a constant inside runs on whole arrays: the 0-d constant is
    broadcast for elementwise ops."""
    text = """
    func.func @main(%x: tensor<5xf32>) -> tensor<f32> {
      %init = stablehlo.constant dense<0.0> : tensor<f32>
      %r = "stablehlo.reduce"(%x, %init) ({
      ^bb0(%a: tensor<f32>, %b: tensor<f32>):
        %floor = stablehlo.constant dense<2.5> : tensor<f32>
        %m = stablehlo.maximum %a, %b : tensor<f32>
        %s = stablehlo.maximum %m, %floor : tensor<f32>
        stablehlo.return %s : tensor<f32>
      }) {dimensions = array<i64: 0>} : (tensor<5xf32>, tensor<f32>) -> tensor<f32>
      func.return %r : tensor<f32>
    }"""
    assert run(text, np.array([1.0, 2.0, 0.0, -4.0, 0.5], np.float32)).item() == 2.5
    assert run(text, np.array([1.0, 2.0, 3.0, -4.0, 0.5], np.float32)).item() == 3.0


# ---------------------------------------------------------------------------------------
# Program API, type checks, errors, tracing
# ---------------------------------------------------------------------------------------

SQUARE = """
func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = stablehlo.multiply %x, %x : tensor<3xf32>
  func.return %0 : tensor<3xf32>
}
func.func @pair(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %0 = stablehlo.negate %x : tensor<3xf32>
  func.return %x, %0 : tensor<3xf32>, tensor<3xf32>
}
func.func @"add_n.impl"(%x: tensor<3xf32>) -> tensor<3xf32> {
  func.return %x : tensor<3xf32>
}
"""


def test_program_api(tmp_path):
    prog = stablehlo.load(SQUARE)
    x = xo.tensor([1.0, 2.0, 3.0])
    assert_tensor(prog.main(x), np.array([1.0, 4.0, 9.0], np.float32))
    assert_tensor(
        prog("main", np.array([1.0, 2.0, 3.0], np.float32)), np.array([1.0, 4.0, 9.0], np.float32)
    )
    assert_tensor(prog.main([1, 2, 3]), np.array([1.0, 4.0, 9.0], np.float32))  # converted
    a, b = prog.pair(x)
    assert_tensor(b, -np.array([1.0, 2.0, 3.0], np.float32))
    assert prog["add_n.impl"](x) is x
    assert "main" in dir(prog) and len(list(prog)) == 3
    assert str(prog.main.type) == "(tensor<3xf32>) -> tensor<3xf32>"
    p = tmp_path / "square.mlir"
    p.write_text(SQUARE)
    assert_tensor(stablehlo.load(p).main(x), np.array([1.0, 4.0, 9.0], np.float32))
    assert_tensor(stablehlo.load(str(p)).main(x), np.array([1.0, 4.0, 9.0], np.float32))
    with pytest.raises(AttributeError, match="no function @nope"):
        prog.nope  # noqa: B018 (the attribute access is what raises)


def test_argument_type_errors():
    prog = stablehlo.load(SQUARE)
    with pytest.raises(xo.SpecError, match=r"argument #0 of @main must be tensor<3xf32>"):
        prog.main(xo.tensor([1.0, 2.0]))
    with pytest.raises(xo.SpecError, match="must be tensor<3xf32>"):
        prog.main(xo.tensor([1, 2, 3], "i32"))
    with pytest.raises(xo.SpecError, match="takes 1 argument"):
        prog.main()


def test_sections_merge_or_load_all():
    text = SQUARE + "\n// -----\n" + one_func("func.return", "()").replace("@main", "@other")
    prog = stablehlo.load(text)
    assert set(prog.functions) == {"main", "pair", "add_n.impl", "other"}
    clash = SQUARE + "\n// -----\n" + SQUARE
    with pytest.raises(xo.SpecError, match="load_all"):
        stablehlo.load(clash)
    progs = stablehlo.load_all(clash)
    assert len(progs) == 2 and all("main" in p.functions for p in progs)


def test_declared_result_type_is_checked():
    text = one_func("""
      %0 = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
      %1 = stablehlo.sine %0 : tensor<2xf64>
      func.return""")
    with pytest.raises(xo.SpecError, match=r"declared tensor<2xf64>, got tensor<2xf32>") as ei:
        run(text)
    assert "line 4" in "".join(getattr(ei.value, "__notes__", []))


def test_op_errors_keep_their_type_and_get_a_location():
    text = one_func("""
      %0 = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
      %1 = stablehlo.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
      %2 = stablehlo.add %0, %1 : tensor<2xf32>
      func.return""")
    with pytest.raises(xo.SpecError, match=r"^add \(C1\)") as ei:
        run(text)
    assert "stablehlo.add at line 5" in "".join(getattr(ei.value, "__notes__", []))


def test_parse_errors_give_line_and_column():
    with pytest.raises(ParseError) as ei:
        parse("func.func @f() {\n  %0 = stablehlo.constant dense<[1, 2> : tensor<2xi32>\n}")
    e = ei.value
    assert (e.line, e.column) == (2, 38)
    assert "stablehlo.constant dense<[1, 2>" in str(e) and isinstance(e, xo.SpecError)
    with pytest.raises(ParseError, match="line 1, column 6: expected an operation"):
        parse("%0 = ")
    with pytest.raises(ParseError, match="defined twice"):
        parse(SQUARE + SQUARE)


def test_undefined_value_and_unknown_op():
    with pytest.raises(xo.SpecError, match="undefined value %nope"):
        run(one_func("  %0 = stablehlo.abs %nope : tensor<f32>\n  func.return"))
    with pytest.raises(Unsupported, match="unknown op foo.bar"):
        run(one_func('  %0 = "foo.bar"() : () -> tensor<f32>\n  func.return'))


def test_missing_xops_op_raises_op_not_implemented(monkeypatch):
    monkeypatch.delattr(xo, "popcnt")
    text = one_func("""
      %0 = stablehlo.constant dense<[7]> : tensor<1xi32>
      %1 = stablehlo.popcnt %0 : tensor<1xi32>
      func.return""")
    with pytest.raises(OpNotImplemented, match=r"not implemented in xops yet: xo\.popcnt"):
        run(text)


def test_quantized_programs_run():
    # the result type of each op is the declared one (dequantize_op_quantize), also
    # inside a reduce body
    text = one_func("""
      %0 = stablehlo.constant dense<[1.0, 2.0, 3.5]> : tensor<3xf32>
      %1 = stablehlo.uniform_quantize %0 : (tensor<3xf32>) -> tensor<3x!quant.uniform<i8:f32, 0.5:-10>>
      %2 = stablehlo.tanh %1 : (tensor<3x!quant.uniform<i8:f32, 0.5:-10>>) -> tensor<3x!quant.uniform<i8:f32, 0.01:0>>
      %3 = stablehlo.bitcast_convert %2 : (tensor<3x!quant.uniform<i8:f32, 0.01:0>>) -> tensor<3xi8>
      check.expect_eq_const %3, dense<[76, 96, 100]> : tensor<3xi8>
      %4 = stablehlo.constant dense<0.0> : tensor<f32>
      %5 = stablehlo.uniform_quantize %4 : (tensor<f32>) -> tensor<!quant.uniform<i8:f32, 0.5:-10>>
      %6 = stablehlo.reduce(%1 init: %5) applies stablehlo.add across dimensions = [0] : (tensor<3x!quant.uniform<i8:f32, 0.5:-10>>, tensor<!quant.uniform<i8:f32, 0.5:-10>>) -> tensor<!quant.uniform<i8:f32, 0.5:-10>>
      %7 = stablehlo.uniform_dequantize %6 : (tensor<!quant.uniform<i8:f32, 0.5:-10>>) -> tensor<f32>
      check.expect_eq_const %7, dense<6.5> : tensor<f32>
      func.return""")
    run(text)


def test_checks():
    ok = one_func("""
      %0 = stablehlo.constant dense<[5.0, 0x7FF8000000000001, -0.0]> : tensor<3xf64>
      check.expect_eq_const %0, dense<[5.0, 0x7FF8000000000000, 0.0]> : tensor<3xf64>
      check.expect_almost_eq_const %0, dense<[5.00009, 0x7FF8000000000000, 0.0]> : tensor<3xf64>
      check.expect_almost_eq_const %0, dense<[5.09, 0x7FF8000000000000, 0.0]> : tensor<3xf64> {tolerance = 0.1 : f64}
      %1 = stablehlo.constant dense<5.0> : tensor<f16>
      %2 = stablehlo.constant dense<5.010> : tensor<f16>
      check.expect_close %1, %2, max_ulp_difference = 3 : tensor<f16>, tensor<f16>
      "stablehlo.custom_call"(%1, %1) {call_target_name = "check.expect_eq"} : (tensor<f16>, tensor<f16>) -> ()
      func.return""")
    run(ok)
    bad = one_func("""
      %0 = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
      check.expect_almost_eq_const %0, dense<[1.0, 2.001]> : tensor<2xf32>
      func.return""")
    with pytest.raises(CheckFailure, match=r"index \[1\]: 2\.0 \(actual\) vs 2\.00"):
        run(bad)
    sign = one_func("""
      %0 = stablehlo.constant dense<[-0.00001]> : tensor<1xf32>
      check.expect_almost_eq_const %0, dense<[0.0]> : tensor<1xf32>
      func.return""")
    with pytest.raises(CheckFailure):  # the reference's sign rule
        run(sign)
    ulp = one_func("""
      %1 = stablehlo.constant dense<5.0> : tensor<f16>
      %2 = stablehlo.constant dense<5.010> : tensor<f16>
      check.expect_close %1, %2, max_ulp_difference = 2 : tensor<f16>, tensor<f16>
      func.return""")
    with pytest.raises(CheckFailure, match="ULP"):
        run(ulp)


def test_custom_call_runs_a_registered_target():
    seen = {}

    def scaled(x, backend_config=None, called_computations=()):
        seen["config"] = backend_config
        return xo.multiply(called_computations[0](x), x)

    xo.register_custom_call("stablehlo_test.scaled", scaled)
    text = """
    func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
      %0 = stablehlo.custom_call @stablehlo_test.scaled(%x) {backend_config = "cfg",
        api_version = 2 : i32, called_computations = [@twice]} : (tensor<2xf32>) -> tensor<2xf32>
      func.return %0 : tensor<2xf32>
    }
    func.func private @twice(%x: tensor<2xf32>) -> tensor<2xf32> {
      %0 = stablehlo.add %x, %x : tensor<2xf32>
      func.return %0 : tensor<2xf32>
    }"""
    assert_tensor(run(text, np.array([1.0, 3.0], np.float32)), np.array([2.0, 18.0], np.float32))
    assert seen["config"] == "cfg"


def test_probe_and_serialized_eq():
    text = one_func("""
      %0 = stablehlo.constant dense<[1, 2]> : tensor<2xi64>
      %1 = interpreter.probe %0, probe_id = "p" : tensor<2xi64>
      %2 = stablehlo.add %1, %1 : tensor<2xi64>
      %3 = interpreter.probe %2, probe_id = "p" : tensor<2xi64>
      check.expect_serialized_eq %0, probe_id = "p" : tensor<2xi64>
      check.expect_serialized_eq %2, probe_id = "p", iter = 1 : tensor<2xi64>
      func.return""")
    run(text)


def test_trace_prints_ops_types_and_values():
    buf = io.StringIO()
    prog = stablehlo.load(SQUARE)
    prog.main.trace(xo.tensor([1.0, 2.0, 3.0]), file=buf)
    out = buf.getvalue()
    assert "%0 = stablehlo.multiply(%x: tensor<3xf32>, %x: tensor<3xf32>) -> tensor<3xf32>" in out
    assert "[1., 4., 9.]" in out and "[line 3]" in out
    buf = io.StringIO()
    stablehlo.load(SQUARE, trace=buf).main(xo.tensor([1.0, 2.0, 3.0]))
    assert "stablehlo.multiply" in buf.getvalue()


def test_grad_through_a_loaded_program():
    text = """
    func.func @main(%x: tensor<3xf32>) -> tensor<f32> {
      %0 = stablehlo.sine %x : tensor<3xf32>
      %1 = stablehlo.multiply %x, %0 : tensor<3xf32>
      %ones = stablehlo.constant dense<1.0> : tensor<3xf32>
      %2 = stablehlo.dot_general %1, %ones, contracting_dims = [0] x [0] : (tensor<3xf32>, tensor<3xf32>) -> tensor<f32>
      func.return %2 : tensor<f32>
    }"""
    prog = stablehlo.load(text)
    x = np.array([0.5, 1.0, 2.0], np.float32)
    g = xo.grad(lambda t: prog.main(t))(xo.tensor(x))
    np.testing.assert_allclose(np.asarray(g), np.sin(x) + x * np.cos(x), rtol=1e-6)


def test_op_table_covers_the_spec():
    from xops.stablehlo.handlers import OPS, SPEC_OPS

    assert len(SPEC_OPS) >= 100
    assert all(f"stablehlo.{n}" in OPS for n in SPEC_OPS)
    assert stablehlo.OPS is OPS


# ---------------------------------------------------------------------------------------
# Programs exported by JAX (real-world syntax: locations, aliases, pretty forms)
# ---------------------------------------------------------------------------------------


def test_jax_exported_program():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy

    def f(x, w):
        y = jnp.tanh(x @ w)
        z = jax.lax.fori_loop(0, 3, lambda i, c: c * 1.5 + jnp.sin(c), y)
        return (
            jnp.sum(z, axis=0),
            jnp.max(y),
            jnp.sort(x, axis=1),
            jnp.argmax(x, axis=1),
            jax.nn.relu(x).T,
            jnp.cumsum(x, axis=1),
        )

    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    w = rng.standard_normal((3, 4)).astype(np.float32)
    text = jax.jit(f).lower(x, w).as_text(debug_info=True)
    out = stablehlo.load(text).main(x, w)
    for got, want in zip(out, f(x, w)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-6, atol=2e-6)


def _jax_cases():
    jax = pytest.importorskip("jax")
    jnp, lax = jax.numpy, jax.lax
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 6)).astype(np.float32)
    img = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
    ker = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    idx = np.array([3, 0, 2], np.int32)
    return jax, {
        "conv": (lambda a, k: lax.conv_general_dilated(a, k, (2, 2), "SAME"), (img, ker)),
        "gather_scatter": (lambda a, i: a.at[i].add(a[i] * 2.0), (x, idx)),
        "cond_switch": (
            lambda a: lax.cond(
                a.sum() > 0,
                lambda t: t * 2,
                lambda t: t - 1,
                lax.switch(1, [lambda t: t, lambda t: -t], a),
            ),
            (x,),
        ),
        "scan": (
            lambda a: lax.scan(lambda c, r: (c + r, c * r), jnp.zeros(6, jnp.float32), a),
            (x,),
        ),
        "argsort_top_k": (lambda a: (jnp.argsort(a, axis=1), lax.top_k(a, 2)), (x,)),
        "rfft": (lambda a: jnp.fft.rfft(a, axis=-1), (x,)),
        "maxpool_grad": (
            lambda a: jax.grad(
                lambda t: lax.reduce_window(
                    t, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID"
                ).sum()
            )(a),
            (img,),
        ),
        "chlo": (lambda a: (jnp.var(a, 1), jax.scipy.special.erf(a)), (x,)),
        "threefry": (lambda a: a + jax.random.uniform(jax.random.key(0), a.shape), (x,)),
    }


@pytest.mark.parametrize(
    "case",
    [
        "conv",
        "gather_scatter",
        "cond_switch",
        "scan",
        "argsort_top_k",
        "rfft",
        "maxpool_grad",
        "chlo",
        "threefry",
    ],
)
def test_jax_programs(case):
    jax, cases = _jax_cases()
    f, args = cases[case]
    text = jax.jit(f).lower(*args).as_text(debug_info=True)
    out = stablehlo.load(text).main(*args)
    out = out if isinstance(out, tuple) else (out,)
    want = jax.tree_util.tree_leaves(jax.jit(f)(*args))
    assert len(out) == len(want)
    for got, ref in zip(out, want):
        np.testing.assert_allclose(np.asarray(got), np.asarray(ref), rtol=2e-6, atol=2e-6)


def test_jax_mlp_training_step():
    """A whole MLP training step (forward, jax.grad backward, SGD update) exported from
    JAX runs op by op on xops and gives JAX's new parameters and loss."""
    jax = pytest.importorskip("jax")
    jnp = jax.numpy

    def loss(params, x, y):
        w1, b1, w2, b2 = params
        h = jax.nn.relu(x @ w1 + b1)
        logits = h @ w2 + b2
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * y, axis=1))

    def step(params, x, y):
        value, grads = jax.value_and_grad(loss)(params, x, y)
        return value, tuple(p - 0.1 * g for p, g in zip(params, grads))

    rng = np.random.default_rng(2)
    params = (
        rng.standard_normal((5, 8)).astype(np.float32) * 0.5,
        np.zeros(8, np.float32),
        rng.standard_normal((8, 3)).astype(np.float32) * 0.5,
        np.zeros(3, np.float32),
    )
    x = rng.standard_normal((6, 5)).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 6)]
    text = jax.jit(step).lower(params, x, y).as_text()
    got = stablehlo.load(text).main(*params, x, y)
    want = jax.tree_util.tree_leaves(jax.jit(step)(params, x, y))
    assert len(got) == len(want) == 5
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-6)


def test_grad_of_a_jax_program_matches_jax():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy

    def f(x, w):
        y = jnp.tanh(x @ w)
        z = jax.lax.fori_loop(0, 3, lambda i, c: c * 1.5 + jnp.sin(c), y)
        return jnp.sum(z**2) + jnp.max(y)

    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    w = rng.standard_normal((3, 4)).astype(np.float32)
    prog = stablehlo.load(jax.jit(f).lower(x, w).as_text())
    got = xo.grad(lambda a, b: prog.main(a, b), argnums=(0, 1))(xo.tensor(x), xo.tensor(w))
    for g, r in zip(got, jax.grad(f, argnums=(0, 1))(x, w)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(r), rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------

CLI_FILE = """// RUN: stablehlo-translate --interpret -split-input-file %s
func.func @good() {
  %0 = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
  %1 = stablehlo.add %0, %0 : tensor<2xi32>
  check.expect_eq_const %1, dense<[2, 4]> : tensor<2xi32>
  func.return
}

// -----

func.func @bad() {
  %0 = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
  check.expect_eq_const %0, dense<[1, 3]> : tensor<2xi32>
  func.return
}

// -----

func.func @helper(%x: tensor<i32>) -> tensor<i32> {
  func.return %x : tensor<i32>
}
func.func @legacy() {
  %0 = stablehlo.constant dense<1.0> : tensor<2x2xf32>
  %1 = "stablehlo.einsum"(%0, %0) {einsum_config = "ab,bc->ac"} :
      (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  func.return
}
"""


def test_cli(tmp_path, capsys):
    from xops.stablehlo.__main__ import main

    p = tmp_path / "t.mlir"
    p.write_text(CLI_FILE)
    assert main([str(p), "--allow-skip"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "PASS t.mlir::good"
    assert out[1].startswith("FAIL t.mlir::bad (line 13): check.expect_eq_const: 1 of 2")
    assert out[2].startswith("SKIP t.mlir::legacy: stablehlo.einsum")  # (legacy op)
    assert out[-1] == "1 passed, 1 failed, 1 skipped"
    # without --allow-skip, a function xops cannot run yet is a failure
    assert main([str(p)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[2].startswith("FAIL t.mlir::legacy") and "cannot run: stablehlo.einsum" in out[2]
    assert out[-1] == "1 passed, 2 failed"
    good = tmp_path / "g.mlir"
    good.write_text(CLI_FILE.split("// -----")[0])
    assert main([str(good), "--trace"]) == 0
    out = capsys.readouterr().out
    assert "stablehlo.add" in out and out.rstrip().endswith("1 passed, 0 failed")


def test_cli_args(tmp_path, capsys):
    from xops.stablehlo.__main__ import main

    p = tmp_path / "a.mlir"
    p.write_text("""func.func @main(%a: tensor<2xi32>, %b: tensor<2xi32>) -> tensor<2xi32> {
      %0 = stablehlo.add %a, %b : tensor<2xi32>
      return %0 : tensor<2xi32>
    }""")
    assert main([str(p), "--args", "[dense<1> : tensor<2xi32>, dense<2> : tensor<2xi32>]"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "1 passed, 0 failed"


# ---------------------------------------------------------------------------------------
# The spec's own examples (seed 004), read at test time
# ---------------------------------------------------------------------------------------

SPEC = (
    __import__("pathlib").Path(__file__).parents[1].parent
    / "shared"
    / "seeds"
    / "004_039bdd0256351a45.txt"
)
# Typos in the spec text itself (a missing '<' / '>'), not parser gaps.
SPEC_TYPOS = ("tensor1x2xi64>", "tensor<7xf64)")


def _spec_examples(text):
    """The code lines of each example section ("أمثلة" ... "مزيد من الأمثلة")."""
    import re

    arabic = re.compile(r"[\u0600-\u06FF]")
    start = re.compile(r'\s*(%|"|\}|\^|stablehlo\.|func\.|[a-z_]+ =|\)|\{|[a-z_]+\.)')
    for block in text.split("\nأمثلة\n")[1:]:
        block = block.split("\nمزيد من الأمثلة")[0]
        code = []
        for line in block.split("\n"):
            if not line.strip() or line.strip().startswith("//"):
                continue
            if arabic.search(line):
                break
            if start.match(line) or (code and re.match(r"\s+\S", line)):
                code.append(line)
            elif code:
                break
        if code:
            yield "\n".join(code)


def test_spec_examples_parse():
    if not SPEC.is_file():
        pytest.skip(f"no spec text at {SPEC}")
    from xops.stablehlo.parser import Parser

    ok, typos = 0, 0
    for src in _spec_examples(SPEC.read_text(encoding="utf-8")):
        p = Parser(src)
        try:
            while p.lx.peek().kind != "eof":
                if p.lx.at("func.func"):
                    p.parse_func()
                else:
                    p.parse_op()
            ok += 1
        except ParseError:
            if not any(t in src for t in SPEC_TYPOS):
                raise
            typos += 1
    assert ok >= 90 and typos == len(SPEC_TYPOS)


def test_known_bodies_are_passed_as_xops_functions():
    from xops.stablehlo.handlers import known_body

    m = parse("""func.func @f(%x: tensor<4xf32>) -> tensor<f32> {
      %i = stablehlo.constant dense<0.0> : tensor<f32>
      %r = "stablehlo.reduce"(%x, %i) ({
      ^bb0(%a: tensor<f32>, %b: tensor<f32>):
        %s = stablehlo.maximum %a, %b : tensor<f32>
        stablehlo.return %s : tensor<f32>
      }) {dimensions = array<i64: 0>} : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
      %q = "stablehlo.reduce"(%x, %i) ({
      ^bb0(%a: tensor<f32>, %b: tensor<f32>):
        %s = stablehlo.maximum %b, %a : tensor<f32>
        stablehlo.return %s : tensor<f32>
      }) {dimensions = array<i64: 0>} : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
      func.return %r : tensor<f32>
    }""")[0]
    ops = m.funcs["f"].body.entry.ops
    assert known_body(ops[1].regions[0]) is xo.maximum
    assert known_body(ops[2].regions[0]) is None  # swapped arguments: interpreted
    from xops.ops._bodies import comparison_direction
    from xops.stablehlo.handlers import _COMPARE_BODIES

    assert all(comparison_direction(f) == d for d, f in _COMPARE_BODIES.items())


def test_regions_are_tagged_bodies():
    from xops.ops._bodies import Body, binary_op_name
    from xops.stablehlo.handlers import known_body

    m = parse("""func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
      %r = "stablehlo.sort"(%x) ({
      ^bb0(%a: tensor<f32>, %b: tensor<f32>):
        %s = stablehlo.compare GT, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
        stablehlo.return %s : tensor<i1>
      }) {dimension = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
      func.return %r : tensor<4xf32>
    }""")[0]
    body = known_body(m.funcs["f"].body.entry.ops[0].regions[0])
    assert isinstance(body, Body) and (body.op, body.direction) == ("compare", "GT")
    seen = []  # a body of more than one op: the executor passes a traced Body
    prog = stablehlo.load("""func.func @main(%x: tensor<4xf32>) -> tensor<f32> {
      %i = stablehlo.constant dense<0.0> : tensor<f32>
      %r = "stablehlo.reduce"(%x, %i) ({
      ^bb0(%a: tensor<f32>, %b: tensor<f32>):
        %s = stablehlo.add %a, %b : tensor<f32>
        %t = stablehlo.add %s, %i : tensor<f32>
        stablehlo.return %t : tensor<f32>
      }) {dimensions = array<i64: 0>} : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
      func.return %r : tensor<f32>
    }""")
    import xops.ops.reduction as R

    real = R._reduce_generic

    def watch(xs, inits, dims, body, dts):
        seen.append(body)
        return real(xs, inits, dims, body, dts)

    R._reduce_generic = watch
    try:
        out = prog.main(xo.tensor(np.array([1.0, 2.0, 3.0, 4.0], np.float32)))
    finally:
        R._reduce_generic = real
    assert float(np.asarray(out)) == 10.0
    assert isinstance(seen[0], Body) and seen[0].kind == "traced"
    assert binary_op_name(seen[0]) is None
