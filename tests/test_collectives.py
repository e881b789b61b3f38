"""Collectives, process ids, channels, host queues, composite and rng_bernoulli on the
in-process process grid (xops.distributed.run_parallel): the spec's examples, the four
process-group strategies, one negative test per constraint label, and bad input across
processes (a labelled error on every process, or a timeout naming who is missing)."""

import numpy as np
import pytest

import xops as xo
from xops.distributed import CollectiveError, CollectiveTimeout, run_parallel
from xops.ops.collectives import process_groups

t = xo.tensor


def _vals(grid):
    return [[np.asarray(v) if isinstance(v, xo.Tensor) else v for v in row] for row in grid]


def each(grid):
    """The results of a grid as a flat list, process (0, 0) first."""
    return [v for row in grid for v in row]


# ---------------------------------------------------------------------------------------
# The spec's examples (004)
# ---------------------------------------------------------------------------------------


def test_all_gather_spec_example():
    out = run_parallel(
        lambda x: xo.all_gather(x, 1, [[0, 1]]),
        [[t(np.array([[1, 2], [3, 4]]))], [t(np.array([[5, 6], [7, 8]]))]],
    )
    for r in each(out):
        assert r.type == "i64[2,4]"
        np.testing.assert_array_equal(r, [[1, 2, 5, 6], [3, 4, 7, 8]])


def test_all_reduce_spec_example():
    out = run_parallel(
        lambda x: xo.all_reduce(x, [[0, 1]], computation=xo.add),
        [[t(np.array([1, 2, 3, 4]))], [t(np.array([5, 6, 7, 8]))]],
    )
    for r in each(out):
        np.testing.assert_array_equal(r, [6, 8, 10, 12])


def test_all_to_all_spec_example():
    a = np.array([[1, 2, 3, 4], [5, 6, 7, 8]])
    out = each(run_parallel(lambda x: xo.all_to_all(x, 1, 0, 2, [[0, 1]]), [[t(a)], [t(a + 8)]]))
    np.testing.assert_array_equal(out[0], [[1, 2], [5, 6], [9, 10], [13, 14]])
    np.testing.assert_array_equal(out[1], [[3, 4], [7, 8], [11, 12], [15, 16]])


def test_collective_broadcast_spec_example():
    ins = [
        [t(np.array([[1, 2]]))],
        [t(np.array([[3, 4]]))],
        [t(np.array([[5, 6]]))],
        [t(np.array([[7, 8]]))],
    ]
    out = each(run_parallel(lambda x: xo.collective_broadcast(x, [[2, 1]]), ins))
    np.testing.assert_array_equal(np.array(out), [[[0, 0]], [[5, 6]], [[5, 6]], [[0, 0]]])


def test_collective_permute_spec_example():
    ins = [
        [t(np.array([[1, 2], [3, 4]]))],
        [t(np.array([[5, 6], [7, 8]]))],
        [t(np.array([[9, 10], [11, 12]]))],
    ]
    out = each(run_parallel(lambda x: xo.collective_permute(x, [[0, 1], [1, 2]]), ins))
    np.testing.assert_array_equal(
        np.array(out), [[[0, 0], [0, 0]], [[1, 2], [3, 4]], [[5, 6], [7, 8]]]
    )


def test_reduce_scatter_spec_example():
    a = np.array([[1, 2, 3, 4], [5, 6, 7, 8]])
    out = each(
        run_parallel(
            lambda x: xo.reduce_scatter(x, 1, [[0, 1]], computation=xo.add), [[t(a)], [t(a + 8)]]
        )
    )
    np.testing.assert_array_equal(out[0], [[10, 12], [18, 20]])
    np.testing.assert_array_equal(out[1], [[14, 16], [22, 24]])


def test_replica_and_partition_ids():
    out = run_parallel(
        lambda: (xo.replica_id(), xo.partition_id()), num_replicas=2, num_partitions=3
    )
    for r in range(2):
        for p in range(3):
            rid, pid = out[r][p]
            assert rid.type == pid.type == "ui32[]" and (int(rid), int(pid)) == (r, p)
    assert int(xo.replica_id()) == 0 and int(xo.partition_id()) == 0  # 1 x 1 outside


# ---------------------------------------------------------------------------------------
# Process-group strategies (spec 004, "Collective ops", with its examples)
# ---------------------------------------------------------------------------------------


