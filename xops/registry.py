"""The op registry: one declaration per op, from which every op list is derived.

Each op of xops is declared once, beside its code, by the decorator that makes it an op:
``@primitive("add", quantized="dequantize")`` (ops the tape records, see
:mod:`xops.autodiff.tape`) or ``@declare("while", public="while_")`` (composites that
record through their bodies, or ops that take no tensors). The declaration carries

- ``name``: the op's name in the StableHLO spec or the XLA semantics (``"not"``),
  ``public``: the Python function's name (``"not_"``), ``aliases``: further names of the
  same op (XLA's ``composite_call`` for ``composite``), ``spec``: where the name comes
  from (``"stablehlo"``, ``"xla"``, ``"chlo"`` or ``None`` for helpers such as ``alias``);
- ``family``: the module the op lives in (``"elementwise"``, ``"windows"``, ...);
  ``elementwise``: the spec's elementwise ops (one result element per operand element:
  the StableHLO runner runs them with their operands' positional arguments, batched);
- ``rule``: its gradient rule (``@op.defvjp``), None when it has none;
- ``quantized``: how it treats quantized operands, see :data:`QUANTIZED`;
- ``kernels``: one implementation per device kind (``"cpu"`` today; the CUDA work plugs
  into the same slot); ``creation``: the op takes no tensor operand and makes its result
  on the default device (``iota``; see :func:`kernel`);
- ``handlers``: the StableHLO op names the runner maps onto it (filled by
  :mod:`xops.stablehlo.table` as the handler modules register).

Everything that used to be a hand-kept list is a query over :func:`ops`: which ops take
quantized operands (``xops.ops.quantization``), which StableHLO names run which function
(``xops.stablehlo.handlers``), the public op set (``tests/test_api.py``), the status table
(``docs/status.md``, written by ``python -m xops.registry``).

This module sits below every op module and imports nothing from xops but the errors and
device modules (which import nothing from xops), so any layer may use it; :data:`op`
resolves a function by name at call time, which is how code below the ops (the tape's
accumulation, Tensor methods) reaches them without importing them.

>>> import xops
>>> from xops import registry
>>> registry.get("not").public, registry.get("and_").name
('not_', 'and')
>>> registry.get("exponential").quantized
'dequantize'
"""

import numpy as np

from . import device as _device
from .errors import SpecError

__all__ = [
    "OpDef",
    "QUANTIZED",
    "declare",
    "register",
    "get",
    "ops",
    "op",
    "on_device_use",
    "set_kernel",
    "use_device",
    "kernel",
]

# How an op treats quantized operands (the spec's quantization section):
QUANTIZED = {
    None: "refused: a quantized operand is a SpecError naming the op",
    "dequantize": "dequantize_op_quantize: dequantize the operands, run the op, quantize the "
    "result to the type of the first quantized operand (or of `result_type_from`)",
    "storage": "data movement on the storage integers of the parameters in `quantized_params`",
    "native": "takes quantized operands itself (tuple plumbing, uniform_quantize/dequantize)",
    "bodies": "runs its body on real values: data parameters `quantized_params`, body "
    "parameters `body_params` (declaring `body_params` implies this)",
}


