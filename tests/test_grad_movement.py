"""Gradient rules of the data-movement, tuple/token and contraction ops
(xops/ops/movement.py, misc.py, linalg.py): central finite differences in float64,
first and second order, over attribute zoos; jax.vjp of the matching jax.lax ops (real
and complex); the Python operators and indexing built on these ops; and the rule that
every public op of these modules is a tape primitive.

Second order through a rule that sums (broadcast_in_dim / broadcast over expanded dims,
pad's padding_value) needs reduce's own rule; until reduce has one those cases check
first order only (see ``_order``)."""

import numpy as np
import pytest

import xops as xo
from gradcheck import check_grads
from xops.ops import linalg, misc, movement

RNG = np.random.default_rng(1234)


def rand(*shape, dtype=np.float64):
    a = RNG.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * RNG.standard_normal(shape)
    return a.astype(dtype)


def _has_rule(op):
    return getattr(op, "_vjp", None) is not None


def _order(uses_reduce=False, uses_convert=False):
    """2 where every rule on the second-order path exists, else 1."""
    if uses_reduce and not _has_rule(xo.reduce):
        return 1
    if uses_convert and not _has_rule(xo.convert):
        return 1
    return 2


def _sq(out):
    """Square elementwise (of each output), so the second order is not trivially zero
    for linear ops: the first-order vjp then depends on the primal through the op."""
    if isinstance(out, tuple):
        return tuple(_sq(o) for o in out if isinstance(o, xo.Tensor))
    return xo.multiply(out, out)


# ---------------------------------------------------------------------------------------
# Finite differences, first and second order, attribute zoos
# (name, function, argument shapes, whether a rule on the path sums with reduce)
# ---------------------------------------------------------------------------------------

_DS = xo.tensor(-2, "i32")  # an out-of-range (clamped) start index as a tensor
_B = rand(4, 2)  # a NumPy operand (no gradient)

