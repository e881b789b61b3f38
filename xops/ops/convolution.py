"""Convolution: stablehlo.convolution, and XLA's ConvWithGeneralPadding and Conv.

``convolution`` computes, for every output position, dot products between a window of
``lhs`` and ``rhs`` (spec: StableHLO "convolution"; XLA "ConvWithGeneralPadding").
Every attribute of the spec is supported: strides, low/high padding (negative too),
lhs (base) dilation, rhs (window) dilation, window reversal, any dimension layout,
any number of spatial dims (0 included), feature and batch groups, and a wider result
type (``preferred_element_type``).

How it runs:

1. the operands are converted to one *work* dtype and normalised to the canonical
   layout (batch, feature, spatial...) x (out-feature, in-feature, spatial...);
   batch groups become feature groups on the way (one transpose of lhs);
2. one of three packings around a single GEMM per group (``np.matmul``, BLAS), chosen
   by a cost model (``_strategy``):

   * ``im2col``: a Numba kernel (``xops.kernels.convolution.im2col``) copies every
     window of the padded input (the spec's ``padded_lhs``) into columns
     (C*K, N*P) (K kernel taps, P output positions), then weights (O, C*K) @ columns;
   * ``im2row``: the same with rows (N*P, C*K), for kernels wider than the output (the
     kernel gradient);
   * ``window_sum`` (kn2row): weights (O*K, C) @ input (C, positions) first, then a
     Numba kernel sums each output's K taps; for fewer output than input features, or
     lhs dilation (the input gradient, transposed convolutions);
3. the result is transposed to the requested output layout and rounded once to the
   result type.

Element types: floats compute in float32/float64 (bf16, f16, f8... in float32, rounded
once), complex in complex64/complex128. Integer and boolean convolutions are exact:
they run in float64 BLAS when every partial sum is an integer below 2**53 (checked from
the operands' actual ranges and the contraction length), else in int64 (NumPy's integer
matmul, which wraps mod 2**64); the sum then wraps to the result type's width. i1 is
OR of ANDs. ``precision_config`` only matters on accelerators: on the CPU every
setting gives full precision of the work dtype. Quantized types are not supported yet.

``convolution_reference`` is the spec's formal semantics step by step (pad, slice,
reverse, dot_general per output position, split/concatenate for groups): the test
oracle. ``convolution_grad_lhs`` / ``convolution_grad_rhs`` are the two cotangents,
each itself a convolution.
"""
import collections
import functools
import math
import re

import numpy as np

from ..autodiff.tape import primitive
from ..dtypes import as_dtype, from_compute, to_compute
from ..kernels import convolution as K
from ..tensor import Tensor, _wrap, typestr
from ..limits import check_nbytes
from ._core import SpecError, attr_int, attr_ints, check, compute, operands, result

__all__ = ["convolution", "conv_with_general_padding", "conv", "ConvDimensionNumbers"]

_PRECISIONS = ("DEFAULT", "HIGH", "HIGHEST")
_DN_LABEL = "I8-I16"  # the spec's inputs that make up dimension_numbers


# ---------------------------------------------------------------------------------------
# Dimension numbers: None, "NCHW,OIHW,NCHW", "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]",
# a dict / namedtuple with the spec's nine fields, or jax's ConvDimensionNumbers
# ---------------------------------------------------------------------------------------

class ConvDimensionNumbers(collections.namedtuple("ConvDimensionNumbers", [
        "input_batch_dimension", "input_feature_dimension", "input_spatial_dimensions",
        "kernel_input_feature_dimension", "kernel_output_feature_dimension",
        "kernel_spatial_dimensions", "output_batch_dimension", "output_feature_dimension",
        "output_spatial_dimensions"])):
    """The spec's dimension numbers of a convolution (inputs I8-I16), spatial dims as
    tuples. ``str()`` gives the MLIR form ``[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]``.

    >>> xo.ConvDimensionNumbers(0, 3, (1, 2), 2, 3, (0, 1), 0, 3, (1, 2))
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
        return (part(rank, self.input_batch_dimension, self.input_feature_dimension,
                     self.input_spatial_dimensions, "b", "f") + "x" +
                part(rank, self.kernel_input_feature_dimension,
                     self.kernel_output_feature_dimension, self.kernel_spatial_dimensions,
                     "i", "o") + "->" +
                part(rank, self.output_batch_dimension, self.output_feature_dimension,
                     self.output_spatial_dimensions, "b", "f"))


_SCALAR_FIELDS = ("input_batch_dimension", "input_feature_dimension",
                  "kernel_input_feature_dimension", "kernel_output_feature_dimension",
                  "output_batch_dimension", "output_feature_dimension")
_FIELD_LABEL = dict(zip(ConvDimensionNumbers._fields, ["I8", "I9", "I10", "I11", "I12", "I13",
                                                       "I14", "I15", "I16"]))


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
    raise SpecError(op, _DN_LABEL, f"dimension_numbers must be None, a string like "
                                   f"'NCHW,OIHW,NCHW' or '[b, 0, 1, f]x[0, 1, i, o]->"
                                   f"[b, 0, 1, f]', or a dict with the spec's fields; got "
                                   f"{dn!r}")


def _from_fields(op, fields):
    missing = [f for f in ConvDimensionNumbers._fields if f not in fields]
    extra = [f for f in fields if f not in ConvDimensionNumbers._fields]
    if missing or extra:
        raise SpecError(op, _DN_LABEL, f"dimension_numbers needs exactly the fields "
                                       f"{list(ConvDimensionNumbers._fields)}; missing "
                                       f"{missing}, unknown {extra}")
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
        raise SpecError(op, _DN_LABEL, f"jax-style dimension_numbers must hold integer "
                                       f"specs, got {(lhs_spec, rhs_spec, out_spec)!r}") from None
    if min(len(ls), len(rs), len(os_)) < 2:
        raise SpecError(op, _DN_LABEL, f"jax-style specs need a batch/feature pair first, "
                                       f"got {(ls, rs, os_)}")
    return ConvDimensionNumbers(ls[0], ls[1], ls[2:], rs[1], rs[0], rs[2:], os_[0], os_[1],
                                os_[2:])


def _split_letters(text):
    return [p for p in re.split(r"\s*(?:,|->)\s*", text.strip())]


def _parse_letters(op, text, parts):
    """'NCHW,OIHW,NCHW': N batch, C feature (input, output); O/I kernel output/input
    feature; any other letter a spatial dim, matched by letter across the three specs.
    Spatial dims are numbered in the kernel spec's order (as jax.lax does)."""
    def bad(why):
        return SpecError(op, _DN_LABEL, f"cannot read dimension_numbers {text!r}: {why} "
                                        f"(expected e.g. 'NCHW,OIHW,NCHW' or 'NHWC,HWIO,NHWC')")
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
        raise bad(f"the spatial letters differ: input {sorted(sl)}, kernel {sorted(sr)}, "
                  f"output {sorted(so)}")
    order = [ch for ch in rhs if ch not in "OI"]
    return ConvDimensionNumbers(
        lhs.index("N"), lhs.index("C"), tuple(lhs.index(ch) for ch in order),
        rhs.index("I"), rhs.index("O"), tuple(rhs.index(ch) for ch in order),
        out.index("N"), out.index("C"), tuple(out.index(ch) for ch in order))


