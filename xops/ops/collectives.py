"""Collectives and process ids (send/recv/infeed/outfeed: .channels; composite and
rng_bernoulli: .composite).

The collectives (all_gather, all_reduce, all_to_all, collective_broadcast,
collective_permute, reduce_scatter; XLA's CrossReplicaSum) run on the StableHLO process
grid of the caller's *process context* (:mod:`xops.distributed`): a 1 x 1 grid by
default, one thread per process inside :func:`xops.distributed.run_parallel`, or one MPI
rank per process under ``mpiexec``. The same op functions serve every transport.

Process groups follow the spec's four strategies (004, "Collective ops"):
``cross_replica`` (channel_id <= 0), ``cross_replica_and_partition`` (channel_id > 0),
``flattened_ids`` (channel_id > 0 and use_global_device_ids) and ``cross_partition``
(all_to_all / collective_broadcast / collective_permute with channel_id > 0).
``replica_groups`` is a 2-D integer array (a list of lists); ``-1`` entries pad shorter
groups; an empty one means one group of every replica (XLA's convention).

Every process of a group must call the op with the same attributes and operand types;
otherwise each raises the same :class:`xops.distributed.CollectiveError`, and a process
that never comes makes the others raise :class:`xops.distributed.CollectiveTimeout`.

Gradients (reverse mode; each collective's transpose is another collective, assuming
the objective is the sum over processes of each process's value): all_reduce (add; max
and min by an equality mask) <- all_reduce(add); all_gather <-> reduce_scatter(add);
all_to_all <- all_to_all with the two dims swapped; collective_permute <- the reversed
pairs; collective_broadcast <- the group's sum on its source, zeros elsewhere.
"""

import builtins

import numpy as np

from ..autodiff import helpers as _H
from ..autodiff.tape import no_grad, primitive
from ..dtypes import as_dtype
from ..tensor import Tensor, _wrap
from ._bodies import Body, binary_op_name
from ..registry import declare
from ._core import SpecError, as_tensor, attr_int, check, check_arity, operands, tstr

__all__ = [
    "all_gather",
    "all_reduce",
    "all_to_all",
    "collective_broadcast",  # noqa: RUF022
    "collective_permute",
    "cross_replica_sum",
    "reduce_scatter",
    "replica_id",
    "partition_id",
]


def _ctx():
    if not _CURRENT:  # (imported on first use: xops.distributed imports the ops)
        from ..distributed.context import current

        _CURRENT.append(current)
    return _CURRENT[0]()


_CURRENT = []


# ---------------------------------------------------------------------------------------
# Process groups (spec 004, "Collective ops")
# ---------------------------------------------------------------------------------------


def _int_rows(op, label, name, value):
    """A 2-D integer attribute as a list of rows (``-1`` padding removed)."""
    if isinstance(value, Tensor):
        value = value._value
    if value is None:
        return []
    if isinstance(value, (list, builtins.tuple)) and all(
        isinstance(row, (list, builtins.tuple, np.ndarray)) for row in value
    ):
        rows = [list(row) for row in value]  # (ragged rows: as if padded with -1)
        if all(
            isinstance(v, (int, np.integer)) and not isinstance(v, bool)
            for row in rows
            for v in row
        ):
            return [[int(v) for v in row if v != -1] for row in rows if row]
    try:
        arr = np.asarray(value)
        if arr.size == 0:
            return []
        if arr.ndim != 2 or arr.dtype.kind not in "iu":
            raise TypeError
    except (TypeError, ValueError):
        raise SpecError(
            op,
            label,
            f"{name} must be a 2-D array of integers (rows padded with -1), got {value!r}",
        ) from None
    return [[int(v) for v in row if v != -1] for row in arr]


def _strategy(op, label, channel_id, use_global_device_ids, partition_kind=False):
    cid = attr_int(op, "channel_id", "channel_id", channel_id) if channel_id is not None else 0
    check(
        isinstance(use_global_device_ids, (bool, np.bool_)),
        op,
        label,
        lambda: f"use_global_device_ids must be a bool, got {use_global_device_ids!r}",
    )
    if use_global_device_ids:
        check(
            cid > 0,
            op,
            label,
            lambda: f"use_global_device_ids = true needs channel_id > 0, got channel_id = {cid}",
        )
        return "flattened_ids", cid
    if cid <= 0:
        return "cross_replica", cid
    return ("cross_partition" if partition_kind else "cross_replica_and_partition"), cid


