"""The dispatch fast paths where an operand requires a gradient (``op._fast_grad``, see
xops.autodiff.tape.primitive) and the fast paths of broadcast_in_dim, maximum and
minimum: the same values, the same recorded nodes and gradients, the same errors as
the full path; nothing recorded inside no_grad."""

import subprocess
import sys

import numpy as np
import pytest

import xops as xo
from xops.ops import convolution as C
from xops.ops import reduction as R

FAST_GRAD_OPS = [
    xo.add,
    xo.subtract,
    xo.multiply,
    xo.divide,
    xo.maximum,
    xo.minimum,
    xo.reduce,
    xo.broadcast_in_dim,
    C._convolution,  # (the primitive behind xo.convolution, conv_with_general_padding, conv)
    xo.reduce_window,
]


class _FullPath:
    """Every op's fast paths off: each call takes the full path."""

    def __enter__(self):
        self.saved = [(op, op._fast, op._fast_grad) for op in FAST_GRAD_OPS]
        for op, _, _ in self.saved:
            op._fast = op._fast_grad = None

    def __exit__(self, *exc):
        for op, fast, fast_grad in self.saved:
            op._fast, op._fast_grad = fast, fast_grad


def _bits(t):
    return (t.dtype, t.shape, t._value.tobytes())


def _values(rng, dt, shape):
    v = rng.standard_normal(shape).astype(dt)
    flat = v.reshape(-1)
    flat[:4] = [np.nan, -0.0, 0.0, np.inf][: flat.size]  # specials, ties of signed zeros
    return v


def _graph(*leaves):
    """f(leaves) through every fast-grad op, with weak scalars, a -inf init and a
    broadcast of a vector, as a training step writes them."""
    x, b = leaves
    h = xo.add(x, xo.broadcast_in_dim(b, [1], x.shape))
    h = xo.maximum(h, 0.0)
    h = xo.minimum(xo.multiply(h, 1.5), xo.subtract(x, 0.25))
    top = xo.reduce(h, float("-inf"), [1], xo.maximum)
    z = xo.subtract(h, xo.broadcast_in_dim(top, [0], h.shape))
    s = xo.reduce(xo.divide(z, 3.0), 0.0, [0, 1], xo.add)
    return xo.add(s, xo.reduce(xo.multiply(b, b), 0.0, [0], xo.add))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_recorded_fast_calls_match_the_full_path(dt):
    rng = np.random.default_rng(0)
    xv, bv = _values(rng, dt, (5, 7)), rng.standard_normal(7).astype(dt)
    xv[0, 0] = 0.3  # (finite gradients: the specials sit in row 0 beside it)
    xv[0, :4] = [0.5, -0.0, 0.0, 2.0]

    def run():
        x = xo.tensor(xv, requires_grad=True)
        b = xo.tensor(bv, requires_grad=True)
        out = _graph(x, b)
        nodes, seen = [], set()
        stack = [out._node]
        while stack:  # the recorded nodes: op names and their non-tensor arguments
            n = stack.pop()
            if n is None or id(n) in seen:
                continue
            seen.add(id(n))
            nodes.append((n.op, [a for a in n.args if not isinstance(a, xo.Tensor)]))
            stack.extend(t._node for t in n.inputs if t.requires_grad)
        out.backward()
        return _bits(out), _bits(x.grad), _bits(b.grad), nodes

    fast = run()
    with _FullPath():
        full = run()
    assert fast == full
    assert len(fast[3]) == 14  # every op of the graph recorded, once


def test_recorded_fast_calls_take_the_fast_path():
    x = xo.tensor(np.ones((2, 3), np.float32), requires_grad=True)
    for op, args in [
        (xo.add, (x, x)),
        (xo.maximum, (x, 0.0)),
        (xo.reduce, (x, float("-inf"), [1], xo.maximum)),
        (xo.broadcast_in_dim, (x, [1, 2], [4, 2, 3])),
    ]:
        assert op._fast(args) is None  # (a gradient is required)
        out, kept = op._fast_grad(args)
        assert out.shape == op(*args).shape and not out.requires_grad
    assert xo.reduce._fast_grad((x, 0.0, (1,), xo.add))[1] == {"dimensions": [1]}
    assert xo.broadcast_in_dim._fast_grad((x, (1, 2), (4, 2, 3)))[1] == {
        "broadcast_dimensions": [1, 2],
        "shape": [4, 2, 3],
    }


def test_no_grad_calls_record_nothing():
    x = xo.tensor([[1.0, -2.0], [3.0, 0.5]], requires_grad=True)
    with xo.no_grad():
        outs = [
            xo.add(x, 1.0),
            xo.maximum(x, 0.0),
            xo.reduce(x, float("-inf"), [0], xo.maximum),
            xo.broadcast_in_dim(x, [0, 1], [2, 2]),
        ]
    for o in outs:
        assert not o.requires_grad and o._node is None
    np.testing.assert_array_equal(outs[2].numpy(), [3.0, 0.5])


