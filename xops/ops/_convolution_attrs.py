"""Attributes of stablehlo.convolution (see :mod:`xops.ops.convolution`): the dimension
numbers in every accepted form, and every constraint of the spec (C1-C28), as pure
functions of shapes, element types and attributes. ``_attributes`` returns the validated,
normalised attributes with the derived sizes the kernels and the reference use; at the
end, the operand and result value conversions the fast path and the reference share.
"""

import collections
import functools
import inspect
import re

import numpy as np

from .. import registry
from ..dtypes import DType, as_dtype, from_compute, to_compute
from ..tensor import Tensor, typestr
from ._core import (
    SpecError,
    attr_int,
    attr_ints,
    attr_pairs,
    attr_sized_ints,
    bound_arguments,
    check,
    compute,
)

_PRECISIONS = ("DEFAULT", "HIGH", "HIGHEST")
_DN_LABEL = "I8-I16"  # the spec's inputs that make up dimension_numbers


# ---------------------------------------------------------------------------------------
# Dimension numbers: None, "NCHW,OIHW,NCHW", "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]",
# a dict / namedtuple with the spec's nine fields, or jax's ConvDimensionNumbers
# ---------------------------------------------------------------------------------------


class ConvDimensionNumbers(
    collections.namedtuple(
        "ConvDimensionNumbers",
        [
            "input_batch_dimension",
            "input_feature_dimension",
            "input_spatial_dimensions",
            "kernel_input_feature_dimension",
            "kernel_output_feature_dimension",
            "kernel_spatial_dimensions",
            "output_batch_dimension",
            "output_feature_dimension",
            "output_spatial_dimensions",
        ],
    )
):
    """The spec's dimension numbers of a convolution (inputs I8-I16), spatial dims as
    tuples. ``str()`` gives the MLIR form ``[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]``.

    >>> xo.ConvDimensionNumbers(0, 3, (1, 2), 2, 3, (0, 1), 0, 3, (1, 2))
    ConvDimensionNumbers(input_batch_dimension=0, input_feature_dimension=3,
      input_spatial_dimensions=(1, 2), kernel_input_feature_dimension=2,
      kernel_output_feature_dimension=3, kernel_spatial_dimensions=(0, 1),
      output_batch_dimension=0, output_feature_dimension=3, output_spatial_dimensions=(1, 2))
    """

    __slots__ = ()

    def __str__(self):
        def part(rank, a, b, spatial, ca, cb):
            names = ["?"] * rank
            for name, d in [(ca, a), (cb, b)] + [(str(i), s) for i, s in enumerate(spatial)]:
                if 0 <= d < rank:
                    names[d] = name
            return "[" + ", ".join(names) + "]"

        rank = len(self.input_spatial_dimensions) + 2
        return (
            part(
                rank,
                self.input_batch_dimension,
                self.input_feature_dimension,
                self.input_spatial_dimensions,
                "b",
                "f",
            )
            + "x"
            + part(
                rank,
                self.kernel_input_feature_dimension,
                self.kernel_output_feature_dimension,
                self.kernel_spatial_dimensions,
                "i",
                "o",
            )
            + "->"
            + part(
                rank,
                self.output_batch_dimension,
                self.output_feature_dimension,
                self.output_spatial_dimensions,
                "b",
                "f",
            )
        )


_SCALAR_FIELDS = (
    "input_batch_dimension",
    "input_feature_dimension",
    "kernel_input_feature_dimension",
    "kernel_output_feature_dimension",
    "output_batch_dimension",
    "output_feature_dimension",
)
_FIELD_LABEL = dict(
    zip(ConvDimensionNumbers._fields, ["I8", "I9", "I10", "I11", "I12", "I13", "I14", "I15", "I16"])
)