class OpDef:
    """The declaration of one op (see the module docstring)."""

    __slots__ = (
        "name",
        "public",
        "aliases",
        "spec",
        "family",
        "fn",
        "primitive",
        "quantized",
        "quantized_params",
        "body_params",
        "result_type_from",
        "elementwise",
        "calls",
        "handlers",
        "creation",
    )

    def __init__(
        self,
        name,
        fn,
        *,
        public=None,
        aliases=(),
        spec="stablehlo",
        family=None,
        primitive=False,
        quantized=None,
        quantized_params=(),
        body_params=(),
        result_type_from=None,
        elementwise=False,
        calls=None,
        creation=False,
    ):
        if body_params and quantized is None:
            quantized = "bodies"  # (an op with bodies runs them on real values)
        if quantized not in QUANTIZED:
            raise ValueError(
                f"{name}: quantized must be one of {sorted(map(str, QUANTIZED))}, got {quantized!r}"
            )
        if quantized in ("storage", "bodies") and not quantized_params:
            raise ValueError(f"{name}: quantized={quantized!r} needs quantized_params")
        namespace = _namespace_of(fn)
        if namespace and "." not in name:
            # a primitive of a layer above the spec ops (xops.numpy's acos, ...): its own
            # namespace, so its name cannot collide with a spec op's
            name, spec = f"{namespace}.{name}", None
        if name.startswith("chlo."):
            spec = "chlo"
        self.name = name
        self.public = public or (name if "." in name else fn.__name__)
        self.aliases = tuple(aliases)
        self.spec = spec
        self.family = family or _family_of(fn)
        self.fn = fn
        self.primitive = primitive
        self.quantized = quantized
        self.quantized_params = tuple(quantized_params)
        self.body_params = tuple(body_params)
        self.result_type_from = result_type_from
        self.elementwise = elementwise
        self.calls = calls  # another spelling of op `calls` (XLA's conv -> convolution)
        self.handlers = []
        self.creation = creation

    @property
    def core(self):
        """The recorded primitive behind a public wrapper (``convolution`` parses its
        attributes, then calls the primitive that records), else None."""
        return _CORES.get(self.calls or self.name) or (
            _BY_NAME[self.calls].fn if self.calls in _BY_NAME else None
        )

    @property
    def kernels(self):
        """Device kind -> implementation (the op's signature); a primitive's ``"cpu"`` entry
        is the function its decorator wraps."""
        f = self.core or self.fn
        return getattr(f, "kernels", None) or {"cpu": f}

    @property
    def rule(self):
        """The gradient rule, or None (composites differentiate through the ops they
        run)."""
        return getattr(self.core or self.fn, "_vjp", None)

    @property
    def names(self):
        """Every name of the op: spec name, Python name, aliases."""
        return tuple(dict.fromkeys((self.name, self.public) + self.aliases))

    def __repr__(self):
        return f"<op {self.name} ({self.family})>"


def _namespace_of(fn):
    """'' for the op modules (xops.ops.*), else the public module path of ``fn`` below
    xops (``numpy`` for xops.numpy._elementwise, ``numpy.linalg``)."""
    module = getattr(fn, "__module__", None) or "__main__"
    parts = module.split(".")
    if parts[:2] == ["xops", "ops"]:
        return ""
    if parts[0] != "xops":  # a user's own primitive: its module is its namespace
        return module
    return ".".join(p for p in parts[1:] if not p.startswith("_"))


def _family_of(fn):
    module = getattr(fn, "__module__", "") or ""
    return module.rpartition(".")[2].lstrip("_") or "misc"


_DEFS = []  # in declaration order
_BY_NAME = {}  # every name of every op -> OpDef
_CORES = {}  # op name -> the primitive a public wrapper of that name calls


def register(name, fn, core=False, **declaration):
    """Declare op ``name`` implemented by ``fn`` (see :class:`OpDef` for the keywords).
    A name may be declared once; ``core=True`` records ``fn`` as the primitive behind the
    public function declared under the same name."""
    if core:
        _CORES[name] = fn
        return None
    d = OpDef(name, fn, **declaration)
    user = not (getattr(fn, "__module__", None) or "").startswith("xops.")
    for n in d.names:
        # (a user's module may run again — a notebook cell, a reloaded script — and
        # declare its op anew; xops's own ops are declared once)
        if n in _BY_NAME and _BY_NAME[n].fn is not fn and not user:
            raise ValueError(f"op name {n!r} is declared twice ({_BY_NAME[n]!r} and {d!r})")
    for n in d.names:
        _BY_NAME[n] = d
    _DEFS.append(d)
    fn.op_def = d
    return d


def declare(name, **declaration):
    """Decorator: declare a composite or tensor-free op (primitives are declared by
    ``@primitive``)."""

    def decorate(fn):
        register(name, fn, **declaration)
        return fn

    return decorate


def get(name):
    """The OpDef of op ``name`` (spec name, Python name or alias); SpecError if unknown."""
    d = _BY_NAME.get(name)
    if d is None:
        raise SpecError(name, "", f"there is no op named {name!r}")
    return d


def ops(family=None):
    """Every declared op, in declaration order (the op modules declare themselves when
    imported: ``import xops`` first)."""
    return [d for d in _DEFS if family is None or d.family == family]