def test_second_order_through_the_recorded_fast_path():
    # d/dx of d/dx (x * x * x + max(x, 0) * 2) = 6x (x > 0)
    def f(x):
        return xo.reduce(
            xo.add(xo.multiply(xo.multiply(x, x), x), xo.multiply(xo.maximum(x, 0.0), 2.0)),
            0.0,
            [0],
            xo.add,
        )

    def df(x):
        return xo.reduce(xo.grad(f)(x), 0.0, [0], xo.add)

    x = np.array([0.5, 1.5, 2.0], np.float32)
    np.testing.assert_allclose(xo.grad(df)(xo.tensor(x)).numpy(), 6 * x, rtol=1e-6)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("op", [xo.maximum, xo.minimum])
def test_extremum_fast_path_matches_the_full_path(op, dt):
    rng = np.random.default_rng(1)
    a = xo.tensor(_values(rng, dt, (3, 4)))
    b = xo.tensor(_values(rng, dt, (3, 4))[::-1].copy())
    for args in [(a, b), (a, 0.0), (a, -0.0), (a, float("nan")), (a, float("-inf")), (a, 2)]:
        assert op._fast(args) is not None
        got = op(*args)
        with _FullPath():
            want = op(*args)
        assert _bits(got) == _bits(want)
    # transposed operands, a scalar first, mixed types: the full path's answers
    t = xo.transpose(a, [1, 0])
    for args in [(t, 1.0), (1.0, a), (a, xo.tensor(np.ones((3, 4), np.float16)))]:
        try:
            with _FullPath():
                want = op(*args)
        except xo.SpecError as e:
            with pytest.raises(xo.SpecError) as got:
                op(*args)
            assert str(got.value) == str(e)
        else:
            assert _bits(op(*args)) == _bits(want)


def test_reduce_fast_path_takes_infinite_init_values():
    x = xo.tensor(np.array([[1.0, np.nan, -3.0], [-np.inf, -np.inf, -np.inf]], np.float32))
    for init, body in [(float("-inf"), xo.maximum), (float("inf"), xo.minimum)]:
        assert R._fast_reduce((x, init, [1], body)) is not None
        got = xo.reduce(x, init, [1], body)
        with _FullPath():
            want = xo.reduce(x, init, [1], body)
        assert _bits(got) == _bits(want)
    np.testing.assert_array_equal(xo.reduce(x, float("-inf"), [1], xo.maximum).numpy()[1], -np.inf)


def test_broadcast_in_dim_fast_path_same_views_and_errors():
    a = xo.tensor(np.arange(6, dtype=np.int16).reshape(2, 3))
    for bd, shape in [
        ([0, 1], [2, 3]),
        ([1, 2], (4, 2, 3)),
        ((2, 0), [3, 5, 2]),
        ([0, 2], [2, 1, 3]),
    ]:
        got = xo.broadcast_in_dim(a, bd, shape)
        with _FullPath():
            want = xo.broadcast_in_dim(a, bd, shape)
        assert _bits(got) == _bits(want) and not got._value.flags.writeable
    bad = [
        ([0], [2, 3]),  # C2
        ([0, 3], [2, 3]),  # C3
        ([1, 1], [3, 3]),  # C4
        ([1, 0], [2, 3]),  # C5
        ([True, 1], [2, 3]),  # I2: booleans are no indices
        ([0, 1], [2, -3]),  # I3
    ]
    for _ in range(2):  # the second round after the fast path remembered the good ones
        for bd, shape in bad:
            with _FullPath():
                with pytest.raises(xo.SpecError) as full:
                    xo.broadcast_in_dim(a, bd, shape)
            with pytest.raises(xo.SpecError) as fast:
                xo.broadcast_in_dim(a, bd, shape)
            assert str(fast.value) == str(full.value)


def test_broadcast_in_dim_fast_path_reads_the_size_limit_now():
    a = xo.tensor(np.ones(3, np.float32))
    xo.broadcast_in_dim(a, [1], [1000, 3])  # remembered under the default limit
    saved = xo.config.max_bytes
    xo.config.max_bytes = 1000
    try:
        with pytest.raises(xo.SpecError, match="resource limit"):
            xo.broadcast_in_dim(a, [1], [1000, 3])
    finally:
        xo.config.max_bytes = saved