CASES = [
    # broadcast_in_dim: added dims, size-1 expansion, unsorted (transposing) dims
    ("bid_add_dim", lambda x: xo.broadcast_in_dim(x, [1], [2, 3]), [(3,)], True),
    ("bid_expand_transpose", lambda x: xo.broadcast_in_dim(x, [2, 0], [3, 4, 5]), [(1, 3)], True),
    ("bid_mixed", lambda x: xo.broadcast_in_dim(x, [3, 0, 1], [3, 3, 2, 4]), [(4, 1, 3)], True),
    ("bid_pure_transpose", lambda x: xo.broadcast_in_dim(x, [1, 0], [3, 2]), [(2, 3)], False),
    ("bid_unit_dims", lambda x: xo.broadcast_in_dim(x, [2, 0], [3, 1, 1]), [(1, 3)], False),
    ("bid_scalar", lambda x: xo.broadcast_in_dim(x, [], [2, 3]), [()], True),
    ("broadcast", lambda x: xo.broadcast(x, [4, 2]), [(2, 3)], True),
    ("broadcast_none", lambda x: xo.broadcast(x, []), [(2, 3)], False),
    # reshape (and XLA's transposing form), collapse, transpose
    ("reshape", lambda x: xo.reshape(x, [6, 4]), [(2, 3, 4)], False),
    (
        "reshape_dimensions",
        lambda x: xo.reshape(x, [4, 6], dimensions=[2, 0, 1]),
        [(2, 3, 4)],
        False,
    ),
    ("reshape_to_scalar", lambda x: xo.reshape(x, []), [(1, 1)], False),
    ("collapse", lambda x: xo.collapse(x, [1, 2]), [(2, 3, 4)], False),
    ("collapse_none", lambda x: xo.collapse(x, []), [(2, 3)], False),
    ("transpose", lambda x: xo.transpose(x, [2, 0, 1]), [(2, 3, 4)], False),
    # slice with strides, unaligned limits, empty results
    ("slice_strided", lambda x: xo.slice(x, [1, 0], [4, 5], [2, 3]), [(5, 6)], False),
    ("slice_unaligned", lambda x: xo.slice(x, [0, 2, 1], [3, 6, 2], [2, 3, 1]), [(4, 7, 3)], False),
    ("slice_empty", lambda x: xo.slice(x, [2, 0], [2, 3]), [(4, 3)], False),
    ("slice_empty_strided", lambda x: xo.slice(x, [2, 0], [2, 3], [2, 2]), [(4, 3)], False),
    # pad: negative edge padding, interior padding, a dim cut down to padding only
    ("pad", lambda x, v: xo.pad(x, v, [-1, 2], [1, -2], [1, 2]), [(3, 4), ()], True),
    ("pad_cut_everything", lambda x, v: xo.pad(x, v, [-5], [3], [0]), [(3,), ()], True),
    (
        "pad_negative_interior",
        lambda x, v: xo.pad(x, v, [-2, 0], [-1, -3], [2, 1]),
        [(4, 3), ()],
        True,
    ),
    ("pad_operand_only", lambda x: xo.pad(x, 0.25, [-1, 1], [2, -1], [1, 0]), [(3, 2)], False),
    ("pad_empty_operand", lambda x: xo.pad(x, 0.0, [1, 1], [1, -1], [0, 2]), [(0, 3)], False),
    # concatenate of three, reverse
    ("concatenate", lambda a, b, c: xo.concatenate([a, b, c], 1), [(2, 1), (2, 3), (2, 2)], False),
    ("reverse", lambda x: xo.reverse(x, [0, 2]), [(2, 3, 4)], False),
    # dynamic_slice / dynamic_update_slice, in-range and clamped starts
    ("dynamic_slice", lambda x: xo.dynamic_slice(x, [1, 2], [2, 3]), [(4, 6)], False),
    (
        "dynamic_slice_clamped",
        lambda x: xo.dynamic_slice(x, [_DS, xo.tensor(5, "i32")], [2, 3]),
        [(4, 6)],
        False,
    ),
    (
        "dynamic_slice_1d_starts",
        lambda x: xo.dynamic_slice(x, xo.tensor([7, -3], "i32"), [2, 2]),
        [(4, 3)],
        False,
    ),
    (
        "dynamic_update_slice",
        lambda x, u: xo.dynamic_update_slice(x, u, [1, 2]),
        [(4, 6), (2, 3)],
        False,
    ),
    (
        "dynamic_update_slice_clamped",
        lambda x, u: xo.dynamic_update_slice(x, u, [3, 7]),
        [(4, 6), (2, 3)],
        False,
    ),
    ("set_dimension_size", lambda x: xo.set_dimension_size(x, 2, 0), [(5, 3)], False),
    ("constant_of_tensor", lambda x: xo.constant(x), [(2, 3)], False),
    # tuples and the barrier
    (
        "tuple_get_tuple_element",
        lambda x, y: xo.multiply(
            xo.get_tuple_element(xo.tuple(x, y, xo.create_token()), 1),
            xo.get_tuple_element(xo.tuple(y, x), 0),
        ),
        [(3,), (3,)],
        False,
    ),
    (
        "optimization_barrier",
        lambda x, y: xo.optimization_barrier(x, xo.create_token(), y)[::2],
        [(2,), (3,)],
        False,
    ),
    # dot_general zoo and dot
    (
        "matmul",
        lambda a, b: xo.dot_general(
            a, b, lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[0]
        ),
        [(3, 4), (4, 2)],
        False,
    ),
    (
        "batch_in_the_middle",
        lambda a, b: xo.dot_general(a, b, [1], [1], [2], [0]),
        [(3, 2, 4), (4, 2, 5)],
        False,
    ),
    (
        "several_contracting_any_order",
        lambda a, b: xo.dot_general(a, b, [1], [2], [0, 3], [3, 0]),
        [(2, 3, 4, 5), (5, 6, 3, 2)],
        False,
    ),
    (
        "two_batch_dims_swapped",
        lambda a, b: xo.dot_general(a, b, [2, 0], [0, 3], [1], [2]),
        [(2, 4, 3), (3, 5, 4, 2)],
        False,
    ),
    (
        "numpy_rhs",
        lambda a: xo.dot_general(
            a, _B, lhs_contracting_dimensions=np.array([1]), rhs_contracting_dimensions=(0,)
        ),
        [(3, 4)],
        False,
    ),
    ("outer", lambda a, b: xo.dot_general(a, b), [(3,), (4,)], False),
    ("batched_outer", lambda a, b: xo.dot_general(a, b, [0], [0]), [(2, 3), (2, 4)], False),
    (
        "full_contraction",
        lambda a, b: xo.dot_general(a, b, [], [], [0, 1], [1, 0]),
        [(3, 4), (4, 3)],
        False,
    ),
    ("dot_vv", lambda a, b: xo.dot(a, b), [(4,), (4,)], False),
    ("dot_mv", lambda a, b: xo.dot(a, b), [(3, 4), (4,)], False),
    ("dot_vm", lambda a, b: xo.dot(a, b), [(4,), (4, 2)], False),
    (
        "dot_mm",
        lambda a, b: xo.dot(a, b, precision_config=["HIGHEST", "DEFAULT"]),
        [(3, 4), (4, 2)],
        False,
    ),
]


