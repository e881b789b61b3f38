"""StableHLO handlers of the collectives, channels, host I/O and ``interpreter.run_parallel``.

``interpreter.run_parallel`` (the StableHLO interpreter's test op) runs its ``programs``
(a ``num_replicas x num_partitions`` grid of function symbols) on xops' in-process
process grid (:func:`xops.distributed.run_parallel`): one thread per process, each
calling its function with the next operands (the operands are listed process by
process, row-major), the results concatenated in the same order. ``infeed = [@f, ...]``
fills one host infeed queue with what those functions return, in order.

The collective ops map their MLIR attributes to the ``xo.<name>`` functions:
``channel_handle = #stablehlo.channel_handle<handle = h, type = t>`` gives channel_id
``h`` (and for send/recv the channel type: 1 DEVICE_TO_DEVICE, 2 DEVICE_TO_HOST,
3 HOST_TO_DEVICE), ``use_global_device_ids`` is a unit attribute. Two forms of newer
specs are handled here, on top of the xops ops: ``collective_broadcast`` with
``has_dynamic_root`` (a last operand picks, per data operand, the group index of the
source) and ``collective_reduce`` (an all_reduce whose result only the first process of
each group keeps; the others get zeros).
"""

import numpy as np

import xops as xo

from ..errors import SpecError
from ..tensor import Tensor
from .ir import DenseAttr, StructAttr, SymbolRef
from .table import register as _register_op

__all__ = ["OPS"]

OPS = {}  # op name -> (handler, the xo functions it needs)

_CHANNEL_TYPES = {1: "DEVICE_TO_DEVICE", 2: "DEVICE_TO_HOST", 3: "HOST_TO_DEVICE"}
RUN_PARALLEL_TIMEOUT = 60.0


def _rows(v):
    if v is None:
        return None
    if isinstance(v, DenseAttr):
        v = v.ints()
    return [[int(x) for x in row] for row in v]


def _int(v, default=0):
    if v is None:
        return default
    if isinstance(v, DenseAttr):
        v = v.ints()
    return int(v)


def _channel(op):
    """(channel_id, channel_type or None) of the op's channel_handle."""
    h = op.attrs.get("channel_handle")
    if isinstance(h, StructAttr):
        return _int(h.get("handle")), _CHANNEL_TYPES.get(_int(h.get("type")))
    if h is None:
        return _int(op.attrs.get("channel_id")), None
    return _int(h), None


def _flag(op, name):
    v = op.attrs.get(name)
    return bool(v) if v is not None else False


def _operand(args):
    return list(args) if len(args) > 1 else args[0]


def _results(out):
    return list(out) if isinstance(out, tuple) else out


def _body(ctx):
    from .handlers import body_of

    return body_of(ctx, 0)


def _collective(name, dims=(), groups="replica_groups", global_ids=False, body=False):
    """The handler of the collective ``xo.<name>``: it passes, in the order of that
    function's parameters, the operand(s), the integer attributes ``dims``, the process
    groups (attribute ``groups``), the channel id, and where the op has them the
    ``use_global_device_ids`` flag and the reduction body."""

    def handler(ctx, op, args):
        a = op.attrs
        cid, _ = _channel(op)
        values = [_operand(args), *(_int(a.get(d)) for d in dims), _rows(a.get(groups)), cid]
        if global_ids:
            values.append(_flag(op, "use_global_device_ids"))
        if body:
            values.append(_body(ctx))
        return _results(getattr(xo, name)(*values))

    handler.__name__ = f"_{name}"
    return handler


_all_gather = _collective("all_gather", ["all_gather_dim"], global_ids=True)
_all_reduce = _collective("all_reduce", global_ids=True, body=True)
_reduce_scatter = _collective("reduce_scatter", ["scatter_dimension"], global_ids=True, body=True)
_all_to_all = _collective("all_to_all", ["split_dimension", "concat_dimension", "split_count"])
_collective_permute = _collective("collective_permute", groups="source_target_pairs")


def _collective_broadcast(ctx, op, args):
    cid, _ = _channel(op)
    groups = _rows(op.attrs.get("replica_groups"))
    if not _flag(op, "has_dynamic_root"):
        return _results(xo.collective_broadcast(_operand(args), groups, cid))
    # the last operand holds, per data operand, the source's index in its group: the
    # broadcast from a group reordered so that the source comes first
    data, root = list(args[:-1]), args[-1]
    if not isinstance(root, Tensor) or root.ndim != 1 or root.shape[0] != len(data):
        raise SpecError(
            op.name,
            "has_dynamic_root",
            f"the last operand must be a 1-D tensor "
            f"with one root index per data operand "
            f"({len(data)}), got {root!r}",
        )
    outs = []
    for x, r in zip(data, np.asarray(root).tolist()):
        if groups and not all(0 <= r < len(g) for g in groups):
            raise SpecError(
                op.name, "has_dynamic_root", f"root index {r} is outside a group of {groups}"
            )
        moved = [[g[r]] + g[:r] + g[r + 1 :] for g in groups] if groups else None
        if moved is None:
            n = (
                xo.distributed.current().num_replicas
                if cid <= 0
                else xo.distributed.current().num_partitions
            )
            everyone = list(range(n))
            moved = [[everyone[r]] + everyone[:r] + everyone[r + 1 :]]
        outs.append(xo.collective_broadcast(x, moved, cid))
    return outs if len(outs) > 1 else outs[0]