def _default_dimension_numbers(rank):
    """[b, f, 0, 1, ...]x[o, i, 0, 1, ...]->[b, f, 0, 1, ...] (NCHW / OIHW / NCHW)."""
    sp = tuple(range(2, rank))
    return ConvDimensionNumbers(0, 1, sp, 1, 0, sp, 0, 1, sp)


def _dimension_numbers(op, dn, rank):
    """Any accepted form of dimension_numbers as a ConvDimensionNumbers (not yet
    validated against the operands: that is C12-C20's job)."""
    if dn is None:
        return _default_dimension_numbers(rank)
    if isinstance(dn, str):
        return _parse_mlir(op, dn) if "[" in dn else _parse_letters(op, dn, _split_letters(dn))
    if isinstance(dn, dict):
        return _from_fields(op, dn)
    if all(hasattr(dn, f) for f in ConvDimensionNumbers._fields):
        return _from_fields(op, {f: getattr(dn, f) for f in ConvDimensionNumbers._fields})
    if all(hasattr(dn, f) for f in ("lhs_spec", "rhs_spec", "out_spec")):  # jax's form
        return _from_jax_specs(op, dn.lhs_spec, dn.rhs_spec, dn.out_spec)
    if isinstance(dn, (tuple, list)) and len(dn) == 3 and all(isinstance(s, str) for s in dn):
        return _parse_letters(op, ",".join(dn), list(dn))
    raise SpecError(
        op,
        _DN_LABEL,
        f"dimension_numbers must be None, a string like "
        f"'NCHW,OIHW,NCHW' or '[b, 0, 1, f]x[0, 1, i, o]->"
        f"[b, 0, 1, f]', or a dict with the spec's fields; got "
        f"{dn!r}",
    )


def _from_fields(op, fields):
    missing = [f for f in ConvDimensionNumbers._fields if f not in fields]
    extra = [f for f in fields if f not in ConvDimensionNumbers._fields]
    if missing or extra:
        raise SpecError(
            op,
            _DN_LABEL,
            f"dimension_numbers needs exactly the fields "
            f"{list(ConvDimensionNumbers._fields)}; missing "
            f"{missing}, unknown {extra}",
        )
    vals = {}
    for f in ConvDimensionNumbers._fields:
        if f in _SCALAR_FIELDS:
            vals[f] = attr_int(op, _FIELD_LABEL[f], f, fields[f])
        else:
            vals[f] = tuple(attr_ints(op, _FIELD_LABEL[f], f, fields[f]))
    return ConvDimensionNumbers(**vals)


def _from_jax_specs(op, lhs_spec, rhs_spec, out_spec):
    """jax.lax.ConvDimensionNumbers: lhs_spec = (batch, feature, *spatial), rhs_spec =
    (out feature, in feature, *spatial), out_spec = (batch, feature, *spatial)."""
    try:
        ls, rs, os_ = (tuple(int(d) for d in s) for s in (lhs_spec, rhs_spec, out_spec))
    except (TypeError, ValueError):
        raise SpecError(
            op,
            _DN_LABEL,
            f"jax-style dimension_numbers must hold integer "
            f"specs, got {(lhs_spec, rhs_spec, out_spec)!r}",
        ) from None
    if min(len(ls), len(rs), len(os_)) < 2:
        raise SpecError(
            op, _DN_LABEL, f"jax-style specs need a batch/feature pair first, got {(ls, rs, os_)}"
        )
    return ConvDimensionNumbers(ls[0], ls[1], ls[2:], rs[1], rs[0], rs[2:], os_[0], os_[1], os_[2:])


def _split_letters(text):
    return [p for p in re.split(r"\s*(?:,|->)\s*", text.strip())]