class _Ops:
    """``op.add(x, y)``: the function of op ``add``, looked up when called. Code below the
    op modules (the tape, the Tensor class) calls ops this way instead of importing them."""

    __slots__ = ()

    def __getattr__(self, name):
        return get(name).fn


op = _Ops()


# ---------------------------------------------------------------------------------------
# The device seam
# ---------------------------------------------------------------------------------------

devices_in_use = False  # True once a tensor lives on a device other than the CPU
_device_hooks = []  # called by use_device: layers that copied a fast path rebuild it


def on_device_use(hook):
    """Call ``hook()`` when the first tensor goes to another device (:func:`use_device`):
    a layer that copied an op's ``_fast`` (the Python operators do) drops its copy."""
    _device_hooks.append(hook)
    return hook


def set_kernel(name, device, impl):
    """Register ``impl`` (same signature as the op) as op ``name``'s kernel on device kind
    ``device`` (``"cuda"``)."""
    f = _CORES.get(name) or get(name).fn
    f.kernels[device] = impl


def use_device(kind):
    """Called when the first tensor is placed on device kind ``kind``: from then on every
    primitive picks its kernel by its operands' device (:func:`kernel`); the CPU-only
    dispatch fast paths (``op._fast``) are switched off, since they read host memory."""
    global devices_in_use
    if kind == "cpu" or devices_in_use:
        return
    devices_in_use = True
    for f in [d.fn for d in _DEFS] + list(_CORES.values()):
        if hasattr(f, "_fast"):
            f._fast = f._fast_grad = None
    for hook in _device_hooks:
        hook()


_device._on_default.append(use_device)  # a default device off the CPU (creation ops)


_ATOMS = frozenset({int, float, bool, str, complex, type(None)})  # (attributes: no device)


def _devices(args, kwargs, found):
    """``found`` filled with str(device) -> device of every tensor in ``args`` and
    ``kwargs`` (at any depth of lists and tuples). One flat scan: every op call on a
    device runs it over all its attributes, so plain values are skipped by type first,
    and a tensor's device is read from its holder (NumPy's arrays: the CPU)."""
    todo = [*args, *kwargs.values()] if kwargs else list(args)
    while todo:
        a = todo.pop()
        t = type(a)
        if t in _ATOMS:
            continue
        if t is list or t is tuple:
            todo.extend(a)
        elif t in _TENSOR_TYPES:
            if type(a._value) is _ndarray:
                found.setdefault("cpu", _device.cpu)
            else:
                dev = a.device
                found.setdefault(str(dev), dev)
        elif isinstance(a, (list, tuple)):
            todo.extend(a)
        elif hasattr(a, "_dtype"):
            dev = getattr(a, "device", None)
            if dev is not None:
                found.setdefault(str(dev), dev)
    return found


_TENSOR_TYPES = set()  # {xops.tensor.Tensor} (added by that module: it imports this one)
_ndarray = np.ndarray


def kernel(op, args, kwargs):
    """Primitive ``op``'s implementation for the device its tensor operands live on (a
    creation op, which has none, runs on the default device); a SpecError for operands
    on two devices or a device the op has no kernel for."""
    name = op.op_name
    found = _devices(args, kwargs, {})
    if len(found) > 1:
        raise SpecError(
            name,
            "device",
            f"operands live on different devices "
            f"({', '.join(sorted(found))}); move them to one "
            f"device first (x.to(device))",
        )
    if found:
        kind = next(iter(found.values())).kind
    elif getattr(getattr(op, "op_def", None), "creation", False):
        kind = _device.get_default_device().kind
    else:
        kind = "cpu"
    impl = op.kernels.get(kind)
    if impl is None:
        if not found:
            raise SpecError(
                name,
                "device",
                f"has no {kind} kernel yet; it makes its result on the default device "
                f"{_device.get_default_device()} (leave the default_device block to run "
                f"it on the CPU)",
            )
        raise SpecError(
            name,
            "device",
            f"has no {kind} kernel yet; its operands live on "
            f"{next(iter(found))} (move them to the CPU with "
            f"x.to('cpu') to run it there)",
        )
    return impl
