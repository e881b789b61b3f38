"""The op registry: one declaration per op, and the lists derived from it."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import xops as xo
from xops import registry
from xops.autodiff import primitive
from xops.ops.quantization import DEQUANTIZE_OP_QUANTIZE
from xops.stablehlo.table import ELEMENTWISE, OPS, XO_NAMES


def test_every_name_of_an_op_finds_its_one_declaration():
    d = registry.get("not")
    assert registry.get("not_") is d and d.public == "not_" and d.fn is xo.not_
    assert d.family == d.fn.__module__.rpartition(".")[2].lstrip("_")
    with pytest.raises(xo.SpecError, match="no op named 'nope'"):
        registry.get("nope")


def _op_module_function():
    def fn(x):
        return x

    fn.__module__ = "xops.ops.elsewhere"  # as if it were one of xops's op modules
    return fn


def test_a_name_cannot_be_declared_twice():
    with pytest.raises(ValueError, match="declared twice"):
        registry.declare("add")(_op_module_function())
    with pytest.raises(ValueError, match="quantized must be one of"):
        registry.declare("brand_new_op", quantized="sometimes")(_op_module_function())


def test_a_users_primitive_lives_in_its_modules_namespace():
    # (and may be declared again, as a re-run notebook cell does)
    for _ in range(2):

        @primitive("add")
        def my_add(x, y):
            return xo.add(x, y)

    d = registry.get(f"{__name__}.add")
    assert d.fn is my_add and d.spec is None and registry.get("add").fn is xo.add


def test_late_bound_calls_reach_the_declared_function():
    x = xo.tensor([1.0, 2.0])
    np.testing.assert_array_equal(registry.op.add(x, x).numpy(), [2.0, 4.0])
    assert registry.op.not_ is xo.not_


def test_quantized_behaviour_is_read_from_the_declarations():
    declared = {d.name for d in registry.ops() if d.quantized == "dequantize"}
    assert set(DEQUANTIZE_OP_QUANTIZE) == declared and "exponential" in DEQUANTIZE_OP_QUANTIZE
    assert "pad" not in DEQUANTIZE_OP_QUANTIZE and registry.get("pad").quantized == "storage"
    assert registry.get("pad").quantized_params == ("operand", "padding_value")
    assert registry.get("sort").body_params == ("comparator",)
    assert registry.get("clamp").result_type_from == "operand"


def test_stablehlo_handlers_are_derived_for_every_elementwise_op():
    for d in registry.ops():
        if d.elementwise and d.spec == "stablehlo":
            assert f"stablehlo.{d.name}" in OPS and f"stablehlo.{d.name}" in ELEMENTWISE
    assert XO_NAMES["stablehlo.and"] == ("and_",)


def test_every_op_has_a_cpu_kernel_slot():
    for d in registry.ops():
        assert callable(d.kernels["cpu"]), d


def test_the_device_seam_picks_the_kernel_by_device():
    # use_device is process-wide and one-way: run in a fresh interpreter
    code = textwrap.dedent("""
        import xops as xo
        from xops import registry

        class Cuda:
            kind = "cuda"
            def __str__(self):
                return "cuda:0"

        class OnCuda:  # stands in for a tensor whose data lives on a GPU
            _dtype = None
            device = Cuda()

        a = xo.tensor([1.0, 2.0])
        plus = xo.Tensor.__add__
        registry.use_device("cuda")
        assert xo.add(a, a).numpy().tolist() == [2.0, 4.0]  # CPU operands: CPU kernel
        # the operators held the CPU fast path: they are rebuilt without it
        assert xo.Tensor.__add__ is not plus and (a + a).numpy().tolist() == [2.0, 4.0]
        assert xo.add._fast is None
        try:
            xo.add(OnCuda(), OnCuda())
        except xo.SpecError as e:
            assert "add (device): has no cuda kernel" in str(e), e
        else:
            raise AssertionError("no error")
        registry.set_kernel("add", "cuda", lambda lhs, rhs: "ran the cuda kernel")
        assert xo.add(OnCuda(), OnCuda()) == "ran the cuda kernel"
        try:
            xo.add(a, OnCuda())
        except xo.SpecError as e:
            assert "different devices (cpu, cuda:0)" in str(e), e
        else:
            raise AssertionError("no error")
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_the_tape_keeps_parsed_attributes_for_the_rule():
    # pad's attributes given as a NumPy array and a tuple: its node stores the parsed
    # lists of ints, which the rule reads as they are
    x = xo.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = xo.pad(x, 0.0, np.array([1]), (-1,), [1])
    node = y._node
    assert node.args[2:] == ([1], [-1], [1])
    xo.reduce(y, 0.0, [0], xo.add).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0, 0.0])
