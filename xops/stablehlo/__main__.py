"""``python -m xops.stablehlo``: run StableHLO programs and test files with xops.

See ``python -m xops.stablehlo --help`` (the text below) and docs/stablehlo.md.
"""

import argparse
import sys

from ..errors import SpecError

DESCRIPTION = """\
Run StableHLO programs (the textual MLIR form, e.g. what
jax.jit(f).lower(...).as_text() prints) eagerly with xops.

Each FILE is split on '// -----' lines (as the StableHLO interpreter tests are) and
parsed. Every function without arguments runs, and @main runs with the arguments of
--args (or of the file's 'RUN: ... --args="[...]"' line). Its check.* ops and
custom_call @check.* targets are evaluated; one line per function says
  PASS file::func                          it ran and every check held
  FAIL file::func (line N): reason         a check failed or an op raised an error
  SKIP file::func: reason                  it uses a feature xops does not run yet
then 'N passed, N failed[, N skipped]'."""

EPILOG = """\
results:
  The results of @main (of every function with --print) are printed under its line
  in StableHLO's literal syntax, e.g.  result #0: dense<[1, 2]> : tensor<2xi32>
  (floats in the shortest decimal that reads back to the same value, NaN and inf as
  their bit patterns), so they can be pasted back into a program or into --args.

errors:
  A parse error is reported as FILE:LINE:COLUMN with the offending source line.
  An op xops does not know, or a function it cannot run yet (collectives, ...), is a
  failure unless --allow-skip is given.

exit status:
  0  every function passed (skips allowed with --allow-skip)
  1  a function failed, or was skipped without --allow-skip
  2  bad usage: a FILE that is missing, unreadable or not UTF-8 text, or bad --args

examples:
  python -m xops.stablehlo model.mlir --args "[dense<[1.0, 2.0]> : tensor<2xf32>]"
  python -m xops.stablehlo tests/*.mlir --allow-skip --no-print
  python -m xops.stablehlo prog.mlir --trace      # every op, its types and values"""

PROG = "python -m xops.stablehlo"


class UsageError(Exception):
    """A problem with the command line or an input file: exit status 2."""


def _parser():
    ap = argparse.ArgumentParser(
        prog=PROG,
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("files", nargs="+", metavar="FILE", help="StableHLO .mlir files")
    ap.add_argument(
        "--args",
        default=None,
        metavar="LITERALS",
        help="the arguments of @main, a list of typed literals: "
        '"[dense<[1, 2]> : tensor<2xi32>, dense<1.0> : tensor<f32>]" '
        "(overrides the file's RUN line)",
    )
    printing = ap.add_mutually_exclusive_group()
    printing.add_argument(
        "--print",
        dest="print_all",
        action="store_true",
        help="print the results of every function (default: @main only)",
    )
    printing.add_argument(
        "--no-print", dest="no_print", action="store_true", help="print no results"
    )
    ap.add_argument(
        "--allow-skip",
        action="store_true",
        help="functions xops cannot run yet (unknown ops, collectives, ...) "
        "are SKIP and do not fail the run",
    )
    ap.add_argument(
        "--trace",
        action="store_true",
        help="print every op as it runs, with its types and a value summary",
    )
    return ap


def read_text(path):
    """The text of ``path``; UsageError with a one-line reason when it cannot be read
    or is not UTF-8 (the Python API raises the same reason as a LoadError)."""
    from .executor import LoadError, read_file

    try:
        return read_file(path)
    except LoadError as e:
        raise UsageError(str(e).split(": ", 1)[1]) from None


def parse_args_option(text):
    """``--args``: a list of ``dense<...> : tensor<...>`` literals, as Tensors."""
    from .ir import DenseAttr, TensorType
    from .literals import constant_tensor
    from .parser import ParseError, parse_attribute

    try:
        attr = parse_attribute(text)
    except ParseError as e:
        raise UsageError(
            f"--args: column {e.column}: {str(e).splitlines()[0].split(': ', 2)[-1]}"
        ) from None
    if not isinstance(attr, list):
        attr = [attr]
    out = []
    for i, a in enumerate(attr):
        if not isinstance(a, DenseAttr) or not isinstance(a.type, TensorType):
            raise UsageError(
                f"--args: argument #{i} must be a typed literal "
                f"'dense<...> : tensor<...>', got {a!r}"
            )
        try:
            out.append(constant_tensor(a))
        except SpecError as e:
            raise UsageError(f"--args: argument #{i}: {e}") from None
    return out


def _parse_error_text(path, e):
    """``file:line:column: message`` and the source line with a caret."""
    lines = str(e).split("\n")
    head = lines[0]
    prefix = f"line {e.line}, column {e.column}: "
    msg = head.split(prefix, 1)[1] if prefix in head else head
    return "\n".join([f"{path}:{e.line}:{e.column}: {msg}"] + lines[1:])


def main(argv=None):
    ns = _parser().parse_args(argv)
    try:
        texts = [(path, read_text(path)) for path in ns.files]
        args = parse_args_option(ns.args) if ns.args is not None else None
    except UsageError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    from .printer import format_value
    from .runner import run_file

    passed = failed = skipped = 0
    for path, text in texts:
        results = run_file(
            path, trace=sys.stdout if ns.trace else None, text=text, args=args, report_main=True
        )
        for r in results:
            where = f" (line {r.line})" if r.line else ""
            if r.status == "pass":
                passed += 1
                print(f"PASS {r.test_id}")
            elif r.status == "skip" and ns.allow_skip:
                skipped += 1
                print(f"SKIP {r.test_id}: {r.reason}")
            elif r.name == "<parse>":
                failed += 1
                print(f"FAIL {_parse_error_text(path, r.error)}")
            else:
                failed += 1
                label = "cannot run" if r.status == "skip" else ""
                print(f"FAIL {r.test_id}{where}: {label + ': ' if label else ''}{r.reason}")
            show = not ns.no_print and (ns.print_all or r.name == "main")
            if show and r.values is not None:
                for i, v in enumerate(r.values):
                    print(f"  result #{i}: {format_value(v)}")
            sys.stdout.flush()
    summary = f"{passed} passed, {failed} failed"
    if skipped:
        summary += f", {skipped} skipped"
    print(summary)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