class _Grid:
    def __init__(self, nr, np_):
        self.num_replicas, self.num_partitions = nr, np_


def test_strategies_spec_examples():
    g = _Grid(4, 2)
    assert process_groups("op", g, "cross_replica", [[0, 1], [2, 3]], "C", "C") == [
        ((0, 0), (1, 0)),
        ((0, 1), (1, 1)),
        ((2, 0), (3, 0)),
        ((2, 1), (3, 1)),
    ]
    assert process_groups("op", g, "cross_partition", [[0, 1]], "C", "C") == [
        ((0, 0), (0, 1)),
        ((1, 0), (1, 1)),
        ((2, 0), (2, 1)),
        ((3, 0), (3, 1)),
    ]
    assert process_groups("op", g, "cross_replica_and_partition", [[0, 1], [2, 3]], "C", "C") == [
        ((0, 0), (1, 0), (0, 1), (1, 1)),
        ((2, 0), (3, 0), (2, 1), (3, 1)),
    ]
    assert process_groups("op", g, "flattened_ids", [[0, 1, 2, 3], [4, 5, 6, 7]], "C", "C") == [
        ((0, 0), (0, 1), (1, 0), (1, 1)),
        ((2, 0), (2, 1), (3, 0), (3, 1)),
    ]
    # empty replica_groups: one group of every replica (XLA)
    assert process_groups("op", g, "cross_replica", [], "C", "C") == [
        ((0, 0), (1, 0), (2, 0), (3, 0)),
        ((0, 1), (1, 1), (2, 1), (3, 1)),
    ]


def _grid_2x2(fn):
    vals = [[(t(np.array([1 + 10 * (2 * r + p)])),) for p in range(2)] for r in range(2)]
    return np.array([[np.asarray(v) for v in row] for row in run_parallel(fn, vals)])


def test_all_reduce_follows_each_strategy_on_a_2x2_grid():
    # values 1, 11 / 21, 31 at (0,0), (0,1) / (1,0), (1,1)
    cross_replica = _grid_2x2(lambda x: xo.all_reduce(x, [[0, 1]], 0, computation=xo.add))
    np.testing.assert_array_equal(cross_replica[:, :, 0], [[22, 42], [22, 42]])
    both = _grid_2x2(lambda x: xo.all_reduce(x, [[0, 1]], 1, computation=xo.add))
    np.testing.assert_array_equal(both[:, :, 0], [[64, 64], [64, 64]])
    flat = _grid_2x2(lambda x: xo.all_reduce(x, [[0, 1], [2, 3]], 1, True, xo.add))
    np.testing.assert_array_equal(flat[:, :, 0], [[12, 12], [52, 52]])
    cross_partition = _grid_2x2(
        lambda x: xo.all_to_all(xo.broadcast_in_dim(x, [0], [2]), 0, 0, 2, [[1, 0]], 1)
    )
    # all_to_all with channel_id > 0 runs across partitions; group order [1, 0]
    np.testing.assert_array_equal(cross_partition[0, 0], [11, 1])
    np.testing.assert_array_equal(cross_partition[1, 1], [31, 21])


def test_repeated_all_reduces_with_other_attributes_in_one_process():
    # a process remembers what it derived from an all_reduce's attributes (process
    # groups, signature): calls that differ only in groups, channel id, global ids, body
    # or element type must each get their own, in any order and repeated
    def fn(x):
        calls = [
            lambda: xo.all_reduce(x, [[0, 1]], 0, computation=xo.add),
            lambda: xo.all_reduce(x, [[0, 1]], 1, computation=xo.add),
            lambda: xo.all_reduce(x, [[0, 1], [2, 3]], 1, True, xo.add),
            lambda: xo.all_reduce(x, [[0, 2], [1, 3]], 1, True, xo.add),
            lambda: xo.all_reduce(x, None, 1, computation=xo.maximum),
            lambda: xo.all_reduce(xo.convert(x, "f32"), [[0, 1]], 0, computation=xo.add),
        ]
        return [np.asarray(c()).tolist() for c in calls + calls[::-1]]

    got = _grid_2x2(fn)
    # values 1, 11 / 21, 31 at (0,0), (0,1) / (1,0), (1,1)
    want = [
        [[[22], [64], [12], [22], [31], [22.0]], [[42], [64], [12], [42], [31], [42.0]]],
        [[[22], [64], [52], [22], [31], [22.0]], [[42], [64], [52], [42], [31], [42.0]]],
    ]
    for r in range(2):
        for p in range(2):
            assert got[r, p].tolist() == want[r][p] + want[r][p][::-1]


