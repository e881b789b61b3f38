"""Devices: where a tensor's data lives.

Today every tensor lives on the CPU. ``Device`` is the object the array API standard's
``x.device`` / ``to_device`` / ``device=`` arguments pass around; its ``str`` is ``"cpu"``
or ``"cuda:0"`` and it compares equal to those strings. CUDA kernels are a later piece of
work: asking for a CUDA device raises a clear error here, the one place that will change.
"""
__all__ = ["Device", "as_device", "cpu"]


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
        raise TypeError(f"{op}: a device is a xops Device or a string like 'cpu', "
                        f"got {type(device).__name__}")
    if d.kind != "cpu":
        raise RuntimeError(f"{op}: device {str(d)!r} is not available: xops has no CUDA "
                           f"kernels yet (every tensor lives on 'cpu')")
    return d