def process_groups(op, ctx, strategy, groups, unique_label, range_label):
    """The process groups (tuples of (replica_id, partition_id)) of ``strategy`` applied
    to ``groups`` on the caller's grid, after the spec's is_unique and range checks."""
    nr, np_ = ctx.num_replicas, ctx.num_partitions
    size = {
        "cross_replica": nr,
        "cross_replica_and_partition": nr,
        "cross_partition": np_,
        "flattened_ids": nr * np_,
    }[strategy]
    if not groups:
        groups = [list(range(size))]
    flat = [i for g in groups for i in g]
    check(
        len(set(flat)) == len(flat),
        op,
        unique_label,
        lambda: f"replica_groups must not repeat an id, got {groups}",
    )
    check(
        all(0 <= i < size for i in flat),
        op,
        range_label,
        lambda: (
            f"replica_groups ids must be in [0, {size}) for {strategy} on a "
            f"{nr}x{np_} process grid, got {groups}"
        ),
    )
    out = []
    if strategy == "cross_replica":
        for g in groups:
            for p in range(np_):
                out.append(builtins.tuple((r, p) for r in g))
    elif strategy == "cross_partition":
        for g in groups:
            for r in range(nr):
                out.append(builtins.tuple((r, p) for p in g))
    elif strategy == "cross_replica_and_partition":
        for g in groups:
            out.append(builtins.tuple((r, p) for p in range(np_) for r in g))
    else:
        for g in groups:
            out.append(builtins.tuple(divmod(i, np_) for i in g))
    return out


def _dimension(op, label, range_label, name, value, xs):
    """An integer attribute naming a dimension of every operand (in [0, rank))."""
    dim = attr_int(op, label, name, value)
    for x in xs:
        check(
            0 <= dim < x.ndim,
            op,
            range_label,
            lambda x=x: f"{name} must be in [0, rank(operand)={x.ndim}), got {dim} for {tstr(x)}",
        )
    return dim


def _variadic(op, operand):
    """(list of tensors, whether the op was given a sequence)."""
    if (
        isinstance(operand, (list, builtins.tuple))
        and operand
        and all(isinstance(v, (Tensor, np.ndarray)) for v in operand)
    ):
        xs = operands(op, *operand, names=[f"operand[{i}]" for i in range(len(operand))])
        return xs, True
    return [as_tensor(operand, op=op)], False


def _arrays(xs):
    return [np.asarray(x._value, order="C") for x in xs]


def _single_or_tuple(ts, variadic):
    return builtins.tuple(ts) if variadic else ts[0]


def _key(op, **attrs):
    return f"{op}({', '.join(f'{k}={v}' for k, v in attrs.items())})"


def _check_multiple(op, label, x, name, dim, n, what):
    """Operand ``x``'s dim ``dim`` (the attribute ``name``) must be a multiple of ``n``."""
    check(
        x.shape[dim] % n == 0,
        op,
        label,
        lambda: (
            f"dim(operand, {name}={dim}) = {x.shape[dim]} must be a "
            f"multiple of {what}, got {tstr(x)}"
        ),
    )


def _cotangent(res):
    """A gradient rule's result: the transpose collective's output, as a list when the
    collective was variadic."""
    return (list(res) if isinstance(res, builtins.tuple) else res,)


def _as_list(g):
    return list(g) if isinstance(g, (list, builtins.tuple)) else [g]


# ---------------------------------------------------------------------------------------
# all_gather
# ---------------------------------------------------------------------------------------


