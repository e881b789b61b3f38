"""Run StableHLO programs eagerly: ``xo.stablehlo.load(text_or_path)``.

A hand-written parser reads StableHLO's textual MLIR form (generic and pretty forms,
every attribute and element type of the spec); the executor runs each op through the
public ``xo.*`` functions, so loaded programs use xops' kernels, checks and autodiff::

    prog = xo.stablehlo.load("model.mlir")        # or the program text
    y = prog(x)                                    # runs @main; prog.call("f", x) others
    prog.main.trace(x)                             # print each op, types and values
    g = xo.grad(lambda x: prog.loss(x))(x)        # through xops' autodiff tape

``python -m xops.stablehlo FILE.mlir [--args ...] [--print] [--allow-skip] [--trace]``
runs a program's functions and reports pass/fail/skip per function, printing @main's
results. See ``--help`` and docs/stablehlo.md.
"""

from . import limits
from .exceptions import CheckFailure, LoadError, OpNotImplemented, Unsupported
from .executor import Function, Program, load, load_all
from .ir import Module, Op, TensorType
from .parser import ParseError, parse, parse_attribute, parse_type

__all__ = [
    "load",
    "load_all",
    "Program",
    "Function",
    "parse",
    "parse_type",
    "parse_attribute",
    "ParseError",
    "OpNotImplemented",
    "Unsupported",
    "CheckFailure",
    "LoadError",
    "Module",
    "Op",
    "TensorType",
    "OPS",
    "limits",
]

# The handler modules register their ops into the table the executor reads (.table); the
# package imports them here, above everything else in it, so no module below imports up.
from . import handlers, movement, collectives, chlo, targets  # noqa: E402,F401
from .table import OPS  # noqa: E402

assert all(f"stablehlo.{n}" in OPS for n in handlers.SPEC_OPS)
