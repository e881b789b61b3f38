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
# # 5. Running a JAX-exported program, op by op
#
# StableHLO is the portable form in which ML frameworks hand programs to compilers. JAX
# produces it for any jitted function: `jax.jit(f).lower(*args).as_text()` is the
# function as StableHLO text, one op per line, with every type spelled out.
#
# Since xops implements the StableHLO ops with the spec's semantics, it can **run** such
# a program eagerly: `xo.stablehlo.load` parses the text, and each op becomes a call of
# the matching `xo.<name>` function. So a program exported from JAX runs on xops'
# kernels, can be traced op by op with every intermediate value in hand, and can even be
# differentiated with xops' tape.
#
# JAX is not needed to run this notebook: the exported text is stored in
# `data/mlp.mlir`. The cell that produced it runs only where JAX is installed, and then
# also checks xops' results against JAX's.

# %%
import io
import os
from collections import Counter
from pathlib import Path

import numpy as np

import xops as xo
from xops.stablehlo import executor
from xops.stablehlo.handlers import OPS, TERMINATORS, XO_NAMES

MLIR = Path("data") / "mlp.mlir"

# %% [markdown]
# ## The function
#
# A small two-layer network with a recurrent refinement loop, chosen to exercise several
# op families: matrix products (`dot_general`), broadcasting (`broadcast_in_dim`),
# elementwise math (`tanh`, `exponential`, `divide`), a loop (`while`, with `compare`
# and a `func.call` in its body), and reductions (`reduce` with `maximum` and `add`,
# from the softmax):
#
# ```python
# def mlp(x, w1, b1, u, w2):
#     h = jnp.tanh(x @ w1 + b1)
#     h = jax.lax.fori_loop(0, 2, lambda i, h: h + jnp.tanh(h @ u), h)
#     logits = h @ w2
#     p = jax.nn.softmax(logits, axis=-1)
#     gate = jax.lax.logistic(logits)
#     return p, jnp.sum(p * gate, axis=-1)
# ```
#
# The same function in NumPy is our reference:

# %%
def mlp_numpy(x, w1, b1, u, w2):
    h = np.tanh(x @ w1 + b1)
    for _ in range(2):
        h = h + np.tanh(h @ u)
    logits = h @ w2
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    p = e / e.sum(axis=-1, keepdims=True)
    gate = 1 / (1 + np.exp(-logits))
    return p, np.sum(p * gate, axis=-1)


rng = np.random.default_rng(0)
shapes = [(4, 3), (3, 5), (5,), (5, 5), (5, 3)]
args = [rng.standard_normal(s).astype(np.float32) for s in shapes]
p_ref, score_ref = mlp_numpy(*[a.astype(np.float64) for a in args])

# %% [markdown]
# ## Exporting it with JAX (only where JAX is installed)
#
# This cell is how `data/mlp.mlir` was made. Where JAX is importable it lowers the
# function again and compares the text with the stored file (JAX versions may print it
# a little differently, so a difference is reported, not an error); set
# `XOPS_REGENERATE_NOTEBOOK_DATA=1` to rewrite the file.

# %%
try:
    import jax
    import jax.numpy as jnp
except ImportError:
    jax = None
    print("JAX is not installed: using the stored", MLIR)

if jax is not None:
    def mlp(x, w1, b1, u, w2):
        h = jnp.tanh(x @ w1 + b1)
        h = jax.lax.fori_loop(0, 2, lambda i, h: h + jnp.tanh(h @ u), h)
        logits = h @ w2
        p = jax.nn.softmax(logits, axis=-1)
        gate = jax.lax.logistic(logits)
        return p, jnp.sum(p * gate, axis=-1)

    exported = ("// Exported from JAX by 05_stablehlo_from_jax.ipynb: "
                "jax.jit(mlp).lower(*args).as_text()\n" + jax.jit(mlp).lower(*args).as_text())
    if os.environ.get("XOPS_REGENERATE_NOTEBOOK_DATA") == "1":
        MLIR.write_text(exported)
    same = exported.strip() == MLIR.read_text().strip()
    print(f"JAX {jax.__version__}: the export is",
          "identical to" if same else "DIFFERENT from", MLIR)
    jax_p, jax_score = (np.asarray(t) for t in jax.jit(mlp)(*args))
    np.testing.assert_allclose(jax_p, p_ref, rtol=1e-5, atol=1e-6)