@primitive("all_gather")
def all_gather(
    operand, all_gather_dim, replica_groups=None, channel_id=0, use_global_device_ids=False
):
    """stablehlo.all_gather: within each process group, concatenate every member's
    ``operand`` along ``all_gather_dim`` in group order (C6: that dim grows by the group
    size). ``operand`` may be a sequence of tensors (variadic form: a tuple back).

    >>> run_parallel(lambda x: xo.all_gather(x, 1, [[0, 1]]),
    ...              [[xo.tensor([[1, 2], [3, 4]])], [xo.tensor([[5, 6], [7, 8]])]])
    ... # each: [[1, 2, 5, 6], [3, 4, 7, 8]]
    [[xo.tensor([[1, 2, 5, 6],
               [3, 4, 7, 8]], i64[2,4])], [xo.tensor([[1, 2, 5, 6],
               [3, 4, 7, 8]], i64[2,4])]]
    """
    op = "all_gather"
    xs, variadic = _variadic(op, operand)
    dim = _dimension(op, "I2", "C1", "all_gather_dim", all_gather_dim, xs)
    strategy, _ = _strategy(op, "C5", channel_id, use_global_device_ids)
    groups = _int_rows(op, "I3", "replica_groups", replica_groups)
    ctx = _ctx()
    pgs = process_groups(op, ctx, strategy, groups, "C2", "C4")
    got = ctx.all_gather(op, _key(op, dim=dim, groups=pgs), pgs, _arrays(xs))
    outs = [
        _wrap(np.concatenate([m[i] for m in got], axis=dim), x._dtype) for i, x in enumerate(xs)
    ]
    return _single_or_tuple(outs, variadic)


@all_gather.defvjp
def _all_gather_vjp(
    g, out, operand, all_gather_dim, replica_groups, channel_id, use_global_device_ids
):
    res = reduce_scatter(
        g, all_gather_dim, replica_groups, channel_id, use_global_device_ids, _add_body()
    )
    return _cotangent(res)


def _add_body():
    from .elementwise import add

    return add


# ---------------------------------------------------------------------------------------
# all_reduce, cross_replica_sum, reduce_scatter
# ---------------------------------------------------------------------------------------

_NATIVE = {"add": "sum", "maximum": "max", "minimum": "min"}


def _body_type(op, label, computation, x):
    """The element type E the body computes in (C5/C7): its result on two 0-d values."""
    zero = _wrap(np.zeros((), x._dtype.np), x._dtype)
    with no_grad():
        r = computation(zero, zero)
    if isinstance(r, (list, builtins.tuple)) and len(r) == 1:
        r = r[0]
    check(
        isinstance(r, Tensor) and r.ndim == 0,
        op,
        label,
        lambda: (
            f"computation must map two 0-d tensors to one 0-d tensor, got "
            f"{getattr(r, 'type', type(r).__name__)}"
        ),
    )
    a, b = x._dtype, r._dtype
    kind = {"si": "int", "ui": "int"}
    check(
        kind.get(a.kind, a.kind) == kind.get(b.kind, b.kind) and a.bits <= b.bits,
        op,
        label,
        lambda: (
            f"computation computes in {b.name}, which {a.name} operands cannot be "
            f"promoted to (is_promotable)"
        ),
    )
    return b


_PLANS = {}  # (op function, operand element types) -> _body_plan's result


def _body_plan(op, label, computation, xs):
    """(element type E per operand, the body's spec name or None, the transport's native
    reduction or None). Remembered when the body is an elementwise op function itself
    (``xo.add``, ``xo.maximum``: known by identity, so its arity, name and result types
    are fixed) or a ``Body.builtin``, per operand types; any other body is analysed and
    called every time."""
    dts = [_body_type(op, label, computation, x) for x in xs]
    name = binary_op_name(computation)
    promoted = any(dt is not x._dtype for dt, x in zip(dts, xs))
    native = (
        _NATIVE.get(name)
        if not promoted and all(x._dtype.kind in ("si", "ui", "float", "complex") for x in xs)
        else None
    )
    if name is not None and (
        getattr(computation, "op_name", None) == name
        or isinstance(computation, Body)
        and computation.kind == "builtin"
    ):
        if len(_PLANS) >= 256:
            _PLANS.clear()
        _PLANS[(computation, *[x._dtype for x in xs])] = (dts, name, native)
    return dts, name, native


