"""while_, if_, case, conditional, call and custom_call: the spec's examples, the
semantics that are easy to get wrong (zero iterations, only the taken branch runs, an
out-of-range index takes the last branch), every constraint label, and gradients
through loops and branches."""

import pytest

import xops as xo
from conftest import assert_tensor, raises_spec


# ---------------------------------------------------------------------------------------
# while
# ---------------------------------------------------------------------------------------


def test_while_spec_example():
    one, ten = xo.tensor(1), xo.tensor(10)
    i, s = xo.while_(
        (xo.tensor(1), xo.tensor(0)),
        lambda i, s: xo.compare(i, ten, "LT"),
        lambda i, s: (xo.add(i, one), xo.add(s, one)),
    )
    assert_tensor(i, 10, "i64")
    assert_tensor(s, 9, "i64")  # starts at i = 1: nine iterations


def test_while_zero_iterations_returns_the_operands():
    x = xo.tensor([1.0, 2.0])
    calls = []

    def body(v):
        calls.append(1)
        return xo.add(v, v)

    out = xo.while_(x, lambda v: xo.tensor(False), body)
    assert out is x and not calls


def test_while_single_operand_and_list_forms():
    out = xo.while_(xo.tensor(1.0), lambda v: xo.compare(v, 100.0, "LT"), lambda v: xo.add(v, v))
    assert_tensor(out, 128.0, "f32")
    (out,) = xo.while_(
        [xo.tensor(3, "i32")], lambda v: xo.compare(v, 0, "GT"), lambda v: [xo.subtract(v, 1)]
    )
    assert_tensor(out, 0, "i32")


def test_while_carries_tokens():
    tok = xo.create_token()
    t, n = xo.while_(
        (tok, xo.tensor(0, "i32")),
        lambda t, n: xo.compare(n, 3, "LT"),
        lambda t, n: (xo.after_all(t), xo.add(n, 1)),
    )
    assert isinstance(t, xo.Token)
    assert_tensor(n, 3, "i32")


def test_while_constraints():
    x = xo.tensor(0, "i32")
    with raises_spec("while", "C1"):  # cond must return i1[]
        xo.while_(x, lambda v: v, lambda v: v)
    with raises_spec("while", "C1"):
        xo.while_(xo.tensor([1, 2]), lambda v: xo.compare(v, 0, "EQ"), lambda v: v)
    with raises_spec("while", "C1"):  # cond must take the loop values
        xo.while_((x, x), lambda v: xo.tensor(True), lambda a, b: (a, b))
    with raises_spec("while", "C2"):  # body keeps the element type
        xo.while_(x, lambda v: xo.compare(v, 3, "LT"), lambda v: xo.convert(xo.add(v, 1), "i64"))
    with raises_spec("while", "C2"):  # and the shape
        xo.while_(
            x,
            lambda v: xo.compare(v, 3, "LT"),
            lambda v: xo.broadcast_in_dim(xo.add(v, 1), [], [1]),
        )
    with raises_spec("while", "C2"):  # and the number of values
        xo.while_((x, x), lambda a, b: xo.compare(a, 3, "LT"), lambda a, b: xo.add(a, 1))
    with raises_spec("while", "C2"):
        xo.while_(x, lambda v: xo.compare(v, 3, "LT"), lambda v: "four")
    with raises_spec("while", "I1"):
        xo.while_(object(), lambda v: xo.tensor(False), lambda v: v)


# ---------------------------------------------------------------------------------------
# if, case
# ---------------------------------------------------------------------------------------


def test_if_spec_example():
    t, f = xo.tensor(10, "i32"), xo.tensor(11, "i32")
    assert_tensor(xo.if_(xo.tensor(True), lambda: t, lambda: f), 10, "i32")
    assert_tensor(xo.if_(xo.tensor(False), lambda: t, lambda: f), 11, "i32")


def test_if_runs_only_the_taken_branch():
    ran = []

    def branch(name, value):
        def run():
            ran.append(name)
            return xo.tensor(value)

        return run

    xo.if_(xo.tensor(True), branch("t", 1), branch("f", 2))
    xo.if_(False, branch("t", 1), branch("f", 2))
    assert ran == ["t", "f"]


def test_if_variadic_results():
    a, b = xo.if_(
        xo.tensor(False),
        lambda: (xo.tensor([0, 0]), xo.tensor([0, 0])),
        lambda: (xo.tensor([1, 1]), xo.tensor([1, 1])),
    )
    assert_tensor(a, [1, 1])
    assert_tensor(b, [1, 1])