_MLIR = re.compile(r"^\[([^\[\]]*)\]x\[([^\[\]]*)\]->\[([^\[\]]*)\]$")


def _parse_mlir(op, text):
    """'[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]' (optionally inside #stablehlo.conv<...>):
    b/f batch/feature, i/o kernel input/output feature, digits the spatial dims."""
    def bad(why):
        return SpecError(op, _DN_LABEL, f"cannot read dimension_numbers {text!r}: {why} (expected "
                                        f"e.g. '[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]')")
    body = re.sub(r"\s+", "", text)
    if body.startswith("#stablehlo.conv<") and body.endswith(">"):
        body = body[len("#stablehlo.conv<"):-1]
    m = _MLIR.match(body)
    if not m:
        raise bad("not of the form [...]x[...]->[...]")
    specs = []
    for group, (ca, cb), what in zip(m.groups(), ("bf", "io", "bf"), ("input", "kernel", "output")):
        tokens = group.split(",") if group else []
        for t in tokens:
            if t not in (ca, cb) and not t.isdigit():
                raise bad(f"unknown entry {t!r} in the {what} part "
                          f"(allowed: {ca}, {cb}, 0, 1, ...)")
        for ch in (ca, cb):
            if tokens.count(ch) != 1:
                raise bad(f"the {what} part must name {ch!r} exactly once")
        digits = sorted(int(t) for t in tokens if t.isdigit())
        if digits != list(range(len(digits))):
            raise bad(f"the {what} part's spatial dims must be 0..{len(digits) - 1} once each, "
                      f"got {digits}")
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
    __slots__ = ("strides", "padding", "lhs_dilation", "rhs_dilation", "reversal", "dn",
                 "fgc", "bgc", "out_dt", "in_spatial", "k_spatial", "out_spatial",
                 "result_shape", "lhs_shape", "rhs_shape")


def _padding(op, padding, n):
    if padding is None:
        return [(0, 0)] * n
    if isinstance(padding, str):
        raise SpecError(op, "I4", f"padding must be (low, high) pairs, got {padding!r} "
                                  f"(xo.conv accepts 'SAME' and 'VALID')")
    if isinstance(padding, Tensor):
        padding = padding._value
    try:
        arr = np.asarray(padding)
    except (TypeError, ValueError):
        arr = None
    if arr is None or arr.dtype == object or (arr.size and arr.dtype.kind not in "iu"):
        raise SpecError(op, "I4", f"padding must be a list of (low, high) integer pairs, "
                                  f"got {padding!r}")
    if arr.shape == (0,):
        arr = arr.reshape(0, 2)
    check(arr.shape == (n, 2), op, "C4",
          lambda: f"padding must have shape [N-2, 2] = [{n}, 2], got {list(arr.shape)}")
    return [(int(lo), int(hi)) for lo, hi in arr]


def _spatial_ints(op, label_i, label_size, label_pos, name, value, n):
    if value is None:
        return [1] * n
    vals = attr_ints(op, label_i, name, value)
    check(len(vals) == n, op, label_size,
          lambda: f"size({name}) must be N-2 = {n}, got {len(vals)}: {vals}")
    if label_pos:
        check(all(v > 0 for v in vals), op, label_pos,
              lambda: f"{name} must be positive, got {vals}")
    return vals


def _reversal(op, value, n):
    if value is None:
        return [False] * n
    if isinstance(value, Tensor):
        value = value._value
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError):
        arr = None
    ok = arr is not None and arr.ndim == 1 and (
        arr.size == 0 or arr.dtype.kind == "b" or
        (arr.dtype.kind in "iu" and np.isin(arr, (0, 1)).all()))
    if not ok:
        raise SpecError(op, "I7", f"window_reversal must be a 1-D sequence of booleans, "
                                  f"got {value!r}")
    flags = [bool(v) for v in arr]
    check(len(flags) == n, op, "C9",
          lambda: f"size(window_reversal) must be N-2 = {n}, got {len(flags)}: {flags}")
    return flags


def _dims_ok(dims, rank):
    return len(set(dims)) == len(dims) and all(0 <= d < rank for d in dims)


def _result_dtype(op, dt, preferred):
    """(C27) lhs and rhs share one element type; the result's may be a wider type of the
    same family (preferred_element_type), as the current spec and interpreter allow
    (i8 x i8 -> i32, bf16 -> f32)."""
    if preferred is None:
        return dt
    try:
        out = as_dtype(preferred)
    except (TypeError, ValueError) as e:
        raise SpecError(op, "C27", f"preferred_element_type {preferred!r} is not an "
                                   f"element type: {e}") from None
    check(not out.quantized, op, "C28",
          lambda: f"a quantized result needs quantized lhs and rhs, got {dt.name} operands "
                  f"and preferred_element_type {out.name}")
    fam = {"bool": "bool", "si": "int", "ui": "int", "float": "float", "complex": "complex"}
    check(fam[out.kind] == fam[dt.kind], op, "C27",
          lambda: f"preferred_element_type {out.name} cannot hold a convolution of "
                  f"{dt.name} operands (same family needed: bool, integer, float or complex)")
    return out


def _num_windows(size, k, stride, lo, hi, ld, rd):
    """(C25) The number of window positions along one spatial dim."""
    dilated_input_shape = 0 if size == 0 else (size - 1) * ld + 1
    padded_input_shape = lo + dilated_input_shape + hi
    dilated_window_shape = 0 if k == 0 else (k - 1) * rd + 1
    is_empty_window = padded_input_shape <= 0 or dilated_window_shape > padded_input_shape
    return 0 if is_empty_window else (padded_input_shape - dilated_window_shape) // stride + 1


