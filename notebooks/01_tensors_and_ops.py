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
# # 1. Tensors and the spec's ops
#
# xops is an eager array framework whose operations are the operations of the
# [StableHLO specification](https://openxla.org/stablehlo/spec) (and of XLA's
# *Operation Semantics*), with the spec's exact semantics. Every op is a Python function
# `xo.<spec_name>` taking the spec's operands and attributes under the spec's names, and
# it returns a new, immutable `xo.Tensor` right away: there is no graph to build and no
# `jit` to call.
#
# This notebook covers the things you meet first:
#
# 1. **tensors and element types**: every element type of the spec, from `i1` and 4-bit
#    integers to `bf16`, the `f8` family and `complex<f64>`, computed exactly as XLA
#    does;
# 2. **broadcasting**: StableHLO has no implicit broadcasting; `broadcast_in_dim` is the
#    one op that changes shapes by repeating data, and NumPy-style broadcasting is a
#    special case of it;
# 3. **errors**: every constraint of the spec is checked before anything runs, and the
#    error names the op and the constraint's label (`C1`, `C2`, ...);
# 4. **the everyday layer** over the same tensors: `xops.numpy` (the Python array API
#    standard), Tensor methods, NumPy's promotion and indexing, `.at[]` updates, NumPy
#    functions and DLPack, and scikit-learn running on xops tensors.
#
# Each claim below is checked with an `assert` against NumPy or against the spec's own
# examples, so this notebook fails its CI run if xops ever disagrees.

# %%
import os

os.environ["SCIPY_ARRAY_API"] = "1"  # before SciPy / scikit-learn are imported (last section)

import numpy as np

import xops as xo
import xops.numpy as xnp

# %% [markdown]
# ## Tensors
#
# `xo.tensor` makes a tensor from nested lists, NumPy arrays or scalars. xops prints a
# tensor's *type* XLA-style, element type then shape: `f32[2,3]` is the spec's
# `tensor<2x3xf32>`, and element types keep the spec's names. Python floats become
# `f32` (as in PyTorch and JAX), Python ints `i64`, bools `i1`; a NumPy array keeps its
# dtype; an explicit element type can be named with the spec's spelling (`"bf16"`,
# `"f8E4M3FN"`, `"i4"`) or a NumPy/ml_dtypes dtype.

# %%
x = xo.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
print(repr(x))
print("type:", x.type, " element type:", x.dtype.spec_name, " shape:", x.shape)

assert str(x.type) == "f32[2,3]"
assert xo.tensor(3).dtype == xo.int64
assert xo.tensor(True).dtype == xo.bool_
assert xo.tensor(np.zeros(2, np.float64)).dtype == xo.float64
assert xo.tensor([1, 2], "ui8").dtype.spec_name == "ui8"

# %% [markdown]
# Tensors are values: `np.asarray(t)` gives their elements, and no op ever changes an
# existing tensor.
#
# Every op is a function named as in the spec. The Python operators belong to the
# everyday layer (the last section): they broadcast and promote like NumPy, and on
# operands of one element type they run the spec ops, so `x * 2 + 1` computes
# `xo.add(xo.multiply(x, 2), 1)`. A Python scalar is a *weak* operand: it takes the
# element type of the tensor it meets, so `x * 2` stays `f32`.

# %%
y = x * 2 + 1
y_spelled_out = xo.add(xo.multiply(x, 2), 1)
print(y)

x_np = np.asarray(x)
assert y.dtype == xo.float32
np.testing.assert_array_equal(np.asarray(y), x_np * 2 + 1)
np.testing.assert_array_equal(np.asarray(y), np.asarray(y_spelled_out))

# a few more ops, each checked against NumPy
np.testing.assert_allclose(np.asarray(xo.exponential(x)), np.exp(x_np), rtol=1e-6)
np.testing.assert_array_equal(np.asarray(xo.compare(x, 3.0, "GE")), x_np >= 3)
np.testing.assert_array_equal(np.asarray(xo.transpose(x, [1, 0])), x_np.T)
np.testing.assert_array_equal(np.asarray(x[:, ::-1]), x_np[:, ::-1])  # reverse + slice
np.testing.assert_array_equal(x.T, x_np.T)  # the everyday spelling of that transpose