def _memo_key(op, computation, groups_attr, channel_id, use_global_device_ids, xs):
    """A hashable key for the context's memo of what ``_reduce`` derives from its
    attributes, or None when they are not plain (rows of Python ints, an int channel id,
    a bool): then it derives them every call."""
    if groups_attr is None:
        rows = ()
    elif isinstance(groups_attr, (list, builtins.tuple)) and all(
        isinstance(r, (list, builtins.tuple)) and all(type(v) is int for v in r)
        for r in groups_attr
    ):
        rows = builtins.tuple(builtins.tuple(r) for r in groups_attr)
    else:
        return None
    if (
        not (channel_id is None or type(channel_id) is int)
        or type(use_global_device_ids) is not bool
    ):
        return None
    if len(xs) == 1:  # (no comprehension: a repeated call's every step counts)
        return (op, computation, rows, channel_id, use_global_device_ids, xs[0]._dtype)
    return (op, computation, rows, channel_id, use_global_device_ids, *[x._dtype for x in xs])


def _reduce(op, labels, xs, groups_attr, channel_id, use_global_device_ids, computation):
    """The all_reduce of ``xs`` over the caller's process group (spec order fold)."""
    ctx = _ctx()
    try:
        memo = _memo_key(op, computation, groups_attr, channel_id, use_global_device_ids, xs)
        hit = ctx.memo.get(memo) if memo is not None else None
    except TypeError:  # an unhashable callable
        memo = hit = None
    if hit is not None:  # (a remembered body with these attributes passed every check)
        pgs, key, (dts, name, native) = hit
    else:
        try:
            plan = _PLANS.get((computation, *[x._dtype for x in xs]))
        except TypeError:  # an unhashable callable
            plan = None
        if plan is None:  # (a remembered op function passed this check)
            check_arity(op, labels["body"], "computation", computation, 2)
        strategy, _ = _strategy(op, labels["global"], channel_id, use_global_device_ids)
        groups = _int_rows(op, labels["groups"], "replica_groups", groups_attr)
        pgs = process_groups(op, ctx, strategy, groups, labels["unique"], labels["range"])
        dts, name, native = plan or _body_plan(op, labels["body"], computation, xs)
        key = _key(
            op,
            groups=pgs,
            body=name or getattr(computation, "__name__", "body"),
            types=[dt.name for dt in dts],
        )
        if memo is not None and (computation, *[x._dtype for x in xs]) in _PLANS:
            if len(ctx.memo) >= 256:
                ctx.memo.clear()
            ctx.memo[memo] = (pgs, key, (dts, name, native))

    def fold(members):
        from .conversion import convert

        outs = []
        with no_grad():
            for i, dt in enumerate(dts):
                vals = [_wrap(m[i], xs[i]._dtype) for m in members]
                if dt is not xs[i]._dtype:
                    vals = [convert(v, dt) for v in vals]
                acc = vals[0]
                for v in vals[1:]:  # the spec's schedule, left to right in group order
                    acc = computation(acc, v)
                    if isinstance(acc, (list, builtins.tuple)):
                        acc = acc[0]
                    check(
                        isinstance(acc, Tensor) and acc._dtype is dt and acc.shape == v.shape,
                        op,
                        labels["body"],
                        lambda acc=acc, dt=dt: (
                            f"computation must be elementwise and "
                            f"return {dt.name}, got "
                            f"{getattr(acc, 'type', type(acc).__name__)}"
                        ),
                    )
                outs.append(np.asarray(acc._value, order="C"))
        return outs

    if len(xs) == 1:  # (the same without comprehensions: see _memo_key)
        got = ctx.all_reduce(op, key, pgs, [np.asarray(xs[0]._value, order="C")], fold, native)
        return [_wrap(np.asarray(got[0]), dts[0])], pgs, ctx
    got = ctx.all_reduce(op, key, pgs, _arrays(xs), fold, native)
    return [_wrap(np.asarray(a), dt) for a, dt in zip(got, dts)], pgs, ctx


_ALL_REDUCE = dict(body="C5", **{"global": "C4"}, groups="I2", unique="C1", range="C3")