def _attributes(op, lhs_dt, lhs_shape, rhs_dt, rhs_shape, window_strides, padding,
                lhs_dilation, rhs_dilation, window_reversal, dimension_numbers,
                feature_group_count, batch_group_count, precision_config,
                preferred_element_type):
    """Every constraint of the spec (labels C1-C27), on types and attributes only."""
    lt, rt = typestr(lhs_dt, lhs_shape), typestr(rhs_dt, rhs_shape)
    rank = len(lhs_shape)
    check(len(rhs_shape) == rank, op, "C1",
          lambda: f"rank(lhs) and rank(rhs) must be equal, got lhs {lt} and rhs {rt}")
    check(rank >= 2, op, "C13", lambda: f"lhs must have rank >= 2 (a batch and a feature "
                                        f"dimension), got {lt}")
    n = rank - 2
    a = _Attrs()
    a.lhs_shape, a.rhs_shape = tuple(lhs_shape), tuple(rhs_shape)
    a.strides = _spatial_ints(op, "I3", "C2", "C3", "window_strides", window_strides, n)
    a.padding = _padding(op, padding, n)
    a.lhs_dilation = _spatial_ints(op, "I5", "C5", "C6", "lhs_dilation", lhs_dilation, n)
    a.rhs_dilation = _spatial_ints(op, "I6", "C7", "C8", "rhs_dilation", rhs_dilation, n)
    a.reversal = _reversal(op, window_reversal, n)
    dn = a.dn = _dimension_numbers(op, dimension_numbers, rank)

    check(len(dn.input_spatial_dimensions) == n, op, "C12",
          lambda: f"size(input_spatial_dimensions) must be N-2 = {n} for lhs {lt}, got "
                  f"{list(dn.input_spatial_dimensions)} (dimension_numbers {dn})")
    in_dims = [dn.input_batch_dimension, *dn.input_spatial_dimensions, dn.input_feature_dimension]
    check(_dims_ok(in_dims, rank), op, "C13",
          lambda: f"input dims [batch, spatial..., feature] = {in_dims} must be unique and "
                  f"in [0, {rank}) for lhs {lt}")
    check(len(dn.kernel_spatial_dimensions) == n, op, "C17",
          lambda: f"size(kernel_spatial_dimensions) must be N-2 = {n} for rhs {rt}, got "
                  f"{list(dn.kernel_spatial_dimensions)}")
    k_dims = [*dn.kernel_spatial_dimensions, dn.kernel_input_feature_dimension,
              dn.kernel_output_feature_dimension]
    check(_dims_ok(k_dims, rank), op, "C18",
          lambda: f"kernel dims [spatial..., input feature, output feature] = {k_dims} must "
                  f"be unique and in [0, {rank}) for rhs {rt}")
    check(len(dn.output_spatial_dimensions) == n, op, "C19",
          lambda: f"size(output_spatial_dimensions) must be N-2 = {n}, got "
                  f"{list(dn.output_spatial_dimensions)}")
    o_dims = [dn.output_batch_dimension, *dn.output_spatial_dimensions, dn.output_feature_dimension]
    check(_dims_ok(o_dims, rank), op, "C20",
          lambda: f"output dims [batch, spatial..., feature] = {o_dims} must be unique and "
                  f"in [0, {rank})")

    fgc = a.fgc = attr_int(op, "I17", "feature_group_count", feature_group_count)
    bgc = a.bgc = attr_int(op, "I18", "batch_group_count", batch_group_count)
    check(fgc > 0, op, "C21", lambda: f"feature_group_count must be positive, got {fgc}")
    check(bgc > 0, op, "C22", lambda: f"batch_group_count must be positive, got {bgc}")
    check(fgc == 1 or bgc == 1, op, "C23",
          lambda: f"feature_group_count ({fgc}) or batch_group_count ({bgc}) must be 1")
    batch = lhs_shape[dn.input_batch_dimension]
    feat = lhs_shape[dn.input_feature_dimension]
    k_in = rhs_shape[dn.kernel_input_feature_dimension]
    k_out = rhs_shape[dn.kernel_output_feature_dimension]
    check(batch % bgc == 0, op, "C10",
          lambda: f"dim(lhs, input_batch_dimension={dn.input_batch_dimension}) = {batch} must "
                  f"be divisible by batch_group_count {bgc}, lhs {lt}")
    check(feat % fgc == 0, op, "C11",
          lambda: f"dim(lhs, input_feature_dimension={dn.input_feature_dimension}) = {feat} "
                  f"must be divisible by feature_group_count {fgc}, lhs {lt}")
    check(k_in == feat // fgc, op, "C14",
          lambda: f"dim(rhs, kernel_input_feature_dimension={dn.kernel_input_feature_dimension})"
                  f" = {k_in} must equal dim(lhs, input_feature_dimension) / "
                  f"feature_group_count = {feat} / {fgc} = {feat // fgc}; lhs {lt}, rhs {rt}")
    check(k_out % bgc == 0, op, "C15",
          lambda: f"dim(rhs, kernel_output_feature_dimension="
                  f"{dn.kernel_output_feature_dimension}) = {k_out} must be divisible by "
                  f"batch_group_count {bgc}, rhs {rt}")
    check(k_out % fgc == 0, op, "C16",
          lambda: f"dim(rhs, kernel_output_feature_dimension="
                  f"{dn.kernel_output_feature_dimension}) = {k_out} must be divisible by "
                  f"feature_group_count {fgc}, rhs {rt}")
    if precision_config is not None:
        pc = [str(getattr(p, "name", p)).upper() for p in precision_config] \
            if not isinstance(precision_config, str) else [precision_config]
        check(len(pc) == 2 and all(p in _PRECISIONS for p in pc), op, "C24",
              lambda: f"precision_config must be 2 of {_PRECISIONS}, got {precision_config!r}")
    check(lhs_dt is rhs_dt, op, "C27",
          lambda: f"lhs and rhs must have the same element type, got {lt} and {rt}")
    a.out_dt = _result_dtype(op, lhs_dt, preferred_element_type)

    a.in_spatial = [lhs_shape[d] for d in dn.input_spatial_dimensions]
    a.k_spatial = [rhs_shape[d] for d in dn.kernel_spatial_dimensions]
    a.out_spatial = [_num_windows(s, k, st, lo, hi, ld, rd) for s, k, st, (lo, hi), ld, rd in
                     zip(a.in_spatial, a.k_spatial, a.strides, a.padding, a.lhs_dilation,
                         a.rhs_dilation)]
    shape = [0] * rank  # (C25)
    shape[dn.output_batch_dimension] = batch // bgc
    shape[dn.output_feature_dimension] = k_out
    for d, s in zip(dn.output_spatial_dimensions, a.out_spatial):
        shape[d] = s
    a.result_shape = tuple(shape)
    return a


# ---------------------------------------------------------------------------------------
# stablehlo.convolution
# ---------------------------------------------------------------------------------------

def convolution(lhs, rhs, window_strides=None, padding=None, lhs_dilation=None,
                rhs_dilation=None, window_reversal=None, dimension_numbers=None,
                feature_group_count=1, batch_group_count=1, precision_config=None,
                preferred_element_type=None):
    """stablehlo.convolution: dot products between windows of ``lhs`` and ``rhs``.

    ``padding`` is one (low, high) pair per spatial dim (negative removes elements);
    zeros are inserted between input elements (``lhs_dilation``, "transposed conv") and
    between kernel taps (``rhs_dilation``, "atrous conv"); ``window_reversal`` flips the
    window per spatial dim. ``dimension_numbers``: None (NCHW x OIHW -> NCHW for any
    rank), ``"NHWC,HWIO,NHWC"``-style letters (N batch, C feature, O/I kernel out/in
    feature, other letters spatial, numbered in the kernel spec's order), the MLIR form
    ``"[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]"``, or a dict / ConvDimensionNumbers with
    the spec's fields. ``feature_group_count`` splits the input features and the kernel
    output features into groups (depthwise: = input features); ``batch_group_count``
    splits the input batch and the kernel output features (output batch = N / count).

    >>> x = xo.tensor(np.arange(16.0, dtype=np.float32).reshape(1, 1, 4, 4))
    >>> xo.convolution(x, xo.tensor(np.ones((1, 1, 2, 2), np.float32)), [2, 2]).tolist()
    [[[[10.0, 18.0], [42.0, 50.0]]]]
    """
    return _convolution("convolution", lhs, rhs, window_strides, padding, lhs_dilation,
                        rhs_dilation, window_reversal, dimension_numbers, feature_group_count,
                        batch_group_count, precision_config, preferred_element_type)