# %% [markdown]
# ## Element types
#
# The spec's element types, and their names in xops:

# %%
for dt in xo.all_dtypes():
    print(f"{dt.spec_name:>14}  xo.{dt.pyname}")

# %% [markdown]
# ### `bf16`: eight significant bits, rounded to nearest even
#
# `bf16` is the top half of an `f32`: 1 sign bit, the same 8 exponent bits, and only 7
# stored mantissa bits (8 significant bits with the implicit leading one). Between 1
# and 2 its values are therefore spaced by $2^{-7}$. A value that falls between two of
# them rounds to the nearer one, and a value exactly halfway rounds to the one whose
# last mantissa bit is 0 (*round to nearest even*, the IEEE default).
#
# Here are $1 + k\,2^{-9}$ for $k = 0..8$: the spacing is a quarter of bf16's, so we see
# values rounded down, up, and two exact ties going different ways.

# %%
ks = np.arange(9)
exact = 1.0 + ks * 2.0**-9
rounded = np.asarray(xo.convert(xo.tensor(exact, "bf16"), "f32"))
for k, e, r in zip(ks, exact, rounded):
    print(f"1 + {k}/512 = {e:.8f} -> bf16 {r:.8f}")

# 1 + 2/512 is halfway between 1 (mantissa ...0) and 1 + 1/128 (mantissa ...1): -> 1
# 1 + 6/512 is halfway between 1 + 1/128 (...1) and 1 + 2/128 (...0): -> 1 + 2/128
assert rounded[2] == 1.0 and rounded[6] == 1.0 + 2 / 128
assert rounded[1] == 1.0 and rounded[3] == 1.0 + 1 / 128

# %% [markdown]
# The rounding rule fits in three lines of integer arithmetic on the bits of an `f32`:
# add `0x7FFF` plus the lowest kept bit, then drop the low 16 bits. We compare xops'
# `convert` with it, bit for bit, on a million random floats (`bitcast_convert`
# reinterprets the bits of a `bf16` as a `ui16`, as the spec defines it).

# %%
def bf16_bits_reference(f32):
    """Round float32 values to bf16 (nearest even); NaN stays a quiet NaN."""
    b = f32.view(np.uint32).astype(np.uint64)
    rounded = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)
    nan = ((b >> 16) | 0x40).astype(np.uint16)
    return np.where(np.isnan(f32), nan, rounded)


rng = np.random.default_rng(0)
scales = 10.0 ** rng.integers(-30, 30, 1_000_000)  # magnitudes from 1e-30 to 1e29
samples = (rng.standard_normal(1_000_000) * scales).astype(np.float32)
samples[:4] = [np.inf, -np.inf, 0.0, -0.0]
got_bits = np.asarray(xo.bitcast_convert(xo.convert(xo.tensor(samples), "bf16"), "ui16"))
np.testing.assert_array_equal(got_bits, bf16_bits_reference(samples))

# %% [markdown]
# Arithmetic on narrow floats computes in `f32` and rounds **once** per op, as XLA does.
# So `a * b` in bf16 equals "multiply the two bf16 values exactly in f32, then round"
# (the product of two 8-bit significands fits in f32's 24 bits exactly):

# %%
a = xo.tensor(rng.standard_normal(1000), "bf16")
b = xo.tensor(rng.standard_normal(1000), "bf16")
a32, b32 = (np.asarray(xo.convert(t, "f32")) for t in (a, b))
product_bits = np.asarray(xo.bitcast_convert(a * b, "ui16"))
np.testing.assert_array_equal(product_bits, bf16_bits_reference(a32 * b32))
print(a[:4], "*", b[:4], "=", (a * b)[:4])

