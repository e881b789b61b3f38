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
# # 2. Windows and indices, visualised
#
# Half of the StableHLO op set moves data around by *windows* (`convolution`,
# `reduce_window`, `select_and_scatter`) or by *index vectors* (`gather`, `scatter`).
# Their definitions in the spec are short formulas over index spaces; their attributes
# (strides, paddings, dilations, dimension numbers) are where the subtlety is.
#
# For each op this notebook
#
# 1. writes the spec's formula as a plain NumPy loop, index by index, with the spec's
#    variable names (slow, but obviously the formula);
# 2. runs the spec's own example through xops and checks the spec's expected result;
# 3. draws a small case on a grid, with the numbers written in the cells;
# 4. asserts that xops' fast kernel agrees with the NumPy loop.
#
# The spec's examples use integer element types; we run them in `f32` (their values are
# small integers, exact in `f32`). xops compiles each Numba kernel once per element
# type, so staying with one type keeps this notebook quick on a cold cache; the integer
# versions give the same numbers.

# %%
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Rectangle
from sklearn.datasets import load_digits

import xops as xo
import xops.numpy as xnp

# %% [markdown]
# One drawing helper: an array as a grid of coloured cells with its numbers written in,
# optional rectangles around groups of cells.

# %%
def draw_grid(ax, a, title="", boxes=(), fmt="{:g}", cmap="Blues", muted=None):
    """Draw 2-D array ``a`` cell by cell. ``boxes``: (row, col, height, width, colour)
    rectangles; ``muted``: a boolean mask of cells drawn in grey (padding)."""
    a = np.asarray(a, dtype=float)
    ax.imshow(a, cmap=cmap, vmin=min(a.min(), 0), vmax=max(a.max(), 1))
    if muted is not None:
        ax.imshow(np.where(muted, 1.0, np.nan), cmap="Greys", vmin=0, vmax=4, alpha=0.9)
    for (i, j), value in np.ndenumerate(a):
        dark = value > 0.6 * a.max() and (muted is None or not muted[i, j])
        ax.text(j, i, fmt.format(value), ha="center", va="center", fontsize=7,
                color="white" if dark else "black")
    for r, c, h, w, colour in boxes:
        ax.add_patch(Rectangle((c - 0.5, r - 0.5), w, h, fill=False, lw=2, ec=colour))
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(title, fontsize=9)


# %% [markdown]
# ## Convolution
#
# The spec defines `convolution` by rewriting it as windows of `lhs`: for every output
# spatial index,
#
# * `padded_lhs = pad(lhs, 0, padding[:, 0], padding[:, 1], lhs_dilation - 1)`:
#   padding on both sides, and `lhs_dilation - 1` zeros *between* input elements
#   (a "transposed" convolution);
# * `lhs_window_start = output_spatial_index * window_strides`;
# * `lhs_window = slice(padded_lhs, lhs_window_start, lhs_window_start + lhs_window_dimensions, rhs_dilation)`:
#   the window's taps are `rhs_dilation` apart (an "atrous" convolution);
# * the output element is `dot_general` of that window with the kernel, contracting the
#   spatial and input-feature dimensions.
#
# Here is that recipe for NCHW inputs and OIHW kernels (xops' default layout), written
# with the spec's names.

# %%
def pad_reference(x, value, low, high, interior):
    """The spec's pad for non-negative paddings, on the last len(low) dims."""
    lead = x.shape[:x.ndim - len(low)]
    core = x.shape[len(lead):]
    dilated = [0 if n == 0 else (n - 1) * (i + 1) + 1 for n, i in zip(core, interior)]
    shape = lead + tuple(lo + n + hi for lo, n, hi in zip(low, dilated, high))
    out = np.full(shape, value, dtype=x.dtype)
    where = (...,) + tuple(slice(lo, lo + n, i + 1) for lo, n, i in zip(low, dilated, interior))
    out[where] = x
    return out


def num_windows(padded, window, stride):
    """C25 / C15: the number of windows along one dimension."""
    return 0 if padded == 0 or window > padded else (padded - window) // stride + 1


