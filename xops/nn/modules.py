"""Modules: the ``Module`` base class and the layers built on ``xo.nn.functional``.

**Discovery.** A Module finds its state in its attributes, in the order they were set:

* *parameters*: leaf Tensors that require a gradient (``xo.nn.Parameter(...)``, or any
  ``xo.tensor(..., requires_grad=True)``) set as attributes, or registered explicitly
  with :meth:`Module.register_parameter`. A registered name stays a parameter when the
  tensor is later frozen (``requires_grad_(False)``). Tensors an op produced (they
  carry a tape node, e.g. an activation cached in ``forward``) are never parameters;
* *buffers*: tensors registered with :meth:`Module.register_buffer` (BatchNorm's running
  statistics): in ``state_dict()``, not in ``parameters()``;
* *sub-modules*: Module attributes, and lists / tuples / dicts of Modules (named
  ``layers.0``, ``blocks.key``).

Parameters shared between modules are listed once. Names join with dots, as in
PyTorch, so ``Sequential(Conv2d(...), ...)`` has ``"0.weight"`` and a PyTorch state
dict's keys match an equivalent xops model.

**Updates.** Parameters and buffers are updated in place only through
:func:`xops.nn.assign_` (optimizers, ``load_state_dict``, running statistics), so
the objects ``parameters()`` returns keep their identity across training.
"""

import collections
import math

import numpy as np

from ..dtypes import as_dtype
from ..tensor import Tensor, tensor
from . import functional as F
from . import init
from .parameter import assign_

__all__ = [
    "LayerNorm",
    "GroupNorm",
    "AdaptiveAvgPool2d",
    "LeakyReLU",
    "SiLU",
    "ELU",
    "Softplus",
    "NLLLoss",
    "BCELoss",
    "BCEWithLogitsLoss",
    "L1Loss",
    "SmoothL1Loss",
    "HuberLoss",
    "Module",
    "Sequential",
    "ModuleList",
    "Linear",
    "Conv1d",
    "Conv2d",
    "BatchNorm1d",
    "BatchNorm2d",
    "MaxPool2d",
    "AvgPool2d",
    "ReLU",
    "GELU",
    "Sigmoid",
    "Tanh",
    "Dropout",
    "Flatten",
    "Identity",
    "Embedding",
    "Softmax",
    "LogSoftmax",
    "CrossEntropyLoss",
    "MSELoss",
    "IncompatibleKeys",
]

IncompatibleKeys = collections.namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


def _is_param(value):
    return isinstance(value, Tensor) and value.requires_grad and value._node is None


def _module_items(name, value):
    """(name, module) pairs for an attribute holding a Module or a container of them."""
    if isinstance(value, Module):
        return [(name, value)]
    if isinstance(value, (list, tuple)) and value and all(isinstance(m, Module) for m in value):
        return [(f"{name}.{i}", m) for i, m in enumerate(value)]
    if isinstance(value, dict) and value and all(isinstance(m, Module) for m in value.values()):
        return [(f"{name}.{k}", m) for k, m in value.items()]
    return []