def _parse_letters(op, text, parts):
    """'NCHW,OIHW,NCHW': N batch, C feature (input, output); O/I kernel output/input
    feature; any other letter a spatial dim, matched by letter across the three specs.
    Spatial dims are numbered in the kernel spec's order (as jax.lax does)."""

    def bad(why):
        return SpecError(
            op,
            _DN_LABEL,
            f"cannot read dimension_numbers {text!r}: {why} "
            f"(expected e.g. 'NCHW,OIHW,NCHW' or 'NHWC,HWIO,NHWC')",
        )

    if len(parts) != 3:
        raise bad(f"need 3 comma-separated specs (input, kernel, output), got {len(parts)}")
    lhs, rhs, out = (p.upper() for p in parts)
    for spec, pair, what in ((lhs, "NC", "input"), (rhs, "OI", "kernel"), (out, "NC", "output")):
        if not spec.isalpha():
            raise bad(f"the {what} spec {spec!r} must be letters only")
        if len(set(spec)) != len(spec):
            raise bad(f"the {what} spec {spec!r} repeats a letter")
        for ch in pair:
            if ch not in spec:
                raise bad(f"the {what} spec {spec!r} has no {ch!r}")
    sl, sr, so = (set(lhs) - set("NC"), set(rhs) - set("OI"), set(out) - set("NC"))
    if not sl == sr == so:
        raise bad(
            f"the spatial letters differ: input {sorted(sl)}, kernel {sorted(sr)}, "
            f"output {sorted(so)}"
        )
    order = [ch for ch in rhs if ch not in "OI"]
    return ConvDimensionNumbers(
        lhs.index("N"),
        lhs.index("C"),
        tuple(lhs.index(ch) for ch in order),
        rhs.index("I"),
        rhs.index("O"),
        tuple(rhs.index(ch) for ch in order),
        out.index("N"),
        out.index("C"),
        tuple(out.index(ch) for ch in order),
    )


_MLIR = re.compile(r"^\[([^\[\]]*)\]x\[([^\[\]]*)\]->\[([^\[\]]*)\]$")


def _parse_mlir(op, text):
    """'[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]' (optionally inside #stablehlo.conv<...>):
    b/f batch/feature, i/o kernel input/output feature, digits the spatial dims."""

    def bad(why):
        return SpecError(
            op,
            _DN_LABEL,
            f"cannot read dimension_numbers {text!r}: {why} (expected "
            f"e.g. '[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]')",
        )

    body = re.sub(r"\s+", "", text)
    if body.startswith("#stablehlo.conv<") and body.endswith(">"):
        body = body[len("#stablehlo.conv<") : -1]
    m = _MLIR.match(body)
    if not m:
        raise bad("not of the form [...]x[...]->[...]")
    specs = []
    for group, (ca, cb), what in zip(m.groups(), ("bf", "io", "bf"), ("input", "kernel", "output")):
        tokens = group.split(",") if group else []
        for t in tokens:
            if t not in (ca, cb) and not t.isdigit():
                raise bad(
                    f"unknown entry {t!r} in the {what} part (allowed: {ca}, {cb}, 0, 1, ...)"
                )
        for ch in (ca, cb):
            if tokens.count(ch) != 1:
                raise bad(f"the {what} part must name {ch!r} exactly once")
        digits = sorted(int(t) for t in tokens if t.isdigit())
        if digits != list(range(len(digits))):
            raise bad(
                f"the {what} part's spatial dims must be 0..{len(digits) - 1} once each, "
                f"got {digits}"
            )
        spatial = tuple(tokens.index(str(i)) for i in range(len(digits)))
        specs.append((tokens.index(ca), tokens.index(cb), spatial))
    if not len(specs[0][2]) == len(specs[1][2]) == len(specs[2][2]):
        raise bad("the three parts have different numbers of spatial dims")
    (ib, if_, isp), (ki, ko, ksp), (ob, of, osp) = specs
    return ConvDimensionNumbers(ib, if_, isp, ki, ko, ksp, ob, of, osp)


# ---------------------------------------------------------------------------------------
# Constraint checks: pure functions of shapes, element types and attributes
# ---------------------------------------------------------------------------------------


