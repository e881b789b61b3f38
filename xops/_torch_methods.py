"""PyTorch's spellings of Tensor methods (``t.float()``, ``t.add(u, alpha=2)``,
``t.gather(1, idx)``, ``t.topk(3)``, ``t.masked_fill(m, 0)``, ``t.zero_()``, ...), each a
thin call of xops.numpy / xops ops with PyTorch's semantics, so code written for
``torch.Tensor`` reads the same here. Installed on Tensor by xops/__init__ (this module
imports the layers above the Tensor).

Where PyTorch's and NumPy's defaults differ the NumPy spellings keep NumPy's (docs/numpy.md)
and these keep PyTorch's: ``split(n)`` takes pieces of n elements, ``repeat`` tiles,
``diagonal`` defaults to dims (0, 1), ``sort`` / ``topk`` return (values, indices).
In-place methods (``zero_``, ``fill_``, ``copy_``, ``add_``, ...) rebind the tensor to the
new value as ``t[...] = v`` does (copy-on-write: other holders of the old value keep it)
and return it. ``gather`` / ``scatter`` check their indices (PyTorch raises; the spec ops
beneath clamp or skip).
"""

import collections
import math

import numpy as np

from . import numpy as xnp
from .errors import SpecError
from .ops import elementwise as E
from .registry import op as _op
from .tensor import Tensor, tensor

_SortResult = collections.namedtuple("sort", ["values", "indices"])
_TopkResult = collections.namedtuple("topk", ["values", "indices"])


def _dim(t, dim, name):
    if not isinstance(dim, (int, np.integer)) or not -max(t.ndim, 1) <= dim < max(t.ndim, 1):
        raise SpecError(name, "dim", f"dim {dim!r} is out of range for {t.type}")
    return int(dim) % max(t.ndim, 1)


def _sizes(args):
    """``f(2, 3)`` or ``f((2, 3))`` -> (2, 3)."""
    if len(args) == 1 and not isinstance(args[0], (int, np.integer)):
        return tuple(int(s) for s in args[0])
    return tuple(int(s) for s in args)


# -- element types ------------------------------------------------------------------------
def _caster(dtype, doc):
    def cast(self):
        return xnp.astype(self, dtype, copy=False)

    cast.__doc__ = doc
    return cast


_CASTS = {
    "float": ("f32", "This tensor as float32."),
    "double": ("f64", "This tensor as float64."),
    "half": ("f16", "This tensor as float16."),
    "bfloat16": ("bf16", "This tensor as bfloat16."),
    "int": ("i32", "This tensor as int32."),
    "long": ("i64", "This tensor as int64."),
    "short": ("i16", "This tensor as int16."),
    "byte": ("ui8", "This tensor as uint8."),
    "bool": ("bool", "This tensor as bool."),
}


def type_as(self, other):
    """This tensor in ``other``'s element type."""
    return xnp.astype(self, other.dtype, copy=False)


def numel(self):
    """The number of elements (an int)."""
    return int(math.prod(self.shape))


def dim(self):
    """The rank (an int)."""
    return self.ndim


def contiguous(self):
    """This tensor (xops tensors are always laid out as their shape says)."""
    return self


def cpu(self):
    """This tensor on the CPU (itself when it is there)."""
    return self if self.device == "cpu" else self.to("cpu")


# -- arithmetic and comparisons -------------------------------------------------------------
def add(self, other, *, alpha=1):
    """self + alpha * other."""
    return xnp.add(self, other if alpha == 1 else xnp.multiply(other, alpha))


def sub(self, other, *, alpha=1):
    """self - alpha * other."""
    return xnp.subtract(self, other if alpha == 1 else xnp.multiply(other, alpha))