def test_padded_replica_groups_and_uneven_groups():
    out = each(
        run_parallel(
            lambda x: xo.all_reduce(x, [[0, 1], [2, -1]], computation=xo.add),
            [[t(np.array([1, 2]))], [t(np.array([5, 6]))], [t(np.array([6, 8]))]],
        )
    )
    np.testing.assert_array_equal(np.array(out), [[6, 8], [6, 8], [6, 8]])


# ---------------------------------------------------------------------------------------
# Bodies, element types, variadic forms
# ---------------------------------------------------------------------------------------


def test_all_reduce_general_body_folds_in_group_order():
    # subtract is not associative: the fold is ((a0 - a1) - a2) in group order [2, 0, 1]
    ins = [[t(np.array([1.0, 2.0]))], [t(np.array([10.0, 20.0]))], [t(np.array([100.0, 7.0]))]]
    out = each(
        run_parallel(
            lambda x: xo.all_reduce(x, [[2, 0, 1]], computation=lambda a, b: xo.subtract(a, b)), ins
        )
    )
    for r in out:
        np.testing.assert_array_equal(r, [100.0 - 1 - 10, 7.0 - 2 - 20])


def test_all_reduce_bf16_rounds_every_step_like_the_spec():
    vals = [np.array([1.0, 256.0]), np.array([2**-8, 1.0]), np.array([2**-8, 1.0])]
    ins = [[t(xo.convert(t(v.astype(np.float32)), "bf16"))] for v in vals]
    out = each(run_parallel(lambda x: xo.all_reduce(x, computation=xo.add), ins))
    ref = xo.convert(t(vals[0].astype(np.float32)), "bf16")
    for v in vals[1:]:
        ref = xo.add(ref, xo.convert(t(v.astype(np.float32)), "bf16"))
    for r in out:
        assert r.type == "bf16[2]"
        np.testing.assert_array_equal(np.asarray(r, np.float32), np.asarray(ref, np.float32))


def test_all_reduce_body_in_a_wider_type_sets_the_result_type():
    def wide_add(a, b):
        return xo.add(xo.convert(a, "f64"), xo.convert(b, "f64"))

    out = each(
        run_parallel(
            lambda x: xo.all_reduce(x, computation=wide_add),
            [[t(np.float32(1.5))], [t(np.float32(2.25))]],
        )
    )
    for r in out:
        assert r.type == "f64[]" and float(r) == 3.75


def test_variadic_forms():
    a0, a1 = np.array([1, 2]), np.array([[1.0], [2.0]])
    ins = [[(t(a0 + 10 * k), t(a1 * (k + 1)))] for k in range(2)]
    red = each(run_parallel(lambda x, y: xo.all_reduce([x, y], computation=xo.add), ins))
    np.testing.assert_array_equal(red[0][0], [12, 14])
    np.testing.assert_array_equal(red[1][1], [[3.0], [6.0]])
    gat = each(run_parallel(lambda x, y: xo.all_gather([x, y], 0), ins))
    assert isinstance(gat[0], tuple) and gat[0][1].type == "f64[4,1]"
    a2a = each(run_parallel(lambda x, y: xo.all_to_all([x, y], 0, 0, 2), ins))
    np.testing.assert_array_equal(a2a[1][0], [2, 12])


def test_cross_replica_sum_is_all_reduce_add():
    out = each(
        run_parallel(
            lambda x: xo.cross_replica_sum(x), [[t(np.float32(1.0))], [t(np.float32(2.5))]]
        )
    )
    assert [float(v) for v in out] == [3.5, 3.5]


def test_single_process_collectives_are_the_identity():
    x = t(np.array([1.0, 2.0]))
    np.testing.assert_array_equal(xo.all_reduce(x, computation=xo.add), x)
    np.testing.assert_array_equal(xo.all_gather(x, 0), x)
    np.testing.assert_array_equal(xo.collective_permute(x, [[0, 0]]), x)
    np.testing.assert_array_equal(xo.collective_permute(x, np.zeros((0, 2), np.int64)), [0, 0])


