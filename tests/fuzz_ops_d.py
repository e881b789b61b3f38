"""Fuzz generators, part 4: collectives, channels, host I/O, composite, rng_bernoulli.

Outside :func:`xops.distributed.run_parallel` the process grid is 1 x 1, so each
collective's reference is the spec's formula for one process: all_reduce, all_gather,
reduce_scatter, all_to_all (split_count 1), collective_broadcast and collective_permute
(pair (0, 0)) give the operand back; replica_id / partition_id are 0; send then recv on
one channel hands the values over; infeed returns what put_infeed queued; outfeed queues
its inputs. composite(_call) is its decomposition applied to the inputs."""

import numpy as np
from fuzz_core import ALL, DT, Case, P, agree, dtype_of, expect, holder, reject_unless
from fuzz_ops_a import an_int, gen

import xops as xo
import xops.distributed as xd


def _operand(d, lo=0):
    dt = d.dtype([x for x in ALL if x.kind in ("si", "ui", "float")], kernel=False)
    return d.operand(dt, d.shape(lo=lo))


def _identity_ref(dim_param=None, count_param=None):
    def ref(v):
        x = v["operand"]
        h = holder(x)
        if dim_param:
            for p in dim_param:
                an_int(v[p], 0, h.ndim - 1)
        if count_param:
            an_int(v[count_param], 1, 1)
        return expect(h, dtype_of(x))

    return ref


def _groups(d):
    return d.choice([None, [[0]], []])


@gen("all_gather")
def g_all_gather(d):
    x = _operand(d, lo=1)
    return Case(
        "all_gather",
        [
            P("operand", x, "tensor"),
            P("all_gather_dim", d.int(0, np.ndim(x) - 1), "dim", rank=np.ndim(x)),
            P("replica_groups", _groups(d), "any", kw=True),
        ],
        _identity_ref(["all_gather_dim"]),
    )


@gen("all_reduce")
def g_all_reduce(d):
    body = d.choice([xo.add, xo.maximum, xo.minimum])
    return Case(
        "all_reduce",
        [
            P("operand", _operand(d), "tensor"),
            P("replica_groups", _groups(d), "any", kw=True),
            P("computation", body, "body", kw=True, none_ok=True),
        ],
        _identity_ref(),
    )


@gen("all_to_all")
def g_all_to_all(d):
    x = _operand(d, lo=1)
    r = np.ndim(x)
    return Case(
        "all_to_all",
        [
            P("operand", x, "tensor"),
            P("split_dimension", d.int(0, r - 1), "dim", rank=r),
            P("concat_dimension", d.int(0, r - 1), "dim", rank=r),
            P("split_count", 1, "int"),
        ],
        _identity_ref(["split_dimension", "concat_dimension"], "split_count"),
    )


@gen("collective_broadcast")
def g_collective_broadcast(d):
    return Case(
        "collective_broadcast",
        [P("operand", _operand(d), "tensor"), P("replica_groups", _groups(d), "any", kw=True)],
        _identity_ref(),
    )


@gen("collective_permute")
def g_collective_permute(d):
    def ref(v):
        pairs = v["source_target_pairs"]
        reject_unless(pairs == [[0, 0]])
        return _identity_ref()(v)

    return Case(
        "collective_permute",
        [P("operand", _operand(d), "tensor"), P("source_target_pairs", [[0, 0]], "any")],
        ref,
    )


@gen("cross_replica_sum")
def g_cross_replica_sum(d):
    return Case("cross_replica_sum", [P("operand", _operand(d), "tensor")], _identity_ref())


@gen("reduce_scatter")
def g_reduce_scatter(d):
    x = _operand(d, lo=1)
    return Case(
        "reduce_scatter",
        [
            P("operand", x, "tensor"),
            P("scatter_dimension", d.int(0, np.ndim(x) - 1), "dim", rank=np.ndim(x)),
            P("computation", xo.add, "body", kw=True, none_ok=True),
        ],
        _identity_ref(["scatter_dimension"]),
    )


def _zero_id(v):
    return expect(np.array(0, np.uint32), DT["ui32"])


@gen("replica_id")
def g_replica_id(d):
    return Case("replica_id", [], _zero_id)


@gen("partition_id")
def g_partition_id(d):
    return Case("partition_id", [], _zero_id)


def _token_cmp(out, want, v):
    assert isinstance(out, xo.Token), f"not a Token: {out!r}"


@gen("send")
def g_send(d):
    xs = [_operand(d) for _ in range(d.int(1, 2))]
    ch = d.int(1, 5)

    def ref(v):
        reject_unless(isinstance(v["token"], xo.Token))
        an_int(v["channel_id"])
        for x in v["inputs"]:
            holder(x)

    def cmp(out, want, v):  # the values arrive on the channel: take them back
        _token_cmp(out, want, v)
        got = xo.recv(xo.create_token(), v["channel_id"])
        for o, x in zip(got[:-1], v["inputs"]):
            agree(o, expect(holder(x), dtype_of(x)))

    return Case(
        "send",
        [
            P("inputs", xs, "tensors"),
            P("token", xo.create_token(), "tensor"),
            P("channel_id", ch, "int"),
        ],
        ref,
        cmp,
    )


