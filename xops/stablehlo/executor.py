"""Run parsed StableHLO programs eagerly, one op at a time, through the public ``xo.*``.

Every op of a program is looked up in the op table :data:`xops.stablehlo.table.OPS`
(which the handler modules fill, see xops/stablehlo/table.py) and runs
through the same public functions users call (``xo.add``, ``xo.reduce``, ...), so the
kernels, dtype rules, constraint checks and the autodiff tape are the ones of xops
itself: ``xo.grad(lambda x: prog.main(x))`` differentiates a loaded program.

* **Values.** Tensors are :class:`xops.Tensor`; tokens ``xo.Token``; tuples Python
  tuples. Function arguments may be Tensors, NumPy arrays or nested lists; non-Tensor
  arguments are converted to the declared element type, Tensors must match it.
* **Regions** become Python callables that run their block in a child scope (they see
  the values of the enclosing blocks). Bodies that xops calls *vectorised* (reduce,
  reduce_window, select_and_scatter, map, scatter, sort, all_reduce) get whole arrays
  instead of 0-d values; 0-d values inside them (constants, captured values) are
  broadcast to the arrays' shape for elementwise ops. Regions are passed as tagged
  bodies (:class:`xops.ops._bodies.Body`): a body that is exactly one known op is a
  built-in (``stablehlo.add %a, %b`` the xops function itself, ``stablehlo.compare GE,
  %a, %b`` ``Body.compare("GE")``), so xops can use its fast kernels and gradient rules;
  any other region is ``Body.traced``, which xops never tries to recognise.
* **Types.** Each result is checked against its declared type (element type and, outside
  vectorised bodies, shape): a mismatch is a SpecError naming the op and its line.
* **Errors** keep their type (SpecError, ...) and get a note with the op and its source
  location. An op without an xops function yet raises :class:`OpNotImplemented`; a
  feature the executor does not run yet (collectives, quantized types) raises
  :class:`Unsupported`; a failing ``check.*`` op raises :class:`CheckFailure`.
* **Tracing** (``load(..., trace=True)`` or ``prog.main.trace(...)``) prints every op
  with its operands' and results' types and a summary of the result values.
"""

import os
import sys

import numpy as np

from ..dtypes import DType
from ..errors import SpecError
from ..ops._bodies import Body
from ..ops.quantization import run_quantized
from ..tensor import Tensor
from .checks import coerce_argument
from .exceptions import CheckFailure, LoadError, OpNotImplemented, Unsupported
from .ir import DenseAttr, QuantType, TensorType
from .parser import parse
from .table import ELEMENTWISE, OPS, TERMINATORS
from .values import matches, value_type_str

__all__ = [
    "load",
    "load_all",
    "Program",
    "Function",
    "OpNotImplemented",
    "Unsupported",
    "CheckFailure",
    "LoadError",
    "read_file",
    "value_type_str",
    "summarize",
]


