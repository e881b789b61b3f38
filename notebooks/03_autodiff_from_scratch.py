# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 3. Autodiff from scratch
#
# xops differentiates in **reverse mode on a tape**: while a function runs, every op
# that touches a tensor requiring a gradient leaves a record of itself (its name, its
# gradient rule, its inputs and outputs). To differentiate, walk those records from the
# output back to the inputs, in reverse topological order, and let each rule turn the
# cotangent of its output into cotangents of its inputs, summing where a tensor is used
# more than once.
#
# This notebook
#
# 1. builds that engine in 40 lines of NumPy, to see that nothing more is needed;
# 2. reads the same pieces in xops' own `xops/autodiff/tape.py`;
# 3. uses xops' API (`xo.grad`, `xo.value_and_grad`, `xo.vjp`, `Tensor.backward`) and
#    checks its gradients by finite differences (the functions being differentiated are
#    written in the everyday layer: `A @ w`, `x.sum()`, `xnp.tanh`, as in notebook 1);
# 4. differentiates through a `xo.while_` loop whose trip count depends on the data;
# 5. computes a Hessian-vector product by differentiating a gradient, and checks it
#    against the analytic Hessian.

# %%
import inspect

import numpy as np

import xops as xo
import xops.numpy as xnp
from xops.autodiff import tape

# %% [markdown]
# ## 1. A tape in 40 lines
#
# A `Var` holds a value and, if an op made it, its parents with one *vector-Jacobian
# product* function per parent: `vjp(g)` maps the cotangent `g` of the output to the
# parent's share of it. For `z = x * y`, that is `g * y` for `x` and `g * x` for `y`;
# for `z = sin(x)`, `g * cos(x)`.
#
# `backward` sorts the graph topologically (a node after all its inputs), then walks it
# in reverse, so every node's cotangent is complete before it is passed on.

# %%
class Var:
    def __init__(self, value, parents=()):
        self.value = np.asarray(value, dtype=float)
        self.parents = parents  # ((parent Var, vjp function), ...)
        self.grad = None

    def __add__(self, other):
        return Var(self.value + other.value, ((self, lambda g: g), (other, lambda g: g)))

    def __mul__(self, other):
        return Var(self.value * other.value,
                   ((self, lambda g: g * other.value), (other, lambda g: g * self.value)))


def sin(x):
    return Var(np.sin(x.value), ((x, lambda g: g * np.cos(x.value)),))


def exp(x):
    e = np.exp(x.value)
    return Var(e, ((x, lambda g: g * e),))


def backward(root):
    order, seen = [], set()

    def visit(v):  # depth-first: a node goes after all of its inputs
        if id(v) not in seen:
            seen.add(id(v))
            for parent, _ in v.parents:
                visit(parent)
            order.append(v)
    visit(root)
    for v in order:
        v.grad = np.zeros_like(v.value)
    root.grad = np.ones_like(root.value)
    for v in reversed(order):  # consumers before producers
        for parent, vjp in v.parents:
            parent.grad = parent.grad + vjp(v.grad)  # accumulate: x may be used twice


# %% [markdown]
# Try it on $f(x, y) = \sin(xy) + e^x y$, whose gradient is
# $\partial f/\partial x = y\cos(xy) + e^x y$ and $\partial f/\partial y = x\cos(xy) + e^x$.
# `x` and `y` each feed two ops, so the accumulation matters.

# %%
x_val, y_val = 0.7, -1.3
x, y = Var(x_val), Var(y_val)
f = sin(x * y) + exp(x) * y
backward(f)
analytic = (y_val * np.cos(x_val * y_val) + np.exp(x_val) * y_val,
            x_val * np.cos(x_val * y_val) + np.exp(x_val))
print("tiny tape:", x.grad, y.grad, " analytic:", analytic)
np.testing.assert_allclose([x.grad, y.grad], analytic, rtol=1e-12)

# %% [markdown]
# ## 2. The same pieces in xops
#
# xops' engine has exactly this shape. Instead of a `Var` class, every public op is
# wrapped by `@primitive("spec_name")`. When recording is on and a tensor argument
# requires a gradient, the wrapper runs the op with recording off, then attaches a
# `Node` (op name, gradient rule, arguments, outputs) to each float output:

# %%
print(inspect.getsource(tape.primitive))

# %% [markdown]
# A gradient rule sits right below its op, in the op's own module. `rule(g, out, *args)`
# returns one cotangent per parameter, written with xops ops (so that rules can
# themselves be differentiated: that is what makes second derivatives work). `sine` and
# `multiply`:

# %%
print(inspect.getsource(xo.sine._vjp))
print(inspect.getsource(xo.multiply._vjp))

# %% [markdown]
# The backward walk: an iterative depth-first sort (a 10 000-step loop must not hit
# Python's recursion limit), then the consumers-first walk that runs each rule and
# accumulates with `xo.add`:

# %%
print(inspect.getsource(tape._topological))
print(inspect.getsource(tape._backprop))

# %% [markdown]
# The records are ordinary objects: after running $f$ on xops tensors we can walk the
# graph from the output and list the op names, exactly what the backward pass will
# visit.

# %%
xt = xo.tensor(np.float64(x_val), requires_grad=True)
yt = xo.tensor(np.float64(y_val), requires_grad=True)
ft = xo.sine(xt * yt) + xo.exponential(xt) * yt

recorded = [node.op for node in tape._topological([ft])]
print("backward visits:", recorded)
assert recorded[0] == "add"  # the last op runs first in reverse
assert sorted(recorded) == sorted(["add", "sine", "multiply", "multiply", "exponential"])

ft.backward()
print("xops:", xt.grad.item(), yt.grad.item())
np.testing.assert_allclose([xt.grad.item(), yt.grad.item()], analytic, rtol=1e-12)

# %% [markdown]
# ## 3. The API, checked by finite differences
#
# * `t.backward()` accumulates into `.grad` of the leaves (as in PyTorch);
# * `xo.grad(f)(x)`, `xo.value_and_grad(f, argnums)(...)` and `xo.vjp(f, *primals)`
#   are functional (as in JAX) and never touch `.grad`. Their inputs may be tensors,
#   NumPy arrays, Python numbers or lists (a list of numbers is one array), and nested
#   tuples / lists / dicts of those; an integer input has no gradient and raises.
#
# A gradient is only as trustworthy as its check. The central difference
# $\big(f(x + \epsilon e_i) - f(x - \epsilon e_i)\big) / 2\epsilon$ approximates
# $\partial f / \partial x_i$ with an error of order $\epsilon^2$; in `f64` with
# $\epsilon = 10^{-6}$ (relative to the size of $x$) it agrees with an exact gradient to
# about 8 digits.