@primitive("all_reduce")
def all_reduce(
    operand, replica_groups=None, channel_id=0, use_global_device_ids=False, computation=None
):
    """stablehlo.all_reduce: within each process group, reduce every member's ``operand``
    with ``computation`` (a body ``(tensor<E>, tensor<E>) -> tensor<E>``, e.g.
    ``xo.add``); every member gets the result (C6/C7: operand's shape, element type E).

    Schedule: a left-to-right fold in group order, identical on every process; under MPI
    an add/max/min body on an MPI-native type uses ``Allreduce`` (see
    docs/distributed.md on determinism). ``operand`` may be a sequence (variadic form:
    the body applies to each operand, a tuple back).

    >>> run_parallel(lambda x: xo.all_reduce(x, [[0, 1]], computation=xo.add),
    ...              [[xo.tensor([1, 2, 3, 4])], [xo.tensor([5, 6, 7, 8])]])
    ... # each: [6, 8, 10, 12]
    [[xo.tensor([ 6,  8, 10, 12], i64[4])], [xo.tensor([ 6,  8, 10, 12], i64[4])]]
    """
    op = "all_reduce"
    xs, variadic = ([operand], False) if type(operand) is Tensor else _variadic(op, operand)
    outs, _, _ = _reduce(
        op, _ALL_REDUCE, xs, replica_groups, channel_id, use_global_device_ids, computation
    )
    return _single_or_tuple(outs, variadic)


def _unsupported_grad(op, computation):
    raise SpecError(
        op,
        "grad",
        f"gradients of {op} exist for add, maximum and minimum "
        f"bodies, got {getattr(computation, '__name__', computation)!r}",
    )


@all_reduce.defvjp
def _all_reduce_vjp(
    g, out, operand, replica_groups, channel_id, use_global_device_ids, computation
):
    from .elementwise import add, compare, select

    name = binary_op_name(computation)
    if name not in _NATIVE:
        _unsupported_grad("all_reduce", computation)
    gs, outs = _as_list(g), _as_list(out)
    xs = operand if isinstance(operand, (list, builtins.tuple)) else [operand]
    summed = _as_list(
        all_reduce(
            gs if len(gs) > 1 else gs[0], replica_groups, channel_id, use_global_device_ids, add
        )
    )
    if name != "add":  # max/min: the cotangent flows to the processes holding the extreme
        summed = [select(compare(x, o, "EQ"), s, 0) for x, o, s in zip(xs, outs, summed)]
    return (summed if isinstance(operand, (list, builtins.tuple)) else summed[0],)


@primitive("cross_replica_sum", spec="xla")
def cross_replica_sum(operand, replica_groups=None):
    """XLA CrossReplicaSum: ``all_reduce`` with an add body over ``replica_groups``
    (default: one group of every replica).

    >>> run_parallel(lambda x: xo.cross_replica_sum(x), [[xo.tensor(1.0)], [xo.tensor(2.0)]])
    ... # each: 3.0
    [[xo.tensor(3., f32[])], [xo.tensor(3., f32[])]]
    """
    xs, variadic = _variadic("cross_replica_sum", operand)
    outs, _, _ = _reduce(
        "cross_replica_sum", _ALL_REDUCE, xs, replica_groups, 0, False, _add_body()
    )
    return _single_or_tuple(outs, variadic)


@cross_replica_sum.defvjp
def _cross_replica_sum_vjp(g, out, operand, replica_groups):
    res = cross_replica_sum(g, replica_groups)
    return _cotangent(res)


_REDUCE_SCATTER = dict(body="C7", **{"global": "C6"}, groups="I3", unique="C3", range="C5")


@primitive("reduce_scatter")
def reduce_scatter(
    operand,
    scatter_dimension,
    replica_groups=None,
    channel_id=0,
    use_global_device_ids=False,
    computation=None,
):
    """stablehlo.reduce_scatter: all_reduce within each process group, split the result
    along ``scatter_dimension`` into one part per member (C1: it must divide), member k
    gets part k (C8).

    >>> run_parallel(lambda x: xo.reduce_scatter(x, 1, [[0, 1]], computation=xo.add),
    ...              [[xo.tensor([[1, 2, 3, 4]])], [xo.tensor([[9, 10, 11, 12]])]])
    ... # [[10, 12]] and [[14, 16]]
    [[xo.tensor([[10, 12]], i64[1,2])], [xo.tensor([[14, 16]], i64[1,2])]]
    """
    op = "reduce_scatter"
    xs, variadic = _variadic(op, operand)
    dim = _dimension(op, "I2", "C2", "scatter_dimension", scatter_dimension, xs)
    # the group size is needed for C1 before any communication
    strategy, _ = _strategy(op, "C6", channel_id, use_global_device_ids)
    ctx = _ctx()
    pgs = process_groups(
        op, ctx, strategy, _int_rows(op, "I3", "replica_groups", replica_groups), "C3", "C5"
    )
    group = ctx.my_group(op, pgs)
    n = len(group)
    for x in xs:
        _check_multiple(op, "C1", x, "scatter_dimension", dim, n, f"the group size {n}")
    reduced, _, _ = _reduce(
        op, _REDUCE_SCATTER, xs, replica_groups, channel_id, use_global_device_ids, computation
    )
    k = group.index(ctx.process_id)
    outs = []
    for r in reduced:
        size = r.shape[dim] // n
        sl = [slice(None)] * r.ndim
        sl[dim] = slice(k * size, (k + 1) * size)
        outs.append(_wrap(np.asarray(r._value[builtins.tuple(sl)], order="C"), r._dtype))
    return _single_or_tuple(outs, variadic)


