"""``python -m benchmarks --device cuda``: the heavy rows on a GPU, xops CUDA tensors
beside PyTorch CUDA in one process (issue 17).

    python -m benchmarks --device cuda --samples 7 --sample-ms 50 --json g.json --markdown g.md
    python -m benchmarks --device cuda --list      # the row names (no GPU needed)

Rows: GEMM 2048^3 f32 (TFLOP/s, % of torch), a device-to-device copy of 16M f32 (the
copy bandwidth: numba's ``copy_to_device`` and torch's ``copy_``, the faster counts),
add and exp 16M f32 (GB/s and % of that copy bandwidth), conv2d forward of the CPU
harness's three conv layers, max-pool 2x2 forward and backward, batch norm forward
(training statistics), reduce sum of 16M f32, and the digits CNN's training step
(``xops.examples.train_digits.build_model()`` moved with ``model.to("cuda")``, batch 32
of 8x8 images: forward, backward, Adam; PyTorch: the same network and weights).

Method: as the CPU harness (``benchmarks/run.py``): backends interleaved per round, each
sample runs the workload back to back for at least ``--sample-ms``, after one untimed
call; here every sample is bracketed by ``torch.cuda.synchronize()`` and numba's
``cuda.synchronize()``, so it times the device work, not the queueing. PyTorch runs with
TF32 off (matmul and cuDNN), so both sides compute in f32. Every xops result is checked
against PyTorch's (without torch CUDA: against the same xops call on the CPU). A row
whose op has no CUDA kernel yet prints "no cuda kernel: <op>" and the run goes on; a row
that cannot be built (e.g. ``Module.to("cuda")`` missing) prints "not available".
Under numba's CUDA simulator the rows run on tiny shapes (a check of the harness, not a
timing). Without a GPU and without the simulator the command exits with one line saying
why.
"""

import json
import statistics
import sys
import time

import numpy as np

from . import workloads
from .run import _fmt_time, cpu_line
from .workloads import dim

N16M = 1 << 24
TARGETS = [  # (row, what, goal, limit): issue 17's targets on a real GPU
    ("gemm_2048_f32", "xops TFLOP/s / torch TFLOP/s", ">=", 0.5),
    ("add_16M_f32", "xops GB/s / copy GB/s", ">=", 0.8),
    ("exp_16M_f32", "xops GB/s / copy GB/s", ">=", 0.8),
    ("train_digits_step_b32", "xops time / torch time", "<=", 2.0),
]


class Row:
    def __init__(self, name, desc, make, rtol=1e-5, flop=None, nbytes=None):
        self.name, self.desc, self.make, self.rtol = name, desc, make, rtol
        self.flop, self.nbytes = flop, nbytes  # callables of nothing: sizes at run time


ROWS = []


def row(name, desc, rtol=1e-5, flop=None, nbytes=None):
    def register(make):
        ROWS.append(Row(name, desc, make, rtol, flop, nbytes))
        return make

    return register


def _normal(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)


# Each make(xo, torch, dev) returns {backend: zero-argument callable}; ``torch`` is None
# when it is not timed (no torch CUDA, or the CPU reference build).


def _gemm_n():
    return dim(2048, 16)


@row(
    "gemm_2048_f32",
    "xo.dot_general (2048,2048)x(2048,2048) f32; torch a @ b (cuBLAS, TF32 off)",
    rtol=1e-3,
    flop=lambda: 2 * _gemm_n() ** 3,
)
def _gemm(xo, torch, dev):
    n = _gemm_n()
    a, b = _normal((n, n), 1), _normal((n, n), 2)
    A, B = xo.tensor(a, device=dev), xo.tensor(b, device=dev)
    fns = {
        "xops": lambda: xo.dot_general(
            A, B, lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[0]
        )
    }
    if torch is not None:
        ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
        fns["torch"] = lambda: ta @ tb
    return fns


def _n16m():
    return dim(N16M, 1024)