# %% [markdown]
# ## The program
#
# Here is the exported text. `func.func public @main` has the function's arguments and
# results; every line `%name = stablehlo.<op> operands, attributes : types` is one op;
# `fori_loop` became a `stablehlo.while` whose `cond` and `do` regions hold its
# condition and body (the body calls the private function `@closed_call`).

# %%
text = MLIR.read_text()
print(text)

# %% [markdown]
# ## Parsing
#
# `xo.stablehlo.parse` turns the text into plain data: modules of functions, functions
# of blocks, blocks of `Op`s with their results, operands, attributes (under the spec's
# names) and declared types. Walking every op, regions included, shows which ops the
# program uses; each must have a handler in xops' op table `OPS`, which maps its MLIR
# attributes onto the arguments of an `xo.*` function (the terminators `return` and
# `stablehlo.return` are handled by the executor's loop itself).

# %%
(module,) = xo.stablehlo.parse(text)
print("functions:", list(module.funcs))


def walk(ops):
    for op in ops:
        yield op
        for region in op.regions:
            for block in region.blocks:
                yield from walk(block.ops)


all_ops = [op for func in module.funcs.values() for op in walk(func.body.entry.ops)]
counts = Counter(op.name for op in all_ops)
for name, n in counts.most_common():
    runs_as = ", ".join(f"xo.{f}" for f in XO_NAMES.get(name, ())) or "(ends its block)"
    print(f"{n:3d} x {name:28s} -> {runs_as}")

unsupported = sorted(name for name in counts if name not in OPS and name not in TERMINATORS)
assert not unsupported, f"ops without a handler: {unsupported}"
for name in counts:
    for f in XO_NAMES.get(name, ()):
        assert callable(getattr(xo, f, None)), f"{name} needs xo.{f}"
assert {"stablehlo.dot_general", "stablehlo.while", "stablehlo.reduce",
        "stablehlo.broadcast_in_dim", "stablehlo.tanh"} <= set(counts)

# %% [markdown]
# One op, as the executor sees it: the first `dot_general`, its attribute
# `dot_dimension_numbers` with the spec's field names.

# %%
first = module.funcs["main"].body.entry.ops[0]
print(first.name, first.results, "<-", first.operands)
print(first.attrs["dot_dimension_numbers"].fields)
print("declared result type:", first.result_types[0])
assert first.attrs["dot_dimension_numbers"].fields["lhs_contracting_dimensions"] == [1]

# %% [markdown]
# ## Running it
#
# `xo.stablehlo.load` gives a `Program` whose functions are Python callables.

# %%
prog = xo.stablehlo.load(MLIR)
inputs = [xo.tensor(a) for a in args]
p, score = prog.main(*inputs)
print(p, score, sep="\n")

assert str(p.type) == "f32[4,3]" and str(score.type) == "f32[4]"
np.testing.assert_allclose(np.asarray(p), p_ref, rtol=1e-5, atol=1e-6)
np.testing.assert_allclose(np.asarray(score), score_ref, rtol=1e-5, atol=1e-6)
np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=1e-6)  # a softmax
if jax is not None:
    np.testing.assert_allclose(np.asarray(p), jax_p, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(score), jax_score, rtol=1e-5, atol=1e-6)
    print("xops and JAX agree")

# %% [markdown]
# ## Tracing: every op with its types and values
#
# `prog.main.trace(*args)` runs the function and prints one line per op: the source
# line, the result names, the operands with their types, the result types and a summary
# of the values. Region ops are indented: we see the loop's condition and body run twice,
# and the condition's third run return `false`.

# %%
buffer = io.StringIO()
prog.main.trace(*inputs, file=buffer)
trace = buffer.getvalue()
print(trace)

trace_lines = trace.splitlines()
body_calls = [line for line in trace_lines if "func.call(" in line]
conditions = [line for line in trace_lines if "stablehlo.compare(" in line]
assert len(body_calls) == 2                       # fori_loop(0, 2, ...)
assert [c.split()[-1] for c in conditions] == ["true", "true", "false"]
assert "-> tensor<4x5xf32>" in trace_lines[1]     # %0 = dot_general ... : tensor<4x5xf32>

# %% [markdown]
# ## Stepping through it ourselves
#
# The executor's loop is short: keep a table from SSA names to values; for each op,
# look up its operands, call its handler from `OPS` (which calls the `xo.*` function),
# store its results under their names; stop at `return`. Written out as a generator, it
# hands us each op with its values, so we can check intermediate results against NumPy
# as the program runs. (Regions, like the `while` body, run inside the handler, through
# the executor's own loop.)

