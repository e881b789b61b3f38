"""Devices: where a tensor's data lives.

``Device`` is the object the array API standard's ``x.device`` / ``to_device`` /
``device=`` arguments pass around; its ``str`` is ``"cpu"`` or ``"cuda:0"`` and it compares
equal to those strings. A CUDA device is available when ``numba.cuda`` imports and
``numba.cuda.is_available()`` (a GPU, or the simulator under ``NUMBA_ENABLE_CUDASIM=1``);
otherwise asking for one raises a clear error. CUDA tensors hold numba device arrays
(:mod:`xops.kernels.cuda`); this module stays below :mod:`xops.tensor` and imports
numba.cuda only when a CUDA device is asked for.

:func:`default_device` sets the device ``xo.tensor`` and the ``xops.numpy`` creation
functions use when given none (thread-local).
"""

import contextlib
import threading

__all__ = [
    "Device",
    "as_device",
    "cpu",
    "is_device_spec",
    "default_device",
    "get_default_device",
    "cuda_available",
]


class Device:
    """A device: ``kind`` (``"cpu"`` or ``"cuda"``) and ``index``.

    >>> Device("cpu") == "cpu"
    True
    """

    __slots__ = ("kind", "index")

    def __init__(self, kind="cpu", index=None):
        if isinstance(kind, Device):
            kind, index = kind.kind, kind.index
        kind, index = _parse(kind, index)
        self.kind = kind
        self.index = index

    def __str__(self):
        return "cpu" if self.kind == "cpu" else f"{self.kind}:{self.index}"

    def __repr__(self):
        return f"Device({str(self)!r})"

    def __eq__(self, other):
        if isinstance(other, Device):
            return self.kind == other.kind and self.index == other.index
        if isinstance(other, str):
            try:
                return self == Device(*_parse(other, None))
            except ValueError:
                return False
        return NotImplemented

    def __hash__(self):
        return hash(str(self))


def _parse(kind, index):
    if not isinstance(kind, str):
        raise TypeError(f"a device is 'cpu', 'cuda' or 'cuda:N', got {kind!r}")
    name = kind.strip().lower()
    if ":" in name:
        name, _, num = name.partition(":")
        if not num.isdigit():
            raise ValueError(f"a device is 'cpu', 'cuda' or 'cuda:N', got {kind!r}")
        index = int(num)
    if name == "cpu":
        if index not in (None, 0):
            raise ValueError(f"there is one CPU device, got {kind!r} index {index}")
        return "cpu", None
    if name in ("cuda", "gpu"):
        return "cuda", 0 if index is None else int(index)
    raise ValueError(f"a device is 'cpu', 'cuda' or 'cuda:N', got {kind!r}")


cpu = Device("cpu")


def is_device_spec(x):
    """Whether ``x`` names a device (a Device, or a string like ``"cpu"``, ``"cuda:0"``)
    rather than something else a ``.to(...)`` takes (an element type)."""
    return isinstance(x, Device) or (
        isinstance(x, str) and x.split(":")[0].lower() in ("cpu", "cuda", "gpu")
    )


def as_device(device, op="to_device"):
    """The Device for ``device`` (a Device, a string, or None for the CPU); a device
    xops cannot run on yet is an error that says so."""
    if device is None:
        return cpu
    if isinstance(device, Device):
        d = device
    elif isinstance(device, str):
        try:
            d = Device(device)
        except ValueError as e:
            raise ValueError(f"{op}: {e}") from None
    else:
        raise TypeError(
            f"{op}: a device is a xops Device or a string like 'cpu', got {type(device).__name__}"
        )
    if d.kind != "cpu":
        why = _cuda_problem()
        if why:
            raise RuntimeError(f"{op}: device {str(d)!r} is not available: {why}")
        if d.index != 0:
            raise RuntimeError(
                f"{op}: device {str(d)!r} is not available: xops uses one CUDA device, 'cuda:0'"
            )
    return d


_cuda_state = []  # [None] once numba.cuda works, [reason] when it does not (asked once)


def _cuda_problem():
    """None when CUDA tensors can be made, else why not (checked on first use)."""
    if not _cuda_state:
        try:
            from numba import cuda

            ok = cuda.is_available()
        except Exception as e:  # ImportError, or a broken CUDA driver/toolkit
            why = f"numba.cuda cannot be used ({type(e).__name__}: {e})"
        else:
            why = (
                None
                if ok
                else (
                    "numba.cuda finds no CUDA GPU (install the driver, or set "
                    "NUMBA_ENABLE_CUDASIM=1 before importing xops to use "
                    "numba's CUDA simulator)"
                )
            )
        if why is None:
            for hook in _on_cuda:  # xops.kernels.cuda registers its kernels
                hook()
        _cuda_state.append(why)
    return _cuda_state[0]


def cuda_available():
    """Whether ``"cuda"`` devices can be used (a GPU or numba's CUDA simulator)."""
    return _cuda_problem() is None


_on_cuda = []  # run once when CUDA is first found usable (xops.kernels.cuda's register)
_movers = {}  # device kind -> fn(tensor, Device) -> the tensor on that device
# (device kind, name) -> a fused device update: the optimizers' (xops.optim), relu's gradient,
# batch norm's running statistics, the cross-entropy gradient (xops.nn; the CUDA kernels')
_updates = {}
_on_default = []  # called with the kind when default_device() enters a device off the CPU


def of(value):
    """The device of a tensor's holder: a NumPy array is on the CPU, a numba device
    array (it has ``copy_to_host``) on ``cuda:0``."""
    return _cuda0 if hasattr(value, "copy_to_host") else cpu


def host_copy(value, np_dtype):
    """A writable host NumPy copy of a holder in ``np_dtype`` (a device array holds narrow
    types as their integer bit patterns: viewed back here)."""
    if hasattr(value, "copy_to_host"):
        return value.copy_to_host().view(np_dtype)
    return value.copy()


def move(t, device, op="to_device"):
    """Tensor ``t`` on ``device`` (an explicit copy; the same data when it is there)."""
    d = as_device(device, op)
    mover = _movers.get(d.kind)
    if mover is None:
        raise RuntimeError(f"{op}: no way to move data to {str(d)!r}")
    return mover(t, d)


_cuda0 = Device("cuda", 0)


class _Default(threading.local):
    device = cpu


_default = _Default()


def get_default_device():
    """The device new tensors go to when none is given (``cpu`` unless inside
    :func:`default_device`)."""
    return _default.device


@contextlib.contextmanager
def default_device(device):
    """``with xo.default_device("cuda"):`` makes ``xo.tensor`` and the ``xops.numpy``
    creation functions put their results on ``device`` when given no ``device=``."""
    d = as_device(device, "default_device")
    if d.kind != "cpu":
        for hook in _on_default:  # xops.registry.use_device: dispatch by device from now
            hook(d.kind)
    old, _default.device = _default.device, d
    try:
        yield d
    finally:
        _default.device = old