class Module:
    """Base class of every layer and model: subclass it, set parameters and sub-modules
    as attributes in ``__init__``, write ``forward``; call the module to run it.

    >>> class MLP(xo.nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.fc1, self.fc2 = xo.nn.Linear(4, 8), xo.nn.Linear(8, 2)
    ...     def forward(self, x):
    ...         return self.fc2(xo.nn.functional.relu(self.fc1(x)))
    >>> [name for name, _ in MLP().named_parameters()]
    ['fc1.weight', 'fc1.bias', 'fc2.weight', 'fc2.bias']
    """

    training = True  # (class default: a subclass that skips __init__ still works)

    def __init__(self):
        object.__setattr__(self, "_param_names", {})
        object.__setattr__(self, "_buffer_names", {})
        object.__setattr__(self, "training", True)

    # -- attribute bookkeeping -------------------------------------------------------
    def _registry(self, key):
        d = self.__dict__
        if key not in d:
            object.__setattr__(self, key, {})
        return d[key]

    def __setattr__(self, name, value):
        params = self._registry("_param_names")
        buffers = self._registry("_buffer_names")
        if name not in buffers and name not in params and _is_param(value):
            params[name] = None
        elif value is not None and not isinstance(value, Tensor):
            params.pop(name, None)
            buffers.pop(name, None)
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        self._registry("_param_names").pop(name, None)
        self._registry("_buffer_names").pop(name, None)
        object.__delattr__(self, name)

    def register_parameter(self, name, value):
        """Make attribute ``name`` a parameter (even if it does not require a gradient
        now); ``value`` is a leaf Tensor or None."""
        if value is not None and (not isinstance(value, Tensor) or value._node is not None):
            raise TypeError(f"register_parameter: {name!r} must be a leaf Tensor or None")
        self._registry("_buffer_names").pop(name, None)
        self._registry("_param_names")[name] = None
        object.__setattr__(self, name, value)

    def register_buffer(self, name, value):
        """Make attribute ``name`` a buffer: saved in ``state_dict()``, not trained."""
        if value is not None and not isinstance(value, Tensor):
            raise TypeError(f"register_buffer: {name!r} must be a Tensor or None")
        self._registry("_param_names").pop(name, None)
        self._registry("_buffer_names")[name] = None
        object.__setattr__(self, name, value)

    # -- traversal ---------------------------------------------------------------------
    def named_children(self):
        for name, value in list(vars(self).items()):
            yield from _module_items(name, value)

    def children(self):
        return (m for _, m in self.named_children())

    def named_modules(self, prefix=""):
        """This module and every sub-module (each once), depth first."""
        seen = set()
        stack = [(prefix, self)]
        while stack:
            name, m = stack.pop()
            if id(m) in seen:
                continue
            seen.add(id(m))
            yield name, m
            kids = [(f"{name}.{n}" if name else n, c) for n, c in m.named_children()]
            stack.extend(reversed(kids))

    def modules(self):
        return (m for _, m in self.named_modules())

    def _named_tensors(self, registry):
        seen = set()
        for mname, m in self.named_modules():
            for name in m._registry(registry):
                t = m.__dict__.get(name)
                if t is None or id(t) in seen:
                    continue
                seen.add(id(t))
                yield (f"{mname}.{name}" if mname else name), t

    def named_parameters(self):
        """(dotted name, parameter) pairs; a parameter shared by several modules once."""
        return self._named_tensors("_param_names")

    def parameters(self):
        return [p for _, p in self.named_parameters()]

    def named_buffers(self):
        return self._named_tensors("_buffer_names")

    def buffers(self):
        return [b for _, b in self.named_buffers()]

    # -- modes ---------------------------------------------------------------------------
    def train(self, mode=True):
        """Training mode (BatchNorm uses batch statistics, Dropout drops) for this module
        and every sub-module; returns self."""
        for m in self.modules():
            object.__setattr__(m, "training", bool(mode))
        return self

    def eval(self):
        """Evaluation mode: ``train(False)``."""
        return self.train(False)

    def zero_grad(self):
        """Reset every parameter's ``.grad`` to None."""
        for p in self.parameters():
            p.grad = None

    def requires_grad_(self, flag=True):
        for p in self.parameters():
            p.requires_grad_(flag)
        return self

    def apply(self, fn):
        """Call ``fn(module)`` on every sub-module, then on this one (as PyTorch)."""
        for m in list(self.modules())[::-1]:
            fn(m)
        return self

    def to(self, *args, device=None, dtype=None):
        """Move every parameter and buffer to a device and/or convert every floating-point
        one to an element type, in place (identity kept), as PyTorch's ``Module.to``:
        ``m.to("cuda")``, ``m.to(xo.float64)``, ``m.to("cuda", "f64")``,
        ``m.to(device="cpu")``. A conversion resets ``.grad``; a move moves it. Returns
        self."""
        from ..device import as_device, is_device_spec
        from ..ops.conversion import convert

        for a in args:
            is_device = is_device_spec(a)
            if is_device and device is None:
                device = a
            elif not is_device and dtype is None:
                dtype = a
            else:
                raise TypeError(f"Module.to: expected a device and/or a dtype, got {args!r}")
        dt = None if dtype is None else as_dtype(dtype)
        if dt is not None and dt.kind != "float":
            raise ValueError(f"Module.to: dtype must be a floating-point type, got {dt.name}")
        d = None if device is None else as_device(device, "Module.to")
        for _, t in list(self.named_parameters()) + list(self.named_buffers()):
            if d is not None and t.device != d:
                grad = t.grad
                assign_(t, t.detach().to_device(d))
                t.grad = None if grad is None else grad.to_device(d)
            if dt is not None and t.dtype.kind == "float" and t.dtype is not dt:
                assign_(t, convert(t.detach(), dt), allow_type_change=True)
        return self

    def float(self):
        """Every floating-point parameter and buffer as float32 (``to("f32")``)."""
        return self.to(dtype="f32")

    def double(self):
        """Every floating-point parameter and buffer as float64."""
        return self.to(dtype="f64")

    def half(self):
        """Every floating-point parameter and buffer as float16."""
        return self.to(dtype="f16")

    def bfloat16(self):
        """Every floating-point parameter and buffer as bfloat16."""
        return self.to(dtype="bf16")

    def cpu(self):
        """Every parameter and buffer on the CPU."""
        return self.to(device="cpu")

    def cuda(self, device=None):
        """Every parameter and buffer on the GPU (``"cuda"`` or ``"cuda:<device>"``)."""
        return self.to(device="cuda" if device is None else f"cuda:{device}")

    def add_module(self, name, module):
        """Attach ``module`` as the child ``name`` (``self.name = module``)."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"add_module: {name!r} must be a Module or None")
        setattr(self, name, module)

    def get_submodule(self, target):
        """The submodule at dotted path ``target`` ("" is this module)."""
        m = self
        for part in target.split(".") if target else []:
            children = dict(m.named_children())
            if part not in children:
                raise AttributeError(
                    f"{type(m).__name__} has no submodule {part!r} (in {target!r})"
                )
            m = children[part]
        return m

    def num_parameters(self):
        return int(sum(p.size for p in self.parameters()))

    # -- state -----------------------------------------------------------------------------
    def _state_items(self):
        return list(self.named_parameters()) + list(self.named_buffers())

    def state_dict(self):
        """An ordered dict name -> Tensor of every parameter and buffer. The tensors are
        detached snapshots: later training rebinds the parameters, never these values."""
        return collections.OrderedDict((k, t.detach()) for k, t in self._state_items())

    def load_state_dict(self, state_dict, strict=True):
        """Copy values from ``state_dict`` (name -> Tensor or NumPy array) into the
        parameters and buffers, in place (their identity, requires_grad and the
        optimizer's references are kept).

        Every given key that matches must agree in shape and element type (a
        ValueError names each mismatch). With ``strict`` (default), missing and
        unexpected keys are a KeyError listing them all; nothing is loaded unless
        everything fits. Returns ``IncompatibleKeys(missing_keys, unexpected_keys)``.
        """
        own = collections.OrderedDict(self._state_items())
        given = dict(state_dict)
        missing = [k for k in own if k not in given]
        unexpected = [k for k in given if k not in own]
        problems = []
        values = {}
        for k, t in own.items():
            if k not in given:
                continue
            v = given[k]
            if not isinstance(v, Tensor):
                arr = np.asarray(v)
                try:
                    v = tensor(arr, as_dtype(arr.dtype))
                except TypeError:
                    problems.append(
                        f"{k!r}: a value of NumPy dtype {arr.dtype} is not a tensor element type"
                    )
                    continue
            if v.shape != t.shape:
                problems.append(
                    f"{k!r}: shape {tuple(v.shape)} in the state dict, "
                    f"{tuple(t.shape)} in the module"
                )
            elif v.dtype is not t.dtype:
                problems.append(
                    f"{k!r}: element type {v.dtype.name} in the state dict, "
                    f"{t.dtype.name} in the module (convert it, or call "
                    f"module.to({v.dtype.name!r}) first)"
                )
            else:
                values[k] = v
        if problems:
            raise ValueError("load_state_dict: " + "; ".join(problems))
        if strict and (missing or unexpected):
            parts = []
            if missing:
                parts.append(f"missing keys {missing}")
            if unexpected:
                parts.append(f"unexpected keys {unexpected}")
            raise KeyError("load_state_dict (strict): " + " and ".join(parts))
        for k, v in values.items():
            assign_(own[k], v.detach())
        return IncompatibleKeys(missing, unexpected)

    # -- calling and printing ----------------------------------------------------------
    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define forward()")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def extra_repr(self):
        return ""

    def __repr__(self):
        kids = list(self.named_children())
        head = f"{type(self).__name__}({self.extra_repr()}"
        if not kids:
            return head + ")"
        lines = [head]
        for name, m in kids:
            body = repr(m).replace("\n", "\n  ")
            lines.append(f"  ({name}): {body}")
        return "\n".join(lines) + "\n)"


# ---------------------------------------------------------------------------------------
# Containers
# ---------------------------------------------------------------------------------------


class Sequential(Module):
    """Modules applied in order; named "0", "1", ... (PyTorch's state-dict keys)."""

    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], (list, tuple)):
            modules = tuple(modules[0])
        for i, m in enumerate(modules):
            if not isinstance(m, Module):
                raise TypeError(f"Sequential: item {i} is a {type(m).__name__}, not a Module")
            setattr(self, str(i), m)

    def _items(self):
        return [m for _, m in self.named_children()]

    def __len__(self):
        return len(self._items())

    def __getitem__(self, i):
        items = self._items()
        if isinstance(i, slice):
            return Sequential(*items[i])
        return items[i]

    def __iter__(self):
        return iter(self._items())

    def forward(self, x):
        for m in self._items():
            x = m(x)
        return x