@pytest.mark.parametrize("name,f,shapes,uses_reduce", CASES, ids=[c[0] for c in CASES])
def test_rules_against_finite_differences(name, f, shapes, uses_reduce):
    args = [rand(*s) for s in shapes]
    check_grads(f, args)  # the op itself
    check_grads(lambda *a: _sq(f(*a)), args, order=_order(uses_reduce))


def test_concatenate_input_without_grad_gets_none():
    a = xo.tensor(rand(2, 1), requires_grad=True)
    b = xo.tensor(rand(2, 3))  # no gradient wanted
    c = xo.tensor(rand(2, 2), requires_grad=True)
    out = xo.concatenate([a, b, c], 1)
    g = rand(2, 6)
    out.backward(xo.tensor(g))
    assert b.grad is None
    np.testing.assert_array_equal(a.grad.numpy(), g[:, :1])
    np.testing.assert_array_equal(c.grad.numpy(), g[:, 4:])
    check_grads(lambda x, y: xo.concatenate([x, b, y], 1), [rand(2, 1), rand(2, 2)], order=2)


# ---------------------------------------------------------------------------------------
# Exact values of a few rules (zeros where they must be)
# ---------------------------------------------------------------------------------------


def _vjp(f, args, g):
    _, fn = xo.vjp(f, *[xo.tensor(a) for a in args])
    return [c.numpy() for c in fn(xo.tensor(g))]


def test_pad_values_negative_edges_and_interior():
    x, v = rand(3, 4), rand()
    g = rand(*xo.pad(xo.tensor(x), xo.tensor(v), [-1, 2], [1, -2], [1, 2]).shape)
    gx, gv = _vjp(lambda x, v: xo.pad(x, v, [-1, 2], [1, -2], [1, 2]), [x, v], g)
    # where each operand element lands in the (unpadded-by-negatives) result
    want = np.zeros((3, 4))
    mask = np.ones(g.shape, bool)
    for i in range(3):
        for j in range(4):
            p, q = -1 + 2 * i, 2 + 3 * j
            if 0 <= p < g.shape[0] and 0 <= q < g.shape[1]:
                want[i, j] = g[p, q]
                mask[p, q] = False
    np.testing.assert_allclose(gx, want)
    np.testing.assert_allclose(gv, g[mask].sum())


def test_dynamic_slice_and_update_clamped_values():
    x, u = rand(4, 6), rand(2, 3)
    g = rand(2, 3)
    (gx,) = _vjp(lambda x: xo.dynamic_slice(x, [xo.tensor(9), xo.tensor(-4)], [2, 3]), [x], g)
    want = np.zeros((4, 6))
    want[2:4, 0:3] = g  # starts clamped to (2, 0)
    np.testing.assert_array_equal(gx, want)
    g = rand(4, 6)
    gx, gu = _vjp(lambda x, u: xo.dynamic_update_slice(x, u, [3, 5]), [x, u], g)
    want = g.copy()
    want[2:4, 3:6] = 0  # starts clamped to (2, 3)
    np.testing.assert_array_equal(gx, want)
    np.testing.assert_array_equal(gu, g[2:4, 3:6])