def test_if_constraints():
    one = lambda: xo.tensor(1)  # noqa: E731
    with raises_spec("if", "I1"):
        xo.if_(xo.tensor([True]), one, one)
    with raises_spec("if", "I1"):
        xo.if_(xo.tensor(1, "i32"), one, one)
    with raises_spec("if", "C1"):  # branches take no arguments
        xo.if_(xo.tensor(True), lambda x: x, one)
    with raises_spec("if", "C1"):
        xo.if_(xo.tensor(True), one, lambda x: x)
    with raises_spec("if", "C3"):
        xo.if_(xo.tensor(True), lambda: [1, None], one)


@pytest.mark.parametrize("index,want", [(-1, 1), (0, 0), (1, 1), (2, 1), (2**31 - 1, 1)])
def test_case_spec_examples(index, want):
    r0, r1 = xo.case(
        xo.tensor(index, "i32"),
        [
            lambda: (xo.tensor([0, 0]), xo.tensor([0, 0])),
            lambda: (xo.tensor([1, 1]), xo.tensor([1, 1])),
        ],
    )
    assert_tensor(r0, [want, want], "i64")
    assert_tensor(r1, [want, want], "i64")


def test_case_runs_only_the_taken_branch():
    ran = []
    branches = [lambda k=k: ran.append(k) or xo.tensor(k) for k in range(3)]
    assert_tensor(xo.case(1, branches), 1)
    assert_tensor(xo.case(-5, branches), 2)
    assert ran == [1, 2]


def test_case_constraints():
    b = [lambda: xo.tensor(0)]
    with raises_spec("case", "I1"):
        xo.case(xo.tensor(0, "i64"), b)  # index is si32
    with raises_spec("case", "I1"):
        xo.case(xo.tensor([0], "i32"), b)
    with raises_spec("case", "I2"):
        xo.case(0, lambda: xo.tensor(0))
    with raises_spec("case", "C1"):
        xo.case(0, [])
    with raises_spec("case", "C2"):
        xo.case(0, [lambda x: x])


# ---------------------------------------------------------------------------------------
# conditional (XLA), call, custom_call
# ---------------------------------------------------------------------------------------


def test_conditional_pred_form():
    out = xo.conditional(xo.tensor(True), xo.tensor(4.0), xo.sqrt, xo.tensor(3.0), xo.negate)
    assert_tensor(out, 2.0, "f32")
    out = xo.conditional(xo.tensor(False), xo.tensor(4.0), xo.sqrt, xo.tensor(3.0), xo.negate)
    assert_tensor(out, -3.0, "f32")


def test_conditional_branch_index_form():
    fns = [xo.sqrt, xo.negate, lambda t: xo.add(t[0], t[1])]  # one (tuple) parameter
    ops = [xo.tensor(9.0), xo.tensor(2.0), (xo.tensor(1.0), xo.tensor(5.0))]
    assert_tensor(xo.conditional(xo.tensor(0, "i32"), fns, ops), 3.0)
    assert_tensor(xo.conditional(xo.tensor(1, "i32"), fns, ops), -2.0)
    assert_tensor(xo.conditional(xo.tensor(7, "i32"), fns, ops), 6.0)  # N-1 by default
    assert_tensor(xo.conditional(-1, fns, ops), 6.0)


def test_conditional_constraints():
    with raises_spec("conditional", "I1"):
        xo.conditional(xo.tensor(0.5), [xo.sqrt], [xo.tensor(1.0)])
    with raises_spec("conditional", "I2"):
        xo.conditional(xo.tensor(True), xo.tensor(1.0), xo.sqrt)
    with raises_spec("conditional", "I2"):
        xo.conditional(xo.tensor(0, "i32"), [xo.sqrt], [])
    with raises_spec("conditional", "I3"):
        xo.conditional(xo.tensor(0, "i32"), [lambda: xo.tensor(0)], [xo.tensor(1.0)])


def test_call():
    # func.call @add_2 as in the conformance suite's call.mlir
    assert_tensor(xo.call(lambda x: xo.add(x, xo.tensor(2)), xo.tensor(1)), 3, "i64")
    a, b = xo.call(lambda x, y: (y, x), xo.tensor(1), xo.tensor(2.0))
    assert_tensor(a, 2.0)
    with raises_spec("call", "I1"):
        xo.call(3, xo.tensor(1))
    with raises_spec("call", "I2"):
        xo.call(lambda x: x, xo.tensor(1), xo.tensor(2))


