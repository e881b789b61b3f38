"""Tokens and tuples: after_all, create_token, tuple, get_tuple_element,
optimization_barrier — spec examples and one negative test per label."""

import pickle

import numpy as np
import pytest

import xops as xo
from conftest import assert_tensor, raises_spec


def test_token_is_a_value_without_data():
    t = xo.create_token()
    assert isinstance(t, xo.Token)
    assert repr(t) == "xo.Token()" and str(t) == "xo.Token()"
    assert isinstance(pickle.loads(pickle.dumps(t)), xo.Token)
    with pytest.raises(AttributeError):
        t.x = 1


def test_spec_after_all():
    input0, input1 = xo.create_token(), xo.create_token()
    result = xo.after_all(input0, input1)
    assert isinstance(result, xo.Token)
    assert isinstance(xo.after_all(), xo.Token)
    assert isinstance(xo.after_all(result), xo.Token)


def test_spec_tuple_and_get_tuple_element():
    val0 = xo.tensor([1.0, 2.0], "f32")
    val1 = xo.tuple(xo.tensor(3, "i32"))
    result = xo.tuple(val0, val1)
    assert isinstance(result, tuple) and len(result) == 2
    assert result[0] is val0 and result[1] == val1
    assert_tensor(xo.get_tuple_element(result, 0), [1.0, 2.0], "f32")
    inner = xo.get_tuple_element(result, 1)
    assert isinstance(inner, tuple)
    assert_tensor(xo.get_tuple_element(inner, 0), np.int32(3), "i32")


def test_tuple_values():
    tok = xo.create_token()
    t = xo.tuple(tok, xo.tuple(), np.arange(3, dtype=np.int8), 1.5, (xo.tensor(1), (tok,)))
    assert t[0] is tok and t[1] == ()
    assert_tensor(t[2], [0, 1, 2], "i8")
    assert_tensor(t[3], np.float32(1.5), "f32")
    assert isinstance(t[4], tuple) and t[4][1][0] is tok
    assert xo.tuple() == ()
    assert xo.get_tuple_element(t, xo.tensor(0, "i32")) is tok
    assert xo.get_tuple_element(t, np.int32(4))[1][0] is tok


def test_spec_optimization_barrier():
    operand0, operand1 = xo.tensor(0.0, "f32"), xo.tensor(1.0, "f32")
    result0, result1 = xo.optimization_barrier(operand0, operand1)
    assert_tensor(result0, np.float32(0.0), "f32")
    assert_tensor(result1, np.float32(1.0), "f32")
    assert result0 is operand0 and result1 is operand1
    tok = xo.create_token()
    assert xo.optimization_barrier(tok) == (tok,)
    assert xo.optimization_barrier() == ()
    (r,) = xo.optimization_barrier(np.array([1, 2], np.uint16))
    assert_tensor(r, [1, 2], "ui16")


NEGATIVE = [
    ("after_all", "I1", lambda: xo.after_all(xo.create_token(), xo.tensor(1))),
    ("after_all", "I1", lambda: xo.after_all([xo.create_token()])),
    ("after_all", "I1", lambda: xo.after_all(None)),
    ("tuple", "I1", lambda: xo.tuple(object())),
    ("tuple", "I1", lambda: xo.tuple(xo.tensor(1), (None,))),
    ("get_tuple_element", "C1", lambda: xo.get_tuple_element((xo.tensor(1),), 1)),
    ("get_tuple_element", "C1", lambda: xo.get_tuple_element((xo.tensor(1),), -1)),
    ("get_tuple_element", "C1", lambda: xo.get_tuple_element((), 0)),
    ("get_tuple_element", "I1", lambda: xo.get_tuple_element(xo.tensor([1, 2]), 0)),
    ("get_tuple_element", "I1", lambda: xo.get_tuple_element([xo.tensor(1)], 0)),
    ("get_tuple_element", "I2", lambda: xo.get_tuple_element((xo.tensor(1),), 0.0)),
    ("optimization_barrier", "I1", lambda: xo.optimization_barrier((xo.tensor(1),))),
    ("optimization_barrier", "I1", lambda: xo.optimization_barrier("x")),
]


@pytest.mark.parametrize(
    "op,label,fn", NEGATIVE, ids=[f"{op}-{label}-{i}" for i, (op, label, _) in enumerate(NEGATIVE)]
)
def test_constraint_violations(op, label, fn):
    with raises_spec(op, label):
        fn()