def _drain(ch):
    """Empty a channel (messages left by calls whose recv was mutated away)."""
    while True:
        try:
            xo.recv(xo.create_token(), ch)
        except xo.SpecError:
            return


@gen("recv")
def g_recv(d):
    x = _operand(d)
    ch = d.int(6, 9)
    _drain(ch)
    xo.send([x], xo.create_token(), ch)  # one message waits on the channel

    def ref(v):
        reject_unless(isinstance(v["token"], xo.Token) and v["channel_id"] == ch)
        return (expect(holder(x), dtype_of(x)), xo.Token())

    def cmp(out, want, v):
        assert isinstance(out, tuple) and isinstance(out[-1], xo.Token)
        agree(out[:-1], want[:-1])

    case = Case(
        "recv", [P("token", xo.create_token(), "tensor"), P("channel_id", ch, "int")], ref, cmp
    )
    case.extra["result_not_tensor"] = True
    return case


@gen("infeed")
def g_infeed(d):
    x = _operand(d)
    while True:  # entries left by calls whose infeed was mutated away
        try:
            xo.infeed(xo.create_token())
        except xo.SpecError:
            break
    xd.put_infeed(x)

    def ref(v):
        reject_unless(isinstance(v["token"], xo.Token))
        return (expect(holder(x), dtype_of(x)), xo.Token())

    def cmp(out, want, v):
        assert isinstance(out, tuple) and isinstance(out[-1], xo.Token)
        agree(out[:-1], want[:-1])

    case = Case("infeed", [P("token", xo.create_token(), "tensor")], ref, cmp)
    case.extra["result_not_tensor"] = True
    return case


@gen("outfeed")
def g_outfeed(d):
    xs = [_operand(d) for _ in range(d.int(1, 2))]

    def ref(v):
        reject_unless(isinstance(v["token"], xo.Token))
        for x in v["inputs"]:
            holder(x)

    def cmp(out, want, v):
        _token_cmp(out, want, v)
        got = xd.get_outfeed()
        assert got is not None and len(got) == len(v["inputs"])
        for o, x in zip(got, v["inputs"]):
            agree(o, expect(holder(x), dtype_of(x)))

    return Case(
        "outfeed", [P("inputs", xs, "tensors"), P("token", xo.create_token(), "tensor")], ref, cmp
    )


@gen("composite")
def g_composite(d):
    x = _operand(d)

    def ref(v):
        reject_unless(isinstance(v["name"], str) and v["name"] != "")
        if v["decomposition"] is not xo.negate:
            return None  # a mutated decomposition: composite returns what it returns
        ins = v["inputs"]
        reject_unless(isinstance(ins, (list, tuple)) and len(ins) == 1)
        h, dt = holder(ins[0]), dtype_of(ins[0])
        reject_unless(dt.kind in ("si", "ui", "float"))
        return expect(np.negative(h), dt)

    def cmp(out, want, v):
        if want is not None:
            agree(out, want)

    return Case(
        "composite",
        [
            P("inputs", [x], "tensors"),
            P("name", "fuzz.negate", "any"),
            P("decomposition", xo.negate, "body", kw=True, lenient=True),
        ],
        ref,
        cmp,
        names=("negate",),
    )


@gen("composite_call")
def g_composite_call(d):
    x = _operand(d)

    def ref(v):
        reject_unless(isinstance(v["name"], str) and v["name"] != "")
        if v["computation"] is not xo.negate:  # a mutated computation: what it returns
            return None
        reject_unless(len(v["operands"]) == 1)
        h, dt = holder(v["operands"][0]), dtype_of(v["operands"][0])
        reject_unless(dt.kind in ("si", "ui", "float"))
        return expect(np.negative(h), dt)

    def cmp(out, want, v):
        if want is not None:
            agree(out, want)

    return Case(
        "composite_call",
        [
            P("computation", xo.negate, "body", lenient=True),
            P("operands", [x], "varargs"),
            P("name", "fuzz.negate", "any", kw=True),
        ],
        ref,
        cmp,
    )


@gen("rng_bernoulli")
def g_rng_bernoulli(d):
    dt = d.choice([DT["f32"], DT["f64"], DT["bf16"]])
    p = xo.tensor(d.choice([0.0, 0.25, 0.5, 1.0]), dt)

    def ref(v):
        m = v["mean"]
        reject_unless(isinstance(m, xo.Tensor) and m.dtype.kind == "float" and m.ndim == 0)
        shp = [an_int(s, 0) for s in v["shape"]]
        return float(m.item()), shp

    def cmp(out, want, v):
        mean, shp = want
        assert list(out.shape) == shp
        a = np.asarray(out).astype(np.float64)
        assert np.all((a == 0) | (a == 1)), "not 0/1 draws"
        if mean in (0.0, 1.0):
            assert np.all(a == mean)

    return Case(
        "rng_bernoulli", [P("mean", p, "tensor"), P("shape", list(d.shape()), "shape")], ref, cmp
    )