# ---------------------------------------------------------------------------------------
# Channels and host queues
# ---------------------------------------------------------------------------------------


def test_send_recv_between_processes_fifo_per_channel():
    def sender(x):
        tok = xo.send(x, xo.after_all(), 1)
        return xo.send([xo.add(x, 1), x], tok, 1)

    def receiver(x):
        first = xo.recv(xo.after_all(), 1)
        second = xo.recv(first[-1], 1)
        return first, second

    out = run_parallel([[sender], [receiver]], [[t(np.array([1, 2]))], [t(np.array([0]))]])
    first, second = out[1][0]
    assert isinstance(first[-1], xo.Token) and len(first) == 2 and len(second) == 3
    np.testing.assert_array_equal(first[0], [1, 2])
    np.testing.assert_array_equal(second[0], [2, 3])
    assert isinstance(out[0][0], xo.Token)


def test_host_transfer_flags_and_channel_types():
    tok = xo.send(t(1.0), xo.after_all(), 3, "DEVICE_TO_HOST", True)
    v, _ = xo.recv(tok, 3, "HOST_TO_DEVICE", True)
    assert float(v) == 1.0
    with pytest.raises(xo.SpecError, match=r"send \(C1\).*DEVICE_TO_HOST"):
        xo.send(t(1.0), tok, 3, "DEVICE_TO_DEVICE", True)
    with pytest.raises(xo.SpecError, match=r"recv \(C1\).*DEVICE_TO_DEVICE"):
        xo.recv(tok, 3, "HOST_TO_DEVICE", False)
    with pytest.raises(xo.SpecError, match=r"send \(I2\).*token"):
        xo.send(t(1.0), t(0), 3)


def test_infeed_outfeed_per_process_queues():
    def prog(x):
        values = xo.infeed(xo.after_all())
        return xo.outfeed([xo.add(values[0], x)], values[-1])

    out = {}
    run_parallel(
        prog,
        [[t(np.array([1]))], [t(np.array([2]))]],
        infeed={(0, 0): [t(np.array([10]))], (1, 0): [t(np.array([20]))]},
        outfeed=out,
    )
    np.testing.assert_array_equal(out[(0, 0)][0][0], [11])
    np.testing.assert_array_equal(out[(1, 0)][0][0], [22])
    from xops import distributed

    distributed.put_infeed(t(1), t(2.0))
    a, b, tok = xo.infeed(xo.after_all())
    assert (int(a), float(b)) == (1, 2.0) and isinstance(tok, xo.Token)
    xo.outfeed(t(5), tok)
    assert int(distributed.get_outfeed()[0]) == 5 and distributed.get_outfeed() is None
    with pytest.raises(xo.SpecError, match="infeed.*empty"):
        xo.infeed(tok)


# ---------------------------------------------------------------------------------------
# Constraint labels (one negative test each)
# ---------------------------------------------------------------------------------------