class _Attrs:
    """A validated convolution: normalised attributes and derived sizes."""

    __slots__ = (
        "strides",
        "padding",
        "lhs_dilation",
        "rhs_dilation",
        "reversal",
        "dn",
        "fgc",
        "bgc",
        "out_dt",
        "in_spatial",
        "k_spatial",
        "out_spatial",
        "result_shape",
        "lhs_shape",
        "rhs_shape",
        "precision_config",
        "derived",  # what the gradient rules derive from these attributes (see
        # convolution._grad_conv): computed once per validated convolution
    )


def _as_array(value):
    """An attribute value as an ndarray, or None where NumPy cannot make one."""
    try:
        return np.asarray(value)
    except (TypeError, ValueError):
        return None


def _padding(op, padding, n):
    if isinstance(padding, str):
        raise SpecError(
            op,
            "I4",
            f"padding must be (low, high) pairs, got {padding!r} "
            f"(xo.conv accepts 'SAME' and 'VALID')",
        )
    return attr_pairs(op, "I4", "C4", "padding", padding, n, "N-2")


def _spatial_ints(op, label_i, label_size, label_pos, name, value, n):
    return attr_sized_ints(op, (label_i, label_size, label_pos), name, value, n, "N-2")


def _reversal(op, value, n):
    if value is None:
        return [False] * n
    if isinstance(value, Tensor):
        value = value._value
    arr = _as_array(value)
    ok = (
        arr is not None
        and arr.ndim == 1
        and (
            arr.size == 0
            or arr.dtype.kind == "b"
            or (arr.dtype.kind in "iu" and np.isin(arr, (0, 1)).all())
        )
    )
    if not ok:
        raise SpecError(
            op, "I7", f"window_reversal must be a 1-D sequence of booleans, got {value!r}"
        )
    flags = [bool(v) for v in arr]
    check(
        len(flags) == n,
        op,
        "C9",
        lambda: f"size(window_reversal) must be N-2 = {n}, got {len(flags)}: {flags}",
    )
    return flags


def _dims_ok(dims, rank):
    return len(set(dims)) == len(dims) and all(0 <= d < rank for d in dims)


def _check_dims(op, n, rank, labels, which, spatial, order, dims, where, dn=None):
    """One operand's dimension numbers ((C12, C13) input, (C17, C18) kernel, (C19, C20)
    output): N-2 spatial dims, and all its dims unique and in [0, rank). ``where`` names
    the operand in the messages; ``dn``, where given, is shown with the size check."""
    size_label, unique_label = labels
    check(
        len(spatial) == n,
        op,
        size_label,
        lambda: (
            f"size({which}_spatial_dimensions) must be N-2 = {n}{where}, got "
            f"{list(spatial)}" + ("" if dn is None else f" (dimension_numbers {dn})")
        ),
    )
    check(
        _dims_ok(dims, rank),
        op,
        unique_label,
        lambda: f"{which} dims [{order}] = {dims} must be unique and in [0, {rank}){where}",
    )


def _result_dtype(op, dt, preferred):
    """(C27) lhs and rhs share one element type; the result's may be a wider type of the
    same family (preferred_element_type), as the current spec and interpreter allow
    (i8 x i8 -> i32, bf16 -> f32)."""
    if preferred is None:
        return dt
    try:
        out = as_dtype(preferred)
    except (TypeError, ValueError) as e:
        raise SpecError(
            op, "C27", f"preferred_element_type {preferred!r} is not an element type: {e}"
        ) from None
    check(
        not out.quantized,
        op,
        "C28",
        lambda: (
            f"a quantized result needs quantized lhs and rhs, got {dt.name} operands "
            f"and preferred_element_type {out.name}"
        ),
    )
    fam = {"bool": "bool", "si": "int", "ui": "int", "float": "float", "complex": "complex"}
    check(
        fam[out.kind] == fam[dt.kind],
        op,
        "C27",
        lambda: (
            f"preferred_element_type {out.name} cannot hold a convolution of "
            f"{dt.name} operands (same family needed: bool, integer, float or complex)"
        ),
    )
    return out