def _collective_reduce(ctx, op, args):
    """all_reduce, kept by the first process of each group (the root); zeros elsewhere."""
    from ..ops.collectives import _strategy, process_groups

    cid, _ = _channel(op)
    groups = _rows(op.attrs.get("replica_groups"))
    glob = _flag(op, "use_global_device_ids")
    reduced = xo.all_reduce(_operand(args), groups, cid, glob, _body(ctx))
    pctx = xo.distributed.current()
    strategy, _ = _strategy(op.name, "C4", cid, glob)
    pgs = process_groups(op.name, pctx, strategy, groups or [], "C1", "C3")
    root = any(g[0] == pctx.process_id for g in pgs)
    outs = list(reduced) if isinstance(reduced, tuple) else [reduced]
    if not root:
        from ..ops.collectives import _zeros_like

        outs = [_zeros_like(o) for o in outs]
    return outs if len(outs) > 1 else outs[0]


def _replica_id(ctx, op, args):
    return xo.replica_id()


def _partition_id(ctx, op, args):
    return xo.partition_id()


def _send(ctx, op, args):
    cid, ctype = _channel(op)
    *inputs, token = args
    return xo.send(inputs, token, cid, ctype, _flag(op, "is_host_transfer"))


def _recv(ctx, op, args):
    cid, ctype = _channel(op)
    return list(xo.recv(args[0], cid, ctype, _flag(op, "is_host_transfer")))


def _infeed(ctx, op, args):
    cfg = op.attrs.get("infeed_config")
    return list(xo.infeed(args[0], "" if cfg is None else str(cfg)))


def _outfeed(ctx, op, args):
    cfg = op.attrs.get("outfeed_config")
    *inputs, token = args
    return xo.outfeed(inputs, token, "" if cfg is None else str(cfg))


def _symbols(op, name, v):
    if not isinstance(v, (list, tuple)) or not all(isinstance(s, SymbolRef) for s in v):
        raise SpecError(op.name, name, f"{name} must be a list of function symbols, got {v!r}")
    return [s.name for s in v]


def _run_parallel(ctx, op, args):
    from ..distributed import run_parallel

    programs = op.attrs.get("programs")
    if not isinstance(programs, (list, tuple)) or not programs:
        raise SpecError(
            op.name,
            "programs",
            f"programs must be a non-empty list of lists of function symbols, got {programs!r}",
        )
    grid = [_symbols(op, "programs", row) for row in programs]
    cols = len(grid[0])
    if any(len(row) != cols for row in grid) or cols == 0:
        raise SpecError(
            op.name,
            "programs",
            f"programs must form a num_replicas x "
            f"num_partitions grid, got rows of "
            f"{[len(r) for r in grid]}",
        )
    funcs = ctx.module.funcs
    for name in (n for row in grid for n in row):
        if name not in funcs:
            raise SpecError(op.name, "programs", f"no function @{name} in this module")
    # operands, process by process (row-major)
    it, per_process = 0, []
    for row in grid:
        cells = []
        for name in row:
            n = len(funcs[name].arg_types)
            cells.append(tuple(args[it : it + n]))
            it += n
        per_process.append(cells)
    if it != len(args):
        raise SpecError(op.name, "", f"the programs take {it} operands in all, got {len(args)}")
    infeed = None
    if op.attrs.get("infeed") is not None:
        infeed = []
        for name in _symbols(op, "infeed", op.attrs["infeed"]):
            out = ctx.call(name, [])
            infeed.append(tuple(out))

    def program(name):
        def run(*a):
            return ctx.call(name, list(a))

        return run

    fns = [[program(name) for name in row] for row in grid]
    outs = run_parallel(fns, per_process, timeout=RUN_PARALLEL_TIMEOUT, infeed=infeed)
    flat = [v for row in outs for cell in row for v in cell]
    return flat[0] if len(flat) == 1 and len(op.results) == 1 else flat


def _register(name, handler, needs=()):
    OPS[name] = (handler, tuple(needs))


for _h, _xo in (
    (_all_gather, "all_gather"),
    (_all_reduce, "all_reduce"),
    (_reduce_scatter, "reduce_scatter"),
    (_all_to_all, "all_to_all"),
    (_collective_permute, "collective_permute"),
    (_collective_broadcast, "collective_broadcast"),
    (_collective_reduce, "all_reduce"),
    (_replica_id, "replica_id"),
    (_partition_id, "partition_id"),
    (_send, "send"),
    (_recv, "recv"),
    (_infeed, "infeed"),
    (_outfeed, "outfeed"),
):
    _register("stablehlo." + _h.__name__[1:], _h, [_xo])  # the handler named _<op>
_register("interpreter.run_parallel", _run_parallel)

for _name, (_h, _needs) in OPS.items():  # into the executor's table (xops/stablehlo/table.py)
    _register_op(_name, _h, _needs)