def div(self, other, *, rounding_mode=None):
    """self / other; ``rounding_mode`` "trunc" or "floor" rounds the quotient."""
    if rounding_mode is None:
        return xnp.divide(self, other)
    if rounding_mode == "floor":
        return xnp.floor_divide(self, other)
    if rounding_mode == "trunc":
        if self.dtype.kind in ("si", "ui") and (
            not isinstance(other, Tensor) or other.dtype.kind in ("si", "ui")
        ):
            a, b = xnp.broadcast_arrays(self, xnp.asarray(other, dtype=self.dtype))
            return _op.divide(a, b)  # (the spec's integer divide truncates)
        return xnp.trunc(xnp.divide(self, other))
    raise ValueError(f"div: rounding_mode must be None, 'trunc' or 'floor', got {rounding_mode!r}")


def fmod(self, other):
    """The remainder with the dividend's sign (C's fmod; ``xo.remainder``)."""
    a, b = xnp.broadcast_arrays(*_promoted(self, other))
    return _op.remainder(a, b)


def _promoted(a, b):
    b = b if isinstance(b, Tensor) else xnp.asarray(b, dtype=a.dtype)
    dt = xnp.result_type(a, b)
    return xnp.astype(a, dt, copy=False), xnp.astype(b, dt, copy=False)


def lerp(self, end, weight):
    """self + weight * (end - self)."""
    return xnp.add(self, xnp.multiply(weight, xnp.subtract(end, self)))


def addcmul(self, tensor1, tensor2, *, value=1):
    """self + value * tensor1 * tensor2."""
    return xnp.add(self, xnp.multiply(xnp.multiply(tensor1, tensor2), value))


def addcdiv(self, tensor1, tensor2, *, value=1):
    """self + value * tensor1 / tensor2."""
    return xnp.add(self, xnp.multiply(xnp.divide(tensor1, tensor2), value))


def frac(self):
    """self - trunc(self)."""
    return xnp.subtract(self, xnp.trunc(self))


def reciprocal(self):
    """1 / self."""
    return xnp.divide(1.0, self) if self.dtype.kind == "float" else xnp.divide(1, self)


def rsqrt(self):
    """1 / sqrt(self)."""
    return E.rsqrt(self)


def sigmoid(self):
    """1 / (1 + exp(-self))."""
    return E.logistic(self)


def relu(self):
    """max(self, 0)."""
    from .nn import functional as F

    return F.relu(self)


_SAME = {  # method -> xops.numpy function, same arguments
    "mul": "multiply",
    "multiply": "multiply",
    "true_divide": "divide",
    "pow": "pow",
    "neg": "negative",
    "negative": "negative",
    "remainder": "remainder",
    "floor_divide": "floor_divide",
    "eq": "equal",
    "ne": "not_equal",
    "lt": "less",
    "le": "less_equal",
    "gt": "greater",
    "ge": "greater_equal",
    "maximum": "maximum",
    "minimum": "minimum",
    "sin": "sin",
    "cos": "cos",
    "tan": "tan",
    "tanh": "tanh",
    "asin": "asin",
    "acos": "acos",
    "atan": "atan",
    "sinh": "sinh",
    "cosh": "cosh",
    "expm1": "expm1",
    "log1p": "log1p",
    "log2": "log2",
    "log10": "log10",
    "square": "square",
    "sign": "sign",
    "floor": "floor",
    "ceil": "ceil",
    "trunc": "trunc",
    "isnan": "isnan",
    "isfinite": "isfinite",
    "isinf": "isinf",
    "logical_not": "logical_not",
    "logical_and": "logical_and",
    "logical_or": "logical_or",
    "matmul": "matmul",
}


def _same(name):
    fn = getattr(xnp, name)

    def method(self, *args):
        return fn(self, *args)

    method.__doc__ = f"``xops.numpy.{name}`` of this tensor (and the arguments)."
    return method


# -- linear algebra -----------------------------------------------------------------------------
def mm(self, other):
    """The (n, m) x (m, p) matrix product."""
    if self.ndim != 2 or other.ndim != 2:
        raise SpecError("mm", "rank", f"mm takes two matrices, got {self.type} and {other.type}")
    return xnp.matmul(self, other)