@row(
    "copy_16M_f32",
    "device-to-device copy of 16M f32 (the copy bandwidth the elementwise rows divide by)",
    nbytes=lambda: 2 * 4 * _n16m(),
)
def _copy(xo, torch, dev):
    a = _normal(_n16m(), 3)
    fns = {}
    if dev == "cuda":
        from numba import cuda

        src, dst = cuda.to_device(a), cuda.device_array(a.shape, a.dtype)
        fns["numba_copy"] = lambda: dst.copy_to_device(src) or dst
    else:
        fns["numba_copy"] = lambda: a.copy()
    if torch is not None:
        ts = torch.from_numpy(a).cuda()
        td = torch.empty_like(ts)
        fns["torch"] = lambda: td.copy_(ts)
    return fns


def _elementwise(op, nin):
    def make(xo, torch, dev):
        arrays = [_normal(_n16m(), 4 + i) for i in range(nin)]
        xs = [xo.tensor(a, device=dev) for a in arrays]
        xfn = {"add": xo.add, "exp": xo.exponential}[op]
        fns = {"xops": lambda: xfn(*xs)}
        if torch is not None:
            ts = [torch.from_numpy(a).cuda() for a in arrays]
            tfn = {"add": torch.add, "exp": torch.exp}[op]
            fns["torch"] = lambda: tfn(*ts)
        return fns

    return make


row("add_16M_f32", "xo.add 16M f32 (+ 16M f32)", nbytes=lambda: 3 * 4 * _n16m())(
    _elementwise("add", 2)
)
row("exp_16M_f32", "xo.exponential 16M f32", nbytes=lambda: 2 * 4 * _n16m())(_elementwise("exp", 1))


def _conv(layer):
    from .wl_convolution import LAYERS, PAD

    def make(xo, torch, dev):
        n, c, h, o = dim(LAYERS[layer], (2, 3, 6, 4))
        x, w = _normal((n, c, h, h), 5), _normal((o, c, 3, 3), 6)
        X, W = xo.tensor(x, device=dev), xo.tensor(w, device=dev)
        pad = [(PAD, PAD), (PAD, PAD)]
        fns = {"xops": lambda: xo.convolution(X, W, padding=pad)}
        if torch is not None:
            tx, tw = torch.from_numpy(x).cuda(), torch.from_numpy(w).cuda()
            fns["torch"] = lambda: torch.nn.functional.conv2d(tx, tw, padding=PAD)
        return fns

    n, c, h, o = LAYERS[layer]
    row(
        f"conv_fwd_{layer}",
        f"xo.convolution x ({n},{c},{h},{h}) f32, w ({o},{c},3,3), pad 1, NCHW",
        rtol=1e-3,
        flop=lambda: (lambda n, c, h, o: 2 * n * o * h * h * c * 9)(
            *dim(LAYERS[layer], (2, 3, 6, 4))
        ),
    )(make)


for _layer in ("cifar_b8", "cifar_b64", "mid"):
    _conv(_layer)

_WIN = [1, 1, 2, 2]


def _pool_shape():
    return dim((64, 32, 32, 32), (2, 3, 8, 8))


@row("maxpool_fwd", "xo.reduce_window max 2x2 stride 2, (64,32,32,32) f32 NCHW")
def _pool_fwd(xo, torch, dev):
    x = _normal(_pool_shape(), 7)
    X = xo.tensor(x, device=dev)
    fns = {"xops": lambda: xo.reduce_window(X, float("-inf"), _WIN, _WIN, body=xo.maximum)}
    if torch is not None:
        tx = torch.from_numpy(x).cuda()
        fns["torch"] = lambda: torch.nn.functional.max_pool2d(tx, 2)
    return fns


