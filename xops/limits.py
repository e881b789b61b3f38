"""Process-wide settings of xops: the resource limit, deterministic contractions and the
NaN/Inf debugging check. A bottom-layer module: it imports nothing from xops but
:mod:`xops.errors`, so every layer (ops, kernels, the StableHLO parser) can use it.

* ``xops.config.max_bytes`` (env ``XOPS_MAX_BYTES``; default: half the physical memory):
  the largest result or temporary buffer one op may allocate. An op computes the byte
  size of its result (and of its large temporaries) *before* allocating, with
  :func:`check_nbytes`, and raises a labelled :class:`~xops.SpecError` past the limit:
  ``broadcast_in_dim (resource limit): the result f32[1099511627776,4] needs 16 TiB ...``.
  ``XOPS_MAX_BYTES`` takes a byte count with an optional K/M/G/T suffix (powers of
  1024), or a fraction of the physical memory (``0.25``).
* ``xops.config.deterministic`` (env ``XOPS_DETERMINISTIC=1``; context manager
  :func:`deterministic`): BLAS-backed contractions (``dot_general``, ``convolution``)
  run BLAS single-threaded, so their results do not depend on the thread count. xops's
  own kernels are bit-identical for any thread count in either mode (docs/semantics.md,
  "Determinism").
* ``xops.config.debug_nans`` / ``debug_infs`` (env ``XOPS_DEBUG_NANS=1`` /
  ``XOPS_DEBUG_INFS=1``; context manager :func:`debug_nans`): every op checks its
  float/complex results and raises :class:`NonFiniteError` at the first op producing a
  NaN (or an infinity), naming the op and its operands' types.
"""

import contextlib
import os
import threading

from .errors import SpecError

__all__ = [
    "NonFiniteError",
    "check_nbytes",
    "config",
    "debug_nans",
    "deterministic",
    "max_bytes",
    "nbytes_of",
]


class NonFiniteError(SpecError, FloatingPointError):
    """Raised by the opt-in NaN/Inf check (``xops.config.debug_nans``): an op produced
    a NaN (or, with ``debug_infs``, an infinity). A SpecError and a FloatingPointError."""


