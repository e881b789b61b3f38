"""docs/status.md, generated from the op registry: ``python -m xops.status`` rewrites it.

One row per op of :mod:`xops.registry` (spec and XLA names; the xops.numpy and CHLO
primitives are listed by count only). Every column is derived, none typed in:

- **checks**: the spec constraint labels (``C1``, ``C12``...) the op's code raises, read
  from the source of its function and of the module functions it calls;
- **reference**: a spec-shaped reference implementation (``<op>_reference``) beside it;
- **CPU**: ``Numba`` when the op reaches a kernel of ``xops/kernels/``, else ``NumPy``;
- **CUDA**: the op has a CUDA kernel (``xops.kernels.cuda.OPS``): ``simulator`` or
  ``GPU``, what ran its tests (``tests/test_cuda*.py``; ``GPU``: every one of them passed
  on a real GPU, ``xops.kernels.cuda.GPU_VERIFIED``; ``GPU+sim``: those of the GPU run
  passed there, tests added since ran on the simulator only,
  ``xops.kernels.cuda.SIMULATOR_SINCE``); ``—`` none;
- **gradient**: ``rule`` (a tape rule), ``body`` (a composite: its body's ops record
  themselves) or ``—``;
- **quantized**: the op's declared treatment of quantized operands (``registry.QUANTIZED``);
- **conformance**: the functions of the StableHLO interpreter suite's file for the op
  (``<op>.mlir``), all of which pass (``tests/test_conformance.py`` runs every one);
  read from the suite when it is present beside the repository, else kept from the
  committed file.

``tests/test_status.py`` fails when the committed file differs from what this
module generates.
"""

import inspect
import re
import sys
import types
from pathlib import Path

import xops  # noqa: F401  (declares every op)
import xops.distributed  # noqa: F401  (its primitives, listed at the end)
import xops.nn  # noqa: F401  (its fused primitives, e.g. softmax_cross_entropy)
import xops.stablehlo  # noqa: F401  (the CHLO primitives, and the StableHLO handlers)
from xops.kernels import cuda as _cuda  # (the ops with a CUDA kernel; imports no numba.cuda)

from . import registry

__all__ = ["generate", "main"]

ROOT = Path(__file__).resolve().parents[1]
STATUS = ROOT / "docs" / "status.md"
CONFORMANCE = ROOT.parent / "shared" / "conformance" / "stablehlo-interpret"
_LABEL = re.compile(r"[\"'](C\d+)[\"']")


def _functions_reached(fn, limit=400):
    """``fn`` and the functions of xops.ops it calls (through globals, closures and
    nested code), as (function, code) pairs."""
    seen, out, stack = set(), [], [fn]
    while stack and len(out) < limit:
        f = inspect.unwrap(stack.pop())
        code = getattr(f, "__code__", None)
        if code is None or id(code) in seen:
            continue
        seen.add(id(code))
        out.append(f)
        codes = [code]
        while codes:
            c = codes.pop()
            codes.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
            for name in c.co_names:
                g = f.__globals__.get(name)
                mod = getattr(g, "__module__", "") or ""
                if isinstance(g, types.FunctionType) and mod.startswith("xops.ops"):
                    stack.append(g)
    return out


def _uses_numba(fns):
    for f in fns:
        names = set()
        codes = [f.__code__]
        while codes:
            c = codes.pop()
            codes.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
            names.update(c.co_names)
        values = [f.__globals__.get(name) for name in names]
        values += [c.cell_contents for c in f.__closure__ or ()]  # (an op a factory made)
        for g in values:
            if isinstance(g, types.ModuleType) and g.__name__.startswith("xops.kernels"):
                return True
            mod = getattr(g, "__module__", "") or ""
            if mod.startswith("xops.kernels") and not isinstance(g, types.FunctionType):
                return True
            if type(g).__name__.endswith("Dispatcher") and type(g).__module__.startswith("numba"):
                return True
    return False


def _plain(x):
    """Whether ``x`` is plain data (strings, numbers and containers of them): a table an
    op reads, as opposed to a cache keyed by code objects or functions, whose contents
    depend on what the process has run."""
    if x is None or isinstance(x, (str, int, float)):
        return True
    if isinstance(x, (tuple, list, frozenset, set)):
        return all(_plain(v) for v in x)
    if isinstance(x, dict):
        return all(_plain(k) and _plain(v) for k, v in x.items())
    return False