def test_dot_general_preferred_element_type_f64_from_f32():
    a, b = rand(3, 4).astype(np.float32), rand(4, 5).astype(np.float32)
    g = rand(3, 5)

    def f(x, y):
        return xo.dot_general(
            x,
            y,
            lhs_contracting_dimensions=[1],
            rhs_contracting_dimensions=[0],
            preferred_element_type="f64",
        )

    out, fn = xo.vjp(f, xo.tensor(a), xo.tensor(b))
    assert out.dtype == xo.float64
    ga, gb = fn(xo.tensor(g))
    assert ga.dtype == xo.float32 and gb.dtype == xo.float32
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    np.testing.assert_allclose(ga.numpy(), (g @ b64.T).astype(np.float32), rtol=1e-6)
    np.testing.assert_allclose(gb.numpy(), (a64.T @ g).astype(np.float32), rtol=1e-6)


def test_preferred_element_type_second_order():
    if _order(uses_convert=True) < 2:
        pytest.skip("convert has no gradient rule yet")

    def f(x, y):  # f64 in, f32 operands, f64 result
        return xo.dot_general(
            xo.convert(x, "f32"),
            xo.convert(y, "f32"),
            [0],
            [0],
            [2],
            [1],
            preferred_element_type="f64",
        )

    args = [rand(2, 3, 4), rand(2, 4, 5)]
    check_grads(lambda *a: _sq(f(*a)), args, order=2, rtol=1e-3, atol=1e-4, eps=1e-3)


def test_cotangent_types_follow_operands():
    for dt in ("f32", "bf16", "f16"):
        x = xo.tensor([1.0, 2.0, 3.0], dt, requires_grad=True)
        y = xo.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dt, requires_grad=True)
        ((x + y) * y).backward(xo.tensor(np.ones((2, 3)), dt))
        assert x.grad.dtype.name == dt and x.grad.tolist() == [5.0, 7.0, 9.0]
        v = xo.tensor(0.5, dt, requires_grad=True)
        p = xo.pad(x, v, [1], [2], [1])
        p.backward(xo.tensor(np.arange(8.0), dt))
        assert v.grad.dtype.name == dt and v.grad.item() == 0 + 2 + 4 + 6 + 7


def test_structural_ops_without_float_results_record_nothing():
    x = xo.tensor(rand(2, 3), requires_grad=True)
    assert not xo.get_dimension_size(x, 1).requires_grad
    assert not xo.iota(0, [3], "f32").requires_grad
    tok = xo.after_all(xo.create_token())
    assert isinstance(tok, misc.Token)


def test_nested_tuples_pass_gradients_through():
    y = xo.tensor([1.0, 2.0], requires_grad=True)
    x = xo.tensor([3.0], requires_grad=True)
    t = xo.tuple(x, xo.tuple(xo.multiply(y, 3.0), xo.create_token()))
    inner = xo.get_tuple_element(t, 1)
    assert isinstance(inner, tuple)
    z = xo.get_tuple_element(inner, 0)
    xo.multiply(z, xo.broadcast_in_dim(xo.get_tuple_element(t, 0), [0], [2])).backward(
        xo.tensor([1.0, 1.0])
    )
    assert y.grad.tolist() == [9.0, 9.0] and x.grad.tolist() == [9.0]  # d(3y x)


# ---------------------------------------------------------------------------------------
# Python operators and indexing (built from these ops)
# ---------------------------------------------------------------------------------------