@reduce_scatter.defvjp
def _reduce_scatter_vjp(
    g,
    out,
    operand,
    scatter_dimension,
    replica_groups,
    channel_id,
    use_global_device_ids,
    computation,
):
    if binary_op_name(computation) != "add":
        raise SpecError(
            "reduce_scatter", "grad", "gradients of reduce_scatter exist for the add body only"
        )
    res = all_gather(g, scatter_dimension, replica_groups, channel_id, use_global_device_ids)
    return _cotangent(res)


# ---------------------------------------------------------------------------------------
# all_to_all
# ---------------------------------------------------------------------------------------


@primitive("all_to_all")
def all_to_all(
    operand, split_dimension, concat_dimension, split_count, replica_groups=None, channel_id=0
):
    """stablehlo.all_to_all: within each process group, split ``operand`` along
    ``split_dimension`` into ``split_count`` parts, send part i to the i-th member, and
    concatenate the parts received along ``concat_dimension`` in group order (C9).

    >>> run_parallel(lambda x: xo.all_to_all(x, 1, 0, 2, [[0, 1]]),
    ...              [[xo.tensor([[1, 2, 3, 4], [5, 6, 7, 8]])],
    ...               [xo.tensor([[9, 10, 11, 12], [13, 14, 15, 16]])]])
    ... # process 0: [[1, 2], [5, 6], [9, 10], [13, 14]]
    [[xo.tensor([[ 1,  2],
               [ 5,  6],
               [ 9, 10],
               [13, 14]], i64[4,2])], [xo.tensor([[ 3,  4],
               [ 7,  8],
               [11, 12],
               [15, 16]], i64[4,2])]]
    """
    op = "all_to_all"
    xs, variadic = _variadic(op, operand)
    sd = attr_int(op, "I2", "split_dimension", split_dimension)
    cd = attr_int(op, "I3", "concat_dimension", concat_dimension)
    n = attr_int(op, "I4", "split_count", split_count)
    check(n > 0, op, "C4", lambda: f"split_count must be > 0, got {n}")
    for x in xs:
        check(
            0 <= sd < x.ndim,
            op,
            "C1",
            lambda x=x: (
                f"split_dimension must be in [0, rank(operand)={x.ndim}), got {sd} for {tstr(x)}"
            ),
        )
        _check_multiple(op, "C2", x, "split_dimension", sd, n, f"split_count = {n}")
        check(
            0 <= cd < x.ndim,
            op,
            "C3",
            lambda x=x: (
                f"concat_dimension must be in [0, rank(operand)={x.ndim}), got {cd} for {tstr(x)}"
            ),
        )
    strategy, _ = _strategy(op, "I6", channel_id, False, partition_kind=True)
    groups = _int_rows(op, "I5", "replica_groups", replica_groups)
    ctx = _ctx()
    pgs = process_groups(op, ctx, strategy, groups, "C5", "C7")
    check(
        all(len(g) == n for g in pgs),
        op,
        "C8",
        lambda: (
            f"every replica group must have split_count = {n} members, got groups "
            f"{groups or 'of all'} ({[len(g) for g in pgs]} members)"
        ),
    )
    parts = [[np.asarray(p, order="C") for p in np.split(a, n, axis=sd)] for a in _arrays(xs)]
    by_member = [[parts[i][j] for i in range(len(xs))] for j in range(n)]
    got = ctx.all_to_all(op, _key(op, sd=sd, cd=cd, n=n, groups=pgs), pgs, by_member)
    outs = [_wrap(np.concatenate([m[i] for m in got], axis=cd), x._dtype) for i, x in enumerate(xs)]
    return _single_or_tuple(outs, variadic)