def read_file(path):
    """The text of a program file; :class:`LoadError` with a one-line reason when it
    cannot be read or is not UTF-8 text."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise LoadError(f"cannot read {os.fspath(path)!r}: {e.strerror or e}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise LoadError(
            f"{os.fspath(path)!r} is not UTF-8 text (byte "
            f"0x{data[e.start]:02x} at offset {e.start})"
        ) from None


_MISSING = object()


class _Scope:
    __slots__ = ("vals", "parent")

    def __init__(self, parent=None):
        self.vals = {}
        self.parent = parent

    def get(self, name):
        v = self._find(name)
        if v is not _MISSING:
            return v
        base, sep, idx = name.partition("#")
        if sep and idx == "0":  # %x#0 of a single-result %x
            return self.get(base)
        if not sep:  # %x of a one-result group %x:1
            v = self._find(name + "#0")
            if v is not _MISSING:
                return v
        raise KeyError(name)

    def _find(self, name):
        s = self
        while s is not None:
            v = s.vals.get(name, _MISSING)
            if v is not _MISSING:
                return v
            s = s.parent
        return _MISSING


class Context:
    """What a handler sees of the op it runs: the interpreter, the op, the scope,
    whether it runs inside a vectorised body, and helpers for result types/regions."""

    __slots__ = ("interp", "op", "scope", "vectorised", "batch_shape", "module", "depth")

    def __init__(self, interp, op, scope, vectorised, batch_shape, module, depth):
        self.interp, self.op, self.scope = interp, op, scope
        self.vectorised, self.batch_shape = vectorised, batch_shape
        self.module, self.depth = module, depth

    def result_type(self, i=0):
        ts = self.op.result_types
        if i >= len(ts):
            raise SpecError(self.op.name, "", f"the text gives no type for result #{i}")
        return ts[i]

    def result_dtype(self, i=0):
        t = self.result_type(i)
        if not isinstance(t, TensorType) or not isinstance(t.elem, DType):
            raise SpecError(self.op.name, "", f"result #{i} must be a tensor type, got {t}")
        return t.elem

    def result_shape(self, i=0):
        t = self.result_type(i)
        if not isinstance(t, TensorType) or not t.is_static:
            raise SpecError(self.op.name, "", f"result #{i} needs a static tensor type, got {t}")
        return list(t.shape)

    def region(self, i=0, vectorised=False):
        """Region ``i`` as a Python callable over its block arguments; it returns one
        value, or a tuple for several."""
        op = self.op
        if i >= len(op.regions):
            raise SpecError(
                op.name, "", f"expected at least {i + 1} region(s), got {len(op.regions)}"
            )
        return self.interp.region_callable(op.regions[i], self, vectorised)

    def call(self, name, args):
        """Call function ``@name`` of the current module. Inside a vectorised body the
        callee runs vectorised too: its arguments carry the body's batch of positions
        (a reduce body calling ``@logaddexp(tensor<f32>, tensor<f32>)`` gets whole
        arrays), so its declared shapes are checked per element, as the body's are."""
        return self.interp.call_symbol(
            self.module, name, args, self.depth + 1, self.vectorised, self.batch_shape
        )