def test_fast_grad_is_switched_off_with_the_fast_path():
    # a tensor placed on another device switches both off (a device tensor's holder is
    # no NumPy array): in a fresh process, as the placement is for the process's life
    code = (
        "import xops as xo\n"
        "from xops import registry\n"
        "ops = [xo.add, xo.maximum, xo.reduce, xo.broadcast_in_dim]\n"
        "assert all(op._fast_grad is not None for op in ops)\n"
        "registry.use_device('cuda')\n"
        "assert all(op._fast is None and op._fast_grad is None for op in ops)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_convolution_fast_path_matches_the_full_path(dt):
    rng = np.random.default_rng(3)
    xv = _values(rng, dt, (2, 3, 6, 6))
    xv.reshape(-1)[:4] = [0.5, -0.0, 0.0, 2.0]
    wv = rng.standard_normal((4, 3, 3, 3)).astype(dt)
    calls = [
        dict(padding=[(1, 1), (1, 1)]),
        dict(window_strides=[2, 1], rhs_dilation=[1, 2], padding=[(0, 1), (2, 2)]),
        dict(dimension_numbers="NCHW,OIHW,NCHW", window_reversal=[True, False]),
    ]

    def run(kw):
        x = xo.tensor(xv, requires_grad=True)
        w = xo.tensor(wv, requires_grad=True)
        y = xo.convolution(x, w, **kw)
        node = (y._node.op, [a for a in y._node.args if not isinstance(a, xo.Tensor)])
        xo.reduce(xo.multiply(y, y), 0.0, [0, 1, 2, 3], xo.add).backward()
        with xo.no_grad():
            plain = xo.convolution(x, w, **kw)
        assert plain._node is None and not plain.requires_grad
        return _bits(y), node, _bits(x.grad), _bits(w.grad), _bits(plain)

    for kw in calls:
        plain_args = ("convolution", xo.tensor(xv), xo.tensor(wv), *[None] * 6, 1, 1, None, None)
        assert C._fast_convolution(plain_args) is not None
        fast = run(kw)
        with _FullPath():
            full = run(kw)
        assert fast == full
    # the same errors: a signature the fast path has not seen, and one it has
    for _ in range(2):
        for bad in [dict(padding=[(1, 1)]), dict(feature_group_count=2)]:
            with _FullPath(), pytest.raises(xo.SpecError) as want:
                xo.convolution(xo.tensor(xv), xo.tensor(wv), **bad)
            with pytest.raises(xo.SpecError) as got:
                xo.convolution(xo.tensor(xv), xo.tensor(wv), **bad)
            assert str(got.value) == str(want.value)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_reduce_window_fast_path_matches_the_full_path(dt):
    rng = np.random.default_rng(4)
    xv = _values(rng, dt, (2, 3, 6, 7))
    xv[1, 1, :2, :2] = 5.0  # (ties)
    spellings = [  # positional and keyword attributes, several bodies and inits
        ((float("-inf"), [1, 1, 2, 2], [1, 1, 2, 2]), dict(body=xo.maximum)),
        ((float("inf"), [1, 1, 3, 3]), dict(window_strides=[1, 1, 2, 2], body=xo.minimum)),
        (
            (0.0, [1, 1, 2, 3], [1, 1, 1, 2], None, None, [(0, 0), (0, 0), (1, 0), (1, 1)]),
            dict(body=xo.add),
        ),  # fmt: skip
        (
            (float("-inf"),),
            dict(window_dimensions=[1, 2, 2, 1], padding=[(0, 0)] * 4, body=xo.maximum),
        ),  # fmt: skip
        ((0.5, [1, 1, 2, 2], [1, 1, 2, 2]), dict(base_dilations=[1, 1, 2, 1], body=xo.add)),
    ]

    def run(args, kw):
        x = xo.tensor(xv, requires_grad=True)
        y = xo.reduce_window(x, *args, **kw)
        node = (y._node.op, [a for a in y._node.args if not isinstance(a, xo.Tensor)])
        xo.reduce(xo.multiply(y, y), 0.0, [0, 1, 2, 3], xo.add).backward()  # (NaNs too)
        with xo.no_grad():
            plain = xo.reduce_window(x, *args, **kw)
        return _bits(y), node, _bits(x.grad), _bits(plain)

    for args, kw in spellings:
        run(args, kw)  # (the first call validates the signature)
        hit = xo.reduce_window._fast(((xo.tensor(xv),) + args), kw)
        fast = run(args, kw)
        with _FullPath():
            full = run(args, kw)
        assert fast[0][2] == full[0][2] and fast == full
        assert hit is not None or "base_dilations" in kw  # (a dilated base: the full path)
    # the same errors: a body without kernel, an init of another type, bad keywords
    x = xo.tensor(xv)
    for args, kw in [
        ((float("-inf"), [1, 1, 2, 2]), dict(body=xo.maximum, window_dimensions=[1, 1, 2, 2])),
        ((float("-inf"), [1, 1, 2, 2]), dict(body=xo.maximum, strides=[1, 1, 2, 2])),
        ((xo.tensor(0, "i32"), [1, 1, 2, 2]), dict(body=xo.maximum)),
        ((float("-inf"), [1, 1, 2, 2]), dict(body=None)),
        ((float("-inf"), [1, 1, 2, 2]), dict()),
    ]:
        try:
            with _FullPath():
                want = xo.reduce_window(x, *args, **kw)
        except Exception as e:
            with pytest.raises(type(e)) as got:
                xo.reduce_window(x, *args, **kw)
            assert str(got.value) == str(e)
        else:
            assert _bits(xo.reduce_window(x, *args, **kw)) == _bits(want)
