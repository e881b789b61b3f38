"""Channels and host I/O: send, recv (device-to-device or host transfers on a channel),
infeed and outfeed (the host's queues), on the caller's process context
(:mod:`xops.distributed`; see :mod:`xops.ops.collectives` for the process grid).

On the in-process grid a channel is a grid-wide FIFO queue; under MPI it is routed by
:func:`xops.distributed.connect`. Every op takes and returns a token (``xo.after_all()``).
"""

import builtins

import numpy as np

from ..autodiff.tape import primitive
from ..dtypes import as_dtype
from ..registry import declare
from ..tensor import _wrap
from ._core import as_tensor, attr_int, check
from .collectives import _ctx
from .misc import Token

__all__ = ["send", "recv", "infeed", "outfeed"]


def _token(op, label, token):
    check(
        isinstance(token, Token),
        op,
        label,
        lambda: f"token must be a token (xo.after_all()), got {type(token).__name__}",
    )


def _inputs(op, inputs):
    if isinstance(inputs, (list, builtins.tuple)):
        return [as_tensor(v, op=op, name=f"inputs[{i}]") for i, v in enumerate(inputs)]
    return [as_tensor(inputs, op=op, name="inputs")]


def _channel(op, channel_id, channel_type, is_host_transfer, host_type):
    cid = attr_int(op, "I3" if op == "send" else "I2", "channel_id", channel_id)
    check(
        isinstance(is_host_transfer, (bool, np.bool_)),
        op,
        "C1",
        lambda: f"is_host_transfer must be a bool, got {is_host_transfer!r}",
    )
    want = host_type if is_host_transfer else "DEVICE_TO_DEVICE"
    if channel_type is not None:
        ct = str(channel_type).upper()
        check(
            ct == want,
            op,
            "C1",
            lambda: (
                f"channel_type must be {want} when is_host_transfer = "
                f"{str(bool(is_host_transfer)).lower()}, got {channel_type!r}"
            ),
        )
    return cid


@primitive("send")
def send(inputs, token, channel_id, channel_type=None, is_host_transfer=False):
    """stablehlo.send: send ``inputs`` (a tensor or a sequence of them) on channel
    ``channel_id``; returns a token. ``channel_type`` (default: derived) must be
    ``DEVICE_TO_HOST`` exactly when ``is_host_transfer`` (C1). On the in-process grid a
    channel is a grid-wide FIFO queue; under MPI it is routed by
    :func:`xops.distributed.connect`.

    >>> tok = xo.send(xo.tensor([1, 2]), xo.after_all(), channel_id=1)
    >>> xo.recv(tok, channel_id=1)   # ([1, 2], xo.Token())
    (xo.tensor([1, 2], i64[2]), xo.Token())
    """
    op = "send"
    xs = _inputs(op, inputs)
    _token(op, "I2", token)
    cid = _channel(op, channel_id, channel_type, is_host_transfer, "DEVICE_TO_HOST")
    _ctx().send(op, cid, [(x._dtype.name, np.asarray(x._value, order="C")) for x in xs])
    return Token()


@declare("recv")
def recv(token, channel_id, channel_type=None, is_host_transfer=False):
    """stablehlo.recv: receive the next values sent on channel ``channel_id``; returns
    ``(*results, token)`` (C2-C4: data first, the token last). ``channel_type`` must be
    ``HOST_TO_DEVICE`` exactly when ``is_host_transfer`` (C1). Waits up to the context's
    timeout, then raises :class:`xops.distributed.CollectiveTimeout`.

    >>> tok = xo.send(xo.tensor([1, 2]), xo.after_all(), channel_id=1)
    >>> xo.recv(tok, channel_id=1)   # ([1, 2], xo.Token())
    (xo.tensor([1, 2], i64[2]), xo.Token())
    """
    op = "recv"
    _token(op, "I1", token)
    cid = _channel(op, channel_id, channel_type, is_host_transfer, "HOST_TO_DEVICE")
    got = _ctx().recv(op, cid)
    return builtins.tuple(_wrap(a, as_dtype(name)) for name, a in got) + (Token(),)


@declare("infeed")
def infeed(token, infeed_config=""):
    """stablehlo.infeed: the next entry of the caller's infeed queue (filled by the host
    with :func:`xops.distributed.put_infeed`, or ``run_parallel(..., infeed=...)``);
    returns ``(*values, token)`` (C1-C3). ``infeed_config`` is implementation-defined
    and unused here.

    >>> xops.distributed.put_infeed(xo.tensor([[1, 2], [3, 4]]))
    >>> xo.infeed(xo.after_all())   # ([[1, 2], [3, 4]], xo.Token())
    (xo.tensor([[1, 2],
               [3, 4]], i64[2,2]), xo.Token())
    """
    op = "infeed"
    _token(op, "I1", token)
    check(
        isinstance(infeed_config, str),
        op,
        "I2",
        lambda: f"infeed_config must be a string, got {infeed_config!r}",
    )
    entry = _ctx().pop_infeed(op)
    values = entry if isinstance(entry, (list, builtins.tuple)) else (entry,)
    return builtins.tuple(as_tensor(v, op=op, name="infeed value") for v in values) + (Token(),)


@primitive("outfeed")
def outfeed(inputs, token, outfeed_config=""):
    """stablehlo.outfeed: append ``inputs`` (a tensor or a sequence) to the caller's
    outfeed queue, which the host drains with :func:`xops.distributed.get_outfeed`;
    returns a token.

    >>> xo.outfeed(xo.tensor([1, 2]), xo.after_all())   # xo.Token()
    xo.Token()
    """
    op = "outfeed"
    xs = _inputs(op, inputs)
    _token(op, "I2", token)
    check(
        isinstance(outfeed_config, str),
        op,
        "I3",
        lambda: f"outfeed_config must be a string, got {outfeed_config!r}",
    )
    _ctx().outfeed.append(builtins.tuple(xs))
    return Token()