class Interpreter:
    """Runs functions of parsed modules. One instance per Program; ``trace_file`` is
    where traces go (None: no tracing); ``probes`` keeps ``interpreter.probe`` values."""

    def __init__(self, trace_file=None):
        self.trace_file = trace_file
        self.probes = {}
        self.printed = []

    # -- functions ------------------------------------------------------------------------
    def call_symbol(self, module, name, args, depth=0, vectorised=False, batch_shape=()):
        f = module.funcs.get(name)
        if f is None:
            raise SpecError(
                "func.call",
                "",
                f"no function @{name} in this module "
                f"(has {', '.join('@' + n for n in module.funcs)})",
            )
        return self.call_func(module, f, args, depth, vectorised, batch_shape)

    def call_func(self, module, func, args, depth=0, vectorised=False, batch_shape=()):
        if func.body is None:
            raise SpecError("func.call", "", f"@{func.name} is only declared (no body)")
        if len(args) != len(func.arg_types):
            raise SpecError(
                "func.call",
                "",
                f"@{func.name} takes {len(func.arg_types)} argument(s), got {len(args)}",
            )
        vals = [coerce_argument(func, i, a, vectorised) for i, a in enumerate(args)]
        if self.trace_file is not None:
            self._trace_line(
                depth,
                f"func @{func.name}("
                + ", ".join(f"{n}: {value_type_str(v)}" for n, v in zip(func.arg_names, vals))
                + ")",
            )
        outs = self.run_block(
            func.body.entry,
            vals,
            None,
            module,
            depth,
            vectorised,
            batch_shape if vectorised else (),
        )
        self._check_types(func, outs, func.result_types, f"@{func.name} result", vectorised)
        return outs

    # -- blocks -----------------------------------------------------------------------------
    def run_block(self, block, args, parent, module, depth, vectorised, batch_shape):
        scope = _Scope(parent)
        if len(args) != len(block.args):
            raise SpecError(
                "region", "", f"the block takes {len(block.args)} argument(s), got {len(args)}"
            )
        for (name, _), v in zip(block.args, args):
            scope.vals[name] = v
        for op in block.ops:
            try:
                vals = [scope.get(n) for n in op.operands]
            except KeyError as e:
                raise _located(
                    SpecError(op.name, "", f"use of undefined value {e.args[0]}"), op, module
                ) from None
            if op.name in TERMINATORS:
                if vectorised and batch_shape:
                    vals = [_broadcast0(v, batch_shape) for v in vals]
                if self.trace_file is not None:
                    self._trace_op(op, vals, None, depth)
                return vals
            if vectorised and batch_shape and op.name in ELEMENTWISE:
                vals = [_broadcast0(v, batch_shape) for v in vals]
            handler = OPS.get(op.name)
            ctx = Context(self, op, scope, vectorised, batch_shape, module, depth)
            try:
                if handler is None:
                    raise Unsupported(f"unknown op {op.name}")
                out = _run_handler(handler, ctx, op, vals)
                outs = _as_list(out, len(op.results))
                if len(outs) != len(op.results):
                    raise SpecError(
                        op.name,
                        "",
                        f"produced {len(outs)} result(s), the text names {len(op.results)}",
                    )
                if op.result_types:
                    self._check_types(op, outs, op.result_types, "result", vectorised)
            except (
                SpecError,
                OpNotImplemented,
                Unsupported,
                CheckFailure,
                TypeError,
                ValueError,
                IndexError,
                ArithmeticError,
            ) as e:
                raise _located(e, op, module)  # noqa: B904 (the same error, located in the text)
            for name, v in zip(op.results, outs):
                scope.vals[name] = v
            if self.trace_file is not None:
                self._trace_op(op, vals, outs, depth)
        return []  # a block without a terminator returns nothing

    def region_callable(self, region, ctx, vectorised):
        if len(region.blocks) != 1:
            raise Unsupported(
                f"{ctx.op.name}: regions with {len(region.blocks)} blocks "
                f"(branches between blocks) are not supported"
            )
        block = region.entry
        interp, scope, module, depth = self, ctx.scope, ctx.module, ctx.depth + 1
        outer_batch = ctx.batch_shape

        def body(*args):
            batch = outer_batch
            if vectorised:
                shapes = [a.shape for a in args if isinstance(a, Tensor)]
                batch = max(shapes, key=len) if shapes else ()
            outs = interp.run_block(
                block, list(args), scope, module, depth, vectorised or ctx.vectorised, batch
            )
            return outs[0] if len(outs) == 1 else tuple(outs)

        body.__name__ = f"region_of_{ctx.op.name.replace('.', '_')}"
        body.__qualname__ = body.__name__
        return Body.traced(body, body.__name__)  # tagged: xops never reads its code

    # -- types ----------------------------------------------------------------------------
    def _check_types(self, where, values, types, what, vectorised):
        if len(values) != len(types):
            raise SpecError(
                getattr(where, "name", "func"),
                "",
                f"{what} {len(values)} value(s), the type says {len(types)}",
            )
        for i, (v, t) in enumerate(zip(values, types)):
            if not matches(v, t, vectorised):
                raise SpecError(
                    getattr(where, "name", "func"),
                    "type",
                    f"{what} #{i} is declared {t}, got {value_type_str(v)}",
                )

    # -- tracing --------------------------------------------------------------------------
    def _trace_line(self, depth, text):
        print("  " * depth + text, file=self.trace_file)

    def _trace_op(self, op, vals, outs, depth):
        args = ", ".join(f"{n}: {value_type_str(v)}" for n, v in zip(op.operands, vals))
        loc = f"[line {op.line}] "
        if outs is None:
            self._trace_line(depth, f"{loc}{op.name} {args}")
            return
        res = ", ".join(op.results)
        head = f"{loc}{res + ' = ' if res else ''}{op.name}({args})"
        if not outs:
            self._trace_line(depth, head)
            return
        types = ", ".join(value_type_str(v) for v in outs)
        summary = "; ".join(summarize(v) for v in outs)
        self._trace_line(depth, f"{head} -> {types}" + (f"  {summary}" if summary else ""))


def _run_handler(handler, ctx, op, vals):
    """Run one op. An arithmetic op on quantized values is the spec's
    ``dequantize_op_quantize`` with the result types the program declares, which the
    quantization module runs (:func:`xops.ops.quantization.run_quantized`)."""
    if not op.name.startswith("stablehlo."):
        return handler(ctx, op, vals)
    types = [t.elem if _is_quantized(t) else None for t in op.result_types or ()]
    return run_quantized(op.name.partition(".")[2], lambda vs: handler(ctx, op, vs), vals, types)


