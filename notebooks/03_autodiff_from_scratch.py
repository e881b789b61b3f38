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
#    checks its gradients by finite differences;
# 4. differentiates through a `xo.while_` loop whose trip count depends on the data;
# 5. computes a Hessian-vector product by differentiating a gradient, and checks it
#    against the analytic Hessian.

# %%
import inspect

import numpy as np

import xops as xo
from xops.autodiff import tape

F = xo.nn.functional  # F.sum(t): xo.reduce(t, 0, all dims, xo.add)

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
#   are functional (as in JAX) and never touch `.grad`.
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


def softplus_energy(w):
    """A function mixing elementwise ops, a matrix product, a reduction and a divide."""
    A = xo.tensor(np.array([[1.0, -2.0, 0.5], [0.3, 0.8, -1.1]]))
    z = xo.dot_general(A, w, lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[0])
    return F.sum(xo.log_plus_one(xo.exponential(z))) / (1.0 + F.sum(w * w))


w0 = np.array([0.2, -0.4, 1.5])
value, g = xo.value_and_grad(softplus_energy)(xo.tensor(w0))
g_fd = numerical_grad(softplus_energy, w0)
print("value", value.item(), "\nxops grad ", np.asarray(g), "\nfinite diff", g_fd)
np.testing.assert_allclose(np.asarray(g), g_fd, rtol=1e-7, atol=1e-9)

# the vjp form: cotangents for a vector-valued function, checked the same way
out, vjp_fn = xo.vjp(lambda w: xo.tanh(w) * w, xo.tensor(w0))
cotangent = np.array([1.0, -2.0, 0.5])
(w_bar,) = vjp_fn(xo.tensor(cotangent))
np.testing.assert_allclose(
    np.asarray(w_bar),
    numerical_grad(lambda w: F.sum(xo.tanh(w) * w * xo.tensor(cotangent)), w0), rtol=1e-7)

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
# rule for `sqrt` here: the tape differentiates the iterations themselves.

# %%
def newton_sqrt(a, rtol=1e-14):
    def cond(x, k):
        not_converged = xo.compare(xo.abs(x * x - a), a * rtol, "GT")
        return xo.and_(not_converged, xo.compare(k, 100, "LT"))

    def body(x, k):
        return (x + a / x) * 0.5, k + 1

    start = xo.broadcast_in_dim(xo.tensor(1.0, "f64"), [], [])
    return xo.while_((start, xo.tensor(0, "i32")), cond, body)


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
        Wv = xo.dot_general(W, v, lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[0])
        return i + 1, xo.tanh(Wv) + v * 0.5

    _, v_final = xo.while_((xo.tensor(0, "i32"), v), lambda i, v: xo.compare(i, steps, "LT"), body)
    return F.sum(v_final * v_final)


gv, gW = xo.grad(iterate, argnums=(0, 1))(xo.tensor(v0), xo.tensor(W0))
np.testing.assert_allclose(np.asarray(gv), numerical_grad(lambda v: iterate(v, xo.tensor(W0)), v0),
                           rtol=1e-6, atol=1e-9)
np.testing.assert_allclose(np.asarray(gW), numerical_grad(lambda W: iterate(xo.tensor(v0), W), W0),
                           rtol=1e-6, atol=1e-9)
print("d/dv:", np.asarray(gv))

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
    margins = xo.dot_general(xo.tensor(X), w, lhs_contracting_dimensions=[1],
                             rhs_contracting_dimensions=[0]) * xo.tensor(labels)
    data = F.sum(xo.log_plus_one(xo.exponential(-margins))) / n
    return data + 0.5 * lam * F.sum(w * w)


def hvp(f, w, v):
    return xo.grad(lambda w: F.sum(xo.grad(f)(w) * v))(w)


w = rng.standard_normal(d)
v = rng.standard_normal(d)
Hv = np.asarray(hvp(logistic_loss, xo.tensor(w), xo.tensor(v)))

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
grad_plus, grad_minus = (np.asarray(grad_L(xo.tensor(w + s * eps * v))) for s in (1, -1))
fd_Hv = (grad_plus - grad_minus) / (2 * eps)
np.testing.assert_allclose(Hv, fd_Hv, rtol=1e-6)

H_columns = np.stack([np.asarray(hvp(logistic_loss, xo.tensor(w), xo.tensor(e)))
                      for e in np.eye(d)], axis=1)
np.testing.assert_allclose(H_columns, H_columns.T, rtol=1e-12, atol=1e-14)
np.testing.assert_allclose(H_columns, H, rtol=1e-10)
print("Hessian from 4 HVPs:\n", np.round(H_columns, 4))

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
#
# Next: [4. Training a CNN on the digits](04_training_a_cnn.ipynb).
