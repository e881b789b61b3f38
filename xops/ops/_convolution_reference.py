"""The spec's semantics of stablehlo.convolution step by step (pad, slice, reverse,
dot_general per output position, split/concatenate for groups): the test oracle of
:mod:`xops.ops.convolution`, written with NumPy only and the spec's variable names.
"""

import numpy as np

from ._convolution_attrs import (
    _attribute_values,
    _attributes,
    _from_work,
    _num_windows,
    _operand_values,
)
from ._core import operands, result


def convolution_reference(lhs, rhs, *attributes, **named_attributes):
    """stablehlo.convolution exactly as the spec's "Semantics" section writes it: for
    each output spatial index, pad -> slice the window -> reverse -> dot_general; groups
    by split / recurse / concatenate. Same arguments (the attributes positional or by
    name, with the same defaults) and checks as ``convolution``; slow; the test oracle.
    Accumulates in int64 (integers, i1), or in the result type's compute type (floats,
    complex), after converting each element to the result type.

    One reading the spec's text needs: ``slice(padded_lhs, lhs_window_start,
    lhs_window_start + lhs_window_dimensions, lhs_window_dilations)`` would take
    ceil(k / d) elements per dim when rhs_dilation d > 1; the window has k taps d apart,
    so the limit is ``lhs_window_start + lhs_window_dimensions * lhs_window_dilations``
    (clamped to the padded size), as the StableHLO reference interpreter does.
    """
    op = "convolution"
    x, y = operands(op, lhs, rhs, names=["lhs", "rhs"])
    attributes = _attribute_values(attributes, named_attributes)
    a = _attributes(op, x._dtype, x.shape, y._dtype, y.shape, *attributes)
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
        return _permute(
            [n, *hw, c],
            [dn.input_batch_dimension, *dn.input_spatial_dimensions, dn.input_feature_dimension],
            rank,
        )

    def result_shape(n1, hw, c1):
        return _permute(
            [n1, *hw, c1],
            [dn.output_batch_dimension, *dn.output_spatial_dimensions, dn.output_feature_dimension],
            rank,
        )

    lhs_window_dimensions = np.array(
        lhs_shape(
            lhs.shape[dn.input_batch_dimension],
            [rhs.shape[d] for d in dn.kernel_spatial_dimensions],
            lhs.shape[dn.input_feature_dimension],
        )
    )
    lhs_window_strides = np.array(lhs_shape(1, a.strides, 1))
    lhs_padding = lhs_shape((0, 0), a.padding, (0, 0))
    lhs_base_dilations = np.array(lhs_shape(1, a.lhs_dilation, 1))
    lhs_window_dilations = np.array(lhs_shape(1, a.rhs_dilation, 1))

    padded_lhs = _pad(
        lhs, [p[0] for p in lhs_padding], [p[1] for p in lhs_padding], lhs_base_dilations - 1
    )
    out_spatial = [
        _num_windows(lhs.shape[ld], rhs.shape[kd], st, lo, hi, bd, wd)
        for ld, kd, st, (lo, hi), bd, wd in zip(
            dn.input_spatial_dimensions,
            dn.kernel_spatial_dimensions,
            a.strides,
            a.padding,
            a.lhs_dilation,
            a.rhs_dilation,
        )
    ]
    res = np.zeros(
        result_shape(
            lhs.shape[dn.input_batch_dimension],
            out_spatial,
            rhs.shape[dn.kernel_output_feature_dimension],
        ),
        lhs.dtype,
    )
    reverse_dims = [dn.input_spatial_dimensions[d] for d in range(len(a.reversal)) if a.reversal[d]]
    for output_spatial_index in np.ndindex(*out_spatial):
        lhs_window_start = np.array(lhs_shape(0, output_spatial_index, 0)) * lhs_window_strides
        limit = [
            min(int(st) + int(w) * int(dl), n)  # (Python ints: dilations up to 2**63)
            for st, w, dl, n in zip(
                lhs_window_start, lhs_window_dimensions, lhs_window_dilations, padded_lhs.shape
            )
        ]
        lhs_window = padded_lhs[
            tuple(slice(s, e, d) for s, e, d in zip(lhs_window_start, limit, lhs_window_dilations))
        ]
        reversed_lhs_window = np.flip(lhs_window, reverse_dims) if reverse_dims else lhs_window
        # dot_general(reversed_lhs_window, rhs, contracting = spatial + feature): the
        # result dims are lhs's free dim (batch) then rhs's (output feature)
        dot_product = _tensordot_ieee(
            reversed_lhs_window,
            rhs,
            axes=(
                [*dn.input_spatial_dimensions, dn.input_feature_dimension],
                [*dn.kernel_spatial_dimensions, dn.kernel_input_feature_dimension],
            ),
        )
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
    return out[
        tuple(
            slice(max(-lo, 0), max(out.shape[d] - max(-hi, 0), max(-lo, 0)))
            for d, (lo, hi) in enumerate(zip(low, high))
        )
    ]