def convolution_reference(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation):
    """lhs [N, C, H, W], rhs [O, C, KH, KW] -> result [N, O, OH, OW]."""
    lhs, rhs = np.asarray(lhs), np.asarray(rhs)
    padded_lhs = pad_reference(lhs, 0, [p[0] for p in padding], [p[1] for p in padding],
                               [d - 1 for d in lhs_dilation])
    kernel = rhs.shape[2:]
    dilated_window = [(k - 1) * d + 1 for k, d in zip(kernel, rhs_dilation)]
    out_spatial = [num_windows(p, w, s) for p, w, s in
                   zip(padded_lhs.shape[2:], dilated_window, window_strides)]
    result = np.zeros((lhs.shape[0], rhs.shape[0], *out_spatial), lhs.dtype)
    for n, o, oh, ow in np.ndindex(*result.shape):
        h0, w0 = oh * window_strides[0], ow * window_strides[1]
        lhs_window = padded_lhs[n, :, h0:h0 + dilated_window[0]:rhs_dilation[0],
                                w0:w0 + dilated_window[1]:rhs_dilation[1]]
        result[n, o, oh, ow] = np.sum(lhs_window * rhs[o])
    return result


# %% [markdown]
# The spec's example uses a `[b, 0, 1, f]` (NHWC) layout and `lhs_dilation = 2`: a 4x4
# input becomes 7x7 with zeros between its elements, and a 3x3 kernel of ones slides
# over it with stride 4.

# %%
spec_lhs = np.array([[1, 2, 5, 6], [3, 4, 7, 8], [10, 11, 14, 15], [12, 13, 16, 17]],
                    np.float32).reshape(1, 4, 4, 1)
spec_rhs = np.ones((3, 3, 1, 1), np.float32)
spec_result = xo.convolution(
    xo.tensor(spec_lhs), xo.tensor(spec_rhs), window_strides=[4, 4],
    padding=[[0, 0], [0, 0]], lhs_dilation=[2, 2], rhs_dilation=[1, 1],
    dimension_numbers="[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]")
print(spec_result.tolist())
assert spec_result.tolist() == [[[[10], [26]], [[46], [62]]]]  # the spec's %result

# the same through the NumPy recipe, in NCHW / OIHW
nchw = spec_lhs.transpose(0, 3, 1, 2)
oihw = spec_rhs.transpose(3, 2, 0, 1)
np.testing.assert_array_equal(
    convolution_reference(nchw, oihw, [4, 4], [[0, 0], [0, 0]], [2, 2], [1, 1]),
    np.asarray(spec_result).transpose(0, 3, 1, 2))

# %% [markdown]
# Drawn: the dilated input (grey cells are the inserted zeros), the two windows of the
# top output row, and the result.

# %%
dilated = pad_reference(nchw[0, 0], 0, [0, 0], [0, 0], [1, 1])
inserted = np.ones_like(dilated, bool)
inserted[::2, ::2] = False
fig, axes = plt.subplots(1, 2, figsize=(7, 3.4))
draw_grid(axes[0], dilated, "lhs with lhs_dilation = 2 (grey: inserted zeros)",
          boxes=[(0, 0, 3, 3, "crimson"), (0, 4, 3, 3, "darkorange")], muted=inserted)
draw_grid(axes[1], np.asarray(spec_result)[0, :, :, 0], "result (window_strides = 4)",
          boxes=[(0, 0, 1, 1, "crimson"), (0, 1, 1, 1, "darkorange")])
plt.tight_layout()
plt.show()

# %% [markdown]
# Strides, padding and kernel dilation on a 7x7 input: the picture shows which input
# cells each of two output elements reads. The kernel is all ones, so each output is
# the sum of the boxed cells of its colour (check one by eye: the red output of the top
# row is 0 + 0 + 0 + 0 + 0 + 1 + 0 + 7 + 8 = 16). With `rhs_dilation = 2` a 3x3 kernel
# covers a 5x5 area, reading every other cell.