def physical_memory():
    """Bytes of physical memory (8 GiB where the OS does not say)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return 8 << 30


_SUFFIX = {
    "": 1,
    "B": 1,
    "K": 1 << 10,
    "KB": 1 << 10,
    "KIB": 1 << 10,
    "M": 1 << 20,
    "MB": 1 << 20,
    "MIB": 1 << 20,
    "G": 1 << 30,
    "GB": 1 << 30,
    "GIB": 1 << 30,
    "T": 1 << 40,
    "TB": 1 << 40,
    "TIB": 1 << 40,
}


def parse_bytes(text):
    """``"4G"`` -> 4 GiB, ``"1000000"`` -> 1000000, ``"0.25"`` -> a quarter of the
    physical memory. Raises ValueError for anything else."""
    s = str(text).strip().upper()
    num = s.rstrip("KMGTIB ")
    unit = s[len(num) :].strip()
    if unit not in _SUFFIX or not num:
        raise ValueError(f"not a byte count: {text!r}")
    if "." in num or "E" in num:
        v = float(num)
        if unit == "" and 0 < v <= 1:
            return int(v * physical_memory())
        return int(v * _SUFFIX[unit])
    return int(num) * _SUFFIX[unit]


def _flag(name):
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def _default_max_bytes():
    env = os.environ.get("XOPS_MAX_BYTES")
    if env:
        try:
            return parse_bytes(env)
        except ValueError:
            raise SpecError(
                "XOPS_MAX_BYTES",
                "",
                f"must be a byte count such as 4G or a fraction such as 0.5, got {env!r}",
            ) from None
    return physical_memory() // 2


def _finite_check(slot, what):
    """A debug flag (held in ``slot``) that makes every op check its results; setting
    it updates ``check_finite``, the one flag the ops read."""

    def get(self):
        return getattr(self, slot)

    def set(self, value):
        setattr(self, slot, bool(value))
        self.check_finite = self._nans or self._infs

    return property(
        get,
        set,
        doc=f"True: every op raises NonFiniteError when a float/complex result holds {what}.",
    )


class _Config:
    """``xops.config``: the process-wide settings (read and assign attributes)."""

    __slots__ = ("_blas_limit", "_deterministic", "_infs", "_max_bytes", "_nans", "check_finite")

    def __init__(self):
        self._max_bytes = _default_max_bytes()
        self._nans = _flag("XOPS_DEBUG_NANS")
        self._infs = _flag("XOPS_DEBUG_INFS")
        self.check_finite = self._nans or self._infs  # the one flag every op reads
        self._deterministic = False
        self._blas_limit = None
        if _flag("XOPS_DETERMINISTIC"):
            self.deterministic = True

    @property
    def max_bytes(self):
        """The largest buffer (bytes) one op may allocate."""
        return self._max_bytes

    @max_bytes.setter
    def max_bytes(self, value):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise SpecError(
                "xops.config", "", f"max_bytes must be a non-negative int, got {value!r}"
            )
        self._max_bytes = value

    debug_nans = _finite_check("_nans", "a NaN")
    debug_infs = _finite_check("_infs", "an inf")

    @property
    def deterministic(self):
        """True: BLAS-backed contractions run single-threaded (thread-count independent)."""
        return self._deterministic

    @deterministic.setter
    def deterministic(self, value):
        value = bool(value)
        if value == self._deterministic:
            return
        if value:
            self._blas_limit = _limit_blas_threads()
        elif self._blas_limit is not None:
            self._blas_limit.restore_original_limits()
            self._blas_limit = None
        self._deterministic = value

    def __repr__(self):
        return (
            f"xops.config(max_bytes={self._max_bytes}, deterministic={self._deterministic}, "
            f"debug_nans={self.debug_nans}, debug_infs={self.debug_infs})"
        )


def _limit_blas_threads():
    """Run every BLAS library of the process on one thread (threadpoolctl); returns the
    handle that restores the previous limits. (NumPy's BLAS reads its thread count from
    the environment once, when it loads, so changing it later needs threadpoolctl.)"""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        raise SpecError(
            "xops.config",
            "",
            "deterministic mode needs the threadpoolctl package (pip install threadpoolctl)",
        ) from None
    return threadpool_limits(limits=1, user_api="blas")


config = _Config()


def max_bytes():
    """The current resource limit in bytes (``xops.config.max_bytes``)."""
    return config._max_bytes


def _itemsize(dtype_or_itemsize):
    if isinstance(dtype_or_itemsize, int):
        return dtype_or_itemsize
    if isinstance(dtype_or_itemsize, type):  # a NumPy scalar type (np.float32)
        import numpy as np

        return np.dtype(dtype_or_itemsize).itemsize
    np_dtype = getattr(dtype_or_itemsize, "np", None)  # an xops DType: its holder dtype
    if np_dtype is not None:
        return np_dtype.itemsize
    size = getattr(dtype_or_itemsize, "itemsize", None)
    if size is None:
        import numpy as np

        size = np.dtype(dtype_or_itemsize).itemsize
    return int(size)


def _human(n):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        if n < 1024 or unit == "EiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"  # pragma: no cover


def nbytes_of(shape, dtype_or_itemsize):
    """The exact byte size (a Python int: no overflow) of an array of ``shape``."""
    n = _itemsize(dtype_or_itemsize)
    for d in shape:
        n *= int(d)
    return n


MAX_RANK = 64  # dimensions of an array (NumPy's limit)


def check_nbytes(op_name, shape, dtype_or_itemsize, what="result"):
    """Raise ``SpecError(op_name, "resource limit", ...)`` when an array of ``shape`` and
    element size ``dtype_or_itemsize`` (an int, a NumPy dtype or an xops DType) would
    exceed :func:`max_bytes`; returns its byte size otherwise. Call it where the shape is
    known, *before* allocating. Empty arrays always pass (they allocate nothing); a rank
    past MAX_RANK never does."""
    shape = tuple(shape)
    if len(shape) > MAX_RANK:
        raise SpecError(
            op_name,
            "resource limit",
            f"the {what} shape has rank {len(shape)}: at most {MAX_RANK} dimensions are "
            f"supported (NumPy's limit, which holds a CPU tensor's data)",
        )
    for d in shape:
        if int(d) < 0:
            raise SpecError(
                op_name,
                "resource limit",
                f"the {what} shape {list(shape)} has a negative dimension",
            )
    n = nbytes_of(shape, dtype_or_itemsize)
    limit = config._max_bytes
    if n == 0:
        # allocates nothing, but NumPy still needs the other dimensions' product in range
        if nbytes_of([d for d in shape if d], dtype_or_itemsize) >= 1 << 63:
            raise SpecError(
                op_name,
                "resource limit",
                f"the {what} shape {list(shape)} cannot "
                f"be represented (its non-zero "
                f"dimensions multiply past 2**63 bytes)",
            )
        return 0
    if n > limit:
        name = getattr(dtype_or_itemsize, "name", None)
        typ = (
            f"{name}[{','.join(map(str, shape))}]"
            if isinstance(name, str)
            else f"shape {list(shape)}"
        )
        raise SpecError(
            op_name,
            "resource limit",
            f"the {what} {typ} needs {_human(n)} "
            f"({n} bytes), more than the limit of "
            f"{_human(limit)} ({limit} bytes; set "
            f"xops.config.max_bytes or XOPS_MAX_BYTES)",
        )
    return n


@contextlib.contextmanager
def limit_bytes(n):
    """Context manager: ``xops.config.max_bytes = n`` inside the block."""
    prev = config.max_bytes
    config.max_bytes = n
    try:
        yield
    finally:
        config._max_bytes = prev


_switch_lock = threading.Lock()


@contextlib.contextmanager
def deterministic(enabled=True):
    """Context manager: ``xops.config.deterministic = enabled`` inside the block
    (process-wide, as BLAS's thread count is)."""
    with _switch_lock:
        prev = config.deterministic
        config.deterministic = enabled
    try:
        yield
    finally:
        with _switch_lock:
            config.deterministic = prev


@contextlib.contextmanager
def debug_nans(enabled=True, infs=None):
    """Context manager: check every op's float/complex results for NaN (and, with
    ``infs=True``, infinities) inside the block; the first op producing one raises
    :class:`NonFiniteError` naming the op and its operand types."""
    prev = (config.debug_nans, config.debug_infs)
    config.debug_nans = enabled
    if infs is not None:
        config.debug_infs = infs
    try:
        yield
    finally:
        config.debug_nans, config.debug_infs = prev