@primitive("convolution")
def _convolution(op, lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                 window_reversal, dimension_numbers, feature_group_count, batch_group_count,
                 precision_config, preferred_element_type):
    """The recorded core of convolution, conv_with_general_padding and conv (``op`` only
    names the caller in error messages)."""
    x, y = operands(op, lhs, rhs, names=["lhs", "rhs"])
    a = _attributes(op, x._dtype, x.shape, y._dtype, y.shape, window_strides, padding,
                    lhs_dilation, rhs_dilation, window_reversal, dimension_numbers,
                    feature_group_count, batch_group_count, precision_config,
                    preferred_element_type)
    return result(_convolution_impl(x, y, a), a.out_dt)


@_convolution.defvjp
def _convolution_vjp(g, out, op, lhs, rhs, window_strides, padding, lhs_dilation,
                     rhs_dilation, window_reversal, dimension_numbers, feature_group_count,
                     batch_group_count, precision_config, preferred_element_type):
    """Convolution is bilinear: each cotangent is itself a convolution (see
    convolution_grad_lhs / convolution_grad_rhs below), so second order works."""
    attrs = dict(window_strides=window_strides, padding=padding, lhs_dilation=lhs_dilation,
                 rhs_dilation=rhs_dilation, window_reversal=window_reversal,
                 dimension_numbers=dimension_numbers, feature_group_count=feature_group_count,
                 batch_group_count=batch_group_count, precision_config=precision_config)
    x, y = operands(op, lhs, rhs, names=["lhs", "rhs"])
    if g._dtype is not x._dtype:  # preferred_element_type: back to the operands' type
        from .conversion import convert
        g = convert(g, x._dtype)
    wants = [isinstance(t, Tensor) and t.requires_grad for t in (lhs, rhs)]
    g_lhs = convolution_grad_lhs(g, rhs, x.shape, **attrs) if wants[0] else None
    g_rhs = convolution_grad_rhs(g, lhs, y.shape, **attrs) if wants[1] else None
    return None, g_lhs, g_rhs


# -- fast path: im2col / im2row / window_sum (Numba) around one GEMM (BLAS) -------------

# Tests set this to "im2col", "im2row" or "window_sum" to run one strategy everywhere.
_FORCE_STRATEGY = None
# The Numba kernels share the cores with BLAS, which already runs in parallel: a second
# parallel phase per call gains little for a memory-bound copy (~0.3 of 5 ms on the
# 32->64 benchmark layer) and costs whole scheduler ticks when other processes compete
# for the cores (measured 2x slower on the 3->32 layer). So the kernels go parallel
# only for large work: the size handed to the serial/parallel dispatcher is the work
# divided by these factors (parallel from 16M copied words / 4M gathered terms).
_IM2COL_WORK_PER_UNIT = 256
_WINDOW_SUM_WORK_PER_UNIT = 64
# Cost model: one packed element (written by a kernel, read back by BLAS) costs about
# as much as this many GEMM flops (calibrated on the 2-core machine: with it the model
# picks the faster strategy for all six benchmarks/wl_convolution.py convolutions).
_FLOPS_PER_ELEMENT = 64


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


def _abs_max(v):
    """max |v| as a Python int (exact for int64/uint64; 0 for an empty array)."""
    if v.size == 0:
        return 0
    return max(abs(int(v.max())), abs(int(v.min())))


def _work_dtype(out_dt, xv, yv, contraction):
    """The dtype the packing and the matmul use."""
    if out_dt.kind in ("float", "complex"):
        return out_dt.compute
    # integers and i1: exact in float64 if every partial sum is an integer below 2**53
    if _abs_max(xv) * _abs_max(yv) * contraction < 2 ** 53:
        return np.dtype(np.float64)
    return np.dtype(np.int64)


def _convolution_impl(x, y, a):
    """Canonical layout, packing + matmul, output layout. Returns the result in the
    result type's compute domain."""
    dn, out_dt = a.dn, a.out_dt
    n = len(a.in_spatial)
    groups = a.fgc * a.bgc  # one of them is 1 (C23)
    k_taps = math.prod(a.k_spatial)
    c_group = y.shape[dn.kernel_input_feature_dimension]
    xv, yv = _operand_values(x, out_dt), _operand_values(y, out_dt)
    work = _work_dtype(out_dt, xv, yv, c_group * k_taps)

    # lhs as (N', [batch groups,] C, *spatial): batch groups become feature groups
    lhs_c = np.transpose(xv, [dn.input_batch_dimension, dn.input_feature_dimension,
                              *dn.input_spatial_dimensions])
    batch, chan = lhs_c.shape[:2]
    if a.bgc > 1:
        batch //= a.bgc
        lhs_c = lhs_c.reshape(a.bgc, batch, chan, *a.in_spatial).swapaxes(0, 1)
        chan *= a.bgc
    n_out = y.shape[dn.kernel_output_feature_dimension]
    out_pos = math.prod(a.out_spatial)
    check_nbytes("convolution", (batch, n_out, *a.out_spatial), work)

    if batch * n_out * out_pos == 0 or c_group * k_taps == 0:
        out = np.zeros((batch, n_out, *a.out_spatial), work)
    else:
        # rhs as (O, C/groups, *kernel); window reversal = flipping the kernel
        w = np.transpose(yv, [dn.kernel_output_feature_dimension,
                              dn.kernel_input_feature_dimension, *dn.kernel_spatial_dimensions])
        flips = [2 + d for d in range(n) if a.reversal[d]]
        if flips:
            w = np.flip(w, flips)
        w = np.ascontiguousarray(w, dtype=work)
        strategy = _strategy(a, chan, n_out, groups, k_taps, out_pos)
        padded = math.prod(lo + (0 if s == 0 else (s - 1) * ld + 1) + hi
                           for s, (lo, hi), ld in zip(a.in_spatial, a.padding, a.lhs_dilation))
        check_nbytes("convolution", (batch, chan, padded), work, "padded input temporary")
        if strategy == "window_sum":
            check_nbytes("convolution", (batch, n_out * k_taps, math.prod(a.in_spatial) + 1),
                         work, "window-sum temporary")
        else:
            check_nbytes("convolution", (batch, chan * k_taps, out_pos), work,
                         "im2col temporary")
        if strategy == "window_sum":
            out = _window_sum_matmul(lhs_c, w, a, work, batch, chan, groups, n_out)
        else:
            out = _im2col_matmul(lhs_c, w, a, work, batch, chan, groups, n_out,
                                 strategy == "im2row")

    # canonical (N', O, *spatial) -> the requested output layout: a view (like
    # xo.transpose's results); copying it would cost a pass over the output
    axes = [0] * (n + 2)
    axes[dn.output_batch_dimension] = 0
    axes[dn.output_feature_dimension] = 1
    for i, d in enumerate(dn.output_spatial_dimensions):
        axes[d] = 2 + i
    return _from_work(np.transpose(out, axes), out_dt)