def _num_windows(size, k, stride, lo, hi, ld, rd):
    """(C25) The number of window positions along one spatial dim."""
    dilated_input_shape = 0 if size == 0 else (size - 1) * ld + 1
    padded_input_shape = lo + dilated_input_shape + hi
    dilated_window_shape = 0 if k == 0 else (k - 1) * rd + 1
    is_empty_window = padded_input_shape <= 0 or dilated_window_shape > padded_input_shape
    return 0 if is_empty_window else (padded_input_shape - dilated_window_shape) // stride + 1


def _attribute_values(attributes, named_attributes):
    """``convolution``'s attributes given as it takes them after ``lhs`` and ``rhs``
    (positional or by name), as a list in its order with its defaults: its signature is
    the one list of them, which the reference and the gradient convolutions take too."""
    names, defaults = _convolution_parameters()
    first = len(attributes)
    if first <= len(defaults) and all(names.get(k, -1) >= first for k in named_attributes):
        values = [*attributes, *defaults[first:]]  # (what binding gives, without inspect)
        for k, v in named_attributes.items():
            values[names[k]] = v
        return values
    bound = bound_arguments(registry.op.convolution, (None, None, *attributes), named_attributes)
    return list(bound.values())[2:]  # (lhs and rhs aside)


@functools.lru_cache(maxsize=1)
def _convolution_parameters():
    """``convolution``'s attribute names (to their positions) and defaults."""
    params = list(inspect.signature(registry.op.convolution).parameters.values())[2:]
    return {p.name: i for i, p in enumerate(params)}, [p.default for p in params]


# Validated attributes by (op, operand types and shapes, attributes): a training loop
# calls one convolution with the same arguments every step, and validating them costs
# about as much as running a small convolution. Only plain values are keys (see
# _frozen); the _Attrs objects are never changed after validation.
_VALIDATED = {}
_VALIDATED_MAX = 256
_PLAIN = (bool, int, float, str, np.integer, np.bool_, np.dtype, DType)
_SIMPLE = {type(None), bool, int, float, str}


def _frozen(v):
    """A hashable stand-in for an attribute value that compares equal only for values
    that validate alike (types kept: 1 and True are different keys), or None."""
    t = type(v)
    if t in _SIMPLE:
        return (t, v)
    if t is tuple or t is list:  # (the common case: pairs of ints, lists of ints)
        for x in v:
            if type(x) is not int:
                break
        else:
            return (t, tuple(v))
        items = tuple([_frozen(x) for x in v])
        return None if None in items else (t, items)
    if isinstance(v, _PLAIN):
        return (t, v)
    if type(v) is ConvDimensionNumbers and all(  # (the gradient convolutions' own)
        type(f) is int or (type(f) is tuple and all(type(d) is int for d in f)) for f in v
    ):
        return v
    if isinstance(v, (tuple, list)):
        items = tuple(_frozen(x) for x in v)
        return None if any(x is None for x in items) else (type(v), items)
    if isinstance(v, dict):
        items = tuple((k, _frozen(x)) for k, x in v.items())
        return None if any(x is None for _, x in items) else (dict, items)
    if type(v) is np.ndarray and v.dtype.kind in "biu":
        return (np.ndarray, v.dtype.str, v.shape, v.tobytes())
    return None


def _attributes(op, lhs_dt, lhs_shape, rhs_dt, rhs_shape, *attributes):
    """``_validate`` with its results kept (see _VALIDATED)."""
    # (op names and element types as they are: always a str and DTypes here)
    frozen = [_frozen(tuple(lhs_shape)), _frozen(tuple(rhs_shape))]
    frozen += [_frozen(v) for v in attributes]
    key = None if None in frozen else (op, lhs_dt, rhs_dt, *frozen)
    a = _VALIDATED.get(key) if key is not None else None
    if a is None:
        a = _validate(op, lhs_dt, lhs_shape, rhs_dt, rhs_shape, *attributes)
        if key is not None:
            if len(_VALIDATED) >= _VALIDATED_MAX:
                _VALIDATED.clear()
            _VALIDATED[key] = a
    return a


