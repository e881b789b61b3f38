"""Reverse-mode rules of the collectives, checked on the in-process grid against central
finite differences of the whole grid: with per-process inputs x_p, outputs y_p = f_p(x)
and random cotangents u_p, the sum over processes of <vjp_p(u_p), v_p> must equal the
directional derivative of sum_p <u_p, y_p> along the directions v_p.

Also: DataParallel on the grid gives the gradients of the single-process model on the
whole batch (synchronised batch norm included)."""

import numpy as np
import pytest

import xops as xo
from xops.distributed import DataParallel, global_mean, run_parallel

t = xo.tensor


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def grid_check(f, inputs, eps=1e-6, rtol=1e-6, atol=1e-9, seed=0):
    """inputs[r][p]: one float64 NumPy array per process; f: one input, output(s)."""
    rng = np.random.default_rng(seed)
    rows, cols = len(inputs), len(inputs[0])
    outs = run_parallel(lambda x: f(t(x)), [[(x,) for x in row] for row in inputs])
    us = [
        [[rng.standard_normal(o.shape) for o in _as_tuple(outs[r][p])] for p in range(cols)]
        for r in range(rows)
    ]
    vs = [[rng.standard_normal(np.shape(x)) for x in row] for row in inputs]

    def reverse(x, u):
        out, fn = xo.vjp(f, t(x))
        cts = tuple(t(c) for c in u)
        return np.asarray(fn(cts if isinstance(out, tuple) else cts[0])[0])

    grads = run_parallel(
        reverse, [[(inputs[r][p], us[r][p]) for p in range(cols)] for r in range(rows)]
    )
    rev = sum(float(np.sum(grads[r][p] * vs[r][p])) for r in range(rows) for p in range(cols))

    def shifted(sign):
        return run_parallel(
            lambda x: f(t(x)),
            [[(inputs[r][p] + sign * eps * vs[r][p],) for p in range(cols)] for r in range(rows)],
        )

    plus, minus = shifted(1), shifted(-1)
    fwd = 0.0
    for r in range(rows):
        for p in range(cols):
            for u, a, b in zip(us[r][p], _as_tuple(plus[r][p]), _as_tuple(minus[r][p])):
                fwd += float(np.sum(u * (np.asarray(a) - np.asarray(b)) / (2 * eps)))
    assert np.isclose(rev, fwd, rtol=rtol, atol=atol), f"vjp {rev} != finite differences {fwd}"


def _inputs(shape, n=2, cols=1, seed=1):
    rng = np.random.default_rng(seed)
    return [[rng.standard_normal(shape) for _ in range(cols)] for _ in range(n)]


def test_all_reduce_add_grad():
    grid_check(lambda x: xo.all_reduce(x, [[0, 1]], computation=xo.add), _inputs((3,)))


def test_all_reduce_add_grad_inside_a_nonlinear_function():
    # y_p = x_p * all_reduce(x * x): the cotangent crosses processes
    def f(x):
        return xo.multiply(x, xo.all_reduce(xo.multiply(x, x), computation=xo.add))

    grid_check(f, _inputs((2, 2), n=3), rtol=1e-5)


@pytest.mark.parametrize("body", [xo.maximum, xo.minimum])
def test_all_reduce_max_min_grad(body):
    grid_check(lambda x: xo.all_reduce(x, computation=body), _inputs((5,), n=3))


def test_all_reduce_other_bodies_have_no_rule():
    def f(x):
        return xo.all_reduce(x, computation=lambda a, b: xo.multiply(a, b))

    with pytest.raises(xo.SpecError, match=r"all_reduce \(grad\)"):
        xo.grad(lambda x: xo.reduce(f(x), 0.0, [0], xo.add))(t(np.ones(2)))


def test_cross_replica_sum_grad():
    grid_check(lambda x: xo.cross_replica_sum(x), _inputs((2,), n=3))


def test_all_gather_grad_is_reduce_scatter():
    grid_check(lambda x: xo.all_gather(x, 1, [[1, 0]]), _inputs((2, 3)))


def test_reduce_scatter_grad_is_all_gather():
    grid_check(lambda x: xo.reduce_scatter(x, 0, computation=xo.add), _inputs((4, 2), n=2))


def test_all_to_all_grad():
    grid_check(lambda x: xo.all_to_all(x, 1, 0, 2, [[0, 1]]), _inputs((3, 4)))


def test_collective_permute_grad():
    grid_check(lambda x: xo.collective_permute(x, [[0, 1], [1, 2]]), _inputs((2,), n=3))


def test_collective_broadcast_grad():
    grid_check(lambda x: xo.collective_broadcast(x, [[2, 1]]), _inputs((2,), n=4))


def test_grads_across_partitions_with_channels():
    inputs = _inputs((2, 2), n=2, cols=2)
    grid_check(lambda x: xo.all_gather(x, 0, [[0, 1]], 1), inputs)  # cross_replica_and_partition
    grid_check(lambda x: xo.all_to_all(x, 0, 1, 2, [[0, 1]], 1), inputs)  # cross_partition
    grid_check(lambda x: xo.collective_broadcast(x, [[1, 0]], 1), inputs)
    grid_check(lambda x: xo.collective_permute(x, [[0, 1]], 1), inputs)
    grid_check(lambda x: xo.all_reduce(x, [[0, 3], [1, 2]], 1, True, xo.add), inputs)