def _strategy(a, chan, n_out, groups, k_taps, out_pos):
    """"im2col"/"im2row" pack C*K values per output position, "window_sum" O*K per input
    position (and does its GEMM at input positions): pick the cheaper (per image).
    im2row when the kernel's last dim is longer than the output's (the copy loops run
    along the longer one)."""
    if _FORCE_STRATEGY is not None:
        return _FORCE_STRATEGY
    size = math.prod(a.in_spatial)
    padded = math.prod(lo + (0 if s == 0 else (s - 1) * ld + 1) + hi
                       for s, (lo, hi), ld in zip(a.in_spatial, a.padding, a.lhs_dilation))
    flops = 2 * n_out * (chan // groups) * k_taps
    cost_im2col = chan * (k_taps * out_pos + padded) + flops * out_pos / _FLOPS_PER_ELEMENT
    # window_sum: BLAS writes Y (half the cost of a packed element), the kernel gathers it
    cost_window_sum = n_out * k_taps * (size / 2 + out_pos) + flops * size / _FLOPS_PER_ELEMENT
    if cost_window_sum < cost_im2col:
        return "window_sum"
    kw_n, ow_n = (a.k_spatial[-1], a.out_spatial[-1]) if a.k_spatial else (1, 1)
    return "im2row" if ow_n < kw_n else "im2col"


def _padded_input(lhs_c, a, work, batch, chan):
    """The spec's padded_lhs: (N', C, *padded spatial) with lhs-dilation holes and edge
    padding as zeros, negative padding cropped; one strided copy (and cast) of lhs."""
    n = len(a.in_spatial)
    padded = [lo + (0 if s == 0 else (s - 1) * ld + 1) + hi
              for s, (lo, hi), ld in zip(a.in_spatial, a.padding, a.lhs_dilation)]
    buf = np.zeros((batch, chan, *padded), work)
    view = np.reshape(buf, lhs_c.shape[:lhs_c.ndim - n] + tuple(padded), copy=False)
    dst, src = [], []
    for s, (lo, _), ld, p in zip(a.in_spatial, a.padding, a.lhs_dilation, padded):
        i_min = max(0, -(lo // ld))  # first input index that lands inside [0, padded)
        i_max = min(s - 1, (p - 1 - lo) // ld)
        if i_max < i_min:
            return buf  # every input element is cropped away
        src.append(slice(i_min, i_max + 1))
        dst.append(slice(lo + i_min * ld, lo + i_max * ld + 1, ld))
    lead = (slice(None),) * (lhs_c.ndim - n)
    np.copyto(view[lead + tuple(dst)], lhs_c[lead + tuple(src)], casting="unsafe")
    return buf


@functools.lru_cache(maxsize=64)
def _affine_table(padded, k_spatial, out_spatial, strides, rhs_dilation):
    """For im2col: (table, kw_n, kw_step, ow_n, ow_step). ``table[ko, oo]`` is the flat
    offset in a padded plane of the window element for the outer kernel taps ``ko`` and
    outer output positions ``oo`` (all spatial dims but the last); along the last dim
    the offset grows by ``kw_step`` per tap and ``ow_step`` per position."""
    n = len(padded)
    if n == 0:
        return np.zeros((1, 1), np.uint64), 1, 1, 1, 1
    flat = [math.prod(padded[d + 1:]) for d in range(n)]
    base = np.zeros(list(k_spatial[:-1]) + list(out_spatial[:-1]), np.int64)
    m = n - 1
    for d in range(m):
        k = np.arange(k_spatial[d])[:, None]
        o = np.arange(out_spatial[d])[None, :]
        shape = [1] * (2 * m)
        shape[d], shape[m + d] = k_spatial[d], out_spatial[d]
        base += ((o * strides[d] + k * rhs_dilation[d]) * flat[d]).reshape(shape)
    table = np.ascontiguousarray(base.reshape(math.prod(k_spatial[:-1]),
                                              math.prod(out_spatial[:-1])), np.uint64)
    table.flags.writeable = False
    return table, k_spatial[-1], rhs_dilation[-1], out_spatial[-1], strides[-1]


def _im2col_matmul(lhs_c, w, a, work, batch, chan, groups, n_out, im2row):
    """Pack the windows as columns (C*K, N*P) — or as rows (N*P, C*K), im2row, with
    contiguous runs along the kernel's last dim instead of the output's — and multiply
    in one GEMM per group (one BLAS call: a single thread-synchronisation point, which
    keeps it fast when other processes compete for the cores)."""
    padded = _padded_input(lhs_c, a, work, batch, chan)
    table, kw_n, kw_step, ow_n, ow_step = _affine_table(
        padded.shape[2:], tuple(a.k_spatial), tuple(a.out_spatial), tuple(a.strides),
        tuple(a.rhs_dilation))
    k_taps, out_pos = math.prod(a.k_spatial), math.prod(a.out_spatial)
    rows = chan * k_taps
    c_k = rows // groups
    if im2row:  # (N, P, C*K)
        d_n, d_c, d_k, d_p = out_pos * rows, k_taps, 1, rows
    else:  # (C*K, N, P)
        d_n, d_c, d_k, d_p = out_pos, k_taps * batch * out_pos, batch * out_pos, 1
    cols = np.empty(batch * rows * out_pos, work)
    planes = padded.reshape(-1)
    plane = planes.size // (batch * chan)
    if work == np.complex128:  # two float64 passes into the interleaved columns
        words = cols.view(np.float64).view(np.uint64)
        passes = [(np.ascontiguousarray(planes.real), 0), (np.ascontiguousarray(planes.imag), 1)]
        lanes = 2
    else:
        word = np.uint64 if work.itemsize == 8 else np.uint32
        words = cols.view(word)
        passes, lanes = [(planes, 0)], 1
    for src, d0 in passes:
        K.im2col(cols.size // _IM2COL_WORK_PER_UNIT, src.view(words.dtype), plane, table,
                 kw_n, kw_step, ow_n, ow_step, words, d0, d_n * lanes, d_c * lanes,
                 d_k * lanes, d_p * lanes, chan, im2row)
    w2 = w.reshape(groups, n_out // groups, c_k)
    if im2row:
        b = cols.reshape(batch * out_pos, groups, c_k).transpose(1, 2, 0)
    else:
        b = cols.reshape(groups, c_k, batch * out_pos)
    with np.errstate(all="ignore"):
        out = np.matmul(w2, b)  # (G, O/G, N*P)
    return out.reshape(n_out, batch, *a.out_spatial).swapaxes(0, 1)


@functools.lru_cache(maxsize=64)
def _window_table(in_spatial, k_spatial, out_spatial, strides, padding, lhs_dilation,
                  rhs_dilation, lanes):
    """For window_sum: (K, P*lanes) offsets, uint32 (uint64 for planes of 2**32 words).
    For kernel tap k and output position p (row-major), the flat offset in an
    (unpadded, undilated) input plane of the element that tap reads, or the plane size
    (a zero slot) for padding cells and dilation holes. lanes=2 addresses complex
    elements as (real, imaginary) pairs of reals."""
    n = len(in_spatial)
    flat = [math.prod(in_spatial[d + 1:]) for d in range(n)]
    offset = np.zeros(list(k_spatial) + list(out_spatial), np.int64)
    valid = np.ones(offset.shape, bool)
    for d in range(n):
        k = np.arange(k_spatial[d])[:, None]
        o = np.arange(out_spatial[d])[None, :]
        dilated = 0 if in_spatial[d] == 0 else (in_spatial[d] - 1) * lhs_dilation[d] + 1
        q = o * strides[d] + k * rhs_dilation[d] - padding[d][0]  # in the dilated input
        ok = (q >= 0) & (q < dilated) & (q % lhs_dilation[d] == 0)
        shape = [1] * (2 * n)
        shape[d], shape[n + d] = k_spatial[d], out_spatial[d]
        offset += ((q // lhs_dilation[d]) * flat[d]).reshape(shape)
        valid &= ok.reshape(shape)
    offset[~valid] = math.prod(in_spatial)
    table = offset.reshape(math.prod(k_spatial), math.prod(out_spatial))
    if lanes > 1:
        table = (table[:, :, None] * lanes + np.arange(lanes)).reshape(table.shape[0], -1)
    # uint32 offsets halve the table's memory traffic (the kernel is gather-bound)
    small = (math.prod(in_spatial) + 1) * lanes <= np.iinfo(np.uint32).max
    table = np.ascontiguousarray(table, np.uint32 if small else np.uint64)
    table.flags.writeable = False
    return table


def _window_sum_matmul(lhs_c, w, a, work, batch, chan, groups, n_out):
    """Y = W @ X at every input position of every image, in one GEMM per group (rows:
    output feature x kernel tap; columns: image x position, plus a zero slot per
    image), then each output sums its taps' Y entries (kn2row)."""
    n = len(a.in_spatial)
    size = math.prod(a.in_spatial)
    k_taps = math.prod(a.k_spatial)
    c_g, o_g = chan // groups, n_out // groups
    buf = np.empty((chan, batch, size + 1), work)  # channel-major: one GEMM for all images
    chan_shape = lhs_c.shape[1:lhs_c.ndim - n]  # (C,) or (batch groups, C)
    body = np.reshape(buf[:, :, :size], (*chan_shape, batch, *a.in_spatial), copy=False)
    np.copyto(np.moveaxis(body, len(chan_shape), 0), lhs_c, casting="unsafe")
    buf[:, :, size] = 0
    w2 = w.reshape(groups, o_g, c_g, k_taps).transpose(0, 1, 3, 2).reshape(
        groups, o_g * k_taps, c_g)
    with np.errstate(all="ignore"):
        y = np.matmul(w2, buf.reshape(groups, c_g, batch * (size + 1)))  # (G, O/G*K, N*(L+1))
        y = y.reshape(n_out * k_taps, batch, size + 1)
        # complex sums are sums of (real, imaginary) lanes: real kernels only
        real = np.dtype(work.char.lower()) if work.kind == "c" else work
        lanes = work.itemsize // real.itemsize
        table = _window_table(tuple(a.in_spatial), tuple(a.k_spatial), tuple(a.out_spatial),
                              tuple(a.strides), tuple(a.padding), tuple(a.lhs_dilation),
                              tuple(a.rhs_dilation), lanes)
        out = np.empty((batch, n_out, math.prod(a.out_spatial)), work)
        K.window_sum(out.size * k_taps // _WINDOW_SUM_WORK_PER_UNIT, y.view(real), table,
                     out.view(real))
    return out.reshape(batch, n_out, *a.out_spatial)


def _from_work(out, out_dt):
    """Work dtype -> the result type's compute domain (integers wrap in ``result``)."""
    if out_dt.kind == "bool":
        return out != 0
    if out_dt.kind in ("si", "ui") and out.dtype.kind == "f":
        return out.astype(np.int64)
    return out


# -- the spec's semantics, step by step (the test oracle) -------------------------------

def convolution_reference(lhs, rhs, window_strides=None, padding=None, lhs_dilation=None,
                          rhs_dilation=None, window_reversal=None, dimension_numbers=None,
                          feature_group_count=1, batch_group_count=1, precision_config=None,
                          preferred_element_type=None):
    """stablehlo.convolution exactly as the spec's "Semantics" section writes it: for
    each output spatial index, pad -> slice the window -> reverse -> dot_general; groups
    by split / recurse / concatenate. Same arguments and checks as ``convolution``;
    slow; the test oracle. Accumulates in int64 (integers, i1), or in the result type's
    compute type (floats, complex), after converting each element to the result type.

    One reading the spec's text needs: ``slice(padded_lhs, lhs_window_start,
    lhs_window_start + lhs_window_dimensions, lhs_window_dilations)`` would take
    ceil(k / d) elements per dim when rhs_dilation d > 1; the window has k taps d apart,
    so the limit is ``lhs_window_start + lhs_window_dimensions * lhs_window_dilations``
    (clamped to the padded size), as the StableHLO reference interpreter does.
    """
    op = "convolution"
    x, y = operands(op, lhs, rhs, names=["lhs", "rhs"])
    a = _attributes(op, x._dtype, x.shape, y._dtype, y.shape, window_strides, padding,
                    lhs_dilation, rhs_dilation, window_reversal, dimension_numbers,
                    feature_group_count, batch_group_count, precision_config,
                    preferred_element_type)
    acc = np.int64 if a.out_dt.kind in ("bool", "si", "ui") else a.out_dt.compute
    lhs_v = _operand_values(x, a.out_dt).astype(acc)
    rhs_v = _operand_values(y, a.out_dt).astype(acc)
    with np.errstate(all="ignore"):  # IEEE results (inf * 0 = NaN) are the spec's
        out = _reference(lhs_v, rhs_v, a, a.fgc, a.bgc)
    return result(_from_work(out, a.out_dt), a.out_dt)


def _reference(lhs, rhs, a, feature_group_count, batch_group_count):
    dn = a.dn
    if feature_group_count > 1:
        lhses = np.split(lhs, feature_group_count, dn.input_feature_dimension)
        rhses = np.split(rhs, feature_group_count, dn.kernel_output_feature_dimension)
        results = [_reference(lg, rg, a, 1, batch_group_count) for lg, rg in zip(lhses, rhses)]
        return np.concatenate(results, dn.output_feature_dimension)
    if batch_group_count > 1:
        lhses = np.split(lhs, batch_group_count, dn.input_batch_dimension)
        rhses = np.split(rhs, batch_group_count, dn.kernel_output_feature_dimension)
        results = [_reference(lg, rg, a, feature_group_count, 1) for lg, rg in zip(lhses, rhses)]
        return np.concatenate(results, dn.output_feature_dimension)

    rank = lhs.ndim

    def lhs_shape(n, hw, c):
        return _permute([n, *hw, c], [dn.input_batch_dimension, *dn.input_spatial_dimensions,
                                      dn.input_feature_dimension], rank)

    def result_shape(n1, hw, c1):
        return _permute([n1, *hw, c1], [dn.output_batch_dimension,
                                        *dn.output_spatial_dimensions,
                                        dn.output_feature_dimension], rank)

    lhs_window_dimensions = np.array(lhs_shape(
        lhs.shape[dn.input_batch_dimension], [rhs.shape[d] for d in dn.kernel_spatial_dimensions],
        lhs.shape[dn.input_feature_dimension]))
    lhs_window_strides = np.array(lhs_shape(1, a.strides, 1))
    lhs_padding = lhs_shape((0, 0), a.padding, (0, 0))
    lhs_base_dilations = np.array(lhs_shape(1, a.lhs_dilation, 1))
    lhs_window_dilations = np.array(lhs_shape(1, a.rhs_dilation, 1))

    padded_lhs = _pad(lhs, [p[0] for p in lhs_padding], [p[1] for p in lhs_padding],
                      lhs_base_dilations - 1)
    out_spatial = [_num_windows(lhs.shape[ld], rhs.shape[kd], st, lo, hi, bd, wd)
                   for ld, kd, st, (lo, hi), bd, wd in
                   zip(dn.input_spatial_dimensions, dn.kernel_spatial_dimensions, a.strides,
                       a.padding, a.lhs_dilation, a.rhs_dilation)]
    res = np.zeros(result_shape(lhs.shape[dn.input_batch_dimension], out_spatial,
                                rhs.shape[dn.kernel_output_feature_dimension]), lhs.dtype)
    reverse_dims = [dn.input_spatial_dimensions[d] for d in range(len(a.reversal))
                    if a.reversal[d]]
    for output_spatial_index in np.ndindex(*out_spatial):
        lhs_window_start = np.array(lhs_shape(0, output_spatial_index, 0)) * lhs_window_strides
        limit = [min(int(st) + int(w) * int(dl), n)  # (Python ints: dilations up to 2**63)
                 for st, w, dl, n in zip(lhs_window_start, lhs_window_dimensions,
                                         lhs_window_dilations, padded_lhs.shape)]
        lhs_window = padded_lhs[tuple(slice(s, e, d) for s, e, d in
                                      zip(lhs_window_start, limit, lhs_window_dilations))]
        reversed_lhs_window = np.flip(lhs_window, reverse_dims) if reverse_dims else lhs_window
        # dot_general(reversed_lhs_window, rhs, contracting = spatial + feature): the
        # result dims are lhs's free dim (batch) then rhs's (output feature)
        dot_product = _tensordot_ieee(
            reversed_lhs_window, rhs,
            axes=([*dn.input_spatial_dimensions, dn.input_feature_dimension],
                  [*dn.kernel_spatial_dimensions, dn.kernel_input_feature_dimension]))
        if dn.output_feature_dimension < dn.output_batch_dimension:
            dot_product = dot_product.T
        res[result_shape(slice(None), output_spatial_index, slice(None))] = dot_product
    return res


def _tensordot_ieee(a, b, axes):
    """np.tensordot without BLAS (the reference's products must be IEEE's: BLAS kernels
    may skip zero operands and lose the NaN of 0 * NaN and 0 * inf)."""
    ax_a, ax_b = list(axes[0]), list(axes[1])
    free_a = [d for d in range(a.ndim) if d not in ax_a]
    free_b = [d for d in range(b.ndim) if d not in ax_b]
    m = int(np.prod([a.shape[d] for d in free_a], dtype=np.int64))
    k = int(np.prod([a.shape[d] for d in ax_a], dtype=np.int64))
    n = int(np.prod([b.shape[d] for d in free_b], dtype=np.int64))
    a2 = np.transpose(a, free_a + ax_a).reshape(m, k)
    b2 = np.transpose(b, ax_b + free_b).reshape(k, n)
    out = (a2[:, :, None] * b2[None, :, :]).sum(axis=1)
    return out.reshape([a.shape[d] for d in free_a] + [b.shape[d] for d in free_b])


def _permute(values, permutation, rank):
    """The spec's permute: result[permutation[d]] = values[d]."""
    out = [None] * rank
    for d, p in enumerate(permutation):
        out[p] = values[d]
    return tuple(out)


def _pad(x, low, high, interior):
    """stablehlo.pad with a zero padding value: ``interior`` zeros between elements,
    then ``low``/``high`` zeros at the edges (negative values remove elements)."""
    shape = [0 if s == 0 else (s - 1) * (i + 1) + 1 for s, i in zip(x.shape, interior)]
    dilated = np.zeros(shape, x.dtype)
    dilated[tuple(slice(None, None, i + 1) for i in interior)] = x
    out = np.pad(dilated, [(max(lo, 0), max(hi, 0)) for lo, hi in zip(low, high)])
    return out[tuple(slice(max(-lo, 0), max(out.shape[d] - max(-hi, 0), max(-lo, 0)))
                     for d, (lo, hi) in enumerate(zip(low, high)))]


# ---------------------------------------------------------------------------------------
# XLA's ConvWithGeneralPadding and Conv
# ---------------------------------------------------------------------------------------

def conv_with_general_padding(lhs, rhs, window_strides, padding, feature_group_count=1,
                              batch_group_count=1, precision_config=None,
                              preferred_element_type=None, *, dimension_numbers=None):
    """XLA ConvWithGeneralPadding: ``convolution`` with strides and (low, high) padding
    only (no dilations); dims NCHW x OIHW -> NCHW unless ``dimension_numbers`` is given.

    >>> xo.conv_with_general_padding(x, w, [1, 1], [(1, 1), (1, 1)])
    """
    return _convolution("conv_with_general_padding", lhs, rhs, window_strides, padding, None,
                        None, None, dimension_numbers, feature_group_count, batch_group_count,
                        precision_config, preferred_element_type)


def conv(lhs, rhs, window_strides, padding, feature_group_count=1, batch_group_count=1,
         precision_config=None, preferred_element_type=None, *, rhs_dilation=None,
         dimension_numbers=None):
    """XLA Conv: ``convolution`` with ``padding`` "SAME" or "VALID" (or explicit pairs).
    SAME pads so that the output has ceil(in / stride) positions: total =
    max((ceil(in / stride) - 1) * stride + dilated_k - in, 0), low = total // 2,
    high = the rest; VALID pads nothing.

    >>> xo.conv(x, w, [1, 1], "SAME").shape == x.shape[:1] + w.shape[:1] + x.shape[2:]
    """
    op = "conv"
    if isinstance(padding, str):
        x, y = operands(op, lhs, rhs, names=["lhs", "rhs"])
        kind = padding.upper()
        check(kind in ("SAME", "VALID"), op, "I4",
              lambda: f"padding must be 'SAME', 'VALID' or (low, high) pairs, got {padding!r}")
        check(x.ndim == y.ndim and x.ndim >= 2, op, "C1",
              lambda: f"lhs and rhs must have the same rank >= 2, got "
                      f"{typestr(x._dtype, x.shape)} and {typestr(y._dtype, y.shape)}")
        dn = _dimension_numbers(op, dimension_numbers, x.ndim)
        n = x.ndim - 2
        strides = _spatial_ints(op, "I3", "C2", "C3", "window_strides", window_strides, n)
        rdil = _spatial_ints(op, "I6", "C7", "C8", "rhs_dilation", rhs_dilation, n)
        check(len(dn.input_spatial_dimensions) == n and len(dn.kernel_spatial_dimensions) == n
              and _dims_ok(dn.input_spatial_dimensions, x.ndim)
              and _dims_ok(dn.kernel_spatial_dimensions, y.ndim), op, "C12",
              lambda: f"dimension_numbers {dn} do not fit rank {x.ndim}")
        pads = []
        for st, rd, ld, kd in zip(strides, rdil, dn.input_spatial_dimensions,
                                  dn.kernel_spatial_dimensions):
            if kind == "VALID":
                pads.append((0, 0))
                continue
            size, k = x.shape[ld], y.shape[kd]
            dk = 0 if k == 0 else (k - 1) * rd + 1
            total = max((-(-size // st) - 1) * st + dk - size, 0)
            pads.append((total // 2, total - total // 2))
        padding = pads
        lhs, rhs = x, y
    return _convolution(op, lhs, rhs, window_strides, padding, None, rhs_dilation, None,
                        dimension_numbers, feature_group_count, batch_group_count,
                        precision_config, preferred_element_type)


# ---------------------------------------------------------------------------------------
# Gradients: both cotangents are convolutions (convolution is bilinear)
# ---------------------------------------------------------------------------------------

def _dilate_shape(sizes, dilation):
    return [0 if s == 0 else (s - 1) * d + 1 for s, d in zip(sizes, dilation)]


def _reshape_axis_out_of(src, size1, t):
    """Split dim ``src`` of size S into (size1, S / size1), in place."""
    from .movement import reshape
    shape = list(t.shape)
    shape[src:src + 1] = [size1, shape[src] // size1]
    return reshape(t, shape)


def _reshape_axis_into(src, dst, t):
    """Merge dim ``src`` into dim ``dst`` (numbered without ``src``) as its major part."""
    from .movement import reshape, transpose
    perm = [i for i in range(t.ndim) if i != src]
    perm.insert(dst, src)
    shape = [s for i, s in enumerate(t.shape) if i != src]
    shape[dst] *= t.shape[src]
    return reshape(transpose(t, perm), shape)


def _zeros(shape, dt):
    return _wrap(np.zeros(shape, dt.np), dt)


def convolution_grad_lhs(cotangent, rhs, lhs_shape, window_strides=None, padding=None,
                         lhs_dilation=None, rhs_dilation=None, window_reversal=None,
                         dimension_numbers=None, feature_group_count=1, batch_group_count=1,
                         precision_config=None):
    """The cotangent of ``lhs`` for ``convolution(lhs, rhs, <attributes>)``: a
    convolution of ``cotangent`` with the spatially reversed kernel, kernel input and
    output features swapped, window_strides and lhs_dilation swapped, and padding
    ``(dk - lo - 1, dilated_in + dk - 1 - dilated_out - (dk - lo - 1))`` with dk the
    dilated kernel size. Feature groups move into the kernel's input-feature dim; batch
    groups become feature groups of the transposed convolution (as jax.lax does).
    ``cotangent`` and ``rhs`` must have one element type.
    """
    op = "convolution"
    g, w = operands(op, cotangent, rhs, names=["cotangent", "rhs"])
    a = _attributes(op, g._dtype, tuple(lhs_shape), w._dtype, w.shape, window_strides, padding,
                    lhs_dilation, rhs_dilation, window_reversal, dimension_numbers,
                    feature_group_count, batch_group_count, precision_config, None)
    if g.size == 0 or math.prod(lhs_shape) == 0:
        return _zeros(tuple(lhs_shape), g._dtype)
    dn = a.dn
    groups = a.fgc
    if a.fgc > 1 or a.bgc > 1:
        groups = max(a.fgc, a.bgc)
        w = _reshape_axis_out_of(dn.kernel_output_feature_dimension, groups, w)
        w = _reshape_axis_into(dn.kernel_output_feature_dimension,
                               dn.kernel_input_feature_dimension, w)
    dk = _dilate_shape(a.k_spatial, a.rhs_dilation)
    din = _dilate_shape(a.in_spatial, a.lhs_dilation)
    dout = _dilate_shape([g.shape[d] for d in dn.output_spatial_dimensions], a.strides)
    before = [k - lo - 1 for k, (lo, _) in zip(dk, a.padding)]
    pads = [(b, i + k - 1 - o - b) for b, i, k, o in zip(before, din, dk, dout)]
    trans = ConvDimensionNumbers(
        dn.output_batch_dimension, dn.output_feature_dimension, dn.output_spatial_dimensions,
        dn.kernel_output_feature_dimension, dn.kernel_input_feature_dimension,
        dn.kernel_spatial_dimensions,
        dn.input_batch_dimension, dn.input_feature_dimension, dn.input_spatial_dimensions)
    out = convolution(g, w, window_strides=a.lhs_dilation, padding=pads,
                      lhs_dilation=a.strides, rhs_dilation=a.rhs_dilation,
                      window_reversal=[not r for r in a.reversal], dimension_numbers=trans,
                      feature_group_count=groups, precision_config=precision_config)
    if a.bgc > 1:
        out = _reshape_axis_out_of(dn.input_feature_dimension, a.bgc, out)
        out = _reshape_axis_into(dn.input_feature_dimension, dn.input_batch_dimension, out)
    return out


def convolution_grad_rhs(cotangent, lhs, rhs_shape, window_strides=None, padding=None,
                         lhs_dilation=None, rhs_dilation=None, window_reversal=None,
                         dimension_numbers=None, feature_group_count=1, batch_group_count=1,
                         precision_config=None):
    """The cotangent of ``rhs`` for ``convolution(lhs, rhs, <attributes>)``: a
    convolution of ``lhs`` (batch and feature roles swapped) with ``cotangent`` as the
    kernel (its batch dim contracted as input feature), window_strides and rhs_dilation
    swapped, padding (lo, dilated_out - dilated_in + dk - lo - 1); feature groups
    become batch groups and vice versa. Window reversal reverses the result.
    ``cotangent`` and ``lhs`` must have one element type.
    """
    op = "convolution"
    g, x = operands(op, cotangent, lhs, names=["cotangent", "lhs"])
    a = _attributes(op, x._dtype, x.shape, g._dtype, tuple(rhs_shape), window_strides, padding,
                    lhs_dilation, rhs_dilation, window_reversal, dimension_numbers,
                    feature_group_count, batch_group_count, precision_config, None)
    if g.size == 0 or x.size == 0:
        return _zeros(tuple(rhs_shape), g._dtype)
    dn = a.dn
    dk = _dilate_shape(a.k_spatial, a.rhs_dilation)
    din = _dilate_shape(a.in_spatial, a.lhs_dilation)
    dout = _dilate_shape([g.shape[d] for d in dn.output_spatial_dimensions], a.strides)
    pads = [(lo, o - i + k - lo - 1) for (lo, _), i, k, o in zip(a.padding, din, dk, dout)]
    trans = ConvDimensionNumbers(
        dn.input_feature_dimension, dn.input_batch_dimension, dn.input_spatial_dimensions,
        dn.output_batch_dimension, dn.output_feature_dimension, dn.output_spatial_dimensions,
        dn.kernel_input_feature_dimension, dn.kernel_output_feature_dimension,
        dn.kernel_spatial_dimensions)
    out = convolution(x, g, window_strides=a.rhs_dilation, padding=pads,
                      lhs_dilation=a.lhs_dilation, rhs_dilation=a.strides,
                      dimension_numbers=trans, feature_group_count=a.bgc,
                      batch_group_count=a.fgc, precision_config=precision_config)
    flips = [dn.kernel_spatial_dimensions[d] for d in range(len(a.reversal)) if a.reversal[d]]
    if flips:
        from .movement import reverse
        out = reverse(out, flips)
    return out
