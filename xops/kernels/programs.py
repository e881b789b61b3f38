"""Compiled body programs: a reduce body traced into a program of elementwise float ops
(xops.ops._bodies.trace_program) turned into one generated, compiled loop per program.

**Generated level loop.** A program's instructions become the straight-line body of a
Python function ``level(src, dst, carry, lo, hi)`` -- ``dst[i] = body(src[2i],
src[2i + 1])`` for i in [lo, hi), one statement per instruction, the constants frozen
as globals of the element type -- written from the program (:func:`level_source`) and
compiled by ``numba.cfunc`` once per program and element type (the generated module is
written to ``__pycache__/programs`` so that Numba's cache keeps the compiled loop between
processes; a compilation takes about a second). Every op of the body
is a branch-free scalar formula (IEEE maximum/minimum as NumPy's plus a select for the
zero's sign; float32 exp and log1p as xops.kernels.transcendental's float32 formulas
exp32 and log1p32, exactly as ``xo.exponential``/``xo.log_plus_one`` compute them;
float64 exp and log1p call libm as NumPy's loops do on CPUs without their AVX-512
ones), so LLVM vectorises the body across pairs. Bodies with several exp/log1p run in
stages over blocks of pairs (see :func:`level_source`).

**Tree.** :func:`tree_fold` runs the generic reduce's pairwise tree
(xops.ops.reduction._reduce_generic) over each row: each level pairs neighbours (2i,
2i+1) into the next (two scratch rows, used in turn, so no level is read and written in
place), an odd element out waits at its level's right end; the top then combines with
the waiting elements, the latest level's first, and the init value comes in once,
leftmost: ``body(init, tree)``. The level loop is called through its C entry point
(``call_entry``), so the tree kernel itself is compiled once per element type, not
once per body. The order is fixed by the shapes alone: the bits do not depend on the
SIMD width or the thread count.
"""

import hashlib
import importlib.util
import os
import sys

import numpy as np
from llvmlite import ir
from numba import prange, types
from numba.extending import intrinsic

from . import config
from .config import kernel, scalar
from .transcendental import ENTRY_SIGNATURE, call_entry

__all__ = ["level_source", "level_entry", "tree_fold", "TREE_FOLD", "fold_rows"]


@scalar
def ieee_max(a, b):
    """IEEE 754-2019 maximum of floats (NaN if either is, +0 over -0), branch-free:
    NumPy's maximum (NaN-propagating), and where a == b (equal, or zeros of either sign)
    a if b is -0 (or negative) else b."""
    v = np.maximum(a, b)
    return (a if np.signbit(b) else b) if a == b else v


@scalar
def ieee_min(a, b):
    """IEEE 754-2019 minimum of floats (-0 under +0): like ieee_max, the other zero."""
    v = np.minimum(a, b)
    return (b if np.signbit(b) else a) if a == b else v


# spec name -> expression template per element type ({a}, {b}: operand registers)
_F32 = {"exponential": "exp32({a})", "log_plus_one": "log1p32({a})"}
_F64 = {"exponential": "np.exp({a})", "log_plus_one": "np.log1p({a})"}
_COMMON = {
    "maximum": "ieee_max({a}, {b})",
    "minimum": "ieee_min({a}, {b})",
    "add": "{a} + {b}",
    "subtract": "{a} - {b}",
    "multiply": "{a} * {b}",
    "divide": "{a} / {b}",
    "negate": "-{a}",
    "abs": "abs({a})",
    "sqrt": "np.sqrt({a})",
}


_HEAVY = frozenset(("exponential", "log_plus_one"))  # (float32: long vector formulas)
_BLOCK = 256  # pairs each stage's loop takes at a time


def _stages(rows, names):
    """The program's instructions in stages of at most one heavy op each (see
    :func:`level_source`)."""
    stages, current, heavy = [], [], False
    for row in rows:
        h = names[row[0]] in _HEAVY
        if h and heavy:
            stages.append(current)
            current, heavy = [], False
        current.append(row)
        heavy = heavy or h
    stages.append(current)
    return stages