def _is_quantized(t):
    return isinstance(t, TensorType) and isinstance(t.elem, QuantType)


def _as_list(out, n):
    if n == 1:
        return [out]
    if out is None:
        return []
    if isinstance(out, (list, tuple)):
        return list(out)
    return [out]


def _broadcast0(v, shape):
    import xops as xo

    if isinstance(v, Tensor) and v.ndim == 0 and shape:
        return xo.broadcast_in_dim(v, [], list(shape))
    return v


def _located(e, op, module):
    """Attach the op and its source location to an exception (once)."""
    if getattr(e, "_stablehlo_loc", None) is None:
        e._stablehlo_loc = (op.line, op.column, op.name)
        note = f"in {op.name} at line {op.line}, column {op.column}"
        if hasattr(e, "add_note"):
            e.add_note(note)
    return e


def summarize(v, limit=8):
    """A one-line summary of a value: all elements when few, else the first ones and
    the min/max (NaN-aware) of real tensors."""
    if isinstance(v, tuple):
        return "(" + ", ".join(summarize(x, limit) for x in v) + ")"
    if not isinstance(v, Tensor):
        return ""
    a = np.asarray(v)
    if v.dtype.is_narrow:
        a = a.astype(v.dtype.compute)
    flat = a.reshape(-1)
    if flat.size <= limit:
        if a.dtype == np.bool_:
            a = np.where(a, "true", "false")
            body = np.array2string(a, separator=", ", formatter={"all": str})
        else:
            body = np.array2string(a, separator=", ", threshold=limit + 1, max_line_width=10**6)
        return " ".join(body.split())
    head = ", ".join(_fmt(x) for x in flat[: limit - 2])
    extra = ""
    if a.dtype.kind in "fiub":
        with np.errstate(all="ignore"):
            fin = flat[~np.isnan(flat)] if a.dtype.kind == "f" else flat
            if fin.size:
                extra = f" (min {_fmt(fin.min())}, max {_fmt(fin.max())}"
                if a.dtype.kind == "f":
                    nn = int(np.isnan(flat).sum())
                    if nn:
                        extra += f", {nn} NaN"
                extra += ")"
    return f"[{head}, ... {flat.size} values]{extra}"


def _fmt(x):
    if isinstance(x, (np.floating, float)):
        return f"{float(x):.6g}"
    return str(x.item() if hasattr(x, "item") else x)


# ---------------------------------------------------------------------------------------
# Programs
# ---------------------------------------------------------------------------------------


class Function:
    """One function of a loaded program; call it with tensors (or arrays).

    ``f(*args)`` returns the single result, a tuple for several, None for none.
    ``f.trace(*args)`` runs it printing every op. ``f.type`` is its MLIR type.
    """

    def __init__(self, program, module, func):
        self.program, self.module, self.func = program, module, func
        self.name = func.name
        self.__doc__ = f"StableHLO function @{func.name}: {func.type}"

    @property
    def type(self):
        return self.func.type

    @property
    def arg_types(self):
        return list(self.func.arg_types)

    @property
    def result_types(self):
        return list(self.func.result_types)

    def __call__(self, *args):
        return self.program._run(self, args, self.program._trace_file)

    def trace(self, *args, file=None):
        """Run, printing each op with its types and a value summary (to ``file``,
        default stdout)."""
        return self.program._run(self, args, file if file is not None else sys.stdout)

    def __repr__(self):
        return f"<stablehlo function @{self.name}: {self.func.type}>"


