"""Issue 15's targets against measured figures, and the summary table of a run.

    python -m benchmarks --isolate --json run.json     # measures and prints both tables
    python -m benchmarks.targets run.json              # the two tables again, from the JSON

Every check is ``(issue row, workload, numerator, denominator, op, limit)``: the ratio
``median[numerator] / median[denominator]`` of two backends in one workload's run (the
same process, interleaved), or, with no denominator, the figure itself (the process rows:
seconds, MB). A workload that did not run reads "not run".
"""

import sys

_F32 = [f"{op}_{n}" for n in ("1M", "16M") for op in ("add", "mul", "exp", "tanh")]
_NARROW = [f"{op}_{dt}_1M" for dt in ("bf16", "f16") for op in ("add", "mul", "exp")]
_INT = [
    f"{op}_i32_1M"
    for op in (
        "divide",
        "remainder",
        "shift_left",
        "shift_right_arithmetic",
        "shift_right_logical",
        "popcnt",
    )
]
_REDUCE = [f"reduce_{k}_4096_ax{a}" for k in ("sum", "max") for a in (0, 1)]
_CONV = [
    f"conv_{kind}_{layer}"
    for layer in ("cifar_b8", "cifar_b64", "mid")
    for kind in ("fwd", "dlhs", "drhs")
]
_POOL_FWD, _POOL_BWD = "reduce_window_maxpool", "select_and_scatter_maxpool_grad"
_TRAIN = [f"train_cnn_step_{s}_b{n}" for s in ("nn", "spec") for n in (32, 64)]

CHECKS = (
    [
        ("dispatch, 1-element add", w, "xops", "torch", "<=", 1.2)
        for w in ("dispatch_add", "dispatch_operator_add")
    ]
    + [("add, multiply, exp, tanh f32", w, "xops", "torch", "<=", 1.0) for w in _F32]
    + [("bf16 / f16 elementwise (vs xops f32)", w, "xops", "xops_f32", "<=", 1.5) for w in _NARROW]
    + [("integer ops (vs NumPy ufunc)", w, "xops", "np_ufunc", "<=", 1.0) for w in _INT]
    + [("reduce sum / max 4096^2", w, "xops", "torch", "<=", 1.0) for w in _REDUCE]
    + [("matmul 1024^3 (share of NumPy BLAS)", "matmul_1024", "numpy", "xops", ">=", 0.95)]
    + [("batched dot_general 64x128^3", "batched_dot", "xops", "torch", "<=", 1.0)]
    + [("convolution fwd / dlhs / drhs", w, "xops", "torch", "<=", 1.2) for w in _CONV]
    + [
        ("max-pool fwd / bwd, each spelling", w, b, "torch", "<=", 1.0)
        for w, names in (
            (_POOL_FWD, ("xops", "xops_lambda", "xops_helper")),
            (_POOL_BWD, ("xops", "xops_builtin", "xops_helper")),
        )
        for b in names
    ]
    + [
        ("batch_norm_training / grad", w, "xops", "torch", "<=", 1.0)
        for w in ("batchnorm_fwd", "batchnorm_bwd")
    ]
    + [
        ("gather / scatter-add 100k rows", w, "xops", "torch", "<=", 1.0)
        for w in ("gather_rows", "scatter_add_rows_inplace", "scatter_add_rows")
    ]
    + [
        ("user body calling helpers (vs built-in)", w, "xops_helper" if h else "xops", b, "<=", 1.2)
        for w, h, b in (
            ("reduce_sum_helper_body", False, "xops_builtin"),
            (_POOL_FWD, True, "xops"),
            (_POOL_BWD, True, "xops_builtin"),
            ("scatter_add_rows", True, "xops"),
        )
    ]
    + [
        (
            "reduce, logaddexp body (vs torch.logsumexp)",
            "reduce_generic_logaddexp",
            "xops",
            "torch",
            "<=",
            1.0,
        )
    ]
    + [("digits CNN step (vs torch eager)", w, "xops", "torch", "<=", 0.8) for w in _TRAIN]
    + [("digits CNN step (vs JAX eager)", w, "xops", "jax", "<=", 0.5) for w in _TRAIN]
    + [
        ("main job cold / warm (s)", "cold_start", "xops_cold", None, "<=", 8.0),
        ("main job cold / warm (s)", "cold_start", "xops_warm", None, "<=", 3.0),
        ("peak RSS, 100 steps (vs torch)", "peak_rss", "xops", "torch", "<=", 1.0),
        ("RSS slope, MB / 100 steps", "peak_rss", "xops_slope", None, "<=", 1.0),
    ]
)


def _value(results, workload, backend):
    row = results.get(workload, {}).get("backends", {}).get(backend)
    return None if row is None else row["median"]


def evaluate(results):
    """``[(issue row, what, target, measured, verdict)]`` for every check."""
    out = []
    for row, w, num, den, op, limit in CHECKS:
        a = _value(results, w, num)
        b = _value(results, w, den) if den else 1.0
        what = f"{w}: {num}" + (f" / {den}" if den else "")
        target = f"{op} {limit:g}" + ("x" if den else "")
        if a is None or not b:
            out.append((row, what, target, "not run", "-"))
            continue
        ratio = a / b
        met = ratio <= limit if op == "<=" else ratio >= limit
        out.append((row, what, target, f"{ratio:.2f}", "met" if met else "NOT MET"))
    return out


def targets_markdown(results):
    """The checks whose workloads ran, and a count of the rest."""
    rows = evaluate(results)
    lines = ["| issue 15 row | measured | target | ratio | |", "|---|---|---|---|---|"]
    for row, what, target, measured, verdict in rows:
        if verdict != "-":
            lines.append(f"| {row} | {what} | {target} | {measured} | {verdict} |")
    met = sum(r[4] == "met" for r in rows)
    missed = sum(r[4] == "NOT MET" for r in rows)
    lines.append(f"\n{met} met, {missed} not met, {len(rows) - met - missed} not run")
    return "\n".join(lines)


def _fmt(seconds):
    if seconds is None:
        return "—"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.2f} us"
    return f"{seconds * 1e3:.3f} ms"


def summary_markdown(results):
    """One line per workload: every backend's median, xops / torch and xops / jax."""
    main = ("numpy", "xops", "torch", "jax", "jax_jit")
    lines = [
        "| workload | numpy | xops | torch | jax | jax_jit | other rows "
        "| xops / torch | xops / jax |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, data in results.items():
        backends = data.get("backends", {})
        if data.get("kind") == "process":
            cells = ", ".join(f"{k} {v['median']:.3g} {data['unit']}" for k, v in backends.items())
            lines.append(f"| {name} | {cells} | | | | | | | |")
            continue
        med = {k: v["median"] for k, v in backends.items()}
        others = ", ".join(f"{k} {_fmt(v)}" for k, v in med.items() if k not in main)
        ratios = [
            f"{med['xops'] / med[k]:.2f}" if "xops" in med and med.get(k) else "—"
            for k in ("torch", "jax")
        ]
        cells = " | ".join(_fmt(med.get(k)) for k in main)
        lines.append(f"| {name} | {cells} | {others} | {ratios[0]} | {ratios[1]} |")
    return "\n".join(lines)


def main(argv=None):
    import json

    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m benchmarks.targets RUN.json", file=sys.stderr)
        return 2
    with open(argv[0]) as f:
        data = json.load(f)
    print(f"machine: {data['machine']}\n")
    print(summary_markdown(data["results"]) + "\n")
    print(targets_markdown(data["results"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