x22 = t(np.ones((2, 2)))


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: xo.all_gather(x22, 2), r"all_gather \(C1\)"),
        (lambda: xo.all_gather(x22, 0, [[0, 0]]), r"all_gather \(C2\)"),
        (lambda: xo.all_gather(x22, 0, [[0, 1]]), r"all_gather \(C4\).*\[0, 1\)"),
        (lambda: xo.all_gather(x22, 0, [[0]], 0, True), r"all_gather \(C5\)"),
        (lambda: xo.all_gather(x22, 0, [0, 1]), r"all_gather \(I3\)"),
        (lambda: xo.all_reduce(x22, [[0, 0]], computation=xo.add), r"all_reduce \(C1\)"),
        (lambda: xo.all_reduce(x22, [[3]], computation=xo.add), r"all_reduce \(C3\)"),
        (lambda: xo.all_reduce(x22, [[0]], 0, True, xo.add), r"all_reduce \(C4\)"),
        (lambda: xo.all_reduce(x22, [[0]]), r"all_reduce \(C5\).*callable"),
        (
            lambda: xo.all_reduce(x22, [[0]], computation=lambda a, b: xo.convert(a, "f32")),
            r"all_reduce \(C5\).*promoted",
        ),
        (lambda: xo.all_to_all(x22, 2, 0, 1), r"all_to_all \(C1\)"),
        (lambda: xo.all_to_all(t(np.ones((3, 2))), 0, 0, 2), r"all_to_all \(C2\)"),
        (lambda: xo.all_to_all(x22, 0, 5, 1), r"all_to_all \(C3\)"),
        (lambda: xo.all_to_all(x22, 0, 0, 0), r"all_to_all \(C4\)"),
        (lambda: xo.all_to_all(x22, 0, 0, 1, [[0, 0]]), r"all_to_all \(C5\)"),
        (lambda: xo.all_to_all(x22, 0, 0, 1, [[1]]), r"all_to_all \(C7\)"),
        (lambda: xo.all_to_all(x22, 0, 0, 2, [[0]]), r"all_to_all \(C8\)"),
        (lambda: xo.reduce_scatter(t(np.ones(3)), 1, computation=xo.add), r"reduce_scatter \(C2\)"),
        (lambda: xo.reduce_scatter(x22, 0, [[0, 0]], computation=xo.add), r"reduce_scatter \(C3\)"),
        (lambda: xo.reduce_scatter(x22, 0, [[1]], computation=xo.add), r"reduce_scatter \(C5\)"),
        (lambda: xo.reduce_scatter(x22, 0, [[0]], 0, True, xo.add), r"reduce_scatter \(C6\)"),
        (lambda: xo.collective_broadcast(x22, [[0, 0]]), r"collective_broadcast \(C1\)"),
        (lambda: xo.collective_broadcast(x22, [[1]]), r"collective_broadcast \(C2\)"),
        (lambda: xo.collective_permute(x22, [[0, 0, 0]]), r"collective_permute \(C1\)"),
        (lambda: xo.collective_permute(x22, [[0, 0], [0, 0]]), r"collective_permute \(C2\)"),
        (lambda: xo.collective_permute(x22, [[0, 1], [1, 1]]), r"collective_permute \(C3\)"),
        (lambda: xo.collective_permute(x22, [[0, 1]]), r"collective_permute \(C4\)"),
        (lambda: xo.infeed(t(0)), r"infeed \(I1\)"),
        (lambda: xo.outfeed(x22, xo.after_all(), 3), r"outfeed \(I3\)"),
        (lambda: xo.composite([x22], "", {}, xo.negate), r"composite \(I2\)"),
        (lambda: xo.composite([x22], "a.b", {}, None), r"composite \(I4\)"),
        (lambda: xo.composite([x22], "a.b", {}, xo.negate, -1), r"composite \(I5\)"),
        (lambda: xo.rng_bernoulli(t(1.5), [2]), r"rng_bernoulli \(I1\)"),
        (lambda: xo.rng_bernoulli(t(np.ones(2)), [2]), r"rng_bernoulli \(I1\)"),
        (lambda: xo.rng_bernoulli(t(0.5), [-1]), r"rng_bernoulli \(I2\)"),
    ],
)
def test_constraint_labels(call, match):
    with pytest.raises(xo.SpecError, match=match):
        call()


def test_reduce_scatter_c1_needs_divisible_dim_on_a_grid():
    def f(x):
        return xo.reduce_scatter(x, 0, [[0, 1]], computation=xo.add)

    with pytest.raises(
        xo.SpecError,
        match=r"reduce_scatter \(C1\).*multiple of the group "
        r"size 2",
    ):
        run_parallel(f, [[t(np.ones(3))], [t(np.ones(3))]], timeout=5)


# ---------------------------------------------------------------------------------------
# Bad input across processes: an error on every process, or a timeout — never a hang
# ---------------------------------------------------------------------------------------


def _catching(fn):
    def run(*args):
        try:
            return fn(*args)
        except xo.SpecError as e:
            return e

    return run


def test_shapes_that_differ_across_processes_fail_on_every_process():
    out = each(
        run_parallel(
            _catching(lambda x: xo.all_reduce(x, computation=xo.add)),
            [[t(np.ones(2))], [t(np.ones(3))]],
            timeout=10,
        )
    )
    assert all(isinstance(e, CollectiveError) and "disagree" in str(e) for e in out)
    assert str(out[0]) == str(out[1]) and "float64[2]" in str(out[0])


