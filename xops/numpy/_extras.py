"""``astype``, the inspection namespace, and the extras beyond the standard (``einsum``)."""

import numpy as np

from ..device import as_device, cpu, cuda_available, get_default_device
from ..errors import SpecError
from ..limits import MAX_RANK
from ..ops import linalg as L
from ..ops import movement as M
from ..ops._core import tstr
from ..tensor import _wrap
from . import _dtypes as D
from ._base import array, to
from ._manipulation import _take
from ._reduction import sum as _sum


def astype(x, dtype, /, *, copy=True, device=None):
    """``x`` converted to ``dtype`` (xo.convert: float -> int truncates toward zero and
    saturates; complex -> real drops the imaginary part). ``dtype`` already ``x``'s: a new
    tensor object sharing ``x``'s buffer (no copy; copy-on-write, so a later ``x[i] = v``
    does not show through it: docs/numpy.md, deviation 16)."""
    x = array(x, "astype")
    if device is not None and as_device(device, "astype") != x.device:
        x = x.to_device(device)
    dt = D.as_dtype(dtype, "astype")
    if dt is x._dtype:
        return _wrap(x._value, x._dtype) if copy and not x.requires_grad else x
    return to(x, dt)


_MAX_DIMS = MAX_RANK  # (NumPy's limit, which holds every CPU tensor's data)


class _Info:
    """The array API inspection namespace (``xnp.__array_namespace_info__()``)."""

    __module__ = "xops.numpy"

    def capabilities(self):
        return {
            "boolean indexing": True,
            "data-dependent shapes": True,
            "max dimensions": _MAX_DIMS,
        }

    def default_device(self):
        return get_default_device()

    def default_dtypes(self, *, device=None):
        as_device(device, "default_dtypes")
        return {
            "real floating": D.default_float,
            "complex floating": D.default_complex,
            "integral": D.default_int,
            "indexing": D.default_index,
        }

    def devices(self):
        return [cpu, as_device("cuda")] if cuda_available() else [cpu]

    def dtypes(self, *, device=None, kind=None):
        as_device(device, "dtypes")
        if kind is None:
            return dict(D.DTYPES)
        return {n: d for n, d in D.DTYPES.items() if D.isdtype(d, kind)}


def __array_namespace_info__():
    return _Info()


# ---------------------------------------------------------------------------------------
# einsum on dot_general
# ---------------------------------------------------------------------------------------


def _parse(subscripts, n):
    s = subscripts.replace(" ", "")
    if "." in s:
        raise SpecError("einsum", "", f"ellipsis subscripts are not supported, got {subscripts!r}")
    if "->" in s:
        lhs, out = s.split("->")
    else:
        lhs = s
        counts = {c: lhs.count(c) for c in set(lhs) if c.isalpha()}
        out = "".join(sorted(c for c, k in counts.items() if k == 1))
    ins = lhs.split(",")
    if len(ins) != n:
        raise SpecError("einsum", "", f"{subscripts!r} names {len(ins)} operands, got {n}")
    if not all(c.isalpha() for c in "".join(ins) + out) or len(set(out)) != len(out):
        raise SpecError("einsum", "", f"bad subscripts {subscripts!r}")
    return ins, out


def _diagonal_labels(t, labels):
    """Take the diagonal over repeated labels (``'ii' -> 'i'``), with one gather."""
    uniq = "".join(dict.fromkeys(labels))
    if len(uniq) == len(labels):
        return t, labels
    sizes = {}
    for c, s in zip(labels, t.shape):
        if sizes.setdefault(c, s) != s:
            raise SpecError("einsum", "", f"label {c!r} has sizes {sizes[c]} and {s} in {tstr(t)}")
    grid = np.indices([sizes[c] for c in uniq]).reshape(len(uniq), -1)
    strides = np.cumprod((list(t.shape[1:]) + [1])[::-1])[::-1]
    lin = sum(grid[uniq.index(c)] * int(st) for c, st in zip(labels, strides))
    out = _take(M.reshape(t, (t.size,)), np.asarray(lin, np.int64), 0)
    return M.reshape(out, tuple(sizes[c] for c in uniq)), uniq


def _sum_labels(t, labels, drop):
    dims = tuple(i for i, c in enumerate(labels) if c in drop)
    if not dims:
        return t, labels
    return _sum(t, axis=dims, dtype=t._dtype), "".join(c for c in labels if c not in drop)


def einsum(subscripts, /, *operands):
    """Einstein summation (``"ij,jk->ik"``), one dot_general per operand pair, so it is
    differentiable. No ``...`` subscripts."""
    ins, out = _parse(subscripts, len(operands))
    ts = [array(o, "einsum") for o in operands]
    dt = ts[0]._dtype
    for t in ts[1:]:
        dt = D.promote_types(dt, t._dtype, "einsum")
    items = []
    for t, lab in zip(ts, ins):
        if len(lab) != t.ndim:
            raise SpecError("einsum", "", f"subscript {lab!r} does not match {tstr(t)}")
        items.append(_diagonal_labels(to(t, dt), lab))
    cur, clab = items[0]
    rest = items[1:]

    def needed(k):
        return set(out).union(*[set(lab) for _, lab in rest[k:]])

    for k, (t, lab) in enumerate(rest):
        keep = needed(k + 1)
        cur, clab = _sum_labels(cur, clab, set(clab) - keep - set(lab))
        t, lab = _sum_labels(t, lab, set(lab) - keep - set(clab))
        batch = [c for c in clab if c in lab and c in keep]
        contract = [c for c in clab if c in lab and c not in keep]
        for c in batch + contract:
            if cur.shape[clab.index(c)] != t.shape[lab.index(c)]:
                raise SpecError("einsum", "", f"label {c!r} has different sizes")
        cur = L.dot_general(
            cur,
            t,
            [clab.index(c) for c in batch],
            [lab.index(c) for c in batch],
            [clab.index(c) for c in contract],
            [lab.index(c) for c in contract],
        )
        clab = (
            "".join(batch)
            + "".join(c for c in clab if c not in batch + contract)
            + "".join(c for c in lab if c not in batch + contract)
        )
    cur, clab = _sum_labels(cur, clab, set(clab) - set(out))
    if set(out) - set(clab):
        raise SpecError(
            "einsum", "", f"output labels {sorted(set(out) - set(clab))} appear in no operand"
        )
    perm = [clab.index(c) for c in out]
    return M.transpose(cur, perm) if perm != list(range(len(perm))) else cur


def broadcast_shapes(*shapes):
    """The shape the given shapes broadcast to (NumPy's rules; standard 2025.12)."""
    try:
        return tuple(np.broadcast_shapes(*(tuple(s) for s in shapes)))
    except ValueError:
        raise SpecError("broadcast_shapes", "", f"shapes {shapes} do not broadcast") from None


def isin(x1, x2, /, *, invert=False):
    """Whether each element of x1 is in x2 (standard 2025.12; no gradient)."""
    from ..ops._core import compute
    from ._base import from_numpy

    a, b = array(x1, "isin"), array(x2, "isin")
    dt = D.promote_types(a._dtype, b._dtype, "isin")
    a, b = to(a, dt), to(b, dt)
    return from_numpy(np.isin(compute(a), compute(b), invert=invert), D.bool)