# %%
image = np.arange(49, dtype=np.float32).reshape(1, 1, 7, 7)
kernel = np.ones((1, 1, 3, 3), np.float32)
configs = {
    "stride 2, padding 1": dict(window_strides=[2, 2], padding=[[1, 1], [1, 1]],
                                lhs_dilation=[1, 1], rhs_dilation=[1, 1]),
    "rhs_dilation 2": dict(window_strides=[1, 1], padding=[[0, 0], [0, 0]],
                           lhs_dilation=[1, 1], rhs_dilation=[2, 2]),
}
fig, axes = plt.subplots(2, 2, figsize=(8, 8))
for row, (name, cfg) in zip(axes, configs.items()):
    got = np.asarray(xo.convolution(xo.tensor(image), xo.tensor(kernel), **cfg))
    want = convolution_reference(image, kernel, **cfg)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    low = [p[0] for p in cfg["padding"]]
    padded = pad_reference(image[0, 0], 0, low, [p[1] for p in cfg["padding"]], [0, 0])
    muted = np.ones_like(padded, bool)
    muted[low[0]:low[0] + 7, low[1]:low[1] + 7] = False
    s, d = cfg["window_strides"][0], cfg["rhs_dilation"][0]
    boxes = []
    for (oh, ow), colour in [((0, 0), "crimson"), ((1, 1), "darkorange")]:
        for kh in range(3):
            for kw in range(3):
                boxes.append((oh * s + kh * d, ow * s + kw * d, 1, 1, colour))
    draw_grid(row[0], padded, f"{name}: input (grey = padding), taps of 2 outputs",
              boxes=boxes, muted=muted)
    draw_grid(row[1], got[0, 0], f"{name}: result {got.shape[2]}x{got.shape[3]}",
              boxes=[(0, 0, 1, 1, "crimson"), (1, 1, 1, 1, "darkorange")])
    assert got[0, 0, 0, 0] == sum(padded[kh * d, kw * d] for kh in range(3) for kw in range(3))
plt.tight_layout()
plt.show()

# %% [markdown]
# The output sizes follow constraint C25: `num_windows = floor((padded - dilated_window) / stride) + 1`.
# (9 - 3) // 2 + 1 = 4 for the first, (7 - 5) // 1 + 1 = 3 for the second. A sweep over
# many attribute combinations, xops against the NumPy loop:

# %%
rng = np.random.default_rng(0)
lhs = rng.standard_normal((2, 3, 9, 8)).astype(np.float32)
rhs = rng.standard_normal((4, 3, 3, 2)).astype(np.float32)
checked = 0
for strides in ([1, 1], [2, 3]):
    for padding in ([[0, 0], [0, 0]], [[2, 1], [0, 3]]):
        for lhs_dilation in ([1, 1], [2, 1]):
            for rhs_dilation in ([1, 1], [1, 2]):
                cfg = dict(window_strides=strides, padding=padding,
                           lhs_dilation=lhs_dilation, rhs_dilation=rhs_dilation)
                got = np.asarray(xo.convolution(xo.tensor(lhs), xo.tensor(rhs), **cfg))
                want = convolution_reference(lhs, rhs, **cfg)
                assert got.shape == want.shape, (cfg, got.shape, want.shape)
                np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
                checked += 1
print(f"{checked} attribute combinations agree with the spec's formula")

# %% [markdown]
# ## `reduce_window`
#
# `reduce_window` reduces every window of its input with a `body` function. The spec:
#
# * `padded_inputs = pad(inputs, init_values, padding[:, 0], padding[:, 1], base_dilations - 1)`
#   (padding and base dilation insert the **init value**, not zeros);
# * `window_start = result_index * window_strides`;
# * `window_end = window_start + (window_dimensions - 1) * window_dilations + 1`;
# * `windows = slice(padded_inputs, window_start, window_end, window_dilations)`;
# * `result[result_index] = reduce(windows, init_values, axes, body)`.

# %%
def reduce_window_reference(x, init_value, window_dimensions, window_strides,
                            base_dilations, window_dilations, padding, reducer):
    x = np.asarray(x)
    padded = pad_reference(x, init_value, [p[0] for p in padding], [p[1] for p in padding],
                           [b - 1 for b in base_dilations])
    dilated_window = [(w - 1) * d + 1 for w, d in zip(window_dimensions, window_dilations)]
    shape = [num_windows(p, w, s) for p, w, s in
             zip(padded.shape, dilated_window, window_strides)]
    result = np.empty(shape, x.dtype)
    for result_index in np.ndindex(*shape):
        window_start = [i * s for i, s in zip(result_index, window_strides)]
        window_end = [s + w for s, w in zip(window_start, dilated_window)]
        window = padded[tuple(slice(s, e, d) for s, e, d in
                              zip(window_start, window_end, window_dilations))]
        result[result_index] = reducer(np.append(window.ravel(), init_value))
    return result