def test_variadic_all_reduce_grad():
    def f(x):
        a, b = xo.all_reduce([x, xo.multiply(x, 2.0)], computation=xo.add)
        return xo.multiply(a, b)

    grid_check(f, _inputs((3,)), rtol=1e-5)


def test_second_order_through_all_reduce():
    # d/dx of sum(x * all_reduce(x)) = all_reduce(x) + all_reduce(x) (sum over processes
    # of each process's objective); its gradient again is 2 * (number of processes)
    def g(x):
        return xo.grad(
            lambda v: xo.reduce(
                xo.multiply(v, xo.all_reduce(v, computation=xo.add)), 0.0, [0], xo.add
            )
        )(x)

    def hvp(x):
        return xo.grad(lambda v: xo.reduce(g(v), 0.0, [0], xo.add))(x)

    out = run_parallel(hvp, [[(t(np.array([1.0, 2.0])),)], [(t(np.array([3.0, 5.0])),)]])
    for row in out:
        np.testing.assert_allclose(row[0], [4.0, 4.0])


# ---------------------------------------------------------------------------------------
# DataParallel and global_mean on the grid
# ---------------------------------------------------------------------------------------


def test_global_mean_weights_each_process_by_its_count():
    out = run_parallel(lambda v: global_mean(v), [[t(np.array([1.0, 2.0]))], [t(np.array([6.0]))]])
    assert [float(r[0]) for r in out] == [3.0, 3.0]


def _model():
    xo.random_seed(3)
    nn = xo.nn
    return nn.Sequential(nn.Linear(3, 4, bias=False), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 2))


def test_data_parallel_matches_the_whole_batch_gradients():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((7, 3)).astype(np.float32)
    y = rng.integers(0, 2, 7).astype(np.int32)
    F = xo.nn.functional

    ref = _model()
    F.cross_entropy(ref(t(x)), t(y)).backward()
    want = [p.grad.numpy() for p in ref.parameters()]
    want_stats = ref[1].running_mean.numpy(), ref[1].running_var.numpy()

    init = {k: v.numpy() for k, v in _model().state_dict().items()}

    def step():
        m = _model()  # (threads share xops' random stream: the weights come from init)
        m.load_state_dict(init)
        net = DataParallel(m)
        loss = net.mean(F.cross_entropy(net(net.shard(x)), net.shard(y), reduction="none"))
        loss.backward()
        return (
            float(loss),
            [p.grad.numpy() for p in net.parameters()],
            net.module[1].running_mean.numpy(),
            net.module[1].running_var.numpy(),
        )

    results = [row[0] for row in run_parallel(step, num_replicas=2)]
    for loss, grads, mean, var in results:  # uneven shards: 4 + 3 images
        assert np.isclose(loss, float(F.cross_entropy(_model()(t(x)), t(y))), rtol=1e-6)
        for g, w in zip(grads, want):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(mean, want_stats[0], rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(var, want_stats[1], rtol=1e-5, atol=1e-7)


def test_data_parallel_gives_every_process_process_0s_weights():
    def build(m, k):
        with xo.no_grad():  # a different starting point on every process
            for p in m.parameters():
                xo.nn.assign_(p, p + float(k))
        net = DataParallel(m)
        return [p.numpy() for p in net.parameters()]

    want = build(_model(), 0)  # (one process: DataParallel changes nothing)
    # the models are made here: _model() seeds xops' one random stream, and threads that
    # seed and draw from it at once would start from mixed-up weights (a race that made
    # process 0's own weights differ from ``want`` in about half of the runs)
    models = [_model() for _ in range(3)]
    out = run_parallel(build, [[(models[k], k)] for k in range(3)])
    for row in out:
        for got, w in zip(row[0], want):
            np.testing.assert_array_equal(got, w)


def test_data_parallel_with_a_process_that_gets_no_images():
    """3 images over 4 processes: process 3's shard is empty; the step still equals the
    whole batch's in one process (batch norm statistics and the mean included)."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 3)).astype(np.float32)
    y = np.array([0, 1, 1], np.int32)
    F = xo.nn.functional
    init = {k: v.numpy() for k, v in _model().state_dict().items()}

    def step():
        m = _model()
        m.load_state_dict(init)
        net = DataParallel(m)
        xb, yb = net.shard(x), net.shard(y)
        loss = net.mean(F.cross_entropy(net(xb), yb, reduction="none"))
        loss.backward()
        return xb.shape[0], float(loss), [p.grad.numpy() for p in net.parameters()]

    _, want_loss, want = step()
    results = [row[0] for row in run_parallel(step, num_replicas=4)]
    assert [r[0] for r in results] == [1, 1, 1, 0]
    for _, loss, grads in results:
        assert np.isclose(loss, want_loss, rtol=1e-6)
        for g, w in zip(grads, want):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_data_parallel_alone_is_the_model():
    net = DataParallel(_model())
    x = np.ones((3, 3), np.float32)
    assert net.shard(x).shape == (3, 3)
    np.testing.assert_array_equal(net(t(x)), net.module(t(x)))