# %% [markdown]
# ### `f8E4M3FN`: all 256 values
#
# The 8-bit float `f8E4M3FN` has 1 sign bit, 4 exponent bits (bias 7) and 3 mantissa
# bits. "FN" means *finite*: there is no infinity, and only the two patterns
# `S.1111.111` are NaN, which frees `1111.110` for the largest value, $1.75 \cdot 2^8 = 448$.
#
# With only 256 bit patterns we can list them all: `iota` makes the integers 0..255 as
# `ui8`, and `bitcast_convert` reads each byte as an `f8E4M3FN`. We decode the same bytes
# with the format's formula in NumPy and compare.

# %%
codes = xo.iota(0, [256], "ui8")
f8 = xo.bitcast_convert(codes, "f8E4M3FN")
f8_values = np.asarray(xo.convert(f8, "f32"))


def decode_e4m3fn(byte):
    sign = -1.0 if byte & 0x80 else 1.0
    exponent, mantissa = (byte >> 3) & 0xF, byte & 0x7
    if exponent == 0xF and mantissa == 0x7:
        return np.nan
    if exponent == 0:  # subnormal: no implicit 1, exponent 1 - bias
        return sign * mantissa / 8 * 2.0**-6
    return sign * (1 + mantissa / 8) * 2.0 ** (exponent - 7)


reference = np.array([decode_e4m3fn(i) for i in range(256)])
np.testing.assert_array_equal(f8_values, reference)  # NaNs at the same places
finite = f8_values[np.isfinite(f8_values)]
print("largest:", finite.max(), " smallest positive:", finite[finite > 0].min(),
      " NaN patterns:", int(np.isnan(f8_values).sum()))
assert finite.max() == 448.0 and finite[finite > 0].min() == 2.0**-9

# %% [markdown]
# Because there is no infinity, an `f8E4M3FN` result too large to represent is NaN,
# while `f8E5M2` (which has infinities, like IEEE types) overflows to `inf`:

# %%
overflow_e4m3 = xo.tensor([448.0], "f8E4M3FN") * 2
overflow_e5m2 = xo.tensor([57344.0], "f8E5M2") * 2  # 57344 is f8E5M2's largest finite
print(overflow_e4m3, overflow_e5m2)
assert np.isnan(np.asarray(xo.convert(overflow_e4m3, "f32"))[0])
assert np.asarray(xo.convert(overflow_e5m2, "f32"))[0] == np.inf

# %% [markdown]
# ### `i4`: two's complement wraparound
#
# Integer types wrap at their own width. `i4` holds -8..7, so `7 + 1 = -8`, and `ui4`
# holds 0..15, so `0 - 1 = 15`. Below, the whole `i4` addition and multiplication tables
# (16 x 16) are compared with "compute exactly, then keep the low 4 bits and
# sign-extend" in NumPy. The tables are built with `broadcast_in_dim`, the subject of
# the next section: the row vector goes along dimension 1, the column along dimension 0.

# %%
values = np.arange(-8, 8)
v = xo.tensor(values, "i4")
rows = xo.broadcast_in_dim(v, [0], [16, 16])  # rows[i, j] = values[i]
cols = xo.broadcast_in_dim(v, [1], [16, 16])  # cols[i, j] = values[j]


def wrap_i4(n):
    return (n + 8) % 16 - 8


exact_sum = values[:, None] + values[None, :]
exact_product = values[:, None] * values[None, :]
np.testing.assert_array_equal(np.asarray(rows + cols).astype(np.int64), wrap_i4(exact_sum))
np.testing.assert_array_equal(np.asarray(rows * cols).astype(np.int64), wrap_i4(exact_product))

print(xo.tensor([7, -8, 3], "i4") + 1)          # [-8, -7, 4]
print(xo.tensor([0, 1], "ui4") - 1)             # [15, 0]
assert np.asarray(xo.tensor([7], "i4") + 1).astype(int)[0] == -8
assert np.asarray(xo.tensor([0], "ui4") - 1).astype(int)[0] == 15