def test_a_process_that_never_joins_times_out_with_a_clear_message():
    progs = [[lambda x: xo.all_reduce(x, computation=xo.add)], [lambda x: x]]
    with pytest.raises(
        CollectiveTimeout,
        match=r"process \(0, 0\) waits for all_reduce.*"
        r"\(1, 0\) finished without joining",
    ):
        run_parallel(progs, [[t(1.0)], [t(2.0)]], timeout=10)


def test_mismatched_replica_groups_never_hang():
    progs = [
        [lambda x: xo.all_gather(x, 0, [[0, 1, 2]])],
        [lambda x: xo.all_gather(x, 0, [[0, 1], [2]])],
        [lambda x: xo.all_gather(x, 0, [[0, 1], [2]])],
    ]
    with pytest.raises(CollectiveError, match=r"disagree on the replica groups"):
        run_parallel(progs, [[t([1.0])], [t([2.0])], [t([3.0])]], timeout=30)


def test_collectives_in_different_orders_are_a_deadlock_error_at_once():
    def ab(x):
        return xo.all_reduce(xo.all_gather(x, 0), computation=xo.add)

    def ba(x):
        return xo.all_gather(xo.all_reduce(x, computation=xo.add), 0)

    out = each(
        run_parallel([[_catching(ab)], [_catching(ba)]], [[t([1.0])], [t([2.0])]], timeout=30)
    )
    # both rendezvous are over the same group: the second one meets the first call's
    # slot and the operand types disagree, on both processes
    assert all(isinstance(e, CollectiveError) for e in out)


def test_deadline_when_a_process_is_slow():
    import time

    def slow(x):
        time.sleep(1.0)
        return xo.all_reduce(x, computation=xo.add)

    with pytest.raises(CollectiveTimeout, match=r"waited 0.2 s.*\(1, 0\) never arrived"):
        run_parallel(
            [[lambda x: xo.all_reduce(x, computation=xo.add)], [slow]],
            [[t(1.0)], [t(2.0)]],
            timeout=0.2,
        )


def test_recv_on_an_unknown_channel_times_out():
    with pytest.raises(CollectiveTimeout, match="a value on channel 9"):
        run_parallel([[lambda: xo.recv(xo.after_all(), 9)], [lambda: None]], timeout=0.5)
    with pytest.raises(xo.SpecError, match="nothing was sent on channel 9"):
        xo.recv(xo.after_all(), 9)


def test_an_error_in_one_process_stops_the_others_at_once():
    def bad(x):
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        run_parallel(
            [[lambda x: xo.all_reduce(x, computation=xo.add)], [bad]],
            [[t(1.0)], [t(2.0)]],
            timeout=30,
        )


def test_run_parallel_argument_checks():
    with pytest.raises(xo.SpecError, match="run_parallel"):
        run_parallel(lambda: 0, [[(), ()], [()]])
    with pytest.raises(xo.SpecError, match="num_replicas=3"):
        run_parallel(lambda: 0, [[()], [()]], num_replicas=3)


# ---------------------------------------------------------------------------------------
# composite, composite_call, rng_bernoulli
# ---------------------------------------------------------------------------------------


def test_composite_runs_its_decomposition_with_gradients():
    f = xo.composite([t(3.0)], "my.square", {"n": 2}, lambda x: xo.multiply(x, x), 1)
    assert float(f) == 9.0
    g = xo.grad(lambda x: xo.composite([x], "my.square", {}, lambda v: xo.multiply(v, v)))(t(3.0))
    assert float(g) == 6.0
    assert (
        float(
            xo.composite_call(
                lambda x, y: xo.subtract(x, y),
                t(5.0),
                t(2.0),
                name="foo.bar",
                composite_attributes="{n = 1}",
            )
        )
        == 3.0
    )


def test_rng_bernoulli():
    xo.random_seed(7)
    a = xo.rng_bernoulli(t(np.float32(0.3)), [4000])
    xo.random_seed(7)
    b = xo.rng_bernoulli(0.3, [4000])
    assert a.type == "ui32[4000]"
    np.testing.assert_array_equal(a, b)
    assert set(np.unique(np.asarray(a))) <= {0, 1}
    assert abs(np.asarray(a).mean() - 0.3) < 0.03  # 4000 draws: sd 0.007
    assert not np.asarray(xo.rng_bernoulli(0.0, [50])).any()
    assert np.asarray(xo.rng_bernoulli(1.0, [2, 3])).all()