# the spec's example: base dilation 2, window dilation 3, padding (2, 1) on dim 0
spec_input = np.array([[1, 2], [3, 4], [5, 6]], np.float32)
spec_args = dict(window_dimensions=[2, 1], window_strides=[4, 1], base_dilations=[2, 1],
                 window_dilations=[3, 1], padding=[[2, 1], [0, 0]])
rw = xo.reduce_window(xo.tensor(spec_input), xo.tensor(0.0), body=xo.add, **spec_args)
print(rw.tolist())
assert rw.tolist() == [[0, 0], [3, 4]]  # the spec's %result
np.testing.assert_array_equal(reduce_window_reference(spec_input, 0, reducer=np.sum, **spec_args),
                              np.asarray(rw))

# %% [markdown]
# Drawn: the padded, base-dilated input along dimension 0 (grey cells hold the init
# value 0) and the two windows of length 2 with dilation 3, four rows apart.

# %%
padded_spec = pad_reference(spec_input, 0, [2, 0], [1, 0], [1, 0])
is_init = np.ones_like(padded_spec, bool)
is_init[2:7:2] = False
fig, axes = plt.subplots(1, 2, figsize=(5, 4))
draw_grid(axes[0], padded_spec, "padded + base-dilated input",
          boxes=[(0, 0, 1, 2, "crimson"), (3, 0, 1, 2, "crimson"),
                 (4, 0, 1, 2, "darkorange"), (7, 0, 1, 2, "darkorange")], muted=is_init)
draw_grid(axes[1], np.asarray(rw), "result",
          boxes=[(0, 0, 1, 2, "crimson"), (1, 0, 1, 2, "darkorange")])
plt.tight_layout()
plt.show()

# %% [markdown]
# On a small image: a handwritten digit from scikit-learn's bundled set (8x8, values
# 0..16). Max pooling is `reduce_window` with `maximum` and the init value $-\infty$;
# average pooling is `reduce_window` with `add`, divided by the window size.

# %%
digit = load_digits().images[0].astype(np.float32)
img = xo.tensor(digit)
neg_inf = xo.tensor(-np.inf, "f32")
max_pool = xo.reduce_window(img, neg_inf, [2, 2], [2, 2], body=xo.maximum)
avg_pool = xo.reduce_window(img, xo.tensor(0.0), [3, 3], [1, 1], padding=[[1, 1], [1, 1]],
                            body=xo.add) / 9.0
no_dilation = dict(base_dilations=[1, 1], window_dilations=[1, 1])
np.testing.assert_array_equal(
    np.asarray(max_pool),
    reduce_window_reference(digit, -np.inf, [2, 2], [2, 2], padding=[[0, 0], [0, 0]],
                            reducer=np.max, **no_dilation))
np.testing.assert_allclose(
    np.asarray(avg_pool),
    reduce_window_reference(digit, 0.0, [3, 3], [1, 1], padding=[[1, 1], [1, 1]],
                            reducer=np.sum, **no_dilation) / 9.0, rtol=1e-6)

fig, axes = plt.subplots(1, 3, figsize=(10, 3.6))
draw_grid(axes[0], digit, "digit (8x8), two of the 2x2 windows", cmap="Greys",
          boxes=[(0, 2, 2, 2, "crimson"), (2, 0, 2, 2, "darkorange")])
draw_grid(axes[1], np.asarray(max_pool), "max pool 2x2, stride 2", cmap="Greys",
          boxes=[(0, 1, 1, 1, "crimson"), (1, 0, 1, 1, "darkorange")])
draw_grid(axes[2], np.asarray(avg_pool), "average 3x3, stride 1, padding 1",
          fmt="{:.1f}", cmap="Greys")
plt.tight_layout()
plt.show()

# %% [markdown]
# ## `select_and_scatter`
#
# `select_and_scatter` is the other half of pooling: in each window of `operand` it
# *selects* one position (with a `select` function such as `GE`: keep the current pick
# while it is `>=` the candidate, so the **first** maximum in row-major order wins), and
# *scatters* that window's `source` value there, combining values that land on the same
# position with `scatter` (here `add`), starting from `init_value`. It is exactly the
# gradient of max pooling. The NumPy loop:

# %%
def select_and_scatter_reference(operand, source, init_value, window_dimensions,
                                 window_strides, padding):
    operand = np.asarray(operand)
    result = np.full(operand.shape, init_value, np.asarray(source).dtype)
    for source_index in np.ndindex(*np.shape(source)):
        start = [i * s - p[0] for i, s, p in zip(source_index, window_strides, padding)]
        selected = None
        for offset in np.ndindex(*window_dimensions):
            index = tuple(a + b for a, b in zip(start, offset))
            if any(i < 0 or i >= n for i, n in zip(index, operand.shape)):
                continue  # padding is never selected
            if selected is None or not operand[selected] >= operand[index]:
                selected = index
        result[selected] += source[source_index]
    return result


# the spec's example: windows of 3x1, stride 2, one row of padding at the bottom
spec_operand = np.array([[1, 5], [2, 5], [3, 6], [4, 4]], np.float32)
spec_source = np.array([[5, 6], [7, 8]], np.float32)


def ge(a, b):
    return xo.compare(a, b, "GE")


sas = xo.select_and_scatter(xo.tensor(spec_operand), xo.tensor(spec_source), xo.tensor(0.0),
                            [3, 1], [2, 1], [[0, 1], [0, 0]], select=ge, scatter=xo.add)
print(sas.tolist())
assert sas.tolist() == [[0, 0], [0, 0], [5, 14], [7, 0]]  # the spec's %result
np.testing.assert_array_equal(
    select_and_scatter_reference(spec_operand, spec_source, 0, [3, 1], [2, 1],
                                 [[0, 1], [0, 0]]), np.asarray(sas))

# %% [markdown]
# On the digit: 3x3 windows with stride 2 overlap, so one pixel can be the maximum of
# several windows and collects several source values. With a source of ones, each pixel
# of the result counts the windows whose maximum it is. Then the same op as the
# gradient of max pooling: `xo.grad` of `sum(w * max_pool(x))` is
# `select_and_scatter(x, w, 0, ...)`. (Around the op under study, everyday forms:
# `xnp.ones`, `.sum()`.)

# %%
window, stride, padding = [3, 3], [2, 2], [[1, 1], [1, 1]]
pooled = xo.reduce_window(img, neg_inf, window, stride, padding=padding, body=xo.maximum)
counts = xo.select_and_scatter(img, xnp.ones(pooled.shape), xo.tensor(0.0), window, stride,
                               padding, select=ge, scatter=xo.add)
np.testing.assert_array_equal(
    counts,
    select_and_scatter_reference(digit, np.ones(pooled.shape, np.float32), 0.0, window,
                                 stride, padding))
assert counts.sum() == pooled.size  # every window picks exactly one pixel

weights = xo.tensor(rng.standard_normal(pooled.shape).astype(np.float32))


def weighted_pool(x):
    p = xo.reduce_window(x, neg_inf, window, stride, padding=padding, body=xo.maximum)
    return (p * weights).sum()


pool_grad = xo.grad(weighted_pool)(img)
np.testing.assert_allclose(
    np.asarray(pool_grad),
    select_and_scatter_reference(digit, np.asarray(weights), 0.0, window, stride, padding),
    rtol=1e-6)

fig, axes = plt.subplots(1, 3, figsize=(10, 3.6))
draw_grid(axes[0], digit, "digit; two overlapping 3x3 windows", cmap="Greys",
          boxes=[(1, 1, 3, 3, "crimson"), (1, 3, 3, 3, "darkorange")])  # windows (1,1), (1,2)
draw_grid(axes[1], np.asarray(counts), "select_and_scatter(source = 1)", cmap="Oranges")
draw_grid(axes[2], np.asarray(pool_grad), "grad of sum(w * max_pool)", fmt="{:.1f}",
          cmap="RdBu")
plt.tight_layout()
plt.show()

