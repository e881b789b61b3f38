"""Memory over long runs (issue 15's RSS row, checked without timing): a recorded graph
is freed by reference counting the moment nothing holds it, not by the cyclic GC
generations later (a training loop's graphs then pile up and fragment the heap)."""

import gc
import weakref

import numpy as np
import pytest

import xops as xo
from test_nn import _cnn
from xops import nn, optim

F = nn.functional


def _gc_off(fn):
    """Run fn() with the cyclic GC off (after a full collection): whatever it leaves
    unreachable must have been freed by reference counting alone."""
    gc.collect()
    gc.disable()
    try:
        return fn()
    finally:
        gc.enable()


def test_a_training_step_frees_its_graph_without_the_cyclic_gc():
    rng = np.random.default_rng(0)
    model = _cnn()  # conv, batch norm, relu, max pool, flatten, dense
    opt = optim.SGD(model.parameters(), lr=0.1)
    x = xo.tensor(rng.standard_normal((5, 1, 4, 4), dtype=np.float32))
    y = xo.tensor(np.array([0, 1, 2, 1, 0], np.int32))

    def step():
        logits = model(x)
        loss = F.softmax_cross_entropy(logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return weakref.ref(logits), weakref.ref(loss), loss.item()

    step()  # first calls (kernel compiles, lazy state) outside the check

    def checked():
        logits, loss, value = step()
        return logits() is None, loss() is None, gc.collect(), value

    logits_freed, loss_freed, cyclic, value = _gc_off(checked)
    assert np.isfinite(value)
    assert logits_freed and loss_freed  # by reference counting, the GC being off
    assert cyclic == 0  # and the step left no reference cycles behind


def _bn_reference(x, gamma, g, eps):
    """Batch norm's backward over axis 0 of (N, C) in float64: d operand, d scale, d offset."""
    mu, var = x.mean(0), x.var(0)
    xhat = (x - mu) / np.sqrt(var + eps)
    dx = gamma / np.sqrt(var + eps) * (g - g.mean(0) - xhat * (g * xhat).mean(0))
    return dx, (g * xhat).sum(0), g.sum(0)


def test_unused_outputs_of_a_multi_output_op_still_give_exact_gradients():
    # the node holds its outputs weakly: batch_norm_training's mean and variance, dropped
    # here before backward, are stood in for by their values
    rng = np.random.default_rng(1)
    xv = rng.standard_normal((6, 3)).astype(np.float32)
    gv = rng.standard_normal((6, 3)).astype(np.float32)
    gamma_v = np.array([1.5, -0.5, 2.0], np.float32)
    grads = []
    for keep in (False, True):
        x = xo.tensor(xv, requires_grad=True)
        gamma = xo.tensor(gamma_v, requires_grad=True)
        beta = xo.tensor(np.zeros(3, np.float32), requires_grad=True)
        out, mean, var = xo.batch_norm_training(x, gamma, beta, 1e-3, 1)
        kept = (mean, var) if keep else None
        if not keep:
            del mean, var
        out.backward(gv)
        assert kept is None or kept[0].shape == (3,)
        grads.append([t.grad.numpy() for t in (x, gamma, beta)])
    ref = _bn_reference(xv.astype(np.float64), gamma_v, gv.astype(np.float64), 1e-3)
    for dropped, kept, want in zip(grads[0], grads[1], ref):
        np.testing.assert_array_equal(dropped, kept)
        np.testing.assert_allclose(dropped, want, rtol=2e-4, atol=2e-5)


def test_a_parameter_updated_every_step_keeps_a_bounded_assignment_record():
    # one record entry per assign_ grew without bound (a slow leak over long training)
    from xops.autodiff import tape

    p = xo.tensor([1.0, 2.0], requires_grad=True)
    loss0 = xo.reduce(p * p, 0.0, [0], xo.add)  # recorded before every update below
    for _ in range(1000):
        loss = xo.reduce(p * p, 0.0, [0], xo.add)
        loss.backward()
        with xo.no_grad():
            xo.nn.assign_(p, p - 0.001)
        p.grad = None
    entry = tape._entry(p)
    assert len(entry.epochs) <= tape._KEEP + 1 and len(entry.previous) == len(entry.epochs)
    assert tape.version(p) == 1000  # the count stays exact
    # a node older than the dropped part still raises, with the version it can name
    msg = r"saved f32\[2\] before version 9\d\d, now version 1000"
    with pytest.raises(xo.SpecError, match=msg):
        loss0.backward()
    # and a node newer than it is exact
    loss = xo.reduce(p * p, 0.0, [0], xo.add)
    with xo.no_grad():
        xo.nn.assign_(p, p - 0.001)
    with pytest.raises(xo.SpecError, match=r"at version 1000, now version 1001"):
        loss.backward()


def test_a_rebinding_while_recording_still_routes_gradients_past_the_record_limit():
    # t[i] = v while recording keeps the old value for the nodes that used it: those
    # entries are never dropped while a node can still reach them
    x = xo.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1.0
    first = y * y  # uses y's value before all the writes below
    for i in range(40):
        y[i % 3] = y[i % 3] + 1.0
    xo.reduce(first, 0.0, [0], xo.add).backward()
    np.testing.assert_array_equal(x.grad.numpy(), 2.0 * np.array([1.0, 2.0, 3.0], np.float32))