class ModuleList(Module):
    """A list of modules, named "0", "1", ... (no forward of its own)."""

    def __init__(self, modules=()):
        super().__init__()
        for m in modules:
            self.append(m)

    def append(self, m):
        if not isinstance(m, Module):
            raise TypeError(f"ModuleList: expected a Module, got {type(m).__name__}")
        setattr(self, str(len(self)), m)
        return self

    def __len__(self):
        return sum(1 for _ in self.named_children())

    def __getitem__(self, i):
        return [m for _, m in self.named_children()][i]

    def __iter__(self):
        return iter([m for _, m in self.named_children()])


# ---------------------------------------------------------------------------------------
# Layers with parameters
# ---------------------------------------------------------------------------------------


def _default_init(module, weight_shape, fan_in, dtype, generator, bias):
    """PyTorch's default for Linear and Conv: weight kaiming_uniform(a=sqrt(5)), i.e.
    U(-1/sqrt(fan_in), 1/sqrt(fan_in)), bias U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
    w = init.kaiming_uniform(weight_shape, a=math.sqrt(5), dtype=dtype, generator=generator)
    module.register_parameter("weight", w.requires_grad_())
    if bias:
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0.0
        b = (
            init.uniform([weight_shape[0]], -bound, bound, dtype, generator)
            if bound > 0
            else init.zeros([weight_shape[0]], dtype)
        )
        module.register_parameter("bias", b.requires_grad_())
    else:
        module.register_parameter("bias", None)


class Linear(Module):
    """y = x W^T + b, W of shape (out_features, in_features), on ``xo.dot_general``."""

    def __init__(self, in_features, out_features, bias=True, dtype="f32", generator=None):
        super().__init__()
        self.in_features, self.out_features = int(in_features), int(out_features)
        _default_init(
            self, [self.out_features, self.in_features], self.in_features, dtype, generator, bias
        )

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )


class _ConvNd(Module):
    _n = 2

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups=1,
        bias=True,
        dtype="f32",
        generator=None,
    ):
        super().__init__()
        n = self._n
        if in_channels % groups or out_channels % groups:
            raise ValueError(
                f"{type(self).__name__}: in_channels ({in_channels}) and "
                f"out_channels ({out_channels}) must be divisible by groups "
                f"({groups})"
            )
        self.in_channels, self.out_channels = int(in_channels), int(out_channels)
        self.kernel_size = F._tuple(kernel_size, n, "kernel_size")
        self.stride = F._tuple(stride, n, "stride")
        self.dilation = F._tuple(dilation, n, "dilation")
        self.padding = (
            padding
            if isinstance(padding, (str, int, np.integer))
            else tuple(tuple(p) if isinstance(p, (list, tuple)) else p for p in padding)
        )
        F._conv_padding(self.padding, self.kernel_size, self.dilation, n)  # checks it early
        self.groups = int(groups)
        shape = [self.out_channels, self.in_channels // self.groups, *self.kernel_size]
        fan_in = shape[1] * math.prod(self.kernel_size)
        _default_init(self, shape, fan_in, dtype, generator, bias)

    def forward(self, x):
        return F._conv(
            x,
            self.weight,
            self.bias,
            self.stride,
            self.padding,
            self.dilation,
            self.groups,
            self._n,
        )

    def extra_repr(self):
        s = (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}, padding={self.padding}"
        )
        if any(d != 1 for d in self.dilation):
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        return s + ("" if self.bias is not None else ", bias=False")


class Conv1d(_ConvNd):
    """1-D convolution: (N, C_in, L) -> (N, C_out, L'), weight (C_out, C_in/groups, K)."""

    _n = 1


class Conv2d(_ConvNd):
    """2-D convolution: (N, C_in, H, W) -> (N, C_out, H', W'), weight OIHW; stride,
    padding (int, pair, pairs of (low, high), "valid", "same"), dilation and groups."""

    _n = 2


class _BatchNorm(Module):
    _ranks = (4,)

    def __init__(
        self,
        num_features,
        eps=1e-5,
        momentum=0.1,
        affine=True,
        track_running_stats=True,
        dtype="f32",
    ):
        super().__init__()
        self.num_features, self.eps = int(num_features), float(eps)
        self.momentum = None if momentum is None else float(momentum)
        self.affine, self.track_running_stats = bool(affine), bool(track_running_stats)
        c = [self.num_features]
        if self.affine:
            self.register_parameter("weight", init.ones(c, dtype).requires_grad_())
            self.register_parameter("bias", init.zeros(c, dtype).requires_grad_())
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if self.track_running_stats:
            self.register_buffer("running_mean", init.zeros(c, dtype))
            self.register_buffer("running_var", init.ones(c, dtype))
            self.register_buffer("num_batches_tracked", tensor(0, "i64"))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)

    def forward(self, x):
        if x.ndim not in self._ranks:
            raise ValueError(
                f"{type(self).__name__}: expected input of rank "
                f"{' or '.join(map(str, self._ranks))}, got {x.type}"
            )
        if x.shape[1] != self.num_features:
            raise ValueError(
                f"{type(self).__name__}({self.num_features}): input has "
                f"{x.shape[1]} channels ({x.type})"
            )
        count = None
        if self.training and self.track_running_stats:
            count = self.num_batches_tracked  # counted where it lives (no device sync)
            if self.momentum is None:  # (read below: counted first)
                assign_(count, count + 1)
                count = None
        # batch statistics in training mode, and in eval mode without running statistics
        # (as PyTorch); running_mean/var are None when they are not tracked
        use_batch = self.training or not self.track_running_stats
        momentum = self.momentum
        if momentum is None:  # cumulative moving average over the batches seen (PyTorch)
            momentum = 1.0 / max(int(self.num_batches_tracked), 1)
        # (the counter goes up with the running statistics: on a device, in their launch)
        return F._batch_norm(
            x,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            use_batch,
            momentum,
            self.eps,
            count,
        )

    def extra_repr(self):
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}"
        )


