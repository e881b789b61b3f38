"""Gradients of scatter and sort on CUDA tensors (xops/ops/_device_grads.py: the rules
built from ops that run on the device), compared with the CPU rules' cotangents bit for
bit (they only move and select values): scatter with the add and overwrite bodies over
duplicate targets, update windows partly or wholly outside the operand, batching dims,
scalar indices and other index types; sort with every comparator its kernel takes, along
each dimension, with ties and several float operands. Tiny shapes: the simulator runs a
Python thread per CUDA thread."""

import numpy as np
import pytest
from cuda_support import needs_cuda

import xops as xo

pytestmark = needs_cuda


def _second(a, b):
    return b


def _vjp_both(f, primals, cot):
    """f's cotangents for ``cot`` on the CPU and on CUDA copies; equal bit for bit."""
    out_c, back_c = xo.vjp(f, *primals)
    out_d, back_d = xo.vjp(f, *[p.to("cuda") for p in primals])
    cots = cot if isinstance(cot, tuple) else (cot,)
    ref = back_c(cot)
    dev = back_d(tuple(c.to("cuda") for c in cots) if isinstance(cot, tuple) else cot.to("cuda"))
    for r, d in zip(ref, dev):
        assert d.device == "cuda:0" and d.dtype == r.dtype and d.shape == r.shape
        np.testing.assert_array_equal(d.numpy(), r.numpy())
    return ref


def _rand(shape, seed):
    return xo.tensor(np.random.default_rng(seed).uniform(-2, 2, shape).astype(np.float32))


SCATTERS = [
    # (operand shape, indices, update shape, uwd, iwd, sdod, ivd, batching dims)
    ((4, 3), [[2], [0], [2], [5]], (4, 3), [1], [0], [0], 1, {}),  # duplicates; one outside
    ((6,), [[3], [-1], [4]], (3, 3), [1], [], [0], 1, {}),  # windows partly outside
    ((3, 2), np.array([1, 0, 1], np.uint8), (3, 2), [1], [0], [0], 1, {}),  # scalar indices
    ((2, 4, 3), [[[1], [1]], [[3], [0]]], (2, 2, 3), [2], [1], [1], 2,  # batching dims
     {"input_batching_dims": [0], "scatter_indices_batching_dims": [0]}),
    ((3, 4), np.array([[0, 1], [2, 3], [1, 1]], np.int32).T, (3, 2, 2), [1, 2], [], [0, 1], 0,
     {}),  # index vector dim first; 2-D windows, some cut
]  # fmt: skip


@pytest.mark.parametrize("case", range(len(SCATTERS)))
@pytest.mark.parametrize("body", ["add", "overwrite"])
def test_scatter_gradients_match_the_cpu(case, body):
    shape, idx, ushape, uwd, iwd, sdod, ivd, batching = SCATTERS[case]
    si = xo.tensor(np.asarray(idx))
    comp = xo.add if body == "add" else _second

    def f(x, u):
        s = si.to(x.device)
        return xo.scatter(x, s, u, uwd, iwd, sdod, ivd, update_computation=comp, **batching)

    dx, du = _vjp_both(f, (_rand(shape, 1), _rand(ushape, 2)), _rand(shape, 3))
    assert np.any(du.numpy() != 0)


def test_scatter_targets_on_the_device():
    from xops.ops._device_grads import scatter_targets
    from xops.ops.scatter import _scatter_args

    x, si, u = _rand((6,), 0), xo.tensor([[3], [-1], [4]]), _rand((3, 3), 1)
    args = _scatter_args(x, si, u, [1], [], [0], 1, False, False, xo.add, (), ())
    t = scatter_targets(x.shape, si.to("cuda"), u.shape, args[-1])
    assert t.device == "cuda:0"
    np.testing.assert_array_equal(t.numpy(), [[3, 4, 5], [-1, 0, 1], [4, 5, -1]])


def _lt(a, b):
    return xo.compare(a, b, "LT")


def _gt_total(a, b):
    return xo.compare(a, b, "GT", "TOTALORDER")


def _lt_float(a, b, c, d):
    return xo.compare(a, b, "LT", "FLOAT")


@pytest.mark.parametrize("dim", [0, 1])
def test_sort_gradients_match_the_cpu(dim):
    v = np.array(
        [[1.5, -2.0, 1.5, 0.0, 3.0], [2.0, 2.0, -1.0, -0.0, 0.5], [0.0, 9.0, -3.0, 1.5, 1.5]]
    )
    x = xo.tensor(v.astype(np.float32))
    for cmp in (None, _lt, _gt_total):
        _vjp_both(lambda t: xo.sort(t, dim, False, cmp), (x,), _rand(x.shape, 4))
    y = _rand(x.shape, 5)  # a float passenger gets its cotangent un-permuted too
    cot = (_rand(x.shape, 6), _rand(x.shape, 7))
    _vjp_both(lambda a, b: xo.sort([a, b], dim, True, _lt_float), (x, y), cot)
    b16 = xo.convert(x, "bf16")  # a bf16 key
    _vjp_both(lambda t: xo.sort(t, dim), (b16,), xo.convert(_rand(x.shape, 8), "bf16"))


def test_to_its_own_device_is_an_alias_on_the_tape():
    x = xo.tensor([1.0, 2.0], device="cuda")
    y = x.to("cuda")  # the tape's identity primitive, alias, on the device
    assert y is not x and y.device == "cuda:0"
    np.testing.assert_array_equal(y.numpy(), [1.0, 2.0])
    g = xo.grad(lambda t: xo.reduce(t.to("cuda") * t, 0.0, [0], xo.add))(x)
    np.testing.assert_array_equal(g.numpy(), [2.0, 4.0])


@pytest.mark.parametrize("op", ["broadcast_in_dim", "transpose", "reshape", "slice"])
def test_view_ops_called_again_keep_their_attributes_on_the_tape(op):
    # the second call of each takes the CUDA layout cache (xops/kernels/cuda/movement.py)
    # and must record the same attributes for its gradient rule as the first
    calls = {
        "broadcast_in_dim": lambda x: xo.broadcast_in_dim(x, [0, 2], (2, 4, 3)),
        "transpose": lambda x: xo.transpose(x, (1, 0)),
        "reshape": lambda x: xo.reshape(x, [3, 2]),
        "slice": lambda x: xo.slice(x, [0, 1], [2, 3], [1, 2]),
    }
    x = _rand((2, 3), 7)
    cot = _rand(calls[op](x).shape, 8)
    ref = xo.vjp(calls[op], x)[1](cot)[0].numpy()
    first = None
    for _ in range(3):
        out, back = xo.vjp(calls[op], x.to("cuda"))
        np.testing.assert_array_equal(out.numpy(), calls[op](x).numpy())
        got = back(cot.to("cuda"))[0].numpy()
        # (broadcast_in_dim's rule sums: the device's order may differ in the last bit)
        np.testing.assert_allclose(got, ref, rtol=1e-6, atol=0)
        if first is None:
            first = got
        np.testing.assert_array_equal(got, first)
