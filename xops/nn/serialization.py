"""Saving and loading weights as ``.npz`` files (NumPy's zip of ``.npy`` arrays).

Never pickle: files are written with ``np.savez`` and read with
``np.load(allow_pickle=False)``, so loading a file runs no code from it.

Layout. One array per state-dict key, under that key, plus two string arrays:
``__xops_keys__`` (the keys, in order) and ``__xops_dtypes__`` (each key's xops element
type name: "f32", "bf16", "i64", ...). Types NumPy has natively are stored as
themselves (any NumPy tool can read them); the ml_dtypes types (bf16, f8..., i4...)
are stored as their raw bit patterns (uint8 / uint16 arrays of the same shape) and
turned back into the type on load, bit for bit.

Nested states. An optimizer's ``state_dict()`` (or a checkpoint such as
``{"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 3}``) is a tree
of dicts, lists and tuples holding tensors and plain values (numbers, strings, bools,
None). Its tensors are stored as above, under their dotted paths
(``state.0.momentum_buffer``); the tree itself, with each tensor replaced by its key,
is one more string array, ``__xops_tree__``, in JSON (dict keys keep their int / str
type, tuples stay tuples, floats round-trip exactly, inf and NaN included). A flat
dict name -> tensor is written exactly as before, without the tree.
"""

import collections
import json
import os
import tempfile
import zipfile

import numpy as np

from ..dtypes import as_dtype
from ..errors import SpecError
from ..tensor import Tensor, tensor

__all__ = ["CheckpointError", "load", "save"]


class CheckpointError(ValueError):
    """A checkpoint file cannot be read back: truncated, corrupt, not written by
    :func:`save` (or not an ``.npz`` at all), holding pickled objects, or not matching the
    model it is loaded into (``Module.load_state_dict``). A ValueError."""


_KEYS = "__xops_keys__"
_DTYPES = "__xops_dtypes__"
_TREE = "__xops_tree__"
_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_PLAIN = (type(None), bool, int, float, str)


def _state(obj):
    if hasattr(obj, "state_dict") and callable(obj.state_dict):
        obj = obj.state_dict()
    if not isinstance(obj, dict):
        raise TypeError(
            f"save: expected a Module, an optimizer, a scheduler or a dict, "
            f"got {type(obj).__name__}"
        )
    return obj


def _is_array(v):
    return isinstance(v, (Tensor, np.ndarray, np.generic))


def _is_flat(state):
    return all(isinstance(k, str) and _is_array(v) for k, v in state.items())


def _check_key(k):
    if not isinstance(k, str) or not k or k.startswith("__xops_"):
        raise ValueError(
            f"save: keys must be non-empty strings not starting with '__xops_', got {k!r}"
        )


def _encode(value, path, tensors):
    """The JSON form of a state tree; its tensors go to ``tensors`` (key -> tensor)
    under their dotted paths (made unique), each replaced by {"tensor": key}."""
    if _is_array(value):
        key = path or "tensor"
        while key in tensors:
            key += "_"
        _check_key(key)
        tensors[key] = value
        return {"tensor": key}
    if isinstance(value, dict):
        items = []
        for k, v in value.items():
            if not isinstance(k, (str, int)) or isinstance(k, bool):
                raise TypeError(
                    f"save: dict keys must be strings or ints, got {k!r} at "
                    f"{path or 'the top level'}"
                )
            items.append([k, _encode(v, f"{path}.{k}" if path else str(k), tensors)])
        return {"dict": items}
    if isinstance(value, (list, tuple)):
        kind = "list" if isinstance(value, list) else "tuple"
        return {
            kind: [
                _encode(v, f"{path}.{i}" if path else str(i), tensors) for i, v in enumerate(value)
            ]
        }
    if isinstance(value, _PLAIN):
        return value
    raise TypeError(
        f"save: cannot store a {type(value).__name__} (at "
        f"{path or 'the top level'}): only tensors, arrays, dicts, lists, "
        f"tuples, numbers, strings, bools and None"
    )


def _decode(node, tensors):
    if isinstance(node, dict):
        ((kind, body),) = node.items()
        if kind == "tensor":
            return tensors[body]
        if kind == "dict":
            return {k: _decode(v, tensors) for k, v in body}
        items = [_decode(v, tensors) for v in body]
        return items if kind == "list" else tuple(items)
    return node