def bmm(self, other):
    """The batched (b, n, m) x (b, m, p) product."""
    if self.ndim != 3 or other.ndim != 3:
        raise SpecError("bmm", "rank", f"bmm takes two 3-D tensors, got {self.type}, {other.type}")
    return xnp.matmul(self, other)


def dot(self, other):
    """The inner product of two vectors."""
    if self.ndim != 1 or other.ndim != 1:
        raise SpecError("dot", "rank", f"dot takes two vectors, got {self.type}, {other.type}")
    return xnp.vecdot(self, other)


def outer(self, other):
    """The outer product of two vectors."""
    return xnp.linalg.outer(self, other)


def t(self):
    """A matrix transposed (a tensor of rank < 2 itself)."""
    if self.ndim > 2:
        raise SpecError("t", "rank", f"t() takes a tensor of rank <= 2, got {self.type}")
    return self if self.ndim < 2 else xnp.permute_dims(self, (1, 0))


def norm(self, p="fro", dim=None, keepdim=False):
    """The vector p-norm over ``dim`` (all elements by default; "fro" is 2), or with two
    dims and p "fro" / "nuc" the matrix norm."""
    axes = tuple(dim) if isinstance(dim, (list, tuple)) else dim
    if p == "nuc" or (p == "fro" and isinstance(axes, tuple) and len(axes) == 2):
        return xnp.linalg.matrix_norm(
            xnp.moveaxis(self, axes, (-2, -1)) if axes else self, keepdims=False, ord=p
        )
    return xnp.linalg.vector_norm(self, axis=axes, keepdims=keepdim, ord=2 if p == "fro" else p)


# -- softmax family, reductions, sorting ------------------------------------------------------
def softmax(self, dim):
    """exp(self) / sum(exp(self)) along ``dim`` (stable)."""
    from .nn import functional as F

    return F.softmax(self, dim)


def log_softmax(self, dim):
    """log(softmax(self, dim)) (stable)."""
    from .nn import functional as F

    return F.log_softmax(self, dim)


def logsumexp(self, dim, keepdim=False):
    """log(sum(exp(self))) along ``dim``: max + log(sum(exp(self - max))), the max read
    as 0 where it is infinite (all -inf gives -inf)."""
    axes = tuple(dim) if isinstance(dim, (list, tuple)) else (dim,)
    m = xnp.max(self, axis=axes, keepdims=True)
    m = xnp.where(xnp.isfinite(m), m, xnp.zeros_like(m))
    s = xnp.log(xnp.sum(xnp.exp(xnp.subtract(self, m)), axis=axes, keepdims=True))
    out = xnp.add(s, m)
    return out if keepdim else xnp.squeeze(out, axis=tuple(a % self.ndim for a in axes))


def amax(self, dim=None, keepdim=False):
    """The largest values over ``dim`` (all by default)."""
    return xnp.max(self, axis=_axes(dim), keepdims=keepdim)


def amin(self, dim=None, keepdim=False):
    """The smallest values over ``dim`` (all by default)."""
    return xnp.min(self, axis=_axes(dim), keepdims=keepdim)


def _axes(dim):
    return tuple(dim) if isinstance(dim, list) else dim


def cumprod(self, dim):
    """The running product along ``dim``."""
    return xnp.cumulative_prod(self, axis=dim)


def argsort(self, dim=-1, descending=False, *, stable=False):
    """The indices that sort along ``dim`` (stable: ties keep their order)."""
    return xnp.argsort(self, axis=dim, descending=descending, stable=True)


def sort(self, dim=-1, descending=False, *, stable=False):
    """(values, indices) sorted along ``dim`` (ties keep their order; NaN last)."""
    idx = xnp.argsort(self, axis=dim, descending=descending, stable=True)
    return _SortResult(xnp.take_along_axis(self, idx, axis=dim), idx)