def _validate(
    op,
    lhs_dt,
    lhs_shape,
    rhs_dt,
    rhs_shape,
    window_strides,
    padding,
    lhs_dilation,
    rhs_dilation,
    window_reversal,
    dimension_numbers,
    feature_group_count,
    batch_group_count,
    precision_config,
    preferred_element_type,
):
    """Every constraint of the spec (labels C1-C27), on types and attributes only."""
    lt, rt = typestr(lhs_dt, lhs_shape), typestr(rhs_dt, rhs_shape)
    rank = len(lhs_shape)
    check(
        len(rhs_shape) == rank,
        op,
        "C1",
        lambda: f"rank(lhs) and rank(rhs) must be equal, got lhs {lt} and rhs {rt}",
    )
    check(
        rank >= 2,
        op,
        "C13",
        lambda: f"lhs must have rank >= 2 (a batch and a feature dimension), got {lt}",
    )
    n = rank - 2
    a = _Attrs()
    a.derived = {}
    a.lhs_shape, a.rhs_shape = tuple(lhs_shape), tuple(rhs_shape)
    a.strides = _spatial_ints(op, "I3", "C2", "C3", "window_strides", window_strides, n)
    a.padding = _padding(op, padding, n)
    a.lhs_dilation = _spatial_ints(op, "I5", "C5", "C6", "lhs_dilation", lhs_dilation, n)
    a.rhs_dilation = _spatial_ints(op, "I6", "C7", "C8", "rhs_dilation", rhs_dilation, n)
    a.reversal = _reversal(op, window_reversal, n)
    dn = a.dn = _dimension_numbers(op, dimension_numbers, rank)

    _check_dims(
        op,
        n,
        rank,
        ("C12", "C13"),
        "input",
        dn.input_spatial_dimensions,
        "batch, spatial..., feature",
        [dn.input_batch_dimension, *dn.input_spatial_dimensions, dn.input_feature_dimension],
        f" for lhs {lt}",
        dn,
    )
    _check_dims(
        op,
        n,
        rank,
        ("C17", "C18"),
        "kernel",
        dn.kernel_spatial_dimensions,
        "spatial..., input feature, output feature",
        [
            *dn.kernel_spatial_dimensions,
            dn.kernel_input_feature_dimension,
            dn.kernel_output_feature_dimension,
        ],
        f" for rhs {rt}",
    )
    _check_dims(
        op,
        n,
        rank,
        ("C19", "C20"),
        "output",
        dn.output_spatial_dimensions,
        "batch, spatial..., feature",
        [dn.output_batch_dimension, *dn.output_spatial_dimensions, dn.output_feature_dimension],
        "",
    )

    fgc = a.fgc = attr_int(op, "I17", "feature_group_count", feature_group_count)
    bgc = a.bgc = attr_int(op, "I18", "batch_group_count", batch_group_count)
    check(fgc > 0, op, "C21", lambda: f"feature_group_count must be positive, got {fgc}")
    check(bgc > 0, op, "C22", lambda: f"batch_group_count must be positive, got {bgc}")
    check(
        fgc == 1 or bgc == 1,
        op,
        "C23",
        lambda: f"feature_group_count ({fgc}) or batch_group_count ({bgc}) must be 1",
    )
    batch = lhs_shape[dn.input_batch_dimension]
    feat = lhs_shape[dn.input_feature_dimension]
    k_in = rhs_shape[dn.kernel_input_feature_dimension]
    k_out = rhs_shape[dn.kernel_output_feature_dimension]
    check(
        batch % bgc == 0,
        op,
        "C10",
        lambda: (
            f"dim(lhs, input_batch_dimension={dn.input_batch_dimension}) = {batch} must "
            f"be divisible by batch_group_count {bgc}, lhs {lt}"
        ),
    )
    check(
        feat % fgc == 0,
        op,
        "C11",
        lambda: (
            f"dim(lhs, input_feature_dimension={dn.input_feature_dimension}) = {feat} "
            f"must be divisible by feature_group_count {fgc}, lhs {lt}"
        ),
    )
    check(
        k_in == feat // fgc,
        op,
        "C14",
        lambda: (
            f"dim(rhs, kernel_input_feature_dimension={dn.kernel_input_feature_dimension})"
            f" = {k_in} must equal dim(lhs, input_feature_dimension) / "
            f"feature_group_count = {feat} / {fgc} = {feat // fgc}; lhs {lt}, rhs {rt}"
        ),
    )
    check(
        k_out % bgc == 0,
        op,
        "C15",
        lambda: (
            f"dim(rhs, kernel_output_feature_dimension="
            f"{dn.kernel_output_feature_dimension}) = {k_out} must be divisible by "
            f"batch_group_count {bgc}, rhs {rt}"
        ),
    )
    check(
        k_out % fgc == 0,
        op,
        "C16",
        lambda: (
            f"dim(rhs, kernel_output_feature_dimension="
            f"{dn.kernel_output_feature_dimension}) = {k_out} must be divisible by "
            f"feature_group_count {fgc}, rhs {rt}"
        ),
    )
    if precision_config is not None:
        pc = (
            [str(getattr(p, "name", p)).upper() for p in precision_config]
            if not isinstance(precision_config, str)
            else [precision_config]
        )
        check(
            len(pc) == 2 and all(p in _PRECISIONS for p in pc),
            op,
            "C24",
            lambda: f"precision_config must be 2 of {_PRECISIONS}, got {precision_config!r}",
        )
    a.precision_config = precision_config  # (no effect on the CPU: passed on as given)
    check(
        lhs_dt is rhs_dt,
        op,
        "C27",
        lambda: f"lhs and rhs must have the same element type, got {lt} and {rt}",
    )
    a.out_dt = _result_dtype(op, lhs_dt, preferred_element_type)

    a.in_spatial = [lhs_shape[d] for d in dn.input_spatial_dimensions]
    a.k_spatial = [rhs_shape[d] for d in dn.kernel_spatial_dimensions]
    a.out_spatial = [
        _num_windows(s, k, st, lo, hi, ld, rd)
        for s, k, st, (lo, hi), ld, rd in zip(
            a.in_spatial, a.k_spatial, a.strides, a.padding, a.lhs_dilation, a.rhs_dilation
        )
    ]
    shape = [0] * rank  # (C25)
    shape[dn.output_batch_dimension] = batch // bgc
    shape[dn.output_feature_dimension] = k_out
    for d, s in zip(dn.output_spatial_dimensions, a.out_spatial):
        shape[d] = s
    a.result_shape = tuple(shape)
    return a


def _operand_values(t, out_dt):
    """The operand's values in the result type's compute domain: the spec's dot_general
    converts each element to the result type before multiplying (this rounds once when
    preferred_element_type is a *narrower* float)."""
    v = compute(t)
    if out_dt is not t._dtype and out_dt.kind == "float" == t._dtype.kind:
        v = to_compute(from_compute(v, out_dt), out_dt)
    elif out_dt is not t._dtype and out_dt.kind == "complex":
        v = v.astype(out_dt.np)
    return v


def _from_work(out, out_dt):
    """Work dtype -> the result type's compute domain (integers wrap in ``result``)."""
    if out_dt.kind == "bool":
        return out != 0
    if out_dt.kind in ("si", "ui") and out.dtype.kind == "f":
        return out.astype(np.int64)
    return out