# %% [markdown]
# ### Conversions and the absence of implicit promotion
#
# `convert` from float to integer truncates the fractional part (spec); what happens
# when the truncated value does not fit is still open in the spec (openxla/stablehlo#180).
# xops does what XLA does on CPU: it saturates, and NaN becomes 0 (see
# `docs/semantics.md` for every such choice).

# %%
c = xo.convert(xo.tensor([1e10, -1e10, float("nan"), 2.7, -2.7]), "i32")
print(c)
np.testing.assert_array_equal(np.asarray(c), [2**31 - 1, -(2**31), 0, 2, -2])

# %% [markdown]
# StableHLO ops require their operands to have the *same* element type (for `add`,
# constraint C1: `element_type(lhs) = element_type(rhs)`). The `xo.<op>` functions never
# promote; the error says what to do instead. (The operators promote the standard
# types, as NumPy does, but never `bf16`, `f8` or 4-bit types: see the everyday layer.)

# %%
try:
    xo.add(xo.tensor([1.0]), xo.tensor([1.0], "bf16"))
except xo.SpecError as e:
    promotion_error = e
print(promotion_error)
assert (promotion_error.op, promotion_error.label) == ("add", "C1")
assert "xo.convert" in str(promotion_error)

explicit = xo.add(xo.convert(xo.tensor([1.0]), "bf16"), xo.tensor([1.0], "bf16"))
assert explicit.dtype == xo.bfloat16
try:
    xo.tensor([1.0]) + xo.tensor([1.0], "bf16")  # the operator refuses it too
except xo.SpecError as e:
    assert "xo.convert" in str(e)
else:
    raise AssertionError("f32 + bf16 did not raise")

# %% [markdown]
# ## Broadcasting vs `broadcast_in_dim`
#
# Elementwise ops in StableHLO take operands of the same **shape** too (`add` C1 again).
# There is no implicit broadcasting in the IR; frameworks insert an explicit
# `broadcast_in_dim` (look at any JAX program lowered to StableHLO: notebook 5 has one).

# %%
row = xo.tensor([10.0, 20.0, 30.0])
try:
    xo.add(x, row)
except xo.SpecError as e:
    shape_error = e
print(shape_error)
assert shape_error.label == "C1"

# %% [markdown]
# The spec defines `broadcast_in_dim(operand, broadcast_dimensions)` with result type
# given, as
#
# > `result[result_index] = operand[operand_index]` where for all `d` in
# > `axes(operand)`: `operand_index[d] = 0` if `dim(operand, d) = 1`, else
# > `operand_index[d] = result_index[broadcast_dimensions[d]]`.
#
# So `broadcast_dimensions[d]` says *which result dimension operand dimension `d`
# becomes*; the other result dimensions repeat the data; size-1 operand dimensions are
# stretched. The formula translates line by line into a (slow, obviously correct) NumPy
# loop:

# %%
def broadcast_in_dim_reference(operand, broadcast_dimensions, shape):
    operand = np.asarray(operand)
    result = np.empty(shape, operand.dtype)
    for result_index in np.ndindex(*shape):
        operand_index = tuple(
            0 if operand.shape[d] == 1 else result_index[broadcast_dimensions[d]]
            for d in range(operand.ndim))
        result[result_index] = operand[operand_index]
    return result


# %% [markdown]
# The spec's example: a `1x3` operand with `broadcast_dimensions = [2, 1]` becomes
# `2x3x2`. Operand dimension 1 (size 3) becomes result dimension 1; operand dimension 0
# (size 1) maps to result dimension 2 and is stretched; result dimension 0 is new.

# %%
operand = xo.tensor([[1, 2, 3]], "i32")
result = xo.broadcast_in_dim(operand, [2, 1], [2, 3, 2])
print(result)

spec_result = [[[1, 1], [2, 2], [3, 3]], [[1, 1], [2, 2], [3, 3]]]  # from the spec
np.testing.assert_array_equal(np.asarray(result), spec_result)
np.testing.assert_array_equal(np.asarray(result),
                              broadcast_in_dim_reference(operand, [2, 1], [2, 3, 2]))