# %% [markdown]
# ## `gather`: many slices at computed offsets
#
# `gather(operand, start_indices, ...)` cuts a slice of size `slice_sizes` out of
# `operand` at every index vector in `start_indices`. Its attributes say how the pieces
# are laid out:
#
# * `index_vector_dim`: the dimension of `start_indices` that holds the index vectors;
#   the other dimensions are *batch* dimensions of the result;
# * `start_index_map`: which operand dimension each component of an index vector
#   addresses;
# * `collapsed_slice_dims`: slice dimensions of size 1 dropped from the result;
# * `offset_dims`: where the remaining slice dimensions go in the result.
#
# And, crucially, start indices are **clamped** so the slice stays inside the operand:
# `full_start_index[d] = clamp(start_index[k], 0, dim(operand, d) - slice_sizes[d])`.
#
# The spec's formula, line by line. Gather and scatter read their index vectors the
# same way, so that part is one helper:

# %%
def index_vector(indices, batch_index, index_vector_dim):
    """The spec's start_index: the vector of ``indices`` at ``batch_index`` along
    ``index_vector_dim``, or, when that is rank(indices), the single number there."""
    if index_vector_dim < indices.ndim:
        before, after = list(batch_index[:index_vector_dim]), list(batch_index[index_vector_dim:])
        return indices[tuple(before + [slice(None)] + after)]
    return [indices[tuple(batch_index)]]


def gather_reference(operand, start_indices, offset_dims, collapsed_slice_dims,
                     start_index_map, index_vector_dim, slice_sizes):
    operand, start_indices = np.asarray(operand), np.asarray(start_indices)
    batch_dim_sizes = [n for d, n in enumerate(start_indices.shape) if d != index_vector_dim]
    offset_dim_sizes = [n for d, n in enumerate(slice_sizes) if d not in collapsed_slice_dims]
    rank = len(batch_dim_sizes) + len(offset_dim_sizes)
    batch_dims = [d for d in range(rank) if d not in offset_dims]
    shape = [0] * rank
    for d, n in zip(batch_dims, batch_dim_sizes):
        shape[d] = n
    for d, n in zip(offset_dims, offset_dim_sizes):
        shape[d] = n
    result = np.empty(shape, operand.dtype)
    for result_index in np.ndindex(*shape):
        batch_index = [result_index[d] for d in batch_dims]
        start_index = index_vector(start_indices, batch_index, index_vector_dim)
        full_start_index = [0] * operand.ndim
        for d_start, d_operand in enumerate(start_index_map):
            full_start_index[d_operand] = int(np.clip(
                start_index[d_start], 0, operand.shape[d_operand] - slice_sizes[d_operand]))
        offset_index = iter(result_index[d] for d in offset_dims)
        full_offset_index = [0 if d in collapsed_slice_dims else next(offset_index)
                             for d in range(operand.ndim)]
        operand_index = tuple(s + o for s, o in zip(full_start_index, full_offset_index))
        result[result_index] = operand[operand_index]
    return result


# the spec's example
spec_operand = np.arange(1, 25, dtype=np.float32).reshape(3, 4, 2)
spec_indices = np.array([[[0, 0], [1, 0], [2, 1]], [[0, 1], [1, 1], [0, 2]]])
spec_attrs = dict(offset_dims=[2, 3], collapsed_slice_dims=[0], start_index_map=[1, 0],
                  index_vector_dim=2, slice_sizes=[1, 2, 2])
g = xo.gather(xo.tensor(spec_operand), xo.tensor(spec_indices), **spec_attrs)
print(g.type)
assert g.tolist() == [[[[1, 2], [3, 4]], [[3, 4], [5, 6]], [[13, 14], [15, 16]]],
                      [[[9, 10], [11, 12]], [[11, 12], [13, 14]], [[17, 18], [19, 20]]]]
np.testing.assert_array_equal(gather_reference(spec_operand, spec_indices, **spec_attrs),
                              np.asarray(g))

# %% [markdown]
# As a picture: crop 3x3 patches out of the digit at four (row, column) positions. The
# index vectors are the rows of a 4x2 `start_indices` (`index_vector_dim = 1`), both
# operand dimensions are addressed (`start_index_map = [0, 1]`), and the patch
# dimensions become result dimensions 1 and 2. The last start (7, 2) would run off the
# bottom edge, so it is clamped to row 8 - 3 = 5: the dashed box shows where it was
# asked for.

# %%
starts = np.array([[0, 0], [2, 3], [4, 5], [7, 2]])
patch_attrs = dict(offset_dims=[1, 2], collapsed_slice_dims=[], start_index_map=[0, 1],
                   index_vector_dim=1, slice_sizes=[3, 3])
