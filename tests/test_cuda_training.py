"""One training step of a tiny CNN on ``device="cuda"`` equals the same step on the CPU
(issue 17's acceptance case): forward, backward through every layer's gradient rule, and
an Adam update, with ``Module.to("cuda")`` moving the model."""

import numpy as np
import pytest

import xops as xo
from cuda_support import needs_cuda
from xops import nn, optim

F = nn.functional

pytestmark = needs_cuda


def _model():
    xo.random_seed(3)
    return nn.Sequential(
        nn.Conv2d(1, 3, 3, padding=1, bias=False),
        nn.BatchNorm2d(3),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(3, 4, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(4 * 2 * 2, 5),
    )


def _step(device):
    rng = np.random.default_rng(0)
    x = rng.random((2, 1, 8, 8), np.float32)
    y = np.array([1, 4], np.int32)
    model = _model().to(device)
    opt = optim.Adam(model.parameters(), lr=0.05)
    losses = []
    for _ in range(2):  # the second step runs with Adam's moments from the first
        loss = F.softmax_cross_entropy(
            model(xo.tensor(x, device=device)), xo.tensor(y, device=device)
        )
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    grads = [p.grad.to("cpu").numpy() for p in model.parameters()]
    state = {k: v.to("cpu").numpy() for k, v in model.state_dict().items()}
    model.eval()
    with xo.no_grad():
        out = model(xo.tensor(x, device=device))
    assert out.device == device
    return losses, grads, state, out.to("cpu").numpy()


def test_a_training_step_on_cuda_equals_the_cpu_step():
    ref = _step("cpu")
    dev = _step("cuda")
    np.testing.assert_allclose(dev[0], ref[0], rtol=1e-5)  # losses
    assert len(dev[1]) == len(ref[1]) == 7
    for g, r in zip(dev[1], ref[1]):
        # gradients: sums in another order (f32); 1e-4 relative to the largest entry
        np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-4 * np.abs(r).max())
    assert dev[2].keys() == ref[2].keys()
    for k in ref[2]:
        np.testing.assert_allclose(dev[2][k], ref[2][k], rtol=1e-4, atol=1e-5, err_msg=k)
    np.testing.assert_allclose(dev[3], ref[3], rtol=1e-4, atol=1e-4)


def test_module_to_moves_parameters_buffers_and_gradients():
    m = nn.Linear(3, 2)
    p = m.weight
    loss = xo.reduce(m(xo.tensor(np.ones((1, 3), np.float32))), 0.0, [0, 1], xo.add)
    loss.backward()
    g = p.grad.numpy()
    assert m.to("cuda") is m and m.weight is p  # in place, identity kept
    assert p.device == "cuda:0" and p.grad.device == "cuda:0" and m.bias.device == "cuda:0"
    np.testing.assert_array_equal(p.grad.numpy(), g)
    bn = nn.BatchNorm2d(2).to("cuda", "f64")
    assert bn.running_mean.device == "cuda:0" and bn.running_mean.dtype == xo.float64
    assert bn.num_batches_tracked.device == "cuda:0"
    m.to(device="cpu")
    assert p.device == "cpu" and p.grad.device == "cpu"
    with pytest.raises(TypeError, match="Module.to: expected a device and/or a dtype"):
        m.to("cpu", "cuda")