def topk(self, k, dim=-1, largest=True, sorted=True):  # noqa: A002
    """(values, indices) of the ``k`` largest (``largest=False``: smallest) along ``dim``,
    in order (the earlier index first among equal values)."""
    d = _dim(self, dim, "topk")
    if not 0 <= int(k) <= (self.shape[d] if self.ndim else 1):
        raise SpecError("topk", "k", f"k = {k} is out of range for dim {dim} of {self.type}")
    idx = xnp.argsort(self, axis=d, descending=largest, stable=True)
    idx = _narrow(idx, d, 0, int(k))
    return _TopkResult(xnp.take_along_axis(self, idx, axis=d), idx)


# -- shapes ---------------------------------------------------------------------------------
def expand(self, *sizes):
    """This tensor broadcast to ``sizes`` (-1 keeps a dim; new dims lead)."""
    sizes = _sizes(sizes)
    lead = len(sizes) - self.ndim
    if lead < 0:
        raise SpecError("expand", "sizes", f"{list(sizes)} has fewer dims than {self.type}")
    shape = tuple(self.shape[i - lead] if s == -1 and i >= lead else s for i, s in enumerate(sizes))
    return xnp.broadcast_to(self, shape)


def expand_as(self, other):
    """This tensor broadcast to ``other``'s shape."""
    return xnp.broadcast_to(self, other.shape)


def view_as(self, other):
    """This tensor reshaped to ``other``'s shape."""
    return xnp.reshape(self, other.shape)


reshape_as = view_as


def repeat(self, *sizes):
    """Tiled ``sizes`` times along each dim (PyTorch's repeat: NumPy's tile)."""
    sizes = _sizes(sizes)
    if len(sizes) < self.ndim:
        raise SpecError("repeat", "sizes", f"{list(sizes)} has fewer dims than {self.type}")
    return xnp.tile(self, sizes)


def _narrow(t, d, start, length):
    key = [slice(None)] * t.ndim
    key[d] = slice(start, start + length)
    return t[tuple(key)]


def narrow(self, dim, start, length):
    """Elements [start, start + length) along ``dim``."""
    d = _dim(self, dim, "narrow")
    start = int(start) % self.shape[d] if start < 0 else int(start)
    if start + int(length) > self.shape[d] or length < 0:
        raise SpecError(
            "narrow", "length", f"[{start}, {start + length}) exceeds dim {d} of {self.type}"
        )
    return _narrow(self, d, start, int(length))


def select(self, dim, index):
    """The slice at ``index`` along ``dim`` (that dim removed)."""
    d = _dim(self, dim, "select")
    if not -self.shape[d] <= int(index) < self.shape[d]:
        raise SpecError(
            "select", "index", f"index {index} is out of range for dim {d} of {self.type}"
        )
    key = [slice(None)] * self.ndim
    key[d] = int(index)
    return self[tuple(key)]


def split(self, split_size_or_sections, dim=0):
    """Pieces along ``dim``: of ``split_size`` elements each (the last may be shorter),
    or of the sizes listed."""
    d = _dim(self, dim, "split")
    n = self.shape[d]
    if isinstance(split_size_or_sections, (int, np.integer)):
        step = int(split_size_or_sections)
        if step <= 0:
            raise SpecError("split", "split_size", f"split_size must be positive, got {step}")
        sizes = [min(step, n - s) for s in range(0, n, step)] or [0]
    else:
        sizes = [int(s) for s in split_size_or_sections]
        if sum(sizes) != n or min(sizes, default=0) < 0:
            raise SpecError("split", "sections", f"sizes {sizes} must add up to dim {d} ({n})")
    out, start = [], 0
    for s in sizes:
        out.append(_narrow(self, d, start, s))
        start += s
    return tuple(out)