# %%
def steps(program, func_name, *args):
    """Yield (op, operand values, result values) for each top-level op of a function."""
    module = program.functions[func_name].module
    func = module.funcs[func_name]
    interpreter = executor.Interpreter()  # no tracing
    scope = executor._Scope()             # the table from SSA names to values
    for name, value in zip(func.arg_names, args):
        scope.vals[name] = value
    for op in func.body.entry.ops:
        operands = [scope.get(name) for name in op.operands]
        if op.name in TERMINATORS:
            yield op, operands, None
            return
        context = executor.Context(interpreter, op, scope, False, (), module, 0)
        out = OPS[op.name](context, op, operands)
        results = list(out) if len(op.results) > 1 else [out]
        for name, value in zip(op.results, results):
            scope.vals[name] = value
        yield op, operands, results


values = {}
for op, operands, results in steps(prog, "main", *inputs):
    if results is None:
        print(f"return {', '.join(op.operands)}")
        final = operands
        break
    values.update(zip(op.results, results))
    declared = ", ".join(str(t) for t in op.result_types)
    print(f"{', '.join(op.results):>14} = {op.name:28s} : {declared}")
    # every value has exactly the type the program declares
    for value, t in zip(results, op.result_types):
        assert list(value.shape) == list(t.shape) and value.dtype == t.elem, (op, value.type, t)

# %% [markdown]
# The intermediate values, against the NumPy reference computed step by step:

# %%
x, w1, b1, u, w2 = (a.astype(np.float64) for a in args)
h = np.tanh(x @ w1 + b1)
np.testing.assert_allclose(np.asarray(values["%0"]), x @ w1, rtol=1e-5, atol=1e-6)
np.testing.assert_allclose(np.asarray(values["%4"]), h, rtol=1e-5, atol=1e-6)
for _ in range(2):
    h = h + np.tanh(h @ u)
np.testing.assert_allclose(np.asarray(values["%5#2"]), h, rtol=1e-5, atol=1e-5)
assert values["%5#1"].item() == 2                 # the loop counter
logits = h @ w2
np.testing.assert_allclose(np.asarray(values["%7"]), logits.max(axis=1), rtol=1e-5)
np.testing.assert_allclose(np.asarray(final[0]), p_ref, rtol=1e-5, atol=1e-6)
np.testing.assert_allclose(np.asarray(final[1]), score_ref, rtol=1e-5, atol=1e-6)
print("every checked intermediate matches NumPy")

# %% [markdown]
# ## Gradients through the loaded program
#
# Each op ran as an `xo.*` call, so each recorded itself on xops' autodiff tape: the
# program is differentiable, loop included, although JAX exported only the forward
# computation. The gradient of `sum(score)` with respect to the first layer's weights,
# checked against central finite differences of the NumPy reference in `f64` and, where
# JAX is installed, against `jax.grad`.

# %%
def total_score(w1_):
    _, s = prog.main(inputs[0], w1_, *inputs[2:])
    return s.sum()


g_w1 = np.asarray(xo.grad(total_score)(inputs[1]))
print(g_w1)

fd = np.zeros_like(w1)
eps = 1e-6
for i in np.ndindex(*w1.shape):
    step = np.zeros_like(w1)
    step[i] = eps
    fd[i] = (mlp_numpy(x, w1 + step, b1, u, w2)[1].sum()
             - mlp_numpy(x, w1 - step, b1, u, w2)[1].sum()) / (2 * eps)
np.testing.assert_allclose(g_w1, fd, rtol=1e-4, atol=1e-5)
print("the gradient matches finite differences")

if jax is not None:
    jax_g = jax.grad(lambda w: jnp.sum(mlp(args[0], w, *args[2:])[1]))(args[1])
    np.testing.assert_allclose(g_w1, np.asarray(jax_g), rtol=1e-4, atol=1e-5)
    print("the gradient matches jax.grad")

# %% [markdown]
# ## Summary
#
# * `jax.jit(f).lower(*args).as_text()` is StableHLO; `xo.stablehlo.load` runs it
#   eagerly, one `xo.*` call per op, with the spec's semantics and xops' kernels.
# * `Function.trace` prints every op with its types and values; the executor's loop
#   (operands from a name table, a handler per op, results back into the table) is
#   small enough to step through by hand.
# * Loaded programs are differentiable by xops' tape, loops included.
# * `python -m xops.stablehlo FILE.mlir` runs StableHLO's own interpreter test files
#   (`check.expect_*` ops) the same way; see `docs/stablehlo.md`.