class BatchNorm1d(_BatchNorm):
    """Batch norm over (N, C) or (N, C, L) inputs, per channel C. Training mode:
    ``xo.batch_norm_training`` (batch statistics) and running statistics updated with
    ``momentum`` (running_var unbiased, PyTorch's convention: see
    ``xo.nn.functional.batch_norm``; ``momentum=None``: their cumulative average);
    eval mode: ``xo.batch_norm_inference`` with them."""

    _ranks = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch norm over (N, C, H, W) inputs, per channel (see BatchNorm1d)."""

    _ranks = (4,)


class Embedding(Module):
    """A lookup table (num_embeddings, embedding_dim), initialised N(0, 1); forward takes
    integer indices of any shape (``xo.gather``)."""

    def __init__(self, num_embeddings, embedding_dim, dtype="f32", generator=None):
        super().__init__()
        self.num_embeddings, self.embedding_dim = int(num_embeddings), int(embedding_dim)
        w = init.normal([self.num_embeddings, self.embedding_dim], 0.0, 1.0, dtype, generator)
        self.register_parameter("weight", w.requires_grad_())

    def forward(self, indices):
        return F.embedding(indices, self.weight)

    def extra_repr(self):
        return f"{self.num_embeddings}, {self.embedding_dim}"


# ---------------------------------------------------------------------------------------
# Layers without parameters
# ---------------------------------------------------------------------------------------


class _Pool2d(Module):
    """What the pooling layers share: the window (``stride`` defaults to
    ``kernel_size``) and its repr."""

    def __init__(self, kernel_size, stride, padding):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding

    def extra_repr(self):
        return (
            f"kernel_size={self.kernel_size}, stride={self.stride or self.kernel_size}, "
            f"padding={self.padding}"
        )


class MaxPool2d(_Pool2d):
    """Max pooling (``xo.reduce_window`` with ``xo.maximum``; gradient by
    ``select_and_scatter``). ``stride`` defaults to ``kernel_size``."""

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1):
        super().__init__(kernel_size, stride, padding)
        self.dilation = dilation

    def forward(self, x):
        return F.max_pool2d(x, self.kernel_size, self.stride, self.padding, self.dilation)


class AvgPool2d(_Pool2d):
    """Average pooling: ``xo.reduce_window`` with ``xo.add`` over the window size."""

    def __init__(self, kernel_size, stride=None, padding=0, count_include_pad=True):
        super().__init__(kernel_size, stride, padding)
        self.count_include_pad = count_include_pad

    def forward(self, x):
        return F.avg_pool2d(x, self.kernel_size, self.stride, self.padding, self.count_include_pad)


class ReLU(Module):
    """``F.relu`` as a module: max(x, 0) element-wise."""

    def forward(self, x):
        return F.relu(x)


class GELU(Module):
    """GELU, exact (erf) by default, or ``approximate="tanh"``."""

    def __init__(self, approximate="none"):
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, x):
        return F.gelu(x, self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class Sigmoid(Module):
    """``F.sigmoid`` as a module: 1 / (1 + exp(-x)) (``xo.logistic``)."""

    def forward(self, x):
        return F.sigmoid(x)


class Tanh(Module):
    """``xo.tanh`` as a module."""

    def forward(self, x):
        from ..ops.elementwise import tanh

        return tanh(x)


class Softmax(Module):
    """``F.softmax`` over dimension ``dim`` (default: the last) as a module."""

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return F.softmax(x, self.dim)


class LogSoftmax(Softmax):
    """``F.log_softmax`` over dimension ``dim`` (default: the last) as a module."""

    def forward(self, x):
        return F.log_softmax(x, self.dim)


class Dropout(Module):
    """Inverted dropout with probability ``p`` in training mode, the identity in eval
    mode. Masks come from xops' stream (seed with ``xo.random_seed``) or ``generator``."""

    def __init__(self, p=0.5, generator=None):
        super().__init__()
        if not 0 <= p <= 1:
            raise ValueError(f"Dropout: p must be in [0, 1], got {p}")
        self.p, self.generator = float(p), generator

    def forward(self, x):
        return F.dropout(x, self.p, self.training, self.generator)

    def extra_repr(self):
        return f"p={self.p}"