# %%
def numerical_grad(f, x, eps=1e-6):
    """Central differences of scalar-valued f at float64 array x."""
    x = np.asarray(x, dtype=np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(*x.shape):
        step = np.zeros_like(x)
        step[i] = eps
        g[i] = (f(xo.tensor(x + step)).item() - f(xo.tensor(x - step)).item()) / (2 * eps)
    return g


A = np.array([[1.0, -2.0, 0.5], [0.3, 0.8, -1.1]])


def softplus_energy(w):
    """A function mixing elementwise ops, a matrix product, a reduction and a divide."""
    z = A @ w  # an f64 NumPy matrix times an f64 tensor: a tensor (dot_general)
    return xnp.log1p(xnp.exp(z)).sum() / (1.0 + w @ w)


w0 = np.array([0.2, -0.4, 1.5])
value, g = xo.value_and_grad(softplus_energy)(w0)  # a NumPy f64 array in, f64 tensors out
g_fd = numerical_grad(softplus_energy, w0)
print(f"value {value:.12f}", "\nxops grad ", g, "\nfinite diff", g_fd)
assert g.dtype == xo.float64
np.testing.assert_allclose(g, g_fd, rtol=1e-7, atol=1e-9)

# the vjp form: cotangents for a vector-valued function, checked the same way
out, vjp_fn = xo.vjp(lambda w: xnp.tanh(w) * w, w0)
cotangent = np.array([1.0, -2.0, 0.5])
(w_bar,) = vjp_fn(cotangent)  # a cotangent may be a NumPy array too
np.testing.assert_allclose(
    w_bar, numerical_grad(lambda w: (xnp.tanh(w) * w * cotangent).sum(), w0), rtol=1e-7)

# integer inputs have no gradient: an error, never a silent zero
try:
    xo.grad(lambda w: (w * w).sum())([1, 2, 3])
except xo.SpecError as e:
    print(e)
else:
    raise AssertionError("an integer input was differentiated")

# %% [markdown]
# ## 4. A gradient through `xo.while_`
#
# `xo.while_(operand, cond, body)` is StableHLO's `while`: `cond` and `body` are regions,
# here Python callables. How does xops differentiate it? It does not need a rule:
# `while_` runs eagerly and is *not* a primitive, so every op its `body` runs records
# itself on the tape like any other op. The tape ends up holding the loop unrolled, for
# exactly the iterations that ran, and reverse mode walks back through them. (This is
# what `jax.grad` cannot do for `lax.while_loop`: a compiled loop does not keep its
# iterations, so JAX supports only forward mode through it.)

# %%
print(xo.while_.__doc__)

# %% [markdown]
# The test case: Newton's method for $\sqrt a$, $x \leftarrow (x + a/x)/2$, run **until
# converged**, so the number of iterations depends on `a`. The loop's result is
# $\sqrt a$, and its derivative should be $1 / (2\sqrt a)$, even though no one wrote a
# rule for `sqrt` here: the tape differentiates the iterations themselves. (The loop is
# the spec's `while`; its condition and body are written with operators.)

# %%
def newton_sqrt(a, rtol=1e-14):
    def cond(x, k):
        return (abs(x * x - a) > a * rtol) & (k < 100)

    def body(x, k):
        return (x + a / x) * 0.5, k + 1

    return xo.while_((xo.tensor(1.0, "f64"), xo.tensor(0, "i32")), cond, body)


for a_val in [2.0, 9.0, 1e4]:
    a = xo.tensor(np.float64(a_val))
    root, iterations = newton_sqrt(a)
    da = xo.grad(lambda a: newton_sqrt(a)[0])(a)
    fd = numerical_grad(lambda a: newton_sqrt(a)[0], a_val, eps=1e-6 * a_val)
    print(f"a = {a_val:g}: {iterations.item()} iterations, sqrt = {root.item():.12g}, "
          f"d/da = {da.item():.12g} (1/(2 sqrt a) = {0.5 / np.sqrt(a_val):.12g}, "
          f"finite diff {fd:.12g})")
    np.testing.assert_allclose(root.item(), np.sqrt(a_val), rtol=1e-14)
    np.testing.assert_allclose(da.item(), 0.5 / np.sqrt(a_val), rtol=1e-10)
    np.testing.assert_allclose(da.item(), fd, rtol=1e-6)

# %% [markdown]
# The tape really holds the unrolled loop: each iteration's body adds one `divide`
# (`a / x`). Counting the recorded nodes:

# %%
a = xo.tensor(np.float64(1e4), requires_grad=True)
root, iterations = newton_sqrt(a)
ops = [node.op for node in tape._topological([root])]
print(f"{iterations.item()} iterations -> {len(ops)} recorded nodes; "
      f"divides: {ops.count('divide')}")
assert ops.count("divide") == iterations.item()

# %% [markdown]
# A loop carrying a vector, with a fixed trip count: five steps of the map
# $v \leftarrow \tanh(W v) + v/2$. Its gradient with respect to both the start vector
# and the weight matrix $W$ (captured by the body's closure), against finite differences:

# %%
rng = np.random.default_rng(0)
W0 = rng.standard_normal((3, 3)) / 2
v0 = rng.standard_normal(3)


def iterate(v, W, steps=5):
    def body(i, v):
        return i + 1, xnp.tanh(W @ v) + v * 0.5

    _, v_final = xo.while_((xo.tensor(0, "i32"), v), lambda i, v: i < steps, body)
    return v_final @ v_final


gv, gW = xo.grad(iterate, argnums=(0, 1))(v0, W0)
np.testing.assert_allclose(gv, numerical_grad(lambda v: iterate(v, xo.tensor(W0)), v0),
                           rtol=1e-6, atol=1e-9)
np.testing.assert_allclose(gW, numerical_grad(lambda W: iterate(xo.tensor(v0), W), W0),
                           rtol=1e-6, atol=1e-9)
print("d/dv:", gv)

# %% [markdown]
# ## 5. A Hessian-vector product
#
# Because gradient rules are written with xops ops, the backward pass can itself be
# recorded, and differentiated again. The Hessian-vector product
# $H v = \nabla_w \big( \nabla_w L(w) \cdot v \big)$ is then one `xo.grad` of a function
# that calls `xo.grad`: it costs about two gradients and never forms $H$.
#
# The test function is L2-regularised logistic regression,
# $L(w) = \frac1n \sum_i \log(1 + e^{-y_i x_i \cdot w}) + \frac\lambda2 \lVert w\rVert^2$,
# whose Hessian is known in closed form:
# $H = \frac1n X^\top \mathrm{diag}\big(s_i(1 - s_i)\big) X + \lambda I$ with
# $s_i = \sigma(y_i x_i \cdot w)$.

# %%
n, d, lam = 40, 4, 0.1
X = rng.standard_normal((n, d))
labels = np.sign(rng.standard_normal(n))


def logistic_loss(w):
    margins = (X @ w) * labels
    return xnp.log1p(xnp.exp(-margins)).mean() + 0.5 * lam * (w @ w)


def hvp(f, w, v):
    return xo.grad(lambda w: xo.grad(f)(w) @ v)(w)


w = rng.standard_normal(d)
v = rng.standard_normal(d)
Hv = np.asarray(hvp(logistic_loss, w, v))

s = 1 / (1 + np.exp(-labels * (X @ w)))
H = X.T @ (X * (s * (1 - s))[:, None]) / n + lam * np.eye(d)
print("xops Hv    ", Hv, "\nanalytic Hv", H @ v)
np.testing.assert_allclose(Hv, H @ v, rtol=1e-10)

# %% [markdown]
# Two more checks: the finite difference of the *gradient* along $v$,
# $\big(\nabla L(w + \epsilon v) - \nabla L(w - \epsilon v)\big) / 2\epsilon \approx Hv$; and
# the whole Hessian assembled column by column from products with the unit vectors,
# which must be symmetric and equal the closed form.

# %%
eps = 1e-5
grad_L = xo.grad(logistic_loss)
grad_plus, grad_minus = (np.asarray(grad_L(w + s * eps * v)) for s in (1, -1))
fd_Hv = (grad_plus - grad_minus) / (2 * eps)
np.testing.assert_allclose(Hv, fd_Hv, rtol=1e-6)

H_columns = np.stack([np.asarray(hvp(logistic_loss, w, e)) for e in np.eye(d)], axis=1)
np.testing.assert_allclose(H_columns, H_columns.T, rtol=1e-12, atol=1e-14)
np.testing.assert_allclose(H_columns, H, rtol=1e-10)
print("Hessian from 4 HVPs:\n", np.round(H_columns, 4))

# %% [markdown]
# ## Gradients across processes: collectives on a grid
#
# A collective moves values between the processes of StableHLO's process grid.
# `xops.distributed.run_parallel(fn, args)` runs `fn` once per process of an in-process
# grid (one thread each, replicas x partitions); inside it, `xo.all_gather`,
# `xo.all_reduce`, ... meet the other processes at a rendezvous. Every collective is
# linear, and its transpose is another collective: the cotangent of `all_gather` is a
# `reduce_scatter` (add) of the cotangents, so each process gets back the sum of every
# process's cotangent at its own slice. The objective this differentiates is the sum over
# processes of each process's value, which is what data-parallel training wants.

# %%
from xops.distributed import run_parallel


def layer(x):  # each process passes its own x; every process gets all of them
    return xo.all_gather(x, 0, [[0, 1, 2]])


xs = [np.array([1.0, 2.0]), np.array([3.0, 4.0]), np.array([5.0, 6.0])]
gathered = run_parallel(layer, [[xo.tensor(x)] for x in xs])   # 3 replicas x 1 partition
for row in gathered:
    np.testing.assert_array_equal(row[0], np.concatenate(xs))
print(gathered[1][0])

# %%
rng = np.random.default_rng(0)
us = [rng.standard_normal(6) for _ in xs]   # one output cotangent per process


def cotangent_of_x(x, u):
    _, back = xo.vjp(layer, xo.tensor(x))
    return back(xo.tensor(u))[0]             # runs reduce_scatter across the processes


grads = [row[0] for row in run_parallel(cotangent_of_x, [[(x, u)] for x, u in zip(xs, us)])]
for p, g in enumerate(grads):
    np.testing.assert_allclose(g, sum(u[2 * p:2 * p + 2] for u in us), rtol=1e-15)
print(np.round(np.stack([np.asarray(g) for g in grads]), 4))

# %% [markdown]
# ## Summary
#
# * Reverse mode is a recorded graph plus a reversed topological walk that applies
#   vector-Jacobian products and accumulates; xops' `tape.py` is that, with `Node`s
#   left on tensors by `@primitive` ops.
# * Control flow needs no rules: `while_`, `if_` and Python loops record the ops that
#   actually ran, so gradients flow through data-dependent loops.
# * Rules built from xops ops make higher derivatives free: a Hessian-vector product is
#   `xo.grad` of a function calling `xo.grad`.
# * Collectives differentiate like any linear op: their transposes are collectives
#   (`all_gather` <-> `reduce_scatter`), run on the same process grid.
#
# Next: [4. Training a CNN on the digits](04_training_a_cnn.ipynb).
