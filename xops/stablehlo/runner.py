"""Run the functions of StableHLO interpreter test files and report on each.

This is what ``python -m xops.stablehlo FILE.mlir`` and the conformance tests use:

* a file is split on ``// -----`` lines; each section is parsed once;
* the *entry functions* of a section are those with no arguments, plus ``@main`` when
  the file's ``RUN:`` line passes ``--args="[dense<...> : tensor<...>, ...]"``;
* each one runs and gets a status: ``pass`` (ran, every ``check.*`` held), ``fail``
  (first mismatch or error, with its line), ``skip`` (uses a feature the executor
  does not run: an op listed in ``SKIP_OPS``, none at present) or ``missing`` (an
  ``xo.*`` op is not implemented yet; counted as failed by the CLI, ``xfail`` in the
  conformance tests). ``interpreter.run_parallel`` runs its programs on xops'
  in-process process grid (``xops/stablehlo/collectives.py``).
"""

import os
import re
import time
from dataclasses import dataclass

from ..errors import SpecError
from .executor import CheckFailure, OpNotImplemented, Program, Unsupported
from .parser import ParseError, parse_attribute, parse_module, split_chunks

__all__ = [
    "FunctionResult",
    "collect",
    "run_entry",
    "run_file",
    "static_skip_reason",
    "run_line_args",
]

# ops whose presence makes a function a skip (the executor does not run them yet); the
# collectives, send/recv, infeed/outfeed and interpreter.run_parallel run since issue 16
SKIP_OPS = {}


@dataclass
class FunctionResult:
    file: str
    name: str
    test_id: str
    status: str  # pass, fail, skip, missing
    reason: str = ""
    line: int = 0
    seconds: float = 0.0
    values: list = None  # the function's results, when it ran
    error: Exception = None  # the exception behind a fail/skip/missing status


@dataclass
class Entry:
    """One runnable function of a file: its module, name, args and test id."""

    file: str
    module: object
    name: str
    test_id: str
    args: list = None
    error: Exception = None  # a parse error of its section
    skip: str = None  # why it cannot run (e.g. @main needs arguments none were given)


def _walk_ops(region):
    for b in region.blocks:
        for op in b.ops:
            yield op
            for r in op.regions:
                yield from _walk_ops(r)


def static_skip_reason(module, name, _seen=None):
    """Why function ``@name`` (with what it calls) cannot run yet, or None."""
    seen = _seen if _seen is not None else set()
    if name in seen or name not in module.funcs:
        return None
    seen.add(name)
    f = module.funcs[name]
    if f.body is None:
        return None
    for op in _walk_ops(f.body):
        if op.name in SKIP_OPS:
            return SKIP_OPS[op.name]
        for key in ("callee", "decomposition"):
            callee = op.attrs.get(key)
            if callee is not None and hasattr(callee, "name"):
                r = static_skip_reason(module, callee.name, seen)
                if r:
                    return r
    return None


_ARGS = re.compile(r'--args="(\[.*?\])"')


def run_line_args(text):
    """The ``--args="[...]"`` of a file's ``RUN:`` lines, as attributes, or None."""
    for line in text.splitlines():
        if line.startswith("// RUN:") and "--args=" in line and not line.startswith("// RUN: not"):
            m = _ARGS.search(line)
            if m:
                return parse_attribute(m.group(1))
    return None


def collect(path, text=None, args=None, display=None, report_main=False):
    """The entry functions of a file, parsed once: a list of :class:`Entry`. Names
    repeated across sections get ``#2``, ``#3``... in their test ids, which start with
    ``display`` (default: the file name). With ``report_main``, an ``@main`` that takes
    arguments none were given for is an entry that skips (the CLI reports it)."""
    if text is None:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    fname = display or os.path.basename(path)
    run_args = args if args is not None else run_line_args(text)
    entries, counts = [], {}
    for i, (line, chunk) in enumerate(split_chunks(text)):
        try:
            m = parse_module(chunk, line, i)
        except ParseError as e:
            entries.append(Entry(fname, None, "<parse>", f"{fname}::<section {i + 1}>", error=e))
            continue
        for name, f in m.funcs.items():
            fargs, skip = None, None
            if f.arg_types:
                if name == "main" and run_args is not None:
                    fargs = run_args
                elif name == "main" and report_main:
                    skip = (
                        f"@main takes {len(f.arg_types)} argument(s) "
                        f"({', '.join(map(str, f.arg_types))}): give them with --args"
                    )
                else:
                    continue
            if f.body is None:
                continue
            counts[name] = counts.get(name, 0) + 1
            tid = f"{fname}::{name}" + (f"#{counts[name]}" if counts[name] > 1 else "")
            entries.append(Entry(fname, m, name, tid, fargs, skip=skip))
    return entries


def _arg_values(entry):
    from .literals import constant_tensor

    return [a if not hasattr(a, "data") else constant_tensor(a) for a in (entry.args or [])]


def run_entry(entry, trace=None, programs=None):
    """Run one entry; a :class:`FunctionResult`. ``programs`` caches a Program per
    module."""
    t0 = time.perf_counter()
    if entry.error is not None:
        return FunctionResult(
            entry.file,
            entry.name,
            entry.test_id,
            "fail",
            str(entry.error).splitlines()[0],
            entry.error.line,
            error=entry.error,
        )
    reason = entry.skip or static_skip_reason(entry.module, entry.name)
    if reason:
        return FunctionResult(entry.file, entry.name, entry.test_id, "skip", reason)
    key = id(entry.module)
    prog = programs.get(key) if programs is not None else None
    if prog is None:
        prog = Program([entry.module])
        if programs is not None:
            programs[key] = prog
    fn = prog.functions[entry.name]
    status, reason, line, values, error = "pass", "", 0, None, None
    try:
        out = prog._run(fn, _arg_values(entry), trace if trace is not None else None)
        n = len(fn.result_types)
        values = [] if n == 0 else [out] if n == 1 else list(out)
    except OpNotImplemented as e:
        status, reason, error = "missing", str(e), e
        line = _line(e)
    except Unsupported as e:
        status, reason, error = "skip", str(e), e
        line = _line(e)
    except CheckFailure as e:
        status, reason, error = "fail", str(e), e
        line = _line(e)
    except (
        SpecError,
        ParseError,
        TypeError,
        ValueError,
        IndexError,
        KeyError,
        ArithmeticError,
        AttributeError,
        NotImplementedError,
        AssertionError,
    ) as e:
        status, reason, error = "fail", f"{type(e).__name__}: {_first_line(e)}", e
        line = _line(e)
    except (RuntimeError, MemoryError, LookupError, OSError) as e:
        # a runner reports every function; an error of this kind is a bug in xops
        status, reason, error = "fail", f"internal error {type(e).__name__}: {_first_line(e)}", e
        line = _line(e)
    return FunctionResult(
        entry.file,
        entry.name,
        entry.test_id,
        status,
        reason,
        line,
        time.perf_counter() - t0,
        values,
        error,
    )


def _first_line(e):
    lines = str(e).splitlines()
    return lines[0] if lines else ""


def _line(e):
    loc = getattr(e, "_stablehlo_loc", None)
    return loc[0] if loc else 0


def run_file(path, trace=None, text=None, args=None, report_main=False):
    """Run every entry function of a file; a list of :class:`FunctionResult`."""
    entries = collect(path, text, args, report_main=report_main)
    programs = {}
    return [run_entry(e, trace, programs) for e in entries]