# %% [markdown]
# **NumPy broadcasting is the special case** that aligns the operand with the *trailing*
# dimensions of the result: `broadcast_dimensions = [R - r, ..., R - 1]`. xops' Python
# operators (`+`, `*`, ...) broadcast this way, by inserting exactly that
# `broadcast_in_dim` before the spec op:

# %%
def numpy_style_dims(operand_rank, result_rank):
    return list(range(result_rank - operand_rank, result_rank))


via_operator = x + row  # NumPy rules
via_spec = xo.add(x, xo.broadcast_in_dim(row, numpy_style_dims(1, 2), [2, 3]))
np.testing.assert_array_equal(np.asarray(via_operator), np.asarray(via_spec))
np.testing.assert_array_equal(np.asarray(via_operator), x_np + np.asarray(row))

# every (operand shape, result shape) pair NumPy accepts gives the same answer
for op_shape, res_shape in [((3,), (2, 3)), ((1, 3), (4, 3)), ((2, 1), (2, 5)),
                            ((1,), (2, 2, 2)), ((4, 1, 3), (2, 4, 5, 3))]:
    a = np.arange(np.prod(op_shape)).reshape(op_shape)
    dims = numpy_style_dims(len(op_shape), len(res_shape))
    np.testing.assert_array_equal(np.asarray(xo.broadcast_in_dim(xo.tensor(a), dims, res_shape)),
                                  np.broadcast_to(a, res_shape))

# %% [markdown]
# `broadcast_in_dim` can do more than NumPy's rule: a vector can go along *any* result
# dimension without a reshape, and dimensions can be permuted while broadcasting (as in
# the spec's example). A column of per-row values:

# %%
per_row = xo.tensor([100.0, 200.0])
column = xo.broadcast_in_dim(per_row, [0], [2, 3])  # NumPy would need per_row[:, None]
print(column)
np.testing.assert_array_equal(np.asarray(x + column), x_np + np.array([[100.0], [200.0]]))

# XLA's older Broadcast op only adds leading dimensions: broadcast(operand, sizes)
np.testing.assert_array_equal(np.asarray(xo.broadcast(row, [2])),
                              np.asarray(xo.broadcast_in_dim(row, [1], [2, 3])))

# %% [markdown]
# ## Labelled constraint errors
#
# The spec lists each op's constraints as `(C1)`, `(C2)`, ... For `broadcast_in_dim`:
#
# * (C2) `size(broadcast_dimensions) = rank(operand)`.
# * (C3) `0 <= broadcast_dimensions < rank(result)`.
# * (C4) `is_unique(broadcast_dimensions)`.
# * (C5) for all `d`: `dim(operand, d) = 1` or `dim(operand, d) = dim(result, broadcast_dimensions[d])`.
#
# xops checks every one of them in Python before any kernel runs. A `SpecError` (a
# subclass of both `ValueError` and `TypeError`) names the op and the label, and gives
# the actual numbers. Each violation below is caught and its label checked.

# %%
violations = {
    "C2": lambda: xo.broadcast_in_dim(xo.tensor([1, 2, 3]), [0, 1], [2, 3]),
    "C3": lambda: xo.broadcast_in_dim(xo.tensor([1, 2, 3]), [2], [2, 3]),
    "C4": lambda: xo.broadcast_in_dim(xo.tensor([[1, 2, 3]]), [1, 1], [2, 3]),
    "C5": lambda: xo.broadcast_in_dim(xo.tensor([1, 2, 3]), [0], [2, 3]),
}
for label, bad_call in violations.items():
    try:
        bad_call()
    except xo.SpecError as e:
        print(e)
        assert e.op == "broadcast_in_dim" and e.label == label, (e.op, e.label)
        assert str(e).startswith(f"broadcast_in_dim ({label}): ")
        assert isinstance(e, ValueError) and isinstance(e, TypeError)
    else:
        raise AssertionError(f"{label}: no error raised")

# %% [markdown]
# Errors from other ops read the same way; here `pad`, whose (C2) requires one
# `edge_padding_low` entry per operand dimension:

# %%
try:
    xo.pad(xo.tensor([[1, 2], [3, 4]]), xo.tensor(0), [1, 1, 1], [0, 0], [0, 0])
except xo.SpecError as e:
    pad_error = e
print(pad_error)
assert str(pad_error).startswith("pad (C2): ")

# %% [markdown]
# ## The everyday layer
#
# Everything above is the **spec layer**: `xo.<op>` functions with the spec's operands
# and attributes, one element type per op, no implicit broadcasting, exactly the spec's
# semantics. Day-to-day code wants NumPy's conveniences, and xops has them as a second
# layer over the same `Tensor`: `xops.numpy` (`import xops.numpy as xnp`) is a complete
# namespace of the Python array API standard 2024.12 (plus `xnp.array`, `xnp.einsum`,
# `xnp.random`), and the Tensor's operators and methods call it. It is built on the spec
# ops, so all of it records on the autodiff tape. `docs/numpy.md` describes it all,
# including where it deviates from the standard.

# %%
a = xnp.arange(6.0).reshape(2, 3)  # Python floats default to float32, as in PyTorch and JAX
a_np = np.arange(6.0).reshape(2, 3)
print(repr(a), a.sum(), a.mean(axis=0), a.T.type, sep="\n")

assert a.dtype == xnp.float32 and str(a.T.type) == "f32[3,2]"
assert a.sum().item() == 15.0 and a.mean(axis=0).tolist() == [1.5, 2.5, 3.5]
np.testing.assert_array_equal(a.max(axis=1), a_np.max(axis=1))  # np.testing takes tensors
np.testing.assert_array_equal(a.T @ a, a_np.T @ a_np)
np.testing.assert_array_equal(xnp.where(a > 2, a, -1.0), np.where(a_np > 2, a_np, -1.0))
np.testing.assert_allclose(xnp.linalg.vector_norm(a, axis=1),
                           np.linalg.norm(a_np, axis=1), rtol=1e-6)

loss = (a ** 2).mean()
print(f"loss = {loss:.4f}")  # format specs work on 0-d tensors
assert f"{loss:.4f}" == "9.1667" and float(loss) == np.float32(55 / 6)

# %% [markdown]
# ### Promotion: the operators promote, `xo.<op>` does not
#
# Operators, methods and `xnp` functions broadcast like NumPy and **promote** mixed
# element types: the standard's table within a kind (`f32 + f64 -> f64`), the float type
# for an integer with a float (`i64 + f32 -> f32`), Python scalars weak. `/` is true
# division and `%` takes the divisor's sign, as in Python. The spec functions stay
# strict: `xo.add` of `f32` and `f64` is constraint C1's error, and `xo.divide` and
# `xo.remainder` truncate as the spec says. `bf16`, `f8` and 4-bit types have no place
# in the standard's table and mix only with themselves, in both layers (see above).

# %%
f32 = xnp.asarray([1.0, 2.0])
f64 = xnp.asarray([0.5, 0.25], dtype=xnp.float64)
mixed = f32 + f64
assert mixed.dtype == xnp.float64 and mixed.tolist() == [1.5, 2.25]
assert (xnp.asarray([1, 2]) + f32).dtype == xnp.float32  # int64 with float32
assert (f32 + np.ones(2)).dtype == xnp.float64           # a float64 NumPy array
try:
    xo.add(f32, f64)
except xo.SpecError as e:
    strict_error = e
print(strict_error)
assert strict_error.label == "C1" and "xo.convert" in str(strict_error)