class Program:
    """A loaded StableHLO program. ``prog(x)`` runs ``@main`` with ``x`` (as
    ``jax.jit(f)`` would); other functions: ``prog.call("name", x)``,
    ``prog["add_n.impl"](x)`` or ``prog.name(x)``. ``prog.functions`` maps names to
    :class:`Function`. (``prog("name", x)``, a function name first, still works.)"""

    def __init__(self, modules, trace=False, name=None):
        self.modules = list(modules)
        self.name = name
        self._trace_file = (sys.stdout if trace is True else trace) or None
        self.functions = {}
        for m in self.modules:
            for fname, f in m.funcs.items():
                if fname in self.functions:
                    raise SpecError(
                        "stablehlo.load",
                        "",
                        f"function @{fname} is defined in two `// -----` "
                        f"sections; load them one by one with "
                        f"xo.stablehlo.load_all",
                    )
                self.functions[fname] = Function(self, m, f)
        self.interpreter = Interpreter()

    def _run(self, fn, args, trace_file):
        interp = self.interpreter
        interp.trace_file = trace_file
        interp.probes = {}
        outs = interp.call_func(fn.module, fn.func, list(args))
        if not outs:
            return None
        return outs[0] if len(outs) == 1 else tuple(outs)

    def __getattr__(self, name):
        if name.startswith("__") or name in ("functions", "modules"):
            raise AttributeError(name)
        try:
            return self.functions[name]
        except KeyError:
            raise AttributeError(
                f"the program has no function @{name} (it has "
                f"{', '.join('@' + n for n in self.functions)})"
            ) from None

    def __getitem__(self, name):
        try:
            return self.functions[name]
        except KeyError:
            raise KeyError(f"the program has no function @{name}") from None

    def __call__(self, *args):
        """Run ``@main`` with ``args``. A first argument that is a string names the
        function instead (the older ``prog("name", *args)`` form)."""
        if args and isinstance(args[0], str):
            return self.call(*args)
        if "main" not in self.functions:
            names = ", ".join("@" + n for n in self.functions)
            raise SpecError(
                "stablehlo.load",
                "",
                f"the program has no @main to call (it has {names}); use prog.call(name, *args)",
            )
        return self.functions["main"](*args)

    def call(self, name, *args):
        """Run function ``@name`` with ``args``."""
        return self[name](*args)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self.functions))

    def __iter__(self):
        return iter(self.functions.values())

    def __repr__(self):
        fs = ", ".join(f"@{n}" for n in self.functions)
        return f"<stablehlo program{' ' + self.name if self.name else ''}: {fs}>"


def _read(text_or_path):
    """(text, name): a path (str or PathLike naming an existing file, or ending in
    .mlir) is read; anything else is program text."""
    if isinstance(text_or_path, os.PathLike) or (
        isinstance(text_or_path, str)
        and "\n" not in text_or_path
        and (text_or_path.endswith(".mlir") or os.path.isfile(text_or_path))
    ):
        path = os.fspath(text_or_path)
        return read_file(path), os.path.basename(path)
    if not isinstance(text_or_path, str):
        raise TypeError(f"load() takes program text or a path, got {type(text_or_path).__name__}")
    return text_or_path, None


def load(text_or_path, trace=False):
    """Parse StableHLO text (or a ``.mlir`` file) into a callable :class:`Program`.

    Files split by ``// -----`` lines are merged when their function names are
    distinct (use :func:`load_all` otherwise). ``trace=True`` prints every op of every
    call (or pass a file object).

    >>> prog = xo.stablehlo.load('''
    ... func.func @main(%x: tensor<f32>) -> tensor<f32> {
    ...   %0 = stablehlo.multiply %x, %x : tensor<f32>
    ...   func.return %0 : tensor<f32>
    ... }''')
    >>> prog.main(xo.tensor(3.0))            # 9.0
    xo.tensor(9., f32[])
    >>> xo.grad(prog.main)(xo.tensor(3.0))   # 6.0
    xo.tensor(6., f32[])
    """
    text, name = _read(text_or_path)
    return Program(parse(text), trace=trace, name=name)


def load_all(text_or_path, trace=False):
    """One :class:`Program` per ``// -----`` section of the text or file (the form of
    the StableHLO interpreter tests)."""
    text, name = _read(text_or_path)
    return [Program([m], trace=trace, name=name) for m in parse(text)]


def dense_value(attr, type_=None):
    """A Tensor from a dense attribute (``dense<[1, 2]> : tensor<2xi32>``)."""
    from .literals import constant_tensor

    if not isinstance(attr, DenseAttr):
        raise SpecError("stablehlo.constant", "", f"expected a dense literal, got {attr!r}")
    return constant_tensor(attr, type_)