@intrinsic
def _pointer(typingctx, address):
    """The int64 ``address`` as a void pointer (for ``carray``)."""
    if not isinstance(address, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        return builder.inttoptr(args[0], ir.IntType(8).as_pointer())

    return types.voidptr(address), codegen


def level_source(prog, res, names, dtype):
    """(source, carried) for the level loop of a program: rows (opcode, destination,
    operand, operand) over registers r0, r1 (the operands), r2 .. (the constants,
    globals of the generated module: see :func:`level_entry`) and one per instruction;
    ``res`` the result register; ``names``: opcode -> spec name; float32 or float64
    ``dtype``. ``level(src, dst, carry, lo, hi)`` computes ``dst[i] = body(src[2i],
    src[2i+1])`` for i in [lo, hi), in blocks of _BLOCK pairs; within a block the
    program runs in stages, one loop each, every stage at most one heavy op (exp, log1p:
    one fused loop of both kept too many vector registers live: 25% slower), the values
    a later stage reads passed in ``carry`` (an address: ``carried`` rows of _BLOCK
    elements)."""
    rows = np.asarray(prog).reshape(-1, 4).tolist()
    table = {**_COMMON, **(_F32 if np.dtype(dtype) == np.float32 else _F64)}
    t = "np.float32" if np.dtype(dtype) == np.float32 else "np.float64"
    stages = _stages(rows, names)
    defined_in = {0: 0, 1: 0}
    for k, stage in enumerate(stages):
        for row in stage:
            defined_in[row[1]] = k
    slots = {}  # register -> carry row
    reads = []  # per stage: the registers it reads from an earlier stage
    for k, stage in enumerate(stages):
        used = [r for row in stage for r in row[2:]] + ([res] if k == len(stages) - 1 else [])
        early = sorted({r for r in used if r in defined_in and defined_in[r] < k})
        for r in early:
            slots.setdefault(r, len(slots))
        reads.append(early)
    lines = [
        "def level(src, dst, carry, lo, hi):",
        f"    s = carray(src, 2 * hi, {t})",
        f"    d = carray(dst, hi, {t})",
    ]
    if slots:
        lines.append(f"    c = carray(_pointer(carry), {len(slots) * _BLOCK}, {t})")
    lines += [
        f"    for b in range(lo, hi, {_BLOCK}):",
        f"        n = np.uint64(min({_BLOCK}, hi - b))",
        "        base = np.uint64(b)",
    ]
    for k, stage in enumerate(stages):
        lines.append("        for i in range(np.uint64(0), n):  # unsigned: no wraparound")
        if k == 0:
            lines += [
                "            j = base + i",
                "            r0 = s[j + j]",
                "            r1 = s[j + j + ONE]",
            ]
        for r in reads[k]:
            lines.append(f"            r{r} = c[i + np.uint64({slots[r] * _BLOCK})]")
        for code, dst, a, b in stage:
            expr = table[names[code]].format(a=f"r{a}", b=f"r{b}")
            lines.append(f"            r{dst} = {expr}")
        for r, slot in slots.items():
            if defined_in[r] == k:
                lines.append(f"            c[i + np.uint64({slot * _BLOCK})] = r{r}")
        if k == len(stages) - 1:
            lines.append(f"            d[base + i] = r{res}")
    return "\n".join(lines) + "\n", len(slots)


_ENTRIES = {}  # (program bytes, constants bytes, result, dtype) -> (cfunc, carried)
_ENTRIES_MAX = 64
_HELPERS = ("programs.py", "transcendental.py")  # the sources a level loop inlines
_helpers_digest = []
PROGRAM_DIR = None  # where generated modules go (None: __pycache__/programs here)


def _module_source(src, consts):
    """The generated module of a level loop: its imports, the constants as typed
    globals (Numba freezes them with their own type: a float32 constant keeps float32
    arithmetic float32), ``level``."""
    t = "np.float32" if consts.dtype == np.float32 else "np.float64"
    lines = [
        "import numpy as np",
        "from numba import carray",
        "from xops.kernels.programs import _pointer, ieee_max, ieee_min",
        "from xops.kernels.transcendental import exp32, log1p32",
        "ONE = np.uint64(1)",
    ]
    lines += [f"r{2 + k} = {t}(float.fromhex({float(c).hex()!r}))" for k, c in enumerate(consts)]
    return "\n".join(lines) + "\n\n\n" + src


def _prune(folder, prefix):
    """Remove the generated modules (and their cached code) of other versions of the
    helpers: they can never be used again."""
    stale = [f for f in os.listdir(folder) if f.startswith("program_") and not f.startswith(prefix)]
    cached = os.path.join(folder, "__pycache__")
    for f in os.listdir(cached) if os.path.isdir(cached) else ():
        if f.startswith("program_") and not f.startswith(prefix):
            stale.append(os.path.join("__pycache__", f))
    for f in stale:
        try:
            os.remove(os.path.join(folder, f))
        except OSError:
            pass


def _load(source):
    """``level`` of the generated module ``source``: written once to a file named after
    its hash and the helpers' sources (so Numba's cache, keyed on the file, can keep
    the compiled loop between processes and never serves a stale one), or run in
    memory where that file cannot be written."""
    if not _helpers_digest:
        here = os.path.dirname(os.path.abspath(__file__))
        digest = hashlib.sha1()
        for name in _HELPERS:
            with open(os.path.join(here, name), "rb") as f:
                digest.update(f.read())
        _helpers_digest.append((here, digest.hexdigest()))
    here, helpers = _helpers_digest[0]
    prefix = f"program_{helpers[:10]}_"
    name = prefix + hashlib.sha1(source.encode()).hexdigest()[:16]
    folder = PROGRAM_DIR or os.path.join(here, "__pycache__", "programs")
    path = os.path.join(folder, name + ".py")
    try:
        if not os.path.exists(path):
            os.makedirs(folder, exist_ok=True)
            _prune(folder, prefix)
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, "w") as f:
                f.write(source)
            os.replace(tmp, path)  # (atomic: processes racing write the same text)
        module = sys.modules.get(f"xops_{name}")
        if module is None:
            spec = importlib.util.spec_from_file_location(f"xops_{name}", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            # (importable by name: Numba's cached code looks its module up when loaded)
            sys.modules[f"xops_{name}"] = module
        return module.level
    except OSError:
        namespace = {}
        exec(compile(source, f"<xops body {name}>", "exec"), namespace)
        return namespace["level"]


def level_entry(prog, consts, res, names):
    """(cfunc, carried): the compiled level loop of a program (see
    :func:`level_source`), a ``numba.cfunc`` of ENTRY_SIGNATURE: compiled once per
    program, constants and element type, and cached like the kernels (see
    :func:`_load`)."""
    key = (np.asarray(prog).tobytes(), consts.tobytes(), int(res), consts.dtype.str)
    entry = _ENTRIES.get(key)
    if entry is None:
        src, carried = level_source(prog, res, names, consts.dtype)
        # (config.cfunc compiles in memory where the loop has no file Numba can cache by)
        entry = (config.cfunc(ENTRY_SIGNATURE, _load(_module_source(src, consts))), carried)
        if len(_ENTRIES) >= _ENTRIES_MAX:
            _ENTRIES.clear()
        _ENTRIES[key] = entry
    return entry


_GROUP = 16  # rows each parallel iteration takes


def tree_fold(x, out, init, entry, carried):
    """out[o] = the generic reduce's tree of row o of the 2-D C-contiguous x (at least
    one column) with the body whose level loop is the C entry point at address
    ``entry`` (see the module docstring for the tree), given ``carried`` elements of
    scratch (see :func:`level_source`).

    Output-parallel: iteration g owns out[rows of group g] and its own scratch rows; the
    order of the body's applications depends on the shapes alone."""
    m = x.shape[0]
    r = x.shape[1]
    size = x.itemsize
    group = max(1, min(_GROUP, m // 8))
    for g in prange((m + group - 1) // group):
        half = r // 2 + 1
        scratch = np.empty(2 * half, x.dtype)
        wait = np.empty(64, x.dtype)
        pair = np.empty(2, x.dtype)
        carry = np.empty(max(1, carried), x.dtype)
        ca = carry.ctypes.data
        base = scratch.ctypes.data
        pa = pair.ctypes.data
        for o in range(g * group, min(m, (g + 1) * group)):
            row = x[o]
            src = x.ctypes.data + o * r * size
            n = r
            nw = 0
            flip = 0
            while n > 1:
                h = n // 2
                if n % 2:
                    wait[nw] = scratch[(1 - flip) * half + n - 1] if n < r else row[n - 1]
                    nw += 1
                dst = base + flip * half * size
                call_entry(entry, src, dst, ca, 0, h)
                src = dst
                flip = 1 - flip
                n = h
            top = row[0] if r == 1 else scratch[(1 - flip) * half]
            for k in range(nw - 1, -1, -1):
                pair[0] = top
                pair[1] = wait[k]
                call_entry(entry, pa, pa, ca, 0, 1)
                top = pair[0]
            pair[0] = init
            pair[1] = top
            call_entry(entry, pa, pa, ca, 0, 1)
            out[o] = pair[0]


TREE_FOLD = kernel(tree_fold)


def fold_rows(x, out, init, prog, consts, res, names):
    """:func:`tree_fold` of the 2-D C-contiguous float32/float64 ``x`` into ``out``
    with the program's compiled level loop (the parallel variant for every size: one
    compilation per element type)."""
    entry, carried = level_entry(prog, consts, res, names)
    n = max(x.size, config.PARALLEL_THRESHOLD)
    address = np.int64(entry.address)
    TREE_FOLD(n, x, out, x.dtype.type(init), address, np.int64(carried * _BLOCK))
