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
# This notebook covers the three things you meet first:
#
# 1. **tensors and element types**: every element type of the spec, from `i1` and 4-bit
#    integers to `bf16`, the `f8` family and `complex<f64>`, computed exactly as XLA
#    does;
# 2. **broadcasting**: StableHLO has no implicit broadcasting; `broadcast_in_dim` is the
#    one op that changes shapes by repeating data, and NumPy-style broadcasting is a
#    special case of it;
# 3. **errors**: every constraint of the spec is checked before anything runs, and the
#    error names the op and the constraint's label (`C1`, `C2`, ...).
#
# Each claim below is checked with an `assert` against NumPy or against the spec's own
# examples, so this notebook fails its CI run if xops ever disagrees.

# %%
import numpy as np

import xops as xo

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
# Every op is a function named as in the spec. The Python operators are shorthands for
# them: `x * 2 + 1` *is* `xo.add(xo.multiply(x, 2), 1)`. A Python scalar is a *weak*
# operand: it takes the element type of the tensor it meets, so `x * 2` stays `f32`.

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
# constraint C1: `element_type(lhs) = element_type(rhs)`). xops never promotes silently;
# the error says what to do instead.

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
# ## Summary
#
# * `xo.<spec_name>(operands..., attributes...)` runs the spec's op now and returns an
#   immutable tensor; Python operators are shorthands that broadcast like NumPy.
# * Narrow floats compute in `f32` and round once to nearest even; `f8E4M3FN` has no
#   infinity; small integers wrap at their own width; nothing is promoted implicitly.
# * `broadcast_in_dim` is the spec's one broadcasting op; NumPy's rule is the case
#   `broadcast_dimensions = [R - r, ..., R - 1]`.
# * Constraint violations are `xo.SpecError`s labelled with the spec's constraint ids.
#
# Next: [2. Windows and indices](02_windows_and_indices.ipynb).