class Flatten(Module):
    """``F.flatten`` as a module: dimensions ``start_dim`` .. ``end_dim`` (default: all but
    the batch dimension) become one."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
        return F.flatten(x, self.start_dim, self.end_dim)


class Identity(Module):
    """Returns its input unchanged (a placeholder layer)."""

    def forward(self, x):
        return x


class CrossEntropyLoss(Module):
    """``F.cross_entropy`` as a module: logits (N, C, ...), integer labels (N, ...);
    ``weight`` (C,) and ``ignore_index`` as PyTorch's (keywords here)."""

    def __init__(self, reduction="mean", label_smoothing=0.0, *, weight=None, ignore_index=-100):
        super().__init__()
        self.reduction, self.label_smoothing = reduction, label_smoothing
        self.weight, self.ignore_index = weight, ignore_index

    def forward(self, logits, labels):
        return F.cross_entropy(
            logits,
            labels,
            self.reduction,
            self.label_smoothing,
            weight=self.weight,
            ignore_index=self.ignore_index,
        )


class MSELoss(Module):
    """``F.mse_loss`` as a module: the squared error of ``input`` against ``target``,
    reduced by ``reduction`` ("mean", "sum" or "none")."""

    def __init__(self, reduction="mean"):
        super().__init__()
        self.reduction = reduction

    def forward(self, input, target):
        return F.mse_loss(input, target, self.reduction)