def chunk(self, chunks, dim=0):
    """At most ``chunks`` pieces of ceil(n / chunks) elements along ``dim``."""
    d = _dim(self, dim, "chunk")
    if int(chunks) <= 0:
        raise SpecError("chunk", "chunks", f"chunks must be positive, got {chunks}")
    return split(self, max(1, -(-self.shape[d] // int(chunks))), d)


def unbind(self, dim=0):
    """The slices along ``dim``, that dim removed."""
    return tuple(xnp.unstack(self, axis=_dim(self, dim, "unbind")))


def unflatten(self, dim, sizes):
    """Dim ``dim`` split into ``sizes`` (one may be -1)."""
    d = _dim(self, dim, "unflatten")
    return xnp.reshape(self, self.shape[:d] + tuple(int(s) for s in sizes) + self.shape[d + 1 :])


def flip(self, *dims):
    """Reversed along ``dims``."""
    return xnp.flip(self, axis=_sizes(dims))


def roll(self, shifts, dims=None):
    """Rolled by ``shifts`` along ``dims`` (the flattened tensor without dims)."""
    return xnp.roll(self, shifts, axis=dims)


def tril(self, diagonal=0):
    """The lower triangle (on and below ``diagonal``) of the last two dims."""
    return xnp.tril(self, k=diagonal)


def triu(self, diagonal=0):
    """The upper triangle (on and above ``diagonal``) of the last two dims."""
    return xnp.triu(self, k=diagonal)


def diagonal(self, offset=0, dim1=0, dim2=1):
    """The diagonal of dims ``dim1`` and ``dim2`` (PyTorch's defaults: 0 and 1), as the
    last dim."""
    a, b = _dim(self, dim1, "diagonal"), _dim(self, dim2, "diagonal")
    return xnp.diagonal(self, offset, a, b)


def diag(self, diagonal=0):
    """A vector: the square matrix with it on ``diagonal``; a matrix: that diagonal."""
    if self.ndim not in (1, 2):
        raise SpecError("diag", "rank", f"diag takes a vector or a matrix, got {self.type}")
    return xnp.diag(self, diagonal)


# -- indexing ---------------------------------------------------------------------------------
def _check_index(name, t, d, index, limit):
    """The integer index tensor, every value within dim ``d`` (``limit`` elements)."""
    idx = index if isinstance(index, Tensor) else tensor(np.asarray(index))
    if idx.dtype.kind not in ("si", "ui"):
        raise SpecError(name, "index", f"index must be an integer tensor, got {idx.type}")
    if idx.size:
        v = np.asarray(idx)
        lo, hi = int(v.min()), int(v.max())
        if lo < 0 or hi >= limit:
            raise SpecError(
                name, "index", f"index values [{lo}, {hi}] out of range for dim {d} of {t.type}"
            )
    return idx


def _coordinates(index, d):
    """(*index.shape, rank) int64 coordinates: each element's own, dim ``d`` replaced by
    its index value."""
    grids = list(np.meshgrid(*[np.arange(s) for s in index.shape], indexing="ij"))
    grids[d] = np.asarray(index).astype(np.int64)
    return tensor(np.stack(grids, axis=-1).astype(np.int64) if grids else np.zeros((0,), np.int64))


def _fits(name, t, index, d, other=None):
    for k in range(t.ndim):
        if k != d and index.shape[k] > t.shape[k]:
            raise SpecError(name, "index", f"index {index.type} exceeds {t.type} in dim {k}")
        if other is not None and index.shape[k] > other.shape[k]:
            raise SpecError(
                name, "index", f"index {index.type} exceeds src {other.type} in dim {k}"
            )


def gather(self, dim, index):
    """out[i][j][k] = self[index[i][j][k]][j][k] for dim 0 (and so on): ``index`` has
    this tensor's rank, at most its size in the other dims."""
    d = _dim(self, dim, "gather")
    idx = _check_index("gather", self, d, index, self.shape[d])
    if idx.ndim != self.ndim:
        raise SpecError("gather", "index", f"index {idx.type} must have the rank of {self.type}")
    _fits("gather", self, idx, d)
    r = self.ndim
    return _op.gather(self, _coordinates(idx, d), [], list(range(r)), list(range(r)), r, [1] * r)


def _scatter(name, self, dim, index, src, body):
    d = _dim(self, dim, name)
    idx = _check_index(name, self, d, index, self.shape[d])
    if idx.ndim != self.ndim:
        raise SpecError(name, "index", f"index {idx.type} must have the rank of {self.type}")
    if not isinstance(src, Tensor):
        src = xnp.full(idx.shape, src, dtype=self.dtype)
    _fits(name, self, idx, d, src)
    src = xnp.astype(src[tuple(slice(0, s) for s in idx.shape)], self.dtype, copy=False)
    r = self.ndim
    return _op.scatter(
        self, _coordinates(idx, d), src, [], list(range(r)), list(range(r)), r,
        update_computation=body,
    )  # fmt: skip


def _overwrite(a, b):
    return b


def scatter(self, dim, index, src):
    """A copy with self[index[i][j]][j] = src[i][j] for dim 0 (and so on); ``src`` a
    tensor or a number. Duplicate indices: the last write wins."""
    return _scatter("scatter", self, dim, index, src, _overwrite)


def scatter_add(self, dim, index, src):
    """A copy with src's elements added at the positions ``index`` names along ``dim``."""
    return _scatter("scatter_add", self, dim, index, src, E.add)


def scatter_reduce(self, dim, index, src, reduce, *, include_self=True):
    """src's elements combined into a copy at ``index`` along ``dim`` with ``reduce``:
    "sum", "prod", "amax", "amin" or "mean" (``include_self=False``: positions some
    index names start from the reduction's identity, not from self)."""
    bodies = {"sum": E.add, "prod": E.multiply, "amax": E.maximum, "amin": E.minimum, "mean": E.add}
    if reduce not in bodies:
        raise SpecError(
            "scatter_reduce", "reduce", f"reduce must be one of {sorted(bodies)}, got {reduce!r}"
        )
    base = self
    d = _dim(self, dim, "scatter_reduce")
    if not include_self:
        fill = {"sum": 0, "mean": 0, "prod": 1, "amax": -np.inf, "amin": np.inf}[reduce]
        if self.dtype.kind != "float" and reduce in ("amax", "amin"):
            info = np.iinfo(self.dtype.np)
            fill = info.min if reduce == "amax" else info.max
        hit = _scatter(
            "scatter_reduce", xnp.zeros_like(self, dtype=xnp.bool), d, index, True, _overwrite
        )
        base = xnp.where(hit, xnp.asarray(fill, dtype=self.dtype), self)
    out = _scatter("scatter_reduce", base, d, index, src, bodies[reduce])
    if reduce != "mean":
        return out
    ones = xnp.ones(index.shape, dtype=self.dtype)
    count = _scatter("scatter_reduce", xnp.zeros_like(self), d, index, ones, E.add)
    if include_self:
        count = xnp.add(count, 1)
    count = xnp.where(xnp.equal(count, 0), xnp.ones_like(count), count)
    if self.dtype.kind == "float":
        return xnp.divide(out, count)
    return xnp.floor_divide(out, count)


def index_select(self, dim, index):
    """The slices at ``index`` (a vector) along ``dim``."""
    d = _dim(self, dim, "index_select")
    idx = _check_index("index_select", self, d, index, self.shape[d])
    return xnp.take(self, idx, axis=d)


def masked_fill(self, mask, value):
    """``value`` where ``mask`` (broadcast to this shape) is true, else self."""
    v = value if isinstance(value, Tensor) else xnp.asarray(value, dtype=self.dtype)
    return xnp.where(mask, xnp.astype(v, self.dtype, copy=False), self)


def masked_select(self, mask):
    """The elements where ``mask`` (broadcast with self) is true, as a vector."""
    a, m = xnp.broadcast_arrays(self, mask)
    return a[m]


def where(self, condition, other):
    """self where ``condition``, else ``other``."""
    return xnp.where(condition, self, other)


def nonzero(self, *, as_tuple=False):
    """The indices of the nonzero elements: an (n, rank) int64 tensor (``as_tuple``: one
    vector per dim)."""
    parts = xnp.nonzero(self)
    return parts if as_tuple else xnp.stack(parts, axis=1)


def unique(self, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """The distinct values, sorted (and the inverse indices, the counts)."""
    if dim is not None:
        raise SpecError("unique", "dim", "unique over a dim is not supported; flatten first")
    u = xnp.unique_all(self)
    out = (u.values,)
    if return_inverse:
        out += (xnp.reshape(u.inverse_indices, self.shape),)
    if return_counts:
        out += (u.counts,)
    return out[0] if len(out) == 1 else out


# -- new tensors like this one ------------------------------------------------------------------
def new_zeros(self, *size, dtype=None):
    """Zeros of ``size``, this tensor's element type (or ``dtype``) and device."""
    return xnp.zeros(_sizes(size), dtype=dtype or self.dtype, device=self.device)


def new_ones(self, *size, dtype=None):
    """Ones of ``size``, this tensor's element type (or ``dtype``) and device."""
    return xnp.ones(_sizes(size), dtype=dtype or self.dtype, device=self.device)


def new_full(self, size, fill_value, *, dtype=None):
    """``fill_value`` everywhere in ``size``, this tensor's type (or ``dtype``) and device."""
    return xnp.full(_sizes((size,)), fill_value, dtype=dtype or self.dtype, device=self.device)


def new_empty(self, *size, dtype=None):
    """A tensor of ``size`` (zeros here), this tensor's type (or ``dtype``) and device."""
    return new_zeros(self, *size, dtype=dtype)


def new_tensor(self, data, *, dtype=None):
    """``data`` as a tensor of this tensor's element type (or ``dtype``) and device."""
    return xnp.asarray(data, dtype=dtype or self.dtype, device=self.device)


# -- in place: rebind to the new value --------------------------------------------------------
def _rebind(self, value):
    self[...] = value
    return self


def zero_(self):
    """Set every element to 0 (rebinds this tensor); returns it."""
    return _rebind(self, xnp.zeros_like(self))


def fill_(self, value):
    """Set every element to ``value`` (rebinds this tensor); returns it."""
    return _rebind(self, xnp.full(self.shape, value, dtype=self.dtype, device=self.device))


def copy_(self, src):
    """Set this tensor to ``src`` (broadcast, converted to this type); returns it."""
    return _rebind(self, xnp.astype(xnp.broadcast_to(src, self.shape), self.dtype, copy=False))


def _inplace(fn, name):
    def method(self, *args, **kwargs):
        out = fn(self, *args, **kwargs)
        if out.shape != self.shape:
            raise SpecError(
                name, "shape", f"{name}: the result {out.type} does not fit {self.type}"
            )
        if out.dtype != self.dtype:
            raise SpecError(
                name, "dtype", f"{name}: the result {out.type} cannot be kept in {self.type}"
            )
        return _rebind(self, out)

    method.__doc__ = f"In place: this tensor set to ``{name[:-1]}``'s result (rebinds it)."
    return method


def install():
    """Attach the methods to Tensor (names it does not define already)."""
    methods = {
        name: obj for name, obj in globals().items() if callable(obj) and not name.startswith("_")
    }
    for skip in ("install", "tensor", "Tensor", "SpecError"):
        methods.pop(skip, None)
    methods = {k: v for k, v in methods.items() if getattr(v, "__module__", None) == __name__}
    for name, (dt, doc) in _CASTS.items():
        methods[name] = _caster(dt, doc)
    for name, target in _SAME.items():
        methods.setdefault(name, _same(target))
    inplace = {
        "add_": add, "sub_": sub, "mul_": _same("multiply"), "div_": div,
        "clamp_": lambda self, min=None, max=None: xnp.clip(self, min=min, max=max),  # noqa: A002
        "masked_fill_": masked_fill, "neg_": _same("negative"), "pow_": _same("pow"),
    }  # fmt: skip
    for name, fn in inplace.items():
        methods[name] = _inplace(fn, name)
    for name, fn in methods.items():
        if name not in Tensor.__dict__:
            fn.__name__ = fn.__qualname__ = name
            setattr(Tensor, name, fn)