def _labels(fns):
    """Constraint labels in the functions' source and in the tables they read."""
    found = set()
    for f in fns:
        try:
            found.update(_LABEL.findall(inspect.getsource(f)))
        except (OSError, TypeError):
            pass
        for name in f.__code__.co_names:
            g = f.__globals__.get(name)
            if isinstance(g, dict):
                table = {k: v for k, v in g.items() if _plain(k) and _plain(v)}
            elif isinstance(g, (tuple, list, str)) and _plain(g):
                table = g
            else:
                continue
            found.update(_LABEL.findall(repr(table)))
    return sorted(found, key=lambda s: int(s[1:]))


def _runs_bodies(fn):
    """A composite that runs computations the user passes (while, if, call, ...)."""
    words = ("body", "computation", "branch", "cond", "decomposition")
    return any(w in p for p in inspect.signature(fn).parameters for w in words)


def _references():
    """The names of the ``<op>_reference`` functions of xops.ops."""
    return {
        name
        for mod in list(sys.modules.values())
        if getattr(mod, "__name__", "").startswith("xops.ops")
        for name in vars(mod)
        if name.endswith("_reference")
    }


def _reference(d, references):
    name = d.public.rstrip("_") + "_reference"
    return f"`{name}`" if name in references else "—"


def _conformance_counts():
    """op name -> number of interpreter-suite functions in its file, or None when the
    suite is not beside the repository."""
    if not CONFORMANCE.is_dir():
        return None
    from .stablehlo.runner import collect

    counts = {}
    for path in sorted(CONFORMANCE.glob("*.mlir")):
        counts[path.stem] = len(collect(str(path), display=path.name))
    return counts


def _committed_conformance():
    counts = {}
    if STATUS.is_file():
        for line in STATUS.read_text().splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) == 9 and cells[0].startswith("`"):
                counts[cells[0].strip("`")] = cells[8]
    return counts


def _rows(conformance):
    committed = None if conformance is not None else _committed_conformance()
    references = _references()
    rows = []
    for d in sorted(registry.ops(), key=lambda d: (d.family, d.name)):
        if d.spec not in ("stablehlo", "xla"):
            continue
        fns = _functions_reached(d.fn) + (_functions_reached(d.core) if d.core else [])
        labels = _labels(fns)
        checks = (
            f"{len(labels)}: {labels[0]}–{labels[-1]}"
            if len(labels) > 1
            else (labels[0] if labels else "—")
        )
        cuda = _cuda.verified_on(d.name) if d.name in _cuda.OPS or "cuda" in d.kernels else "—"
        grad = "rule" if d.rule is not None else ("body" if _runs_bodies(d.fn) else "—")
        if conformance is not None:
            conf = str(conformance[d.name]) if d.name in conformance else "—"
        else:
            conf = committed.get(d.name, "—")
        rows.append(
            (
                f"`{d.name}`",
                d.family,
                checks,
                _reference(d, references),
                "Numba" if _uses_numba(fns) else "NumPy",
                cuda,
                grad,
                d.quantized or "—",
                conf,
            )
        )
    return rows


def generate(conformance="auto"):
    """The text of docs/status.md."""
    if conformance == "auto":
        conformance = _conformance_counts()
    rows = _rows(conformance)
    head = (
        "op",
        "family",
        "checks",
        "reference",
        "CPU",
        "CUDA",
        "gradient",
        "quantized",
        "conformance",
    )
    lines = [
        "# Op status",
        "",
        "Generated from the op registry (`xops/registry.py`) by `python -m xops.status`; "
        "do not edit by hand",
        "(`tests/test_status.py` fails when this file is stale). What each column means: "
        "`xops/status.py`.",
        "",
        f"{len(rows)} ops of the StableHLO spec and the XLA semantics; "
        f"{sum(r[4] == 'Numba' for r in rows)} run Numba kernels on the CPU, "
        f"{sum(r[6] == 'rule' for r in rows)} have a gradient rule, "
        f"{sum(r[7] != '—' for r in rows)} take quantized operands.",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "|".join("---" for _ in head) + "|",
    ]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    extra = [
        d
        for d in registry.ops()
        if d.spec not in ("stablehlo", "xla") and d.fn.__module__.startswith("xops.")
    ]  # (not a user's own primitives)
    if extra:
        lines += [
            "",
            "Further primitives (recorded on the tape, declared in the registry): "
            + ", ".join(f"`{d.name}`" for d in sorted(extra, key=lambda d: d.name))
            + ".",
        ]
    return "\n".join(lines) + "\n"


def main():
    STATUS.write_text(generate())
    print(f"wrote {STATUS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