class LayerNorm(Module):
    """``F.layer_norm`` over the trailing ``normalized_shape`` dims, with a learnable
    ``weight`` (ones) and ``bias`` (zeros) of that shape when ``elementwise_affine``."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True,
                 dtype="f32"):  # fmt: skip
        super().__init__()
        shape = [normalized_shape] if isinstance(normalized_shape, int) else normalized_shape
        self.normalized_shape, self.eps = tuple(int(d) for d in shape), float(eps)
        affine = bool(elementwise_affine)
        w = init.ones(list(self.normalized_shape), dtype).requires_grad_() if affine else None
        b = (
            init.zeros(list(self.normalized_shape), dtype).requires_grad_()
            if affine and bias
            else None
        )
        self.register_parameter("weight", w)
        self.register_parameter("bias", b)

    def forward(self, x):
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.weight is not None}"
        )


class GroupNorm(Module):
    """``F.group_norm``: ``num_groups`` groups of ``num_channels`` channels, a learnable
    per-channel ``weight`` (ones) and ``bias`` (zeros) when ``affine``."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, dtype="f32"):
        super().__init__()
        if num_channels % num_groups:
            raise ValueError(f"GroupNorm: {num_groups} groups must divide {num_channels} channels")
        self.num_groups, self.num_channels, self.eps = (
            int(num_groups),
            int(num_channels),
            float(eps),
        )
        c = [self.num_channels]
        self.register_parameter("weight", init.ones(c, dtype).requires_grad_() if affine else None)
        self.register_parameter("bias", init.zeros(c, dtype).requires_grad_() if affine else None)

    def forward(self, x):
        return F.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}"