def save(obj, path):
    """Write ``obj`` to the ``.npz`` file ``path`` (written exactly there; no suffix is
    added): a Module's ``state_dict()``, a dict name -> Tensor / NumPy array, an
    optimizer's or a scheduler's ``state_dict()`` (or the object itself), or any tree of
    dicts, lists and tuples of those and plain values (a checkpoint).

    >>> xo.nn.save(model, "digits.npz"); model.load_state_dict(xo.nn.load("digits.npz"))
    ... # doctest: +SKIP
    >>> xo.nn.save({"model": model.state_dict(), "optim": opt.state_dict()}, "ckpt.npz")
    ... # doctest: +SKIP
    """
    state = _state(obj)
    if _is_flat(state):
        tensors, tree = dict(state), None
        for k in tensors:
            _check_key(k)
    else:
        tensors = {}
        tree = _encode(state, "", tensors)
    arrays, keys, dtypes = {}, [], []
    for k, v in tensors.items():
        t = v if isinstance(v, Tensor) else tensor(np.asarray(v))
        a = np.asarray(t)
        if a.dtype.kind not in "biufc":  # an ml_dtypes type: its raw bits
            a = np.ascontiguousarray(a).view(_UINT[a.dtype.itemsize])
        arrays[k] = a
        keys.append(k)
        dtypes.append(t.dtype.name)
    arrays[_KEYS] = np.array(keys, dtype=str)
    arrays[_DTYPES] = np.array(dtypes, dtype=str)
    if tree is not None:
        arrays[_TREE] = np.array(json.dumps(tree, allow_nan=True))
    _write_atomically(os.fspath(path), arrays)


def _write_atomically(path, arrays):
    """Write to a temporary file in the same directory, flush it to disk, then rename it
    over ``path`` (atomic on POSIX and Windows): a failure at any point leaves the
    previous file at ``path`` as it was, and no partial file behind."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".", suffix=".npz.tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def load(path):
    """Read a file written by :func:`save`: an ordered dict name -> Tensor, with each
    tensor's element type restored (bf16 and the other ml_dtypes types included), or,
    for a nested state (an optimizer's, a checkpoint), the same tree of dicts, lists,
    tuples, tensors and plain values that was saved. A plain ``.npz`` without xops'
    type table loads with the arrays' NumPy types."""
    path = os.fspath(path)
    # (the file is opened here, not by np.load, which leaks its handle when the zip
    # directory is damaged)
    with open(path, "rb") as f:
        try:
            z = np.load(f, allow_pickle=False)
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
            raise CheckpointError(
                f"load: {path} is not a readable .npz checkpoint ({type(e).__name__}: {e})"
            ) from e
        if not isinstance(z, np.lib.npyio.NpzFile):
            raise CheckpointError(
                f"load: {path} holds a single .npy array, not an .npz "
                f"checkpoint written by xops.nn.save"
            )
        try:
            with z:
                return _read(z, path)
        except CheckpointError:
            raise
        except (
            OSError,
            ValueError,
            EOFError,
            KeyError,
            TypeError,
            IndexError,
            SpecError,
            zipfile.BadZipFile,
            json.JSONDecodeError,
        ) as e:
            # truncated members (zlib/CRC errors), pickled objects (allow_pickle=False),
            # a missing or inconsistent type table, a damaged tree
            raise CheckpointError(
                f"load: {path} is truncated or corrupt ({type(e).__name__}: {e})"
            ) from e


def _read(z, path):
    out = collections.OrderedDict()
    names = set(z.files)
    if _KEYS in names:
        keys = [str(k) for k in z[_KEYS]]
        dtypes = [str(d) for d in z[_DTYPES]]
        if len(keys) != len(dtypes) or not set(keys) <= names:
            raise CheckpointError(f"load: {path}: the type table does not match the stored arrays")
    else:
        keys = sorted(names)
        dtypes = [None] * len(keys)
    for k, name in zip(keys, dtypes):
        a = z[k]
        if name is None:
            out[k] = tensor(a)
            continue
        dt = as_dtype(name)
        if a.dtype != dt.np:
            if a.dtype.itemsize != dt.np.itemsize or a.dtype.kind not in "biu":
                raise CheckpointError(
                    f"load: {path}: {k!r} is stored as {a.dtype}, which cannot hold {dt.name}"
                )
            a = a.view(dt.np)  # raw bits back to the ml_dtypes type
        out[k] = tensor(a, dt)
    if _TREE in names:
        return _decode(json.loads(str(z[_TREE][()])), out)
    return out