OPERATOR_CASES = [
    ("add_broadcast", lambda x, y: x + y, [(3, 4), (4,)], True),
    ("mul_broadcast_both", lambda x, y: x * y, [(3, 1), (1, 4)], True),
    ("sub_scalar_tensor", lambda x, y: x - y, [(2, 3), ()], True),
    ("getitem_mixed", lambda x: x[1:, ::-2, None], [(3, 5)], False),
    ("getitem_int_stride", lambda x: x[1, ::2], [(4, 6)], False),
    ("getitem_ellipsis", lambda x: x[..., -1], [(2, 3, 4)], False),
    ("matmul_batch_broadcast", lambda a, b: a @ b, [(2, 1, 3, 4), (5, 4, 2)], True),
    ("matmul_vec_mat", lambda a, b: a @ b, [(4,), (3, 4, 2)], True),
    ("matmul_mat_vec", lambda a, b: a @ b, [(3, 4), (4,)], False),
    ("matmul_2d", lambda a, b: a @ b, [(3, 4), (4, 5)], False),
]


@pytest.mark.parametrize(
    "name,f,shapes,uses_reduce", OPERATOR_CASES, ids=[c[0] for c in OPERATOR_CASES]
)
def test_operators_and_indexing(name, f, shapes, uses_reduce):
    args = [rand(*s) for s in shapes]
    check_grads(f, args)
    check_grads(lambda *a: _sq(f(*a)), args, order=_order(uses_reduce))


def test_indexing_gradient_values():
    x = xo.tensor(np.arange(15.0).reshape(3, 5), requires_grad=True)
    x[1:, ::-2, None].backward(xo.tensor(np.ones((2, 3, 1))))
    want = np.zeros((3, 5))
    want[1:, ::2] = 1.0
    np.testing.assert_array_equal(x.grad.numpy(), want)


# ---------------------------------------------------------------------------------------
# Every public op of these modules is a primitive
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("module", [movement, misc, linalg], ids=["movement", "misc", "linalg"])
def test_every_public_op_is_a_primitive(module):
    for name in module.__all__:
        fn = getattr(module, name)
        if isinstance(fn, type):  # xo.Token, a value type
            continue
        assert hasattr(fn, "op_name"), f"{module.__name__}.{name} is not a @primitive"
        assert getattr(xo, name) is fn


DIFFERENTIABLE = [
    "constant",
    "broadcast_in_dim",
    "broadcast",
    "reshape",
    "collapse",
    "transpose",
    "slice",
    "dynamic_slice",
    "dynamic_update_slice",
    "pad",
    "concatenate",
    "reverse",
    "set_dimension_size",
    "tuple",
    "get_tuple_element",
    "optimization_barrier",
    "dot_general",
    "dot",
]


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_differentiable_ops_have_rules(name):
    fn = misc._get_tuple_element if name == "get_tuple_element" else getattr(xo, name)
    assert callable(getattr(fn, "_vjp", None)), f"{name} has no gradient rule"


# ---------------------------------------------------------------------------------------
# Against jax.vjp of the jax.lax ops (float64 and complex128)
# ---------------------------------------------------------------------------------------