class AdaptiveAvgPool2d(Module):
    """``F.adaptive_avg_pool2d`` to ``output_size`` (an int or (h, w))."""

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, x):
        return F.adaptive_avg_pool2d(x, self.output_size)


class LeakyReLU(Module):
    """``F.leaky_relu`` with ``negative_slope``."""

    def __init__(self, negative_slope=0.01):
        super().__init__()
        self.negative_slope = float(negative_slope)

    def forward(self, x):
        return F.leaky_relu(x, self.negative_slope)


class SiLU(Module):
    """``F.silu``: x sigmoid(x)."""

    def forward(self, x):
        return F.silu(x)


class ELU(Module):
    """``F.elu`` with ``alpha``."""

    def __init__(self, alpha=1.0):
        super().__init__()
        self.alpha = float(alpha)

    def forward(self, x):
        return F.elu(x, self.alpha)


class Softplus(Module):
    """``F.softplus`` with ``beta`` and ``threshold``."""

    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta, self.threshold = float(beta), float(threshold)

    def forward(self, x):
        return F.softplus(x, self.beta, self.threshold)


class NLLLoss(Module):
    """``F.nll_loss`` as a module (log-probabilities (N, C, ...), integer labels)."""

    def __init__(self, reduction="mean", *, weight=None, ignore_index=-100):
        super().__init__()
        self.reduction, self.weight, self.ignore_index = reduction, weight, ignore_index

    def forward(self, log_probs, labels):
        return F.nll_loss(
            log_probs, labels, self.reduction, weight=self.weight, ignore_index=self.ignore_index
        )


class BCELoss(Module):
    """``F.binary_cross_entropy`` of probabilities against targets."""

    def __init__(self, weight=None, reduction="mean"):
        super().__init__()
        self.weight, self.reduction = weight, reduction

    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, self.weight, self.reduction)


class BCEWithLogitsLoss(Module):
    """``F.binary_cross_entropy_with_logits`` (``weight``, ``pos_weight`` as PyTorch's)."""

    def __init__(self, weight=None, reduction="mean", pos_weight=None):
        super().__init__()
        self.weight, self.reduction, self.pos_weight = weight, reduction, pos_weight

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(
            input, target, self.weight, self.reduction, self.pos_weight
        )


class L1Loss(Module):
    """``F.l1_loss``: |input - target|, reduced."""

    def __init__(self, reduction="mean"):
        super().__init__()
        self.reduction = reduction

    def forward(self, input, target):
        return F.l1_loss(input, target, self.reduction)


class SmoothL1Loss(Module):
    """``F.smooth_l1_loss`` with ``beta``."""

    def __init__(self, reduction="mean", beta=1.0):
        super().__init__()
        self.reduction, self.beta = reduction, float(beta)

    def forward(self, input, target):
        return F.smooth_l1_loss(input, target, self.reduction, self.beta)


class HuberLoss(Module):
    """``F.huber_loss`` with ``delta``."""

    def __init__(self, reduction="mean", delta=1.0):
        super().__init__()
        self.reduction, self.delta = reduction, float(delta)

    def forward(self, input, target):
        return F.huber_loss(input, target, self.reduction, self.delta)