@row(
    "maxpool_bwd",
    "max-pool 2x2 gradient (64,32,32,32) f32: the xo.vjp pullback (select_and_scatter); "
    "torch max_pool2d_with_indices_backward",
)
def _pool_bwd(xo, torch, dev):
    shape = _pool_shape()
    x = _normal(shape, 8)
    g = _normal(shape[:2] + (shape[2] // 2, shape[3] // 2), 9)
    X, G = xo.tensor(x, device=dev), xo.tensor(g, device=dev)
    _, pullback = xo.vjp(
        lambda a: xo.reduce_window(a, float("-inf"), _WIN, _WIN, body=xo.maximum), X
    )
    fns = {"xops": lambda: pullback(G)[0]}
    if torch is not None:
        tx, tg = torch.from_numpy(x).cuda(), torch.from_numpy(g).cuda()
        aten = torch.ops.aten
        _, idx = aten.max_pool2d_with_indices(tx, [2, 2], [2, 2])
        fns["torch"] = lambda: aten.max_pool2d_with_indices_backward(
            tg, tx, [2, 2], [2, 2], [0, 0], [1, 1], False, idx
        )
    return fns


@row("batchnorm_fwd", "xo.batch_norm_training (64,32,32,32) f32 NCHW, feature_index 1", rtol=1e-4)
def _bn(xo, torch, dev):
    shape = dim((64, 32, 32, 32), (2, 3, 4, 4))
    x = 1.0 + 2.0 * _normal(shape, 10)
    scale = np.random.default_rng(11).uniform(0.5, 2.0, shape[1]).astype(np.float32)
    offset = _normal(shape[1], 12)
    X, S, B = (xo.tensor(a, device=dev) for a in (x, scale, offset))
    fns = {"xops": lambda: xo.batch_norm_training(X, S, B, 1e-5, 1)[0]}
    if torch is not None:
        tx, ts, tb = (torch.from_numpy(a).cuda() for a in (x, scale, offset))
        F = torch.nn.functional
        fns["torch"] = lambda: F.batch_norm(tx, None, None, ts, tb, training=True, eps=1e-5)
    return fns


@row(
    "reduce_sum_16M_f32",
    "xo.reduce add over 16M f32 (values in [0, 1)) -> a scalar",
    rtol=1e-4,
    nbytes=lambda: 4 * _n16m(),
)
def _reduce(xo, torch, dev):
    x = np.random.default_rng(13).random(_n16m(), dtype=np.float32)
    X = xo.tensor(x, device=dev)
    fns = {"xops": lambda: xo.reduce(X, 0.0, [0], xo.add)}
    if torch is not None:
        tx = torch.from_numpy(x).cuda()
        fns["torch"] = lambda: torch.sum(tx)
    return fns


_DIGITS_START = {}  # batch -> the initial state_dict of the digits CNN


class Unavailable(Exception):
    """The xops side of a row could not be built (e.g. an API that is not there yet)."""


def _raises(e):
    def fn():
        raise Unavailable(f"{type(e).__name__}: {e}") from e

    return fn


def _torch_layer(tnn, m):
    """The PyTorch module of one xops.nn layer of the digits CNN (same attributes)."""
    kind = type(m).__name__
    if kind == "Conv2d":
        return tnn.Conv2d(
            m.in_channels, m.out_channels, m.kernel_size, m.stride, m.padding, m.dilation,
            m.groups, bias=m.bias is not None,
        )  # fmt: skip
    if kind == "BatchNorm2d":
        return tnn.BatchNorm2d(m.num_features, m.eps, m.momentum)
    if kind == "MaxPool2d":
        return tnn.MaxPool2d(m.kernel_size, m.stride, m.padding, m.dilation)
    if kind == "Linear":
        return tnn.Linear(m.in_features, m.out_features)
    if kind == "Flatten":
        return tnn.Flatten(m.start_dim, m.end_dim)
    return getattr(tnn, kind)()  # ReLU


def _torch_digits(torch, xmodel, params):
    """PyTorch's copy of the xops model ``xmodel`` (layer by layer), with its weights."""
    model = torch.nn.Sequential(*(_torch_layer(torch.nn, m) for m in xmodel))
    mine = list(model.parameters())
    if [tuple(p.shape) for p in mine] != [v.shape for v in params]:
        raise RuntimeError(
            f"the digits CNN changed: xops parameter shapes {[v.shape for v in params]}, "
            f"the PyTorch mirror's {[tuple(p.shape) for p in mine]}"
        )
    with torch.no_grad():
        for p, v in zip(mine, params):
            p.copy_(torch.from_numpy(v))
    return model.cuda()


@row(
    "train_digits_step_b32",
    "digits CNN training step, batch 32 of (1,8,8) f32: forward, backward, Adam "
    "(xops: build_model().to('cuda'))",
    rtol=1e-3,
)
def _train(xo, torch, dev):
    import xops.nn  # noqa: F401  (xo.nn / xo.optim: subpackages)
    import xops.optim  # noqa: F401
    from xops.examples.train_digits import build_model

    n = dim(32, 2)
    x, y = _normal((n, 1, 8, 8), 14), np.random.default_rng(15).integers(0, 10, n)
    model = build_model()
    if n in _DIGITS_START:  # every build (the CUDA one, the CPU reference) starts alike
        model.load_state_dict(_DIGITS_START[n])
    else:
        _DIGITS_START[n] = model.state_dict()
    params = [p.numpy() for p in model.parameters()]
    F = xo.nn.functional
    try:
        model.to(dev)  # (a device move: needs Module.to(device))
        opt = xo.optim.Adam(model.parameters(), lr=1e-3)
        X, Y = xo.tensor(x, device=dev), xo.tensor(y.astype(np.int32), device=dev)

        def step():
            loss = F.softmax_cross_entropy(model(X), Y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss

    except Exception as e:  # torch still runs; the row notes why xops did not
        step = _raises(e)
    fns = {"xops": step}
    if torch is not None:
        tmodel = _torch_digits(torch, model, params)
        topt = torch.optim.Adam(tmodel.parameters(), lr=1e-3)
        tX, tY = torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()

        def tstep():
            loss = torch.nn.functional.cross_entropy(tmodel(tX), tY)
            topt.zero_grad()
            loss.backward()
            topt.step()
            return loss.detach()

        fns["torch"] = tstep
    return fns


# ---------------------------------------------------------------------------------------
# running
# ---------------------------------------------------------------------------------------


def _host(v):
    if isinstance(v, (list, tuple)):
        return [_host(e) for e in v]
    if hasattr(v, "copy_to_host"):
        return v.copy_to_host()
    if type(v).__module__.startswith("torch"):
        return v.detach().float().cpu().numpy()
    if hasattr(v, "_dtype"):  # an xops tensor, on either device
        out = v.numpy()
        return out.astype(np.float64) if out.dtype.kind not in "biufc" else out
    return np.asarray(v)


def _close(got, want, rtol):
    got, want = _host(got), _host(want)
    if isinstance(want, list):
        return all(_close(g, w, rtol) for g, w in zip(got, want))
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return got.shape == want.shape and np.allclose(got, want, rtol=rtol, atol=rtol)


def _why(e):
    """The one-line note of a row (or a backend) that could not run."""
    text = str(e).splitlines()[0] if str(e) else type(e).__name__
    if "has no cuda kernel" in text:
        return f"no cuda kernel: {getattr(e, 'op', text.split(' ')[0])}"
    if isinstance(e, Unavailable):
        return f"not available: {text[:300]}"
    return f"failed: {type(e).__name__}: {text[:300]}"


def _sample(fn, min_seconds, inner, sync):
    """Seconds per call over ``inner`` back-to-back calls between two device syncs."""
    while True:
        sync()
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        sync()
        dt = time.perf_counter() - t0
        if dt >= min_seconds or inner >= 1 << 20:
            return dt / inner, inner
        inner = max(inner * 2, int(inner * min_seconds / max(dt, 1e-9) * 1.2))


def run_row(r, xo, torch, samples, sample_ms, sync):
    """``(rows, note)``: per backend median/min/first/ok, and why xops did not run."""
    try:
        fns = r.make(xo, torch, "cuda")
    except Exception as e:  # the row cannot be built at all
        return {}, _why(Unavailable(f"{type(e).__name__}: {e}"))
    note = ""
    results, outs = {}, {}
    for name, fn in list(fns.items()):
        t0 = time.perf_counter()
        try:
            outs[name] = fn()
            sync()
        except Exception as e:
            note = note or _why(e)
            del fns[name]
            continue
        results[name] = {"first": time.perf_counter() - t0, "times": [], "inner": 1}
    if not results:
        return {}, note
    ref = outs.get("torch")
    if ref is None and "xops" in outs:  # no torch CUDA: the same xops call on the CPU
        try:
            ref = r.make(xo, None, "cpu")["xops"]()
        except Exception:
            ref = None
    for name, res in results.items():
        res["ok"] = (
            True if name == "torch" else None if ref is None else _close(outs[name], ref, r.rtol)
        )
    outs = None
    order = list(fns)
    for k in range(samples):
        for name in order[k % len(order) :] + order[: k % len(order)]:
            fns[name]()
            t, results[name]["inner"] = _sample(
                fns[name], sample_ms / 1e3, results[name]["inner"], sync
            )
            results[name]["times"].append(t)
    for res in results.values():
        res["median"] = statistics.median(res["times"])
        res["min"] = min(res["times"])
    return results, note


def _derived(r, name, res, results, copy_gbs):
    """The figures beside a backend's median: TFLOP/s / GB/s, % of torch or of the copy."""
    med, parts = res["median"], []
    if r.flop:
        parts.append(f"{r.flop() / med / 1e12:.2f} TFLOP/s")
    if r.nbytes:
        gbs = r.nbytes() / med / 1e9
        parts.append(f"{gbs:.0f} GB/s")
        if copy_gbs and r.name.startswith(("add_", "exp_")):
            parts.append(f"{100 * gbs / copy_gbs:.0f}% of copy")
    if name != "torch" and "torch" in results:
        parts.append(f"{100 * results['torch']['median'] / med:.0f}% of torch")
    return ", ".join(parts)


def _copy_gbs(merged):
    row = merged.get("copy_16M_f32")
    if not row or not row["backends"]:
        return None
    nbytes = next(r for r in ROWS if r.name == "copy_16M_f32").nbytes()
    return max(nbytes / b["median"] / 1e9 for b in row["backends"].values())


def evaluate(merged):
    """Issue 17's targets: ``[(row, what, goal, measured, verdict)]``."""
    out, copy = [], _copy_gbs(merged)
    for name, what, op, limit in TARGETS:
        b = merged.get(name, {}).get("backends", {})
        goal = f"{op} {limit:g}"
        if "xops" not in b or ("torch" not in b and not name.startswith(("add_", "exp_"))):
            out.append((name, what, goal, "not run", "-"))
            continue
        xm = b["xops"]["median"]
        if name.startswith(("add_", "exp_")):
            if not copy:
                out.append((name, what, goal, "not run", "-"))
                continue
            nbytes = next(r for r in ROWS if r.name == name).nbytes()
            ratio = nbytes / xm / 1e9 / copy
        elif op == ">=":
            ratio = b["torch"]["median"] / xm
        else:
            ratio = xm / b["torch"]["median"]
        met = ratio >= limit if op == ">=" else ratio <= limit
        out.append((name, what, goal, f"{ratio:.2f}", "met" if met else "NOT MET"))
    return out


def targets_markdown(merged):
    lines = ["| row | ratio | target | measured | verdict |", "|---|---|---|---|---|"]
    lines += [f"| {n} | {w} | {g} | {m} | {v} |" for n, w, g, m, v in evaluate(merged)]
    return "\n".join(lines)


def _gpu_line(torch):
    if torch is not None:
        p = torch.cuda.get_device_properties(0)
        return (
            f"{p.name}, {p.total_memory / 2**30:.0f} GiB, sm_{p.major}{p.minor}; "
            f"torch {torch.__version__} (CUDA {torch.version.cuda})"
        )
    from numba import cuda

    name = cuda.get_current_device().name
    return f"{name.decode() if isinstance(name, bytes) else name}; torch CUDA not available"


def _no_device():
    """None when CUDA tensors can be made, else the one-line reason."""
    from xops import device

    try:
        device.as_device("cuda", "python -m benchmarks --device cuda")
    except RuntimeError as e:
        return str(e)
    return None


def _write(args, machine, merged, lines, wall):
    """Write ``--json`` / ``--markdown`` (after every row, so that a run cut short by a
    timeout still leaves its rows); returns the targets table."""
    table = targets_markdown(merged)
    if args.json:
        with open(args.json, "w") as f:
            data = {"machine": machine, "results": merged, "targets": evaluate(merged)}
            json.dump(data, f, indent=1)
    if args.markdown:
        head = (
            "| row | backend | median | first call | check | derived |\n|---|---|---|---|---|---|"
        )
        with open(args.markdown, "w") as f:
            f.write(
                f"machine: {machine}\n\n{head}\n" + "\n".join(lines) + "\n\n"
                f"### Issue 17 targets\n\n{table}\n\n(wall time {wall:.0f} s)\n"
            )
    return table


def main(args):
    """``python -m benchmarks --device cuda`` (``args`` from benchmarks/run.py's parser)."""
    selected = [r for r in ROWS if (r.name == args.only if args.exact else args.only in r.name)]
    if args.list:
        print("\n".join(r.name for r in selected))
        return 0
    first = {t[0] for t in TARGETS} | {"copy_16M_f32"}  # a run cut short keeps the targets
    selected.sort(key=lambda r: r.name not in first)
    if args.isolate:
        print("python -m benchmarks --device cuda: --isolate is for the CPU rows", file=sys.stderr)
        return 2
    why = _no_device()
    if why:
        print(why, file=sys.stderr)
        return 2
    import numba
    import xops as xo
    from numba import cuda

    simulated = bool(numba.config.ENABLE_CUDASIM)
    if simulated:
        workloads.SMOKE = True  # the simulator: tiny shapes, a check of the harness
    torch = None
    try:
        import torch

        if simulated or not torch.cuda.is_available():
            torch = None
        else:
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
    except ImportError:
        torch = None

    def sync():
        cuda.synchronize()
        if torch is not None:
            torch.cuda.synchronize()

    samples = args.samples or (5 if args.quick else 15)
    sample_ms = args.sample_ms or (20 if args.quick else 100)
    gpu = "numba's CUDA simulator (tiny shapes)" if simulated else _gpu_line(torch)
    machine = f"{cpu_line()}; GPU {gpu}; numba {numba.__version__}"
    print(f"xops GPU benchmarks  {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"machine: {machine}")
    print(
        f"method: median of {samples} samples, each >= {sample_ms:g} ms of back-to-back calls "
        f"between device syncs; backends interleaved; first call includes numba's compile\n"
    )
    t_start, merged, lines, bad = time.perf_counter(), {}, [], False
    for r in selected:
        t0 = time.perf_counter()
        results, note = run_row(r, xo, torch, samples, sample_ms, sync)
        merged[r.name] = {"desc": r.desc, "note": note, "backends": {}}
        for name, res in results.items():
            merged[r.name]["backends"][name] = {k: res[k] for k in ("median", "min", "first", "ok")}
        copy = _copy_gbs(merged)
        print(f"== {r.name}  [{r.desc}]")
        print(
            f"   {'backend':11s} {'median':>11s} {'min':>11s} {'first call':>11s}  "
            f"{'check':8s} derived"
        )
        for name, res in results.items():
            ok = {True: "ok", False: "MISMATCH", None: "unchecked"}[res["ok"]]
            bad = bad or res["ok"] is False
            d = _derived(r, name, res, results, copy)
            merged[r.name]["backends"][name]["derived"] = d
            print(
                f"   {name:11s} {_fmt_time(res['median']):>11s} {_fmt_time(res['min']):>11s} "
                f"{_fmt_time(res['first']):>11s}  {ok:8s} {d}"
            )
            lines.append(
                f"| {r.name} | {name} | {_fmt_time(res['median'])} | "
                f"{_fmt_time(res['first'])} | {ok} | {d} |"
            )
        if note:
            print(f"   xops: {note}")
            lines.append(f"| {r.name} | xops | - | - | - | {note} |")
        print(f"   ({time.perf_counter() - t0:.1f} s)\n", flush=True)
        _write(args, machine, merged, lines, time.perf_counter() - t_start)  # (partial)
    wall = time.perf_counter() - t_start
    table = _write(args, machine, merged, lines, wall)
    print(f"## Issue 17 targets (GPU)\n\n{table}\n\ntotal wall time {wall:.0f} s")
    if bad:
        print("some xops result disagreed with the reference (MISMATCH above)", file=sys.stderr)
        return 1
    return 0