@all_to_all.defvjp
def _all_to_all_vjp(
    g, out, operand, split_dimension, concat_dimension, split_count, replica_groups, channel_id
):
    res = all_to_all(g, concat_dimension, split_dimension, split_count, replica_groups, channel_id)
    return _cotangent(res)


# ---------------------------------------------------------------------------------------
# collective_broadcast, collective_permute
# ---------------------------------------------------------------------------------------


def _zeros_like(x):
    with no_grad():
        return _H.zeros_like(x)


@primitive("collective_broadcast")
def collective_broadcast(operand, replica_groups=None, channel_id=0):
    """stablehlo.collective_broadcast: every member of a process group gets the value of
    the group's first process; a process in no group gets zeros (C3: operand's type).

    >>> run_parallel(lambda x: xo.collective_broadcast(x, [[2, 1]]),
    ...              [[xo.tensor([[1, 2]])], [xo.tensor([[3, 4]])], [xo.tensor([[5, 6]])],
    ...               [xo.tensor([[7, 8]])]])
    ... # [[0, 0]], [[5, 6]], [[5, 6]], [[0, 0]]
    [[xo.tensor([[0, 0]], i64[1,2])], [xo.tensor([[5, 6]], i64[1,2])], [xo.tensor([[5, 6]],
      i64[1,2])], [xo.tensor([[0, 0]], i64[1,2])]]
    """
    op = "collective_broadcast"
    xs, variadic = _variadic(op, operand)
    strategy, _ = _strategy(op, "I3", channel_id, False, partition_kind=True)
    groups = _int_rows(op, "I2", "replica_groups", replica_groups)
    ctx = _ctx()
    pgs = process_groups(op, ctx, strategy, groups, "C1", "C2")
    got = ctx.broadcast(op, _key(op, groups=pgs), pgs, _arrays(xs), 0)
    if got is None:
        outs = [_zeros_like(x) for x in xs]
    else:
        outs = [_wrap(np.asarray(a), x._dtype) for a, x in zip(got, xs)]
    return _single_or_tuple(outs, variadic)


def flattened_groups(ctx, pgs):
    """``pgs`` (process-id tuples) as flattened-id groups covering every process (the
    processes in no group as singletons): groups for ``use_global_device_ids``."""
    seen = {p for g in pgs for p in g}
    rows = [[ctx.flat(p) for p in g] for g in pgs]
    rows += [
        [ctx.flat((r, p))]
        for r in range(ctx.num_replicas)
        for p in range(ctx.num_partitions)
        if (r, p) not in seen
    ]
    width = max(len(r) for r in rows)
    return [r + [-1] * (width - len(r)) for r in rows]


@collective_broadcast.defvjp
def _collective_broadcast_vjp(g, out, operand, replica_groups, channel_id):
    from .elementwise import add

    op = "collective_broadcast"
    ctx = _ctx()
    strategy, _ = _strategy(op, "I3", channel_id, False, partition_kind=True)
    pgs = process_groups(
        op, ctx, strategy, _int_rows(op, "I2", "replica_groups", replica_groups), "C1", "C2"
    )
    gs = _as_list(g)
    summed = _as_list(
        all_reduce(gs if len(gs) > 1 else gs[0], flattened_groups(ctx, pgs), 1, True, add)
    )
    source = any(g_[0] == ctx.process_id for g_ in pgs)
    res = [s if source else _zeros_like(s) for s in summed]
    return (res if isinstance(operand, (list, builtins.tuple)) else res[0],)