def _jax_cases(lax):
    return [
        (
            "broadcast_in_dim",
            lambda x: xo.broadcast_in_dim(x, [2, 0], [3, 4, 5]),
            lambda x: lax.broadcast_in_dim(x, (3, 4, 5), (2, 0)),
            [(1, 3)],
        ),
        ("broadcast", lambda x: xo.broadcast(x, [4]), lambda x: lax.broadcast(x, (4,)), [(2, 3)]),
        (
            "reshape_dimensions",
            lambda x: xo.reshape(x, [4, 6], dimensions=[2, 0, 1]),
            lambda x: lax.reshape(x, (4, 6), dimensions=(2, 0, 1)),
            [(2, 3, 4)],
        ),
        (
            "collapse",
            lambda x: xo.collapse(x, [1, 2]),
            lambda x: lax.collapse(x, 1, 3),
            [(2, 3, 4)],
        ),
        (
            "transpose",
            lambda x: xo.transpose(x, [2, 0, 1]),
            lambda x: lax.transpose(x, (2, 0, 1)),
            [(2, 3, 4)],
        ),
        (
            "slice",
            lambda x: xo.slice(x, [1, 0], [4, 5], [2, 3]),
            lambda x: lax.slice(x, (1, 0), (4, 5), (2, 3)),
            [(5, 6)],
        ),
        (
            "pad",
            lambda x, v: xo.pad(x, v, [-1, 2], [1, -2], [1, 2]),
            lambda x, v: lax.pad(x, v, [(-1, 1, 1), (2, -2, 2)]),
            [(3, 4), ()],
        ),
        (
            "concatenate",
            lambda a, b, c: xo.concatenate([a, b, c], 0),
            lambda a, b, c: lax.concatenate([a, b, c], 0),
            [(1, 2), (3, 2), (2, 2)],
        ),
        ("reverse", lambda x: xo.reverse(x, [0, 2]), lambda x: lax.rev(x, (0, 2)), [(2, 3, 4)]),
        (
            "dynamic_slice",
            lambda x: xo.dynamic_slice(x, [9, 4], [2, 3]),
            lambda x: lax.dynamic_slice(x, (9, 4), (2, 3)),
            [(4, 6)],
        ),
        (
            "dynamic_update_slice",
            lambda x, u: xo.dynamic_update_slice(x, u, [3, 7]),
            lambda x, u: lax.dynamic_update_slice(x, u, (3, 7)),
            [(4, 6), (2, 3)],
        ),
        (
            "dot_general",
            lambda a, b: xo.dot_general(a, b, [1], [2], [0, 3], [3, 0]),
            lambda a, b: lax.dot_general(a, b, (((0, 3), (3, 0)), ((1,), (2,)))),
            [(2, 3, 4, 5), (5, 6, 3, 2)],
        ),
        (
            "dot_general_batch_middle",
            lambda a, b: xo.dot_general(a, b, [1], [1], [2], [0]),
            lambda a, b: lax.dot_general(a, b, (((2,), (0,)), ((1,), (1,)))),
            [(3, 2, 4), (4, 2, 5)],
        ),
        ("dot", lambda a, b: xo.dot(a, b), lambda a, b: lax.dot(a, b), [(3, 4), (4,)]),
    ]


@pytest.fixture(scope="module")
def jax_lax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    from jax import lax

    return jax, lax


@pytest.mark.parametrize("dtype", [np.float64, np.complex128], ids=["f64", "c128"])
def test_against_jax_vjp(jax_lax, dtype):
    jax, lax = jax_lax
    for name, f, jf, shapes in _jax_cases(lax):
        args = [rand(*s, dtype=dtype) for s in shapes]
        out, fn = xo.vjp(f, *[xo.tensor(a) for a in args])
        g = rand(*out.shape, dtype=dtype)
        got = fn(xo.tensor(g))
        with jax.disable_jit():  # op by op: no compilation per case
            jout, jfn = jax.vjp(jf, *args)
            want = jfn(g)
        np.testing.assert_allclose(out.numpy(), np.asarray(jout), rtol=1e-12, err_msg=name)
        for i, (c, w) in enumerate(zip(got, want)):
            assert c.dtype.np == np.asarray(w).dtype, f"{name} arg {i}"
            np.testing.assert_allclose(
                c.numpy(), np.asarray(w), rtol=1e-10, atol=1e-12, err_msg=f"{name} arg {i}"
            )


def test_preferred_element_type_against_jax(jax_lax):
    jax, lax = jax_lax
    a, b = rand(2, 3, 4).astype(np.float32), rand(4, 2, 5).astype(np.float32)

    def f(x, y):
        return xo.dot_general(x, y, [0], [1], [2], [0], preferred_element_type="f64")

    def jf(x, y):
        return lax.dot_general(
            x, y, (((2,), (0,)), ((0,), (1,))), preferred_element_type=np.float64
        )

    out, fn = xo.vjp(f, xo.tensor(a), xo.tensor(b))
    jout, jfn = jax.vjp(jf, a, b)
    np.testing.assert_allclose(out.numpy(), np.asarray(jout), rtol=1e-12)
    g = rand(*out.shape)
    for c, w in zip(fn(xo.tensor(g)), jfn(g)):
        assert c.dtype.np == np.asarray(w).dtype == np.float32
        np.testing.assert_allclose(c.numpy(), np.asarray(w), rtol=1e-6)