def test_custom_call_registry():
    xo.register_custom_call("test.twice", lambda x: xo.add(x, x))
    assert_tensor(xo.custom_call("test.twice", xo.tensor(2.0)), 4.0)

    @xo.register_custom_call("test.meta")
    def meta(x, y, *, backend_config, called_computations):
        return xo.multiply(x, y), backend_config, called_computations

    out, cfg, cc = xo.custom_call(
        "test.meta",
        xo.tensor(2.0),
        xo.tensor(3.0),
        backend_config="bar",
        called_computations=["foo"],
    )
    assert_tensor(out, 6.0)
    assert cfg == "bar" and cc == ("foo",)

    seen = {}
    xo.register_custom_call("test.kw", lambda x, **kw: seen.update(kw) or x)
    xo.custom_call("test.kw", xo.tensor(1.0), has_side_effect=True, api_version=2)
    assert seen == dict(
        has_side_effect=True, backend_config="", api_version=2, called_computations=()
    )


def test_custom_call_spec_example():
    # %results = "stablehlo.custom_call"(%input0) {call_target_name = "foo",
    #   has_side_effect = false, backend_config = "bar", api_version = 1,
    #   called_computations = [@foo]} : (tensor<f64>) -> tensor<f64>
    xo.register_custom_call("foo", lambda x: xo.negate(x))
    out = xo.custom_call(
        "foo",
        xo.tensor(1.5, "f64"),
        has_side_effect=False,
        backend_config="bar",
        api_version=1,
        called_computations=["foo"],
    )
    assert_tensor(out, -1.5, "f64")


def test_custom_call_constraints():
    xo.register_custom_call("test.id", lambda x: x)
    x = xo.tensor(1.0)
    with raises_spec("custom_call", "I2"):
        xo.custom_call("test.no-such-target", x)
    with raises_spec("custom_call", "I2"):
        xo.custom_call(7, x)
    with raises_spec("custom_call", "I3"):
        xo.custom_call("test.id", x, has_side_effect="no")
    with raises_spec("custom_call", "I4"):
        xo.custom_call("test.id", x, backend_config=3)
    with raises_spec("custom_call", "I5"):
        xo.custom_call("test.id", x, api_version=2**40)
    with raises_spec("custom_call", "I6"):
        xo.custom_call("test.id", x, called_computations=[1])
    with pytest.raises(xo.SpecError, match="^register_custom_call"):
        xo.register_custom_call("", lambda x: x)


# ---------------------------------------------------------------------------------------
# Gradients flow through the ops the regions run (control flow is not a primitive)
# ---------------------------------------------------------------------------------------


def _needs_rules():
    if getattr(xo.multiply, "op_name", None) is None:
        pytest.skip("elementwise ops have no gradient rules yet (xo.multiply.op_name missing)")


def test_grad_through_while():
    _needs_rules()

    def power(x):  # x ** 5 by repeated multiplication in a loop
        _, p = xo.while_(
            (xo.tensor(0, "i32"), x),
            lambda i, p: xo.compare(i, 4, "LT"),
            lambda i, p: (xo.add(i, 1), xo.multiply(p, x)),
        )
        return p

    g = xo.grad(power)(xo.tensor(1.5, "f64"))
    assert_tensor(g, 5 * 1.5**4, "f64", exact=False, rtol=1e-14)


def test_grad_through_if_takes_the_branch_taken():
    _needs_rules()

    def f(x):
        return xo.if_(xo.compare(x, 0.0, "GT"), lambda: xo.multiply(x, x), lambda: xo.negate(x))

    assert_tensor(xo.grad(f)(xo.tensor(3.0, "f64")), 6.0, "f64")
    assert_tensor(xo.grad(f)(xo.tensor(-3.0, "f64")), -1.0, "f64")


def test_grad_through_case_and_call():
    _needs_rules()

    def f(x):
        y = xo.case(1, [lambda: x, lambda: xo.multiply(x, x)])
        return xo.call(lambda v: xo.multiply(v, x), y)  # x ** 3

    assert_tensor(xo.grad(f)(xo.tensor(2.0, "f64")), 12.0, "f64")