patches = xo.gather(img, xo.tensor(starts), **patch_attrs)
np.testing.assert_array_equal(gather_reference(digit, starts, **patch_attrs),
                              np.asarray(patches))
np.testing.assert_array_equal(patches[3], digit[5:8, 2:5])  # clamped

colours = ["crimson", "darkorange", "seagreen", "royalblue"]
fig = plt.figure(figsize=(9, 4.2))
grid = fig.add_gridspec(2, 4)
ax = fig.add_subplot(grid[:, :2])
clamped = np.clip(starts, 0, np.array(digit.shape) - 3)
draw_grid(ax, digit, "operand and the four slices (dashed: asked for)", cmap="Greys",
          boxes=[(r, c, 3, 3, col) for (r, c), col in zip(clamped, colours)])
ax.add_patch(Rectangle((starts[3, 1] - 0.5, starts[3, 0] - 0.5), 3, 3, fill=False, lw=1.5,
                       ec=colours[3], ls="--"))
for k in range(4):
    a = fig.add_subplot(grid[k // 2, 2 + k % 2])
    draw_grid(a, np.asarray(patches)[k], f"result[{k}]: start {tuple(int(v) for v in starts[k])}",
              cmap="Greys", boxes=[(0, 0, 3, 3, colours[k])])
plt.tight_layout()
plt.show()

# %% [markdown]
# NumPy-style indexing on a tensor is this op: `img[rows, cols]` with integer index
# arrays is one `gather` whose index vectors pair the arrays up element by element. The
# four crops are `img[R, C]` with `R[k, i, j] = start_row[k] + i` and
# `C[k, i, j] = start_col[k] + j`. Unlike the spec's `gather`, indexing never clamps: the
# crop asked for at (7, 2) is an `IndexError`, as in NumPy, so we index with the clamped
# starts.

# %%
offsets = np.arange(3)


def crop_indices(corners):
    return (corners[:, 0, None, None] + offsets[None, :, None],
            corners[:, 1, None, None] + offsets[None, None, :])


np.testing.assert_array_equal(img[crop_indices(clamped)], patches)  # the same 4x3x3 crops
try:
    img[crop_indices(starts)]
except IndexError as e:
    print(e)
else:
    raise AssertionError("an out-of-bounds crop did not raise")

# %% [markdown]
# ## `scatter`: the transpose of gather
#
# `scatter` walks the other way: every element of `updates` is sent to an index of the
# result and combined there with `update_computation`. Two differences from gather
# matter in practice:
#
# * indices are **not clamped**: an update whose target is out of bounds is skipped,
#   element by element;
# * several updates may hit the same element; they are combined one after another
#   (with `add`, they sum).

# %%
def scatter_add_reference(inputs, scatter_indices, updates, update_window_dims,
                          inserted_window_dims, scatter_dims_to_operand_dims,
                          index_vector_dim):
    result = np.array(inputs, copy=True)
    scatter_indices, updates = np.asarray(scatter_indices), np.asarray(updates)
    update_scatter_dims = [d for d in range(updates.ndim) if d not in update_window_dims]
    for update_index in np.ndindex(*updates.shape):
        update_scatter_index = [update_index[d] for d in update_scatter_dims]
        start_index = index_vector(scatter_indices, update_scatter_index, index_vector_dim)
        full_start_index = [0] * result.ndim
        for d_start, d_input in enumerate(scatter_dims_to_operand_dims):
            full_start_index[d_input] = int(start_index[d_start])
        window_index = iter(update_index[d] for d in update_window_dims)
        full_window_index = [0 if d in inserted_window_dims else next(window_index)
                             for d in range(result.ndim)]
        result_index = tuple(s + w for s, w in zip(full_start_index, full_window_index))
        if all(0 <= i < n for i, n in zip(result_index, result.shape)):
            result[result_index] += updates[update_index]
    return result


# the spec's example; note the index [0, 9]: out of bounds, so its updates are dropped
spec_input = np.arange(1, 25, dtype=np.float32).reshape(3, 4, 2)
spec_scatter_indices = np.array([[[0, 2], [1, 0], [2, 1]], [[0, 1], [1, 0], [0, 9]]])
spec_updates = np.ones((2, 3, 2, 2), np.float32)
spec_dims = dict(update_window_dims=[2, 3], inserted_window_dims=[0],
                 scatter_dims_to_operand_dims=[1, 0], index_vector_dim=2)
sc = xo.scatter(xo.tensor(spec_input), xo.tensor(spec_scatter_indices),
                xo.tensor(spec_updates), update_computation=xo.add, **spec_dims)
assert sc.tolist() == [[[1, 2], [5, 6], [7, 8], [7, 8]],
                       [[10, 11], [12, 13], [14, 15], [16, 17]],
                       [[18, 19], [20, 21], [21, 22], [23, 24]]]  # the spec's %result
np.testing.assert_array_equal(
    scatter_add_reference(spec_input, spec_scatter_indices, spec_updates, **spec_dims),
    np.asarray(sc))

# %% [markdown]
# As a picture: "stamp" 3x3 patches of ones into an empty 8x8 canvas at the same starts
# as the crops above. The overlapping stamps add up; the stamp at (7, 2) is *not*
# clamped: its first row lands on row 7 and its other rows fall off the canvas and are
# dropped. Then the transpose relation: the gradient of `gather` with respect to its
# operand is a `scatter`-add of the cotangent.

# %%
canvas, stamps = xnp.zeros((8, 8)), xnp.ones((4, 3, 3))
stamp_dims = dict(update_window_dims=[1, 2], inserted_window_dims=[],
                  scatter_dims_to_operand_dims=[0, 1], index_vector_dim=1)
stamped = xo.scatter(canvas, xo.tensor(starts), stamps, update_computation=xo.add,
                     **stamp_dims)
want = scatter_add_reference(np.zeros((8, 8), np.float32), starts,
                             np.ones((4, 3, 3), np.float32), **stamp_dims)
np.testing.assert_array_equal(stamped, want)
assert stamped.sum() == 3 * 9 + 3  # three whole stamps, one row of the last

# the everyday form: .at[].add is a scatter-add; mode="drop" skips out-of-bounds targets
# as scatter does (the default, as NumPy, raises an IndexError instead)
np.testing.assert_array_equal(canvas.at[crop_indices(starts)].add(1.0, mode="drop"), stamped)

# gather's operand gradient = scatter-add of the cotangent at the same (clamped) starts
cotangent = rng.standard_normal((4, 3, 3)).astype(np.float32)


def crops_dot_cotangent(x):
    crops = xo.gather(x, xo.tensor(starts), **patch_attrs)
    return (crops * cotangent).sum()


gather_grad = xo.grad(crops_dot_cotangent)(img)
np.testing.assert_allclose(
    np.asarray(gather_grad),
    scatter_add_reference(np.zeros((8, 8), np.float32), clamped, cotangent, **stamp_dims),
    rtol=1e-6, atol=1e-6)

fig, axes = plt.subplots(1, 2, figsize=(8, 4))
draw_grid(axes[0], np.asarray(stamped), "scatter-add of four 3x3 stamps", cmap="Oranges",
          boxes=[(r, c, 3, 3, col) for (r, c), col in zip(starts, colours)])
draw_grid(axes[1], np.asarray(gather_grad), "grad of a gather = scatter-add", fmt="{:.1f}",
          cmap="RdBu", boxes=[(r, c, 3, 3, col) for (r, c), col in zip(clamped, colours)])
plt.tight_layout()
plt.show()

# %% [markdown]
# ## Summary
#
# * Window ops are "pad (and dilate), then slide a (dilated) window with a stride";
#   C25/C15's `num_windows` gives every output size. Convolution pads with zeros,
#   `reduce_window` with its init value.
# * `select_and_scatter` picks the first maximal element of each window and sends the
#   window's source value there: max pooling's gradient.
# * `gather` clamps its start indices; `scatter` skips out-of-bounds updates element by
#   element and combines colliding ones. Each is the other's transpose, which is how
#   xops differentiates them.
# * Their everyday forms: `t[rows, cols]` is a gather that raises on an out-of-bounds
#   index instead of clamping; `t.at[rows, cols].add(v, mode="drop")` is scatter-add.
#
# Next: [3. Autodiff from scratch](03_autodiff_from_scratch.ipynb).