i = xnp.asarray([7, -7])
print(i / 2, i // 2, i % 3)
assert (i / 2).tolist() == [3.5, -3.5] and (i / 2).dtype == xnp.float32
assert (i // 2).tolist() == [3, -4] and (i % 3).tolist() == [1, 2]
assert xo.divide(i, xo.tensor([2, 2])).tolist() == [3, -3]     # the spec: truncation
assert xo.remainder(i, xo.tensor([3, 3])).tolist() == [1, -1]  # the dividend's sign

# %% [markdown]
# ### Indexing and `.at[]` updates
#
# `t[key]` takes NumPy's indexing: ints, slices with any step, `...`, `None`, integer
# arrays (one `gather`, with NumPy's placement of the new axes) and boolean masks (the
# result's shape depends on the data, which is fine eagerly). An index out of bounds is
# an `IndexError`, as in NumPy (a bare `gather` would clamp it). Tensors are values, so
# updates are functional, as in JAX: `t.at[idx].set(v)` / `.add` / `.multiply` / `.min` /
# `.max` return a new tensor through `scatter`; repeated indices all combine (`add`
# adds every update), except in `set`, where the last one wins.

# %%
b = xnp.asarray([[3.0, -1.0, 4.0], [-1.0, 5.0, -9.0]])
b_np = np.asarray(b)
print(b[b > 0], b[:, [2, 0, 0]], b[[1, 0], [0, 2]], sep="\n")
np.testing.assert_array_equal(b[b > 0], b_np[b_np > 0])
np.testing.assert_array_equal(b[:, [2, 0, 0]], b_np[:, [2, 0, 0]])
np.testing.assert_array_equal(b[[1, 0], [0, 2]], b_np[[1, 0], [0, 2]])
np.testing.assert_array_equal(b[..., None, ::-2], b_np[..., None, ::-2])
try:
    b[2]
except IndexError as e:
    print(e)
    assert "out of bounds for axis 0 with size 2" in str(e)

counts = xnp.zeros(4).at[xnp.asarray([0, 2, 2, 2])].add(1.0)  # a histogram
assert counts.tolist() == [1.0, 0.0, 3.0, 0.0]
assert xnp.zeros(3).at[[1, 1]].set(xnp.asarray([7.0, 9.0])).tolist() == [0.0, 9.0, 0.0]
assert b.at[b < 0].set(0.0).tolist() == [[3.0, 0.0, 4.0], [0.0, 5.0, 0.0]]
assert b.tolist() == b_np.tolist()  # .at[] made new tensors; b is unchanged

# gradients flow through indexing: a duplicated index receives both cotangents
g = xo.grad(lambda w: (w[[0, 0, 2]] * xnp.asarray([1.0, 2.0, 3.0])).sum())(xnp.zeros(3))
assert g.tolist() == [3.0, 0.0, 3.0]

# %% [markdown]
# `t[idx] = v` works too. It **rebinds** `t` to `t.at[idx].set(v)`: the name `t` sees the
# new value, but results computed from `t` before, NumPy views of it and detached
# copies keep the old one (copy-on-write). When the autodiff tape saved the old value,
# a version counter makes `backward` raise rather than use the new one.

# %%
t = xnp.arange(4.0)
head, flipped, host = t[:2], t.T, np.asarray(t)
t[0] = 10.0
t[t > 2.5] += 100.0  # read, add, write back
print(t, head, flipped, host)
assert t.tolist() == [110.0, 1.0, 2.0, 103.0]
assert head.tolist() == [0.0, 1.0] and flipped.tolist() == [0.0, 1.0, 2.0, 3.0]
assert host.tolist() == [0.0, 1.0, 2.0, 3.0]

# %% [markdown]
# ### NumPy functions and DLPack
#
# NumPy's own functions accept tensors and **return tensors**, recorded on the tape:
# ufuncs through `__array_ufunc__` (`np.sin(t)`, `np.add(t, 1)`, `ndarray + t`) and the
# array functions that `xnp` has a counterpart of through `__array_function__`
# (`np.mean`, `np.concatenate`, `np.where`, `np.linalg.norm`, ...). Any other NumPy
# function raises a `TypeError` that points to `xnp` instead of silently computing in
# NumPy and dropping the gradient. `np.asarray(t)` stays a read-only NumPy view of the
# values. DLPack exchanges buffers without copying: `np.from_dlpack(t)` and
# `torch.from_dlpack(t)` see the tensor's memory (read-only: tensors are immutable), and
# `xnp.from_dlpack` takes NumPy arrays and PyTorch tensors.

# %%
s = np.sin(a)
print(type(s).__name__, s.type)
assert isinstance(s, xo.Tensor)
np.testing.assert_allclose(s, np.sin(a_np), rtol=1e-6)
assert isinstance(np.concatenate([a, a]), xo.Tensor) and np.mean(a).item() == 2.5

# NumPy calls inside a differentiated function: d/dw sum(w sin w) = sin w + w cos w
w0 = np.array([0.5, 1.0, 2.0])
dw = xo.grad(lambda w: np.sum(w * np.sin(w)))(w0)  # a NumPy array in: f64, gradient out
np.testing.assert_allclose(dw, np.sin(w0) + w0 * np.cos(w0), rtol=1e-14)
try:
    np.median(a)
except TypeError as e:
    print(e)
    assert "xops.numpy" in str(e)

shared = np.from_dlpack(a)  # zero-copy, read-only
assert np.shares_memory(shared, np.asarray(a)) and not shared.flags.writeable
np.testing.assert_array_equal(shared, a_np)
grid = np.linspace(0.0, 1.0, 5)
imported = xnp.from_dlpack(grid)  # zero-copy the other way
assert imported.dtype == xnp.float64 and np.shares_memory(np.asarray(imported), grid)
assert (imported * 4).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]

# %% [markdown]
# ## scikit-learn on xops tensors
#
# scikit-learn runs many estimators on any array library with an array API namespace
# (`sklearn.config_context(array_api_dispatch=True)`; SciPy must read
# `SCIPY_ARRAY_API=1` when it is imported, which the first cell of this notebook set).
# `Tensor.__array_namespace__()` returns `xops.numpy`, so a standardise / PCA / linear
# discriminant pipeline runs on xops tensors, every step computed by xops ops, and gives
# the NumPy pipeline's numbers.

# %%
import sklearn
from sklearn.datasets import load_digits
from sklearn.decomposition import PCA
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.preprocessing import StandardScaler

X, y = load_digits(return_X_y=True)
Xt, yt = xo.tensor(X), xo.tensor(y)
with sklearn.config_context(array_api_dispatch=True):
    Z = StandardScaler().fit_transform(Xt)
    P = PCA(n_components=10, svd_solver="full").fit_transform(Z)
    lda = LinearDiscriminantAnalysis().fit(P, yt)
    predicted = lda.predict(P)
    accuracy = xnp.mean(xnp.astype(predicted == yt, xnp.float64))
print(type(P).__name__, P.type, f"training accuracy {accuracy:.4f}")
assert isinstance(P, xo.Tensor) and str(P.type) == "f64[1797,10]"

# the same pipeline on NumPy arrays
P_np = PCA(n_components=10, svd_solver="full").fit_transform(StandardScaler().fit_transform(X))
predicted_np = LinearDiscriminantAnalysis().fit(P_np, y).predict(P_np)
np.testing.assert_allclose(P, P_np, rtol=1e-9, atol=1e-9)
np.testing.assert_array_equal(predicted, predicted_np)
assert accuracy.item() == np.mean(predicted_np == y) and accuracy.item() > 0.8

# %% [markdown]
# ## Summary
#
# * `xo.<spec_name>(operands..., attributes...)` runs the spec's op now and returns an
#   immutable tensor.
# * Narrow floats compute in `f32` and round once to nearest even; `f8E4M3FN` has no
#   infinity; small integers wrap at their own width; the spec ops promote nothing.
# * `broadcast_in_dim` is the spec's one broadcasting op; NumPy's rule is the case
#   `broadcast_dimensions = [R - r, ..., R - 1]`.
# * Constraint violations are `xo.SpecError`s labelled with the spec's constraint ids.
# * The everyday layer (`xops.numpy`, the operators, methods, indexing and `.at[]`,
#   NumPy functions, DLPack) promotes and broadcasts like NumPy, is built on the spec
#   ops and records on the tape; scikit-learn's array API dispatch runs on it.
#
# Next: [2. Windows and indices](02_windows_and_indices.ipynb).