def _pairs(op, ctx, source_target_pairs, channel_id):
    if isinstance(source_target_pairs, Tensor):
        source_target_pairs = source_target_pairs._value
    try:
        arr = np.asarray(source_target_pairs)
        ok = arr.ndim == 2 and (arr.size == 0 or arr.dtype.kind in "iu")
    except (TypeError, ValueError):
        ok = False
    check(
        ok,
        op,
        "I2",
        lambda: f"source_target_pairs must be a 2-D array of integers, got {source_target_pairs!r}",
    )
    check(
        arr.shape[1] == 2 or arr.size == 0,
        op,
        "C1",
        lambda: f"dim(source_target_pairs, 1) must be 2, got shape {list(arr.shape)}",
    )
    pairs = [(int(a), int(b)) for a, b in arr.reshape(-1, 2)]
    check(
        len({a for a, _ in pairs}) == len(pairs),
        op,
        "C2",
        lambda: f"sources must be unique, got {pairs}",
    )
    check(
        len({b for _, b in pairs}) == len(pairs),
        op,
        "C3",
        lambda: f"targets must be unique, got {pairs}",
    )
    strategy, _ = _strategy(op, "I3", channel_id, False, partition_kind=True)
    size = ctx.num_replicas if strategy == "cross_replica" else ctx.num_partitions
    check(
        all(0 <= v < size for pr in pairs for v in pr),
        op,
        "C4",
        lambda: (
            f"source_target_pairs ids must be in [0, {size}) for {strategy} on a "
            f"{ctx.num_replicas}x{ctx.num_partitions} process grid, got {pairs}"
        ),
    )
    r, p = ctx.process_id
    if strategy == "cross_replica":

        def pid(i):
            return (i, p)

        mine = r
    else:

        def pid(i):
            return (r, i)

        mine = p
    target = next((pid(b) for a, b in pairs if a == mine), None)
    source = next((pid(a) for a, b in pairs if b == mine), None)
    return pairs, target, source


@primitive("collective_permute")
def collective_permute(operand, source_target_pairs, channel_id=0):
    """stablehlo.collective_permute: each source sends ``operand`` to its target (pairs
    within each replica, or within each partition when channel_id > 0); a process that
    is nobody's target gets zeros (C5: operand's type).

    >>> run_parallel(lambda x: xo.collective_permute(x, [[0, 1], [1, 2]]),
    ...              [[xo.tensor([1, 2])], [xo.tensor([3, 4])], [xo.tensor([5, 6])]])
    ... # [0, 0], [1, 2], [3, 4]
    [[xo.tensor([0, 0], i64[2])], [xo.tensor([1, 2], i64[2])], [xo.tensor([3, 4], i64[2])]]
    """
    op = "collective_permute"
    xs, variadic = _variadic(op, operand)
    ctx = _ctx()
    pairs, target, source = _pairs(op, ctx, source_target_pairs, channel_id)
    got = ctx.permute(op, _key(op, pairs=pairs, channel=channel_id), target, source, _arrays(xs))
    if got is None:
        outs = [_zeros_like(x) for x in xs]
    else:
        outs = [_wrap(np.asarray(a), x._dtype) for a, x in zip(got, xs)]
    return _single_or_tuple(outs, variadic)


@collective_permute.defvjp
def _collective_permute_vjp(g, out, operand, source_target_pairs, channel_id):
    pairs = np.asarray(
        source_target_pairs._value
        if isinstance(source_target_pairs, Tensor)
        else source_target_pairs
    ).reshape(-1, 2)
    res = collective_permute(g, pairs[:, ::-1].copy(), channel_id)
    return _cotangent(res)


# ---------------------------------------------------------------------------------------
# replica_id, partition_id
# ---------------------------------------------------------------------------------------


@declare("replica_id")
def replica_id():
    """stablehlo.replica_id: the caller's replica id, a 0-d ui32 tensor.

    >>> run_parallel(lambda: xo.replica_id(), num_replicas=2)   # [[0], [1]]
    [[xo.tensor(0, ui32[])], [xo.tensor(1, ui32[])]]
    """
    return _wrap(np.array(_ctx().replica_id, np.uint32), as_dtype("ui32"))


@declare("partition_id")
def partition_id():
    """stablehlo.partition_id: the caller's partition id, a 0-d ui32 tensor.

    >>> run_parallel(lambda: xo.partition_id(), num_partitions=2)   # [[0, 1]]
    [[xo.tensor(0, ui32[]), xo.tensor(1, ui32[])]]
    """
    return _wrap(np.array(_ctx().partition_id, np.uint32), as_dtype("ui32"))
