"""Pretty forms -> generic forms: the attributes a pretty-printed op gets so that it
matches its generic form (spec names: ``iota_dimension``, ``dot_dimension_numbers``,
``window_strides``, ...), and its declared result types.

The parser reads a pretty op's pieces in one loop (operands, ``key = value`` pairs, bare
words, literals, regions, types); :func:`normalize` then renames and restructures them.
"""

import re

from .ir import DenseAttr, EnumAttr, StructAttr, SymbolRef

__all__ = ["normalize", "result_types", "conv_fields"]


# ---------------------------------------------------------------------------------------
# Convolution dimension labels
# ---------------------------------------------------------------------------------------


def conv_fields(lhs, rhs, out, error=ValueError):
    """The spec's ConvDimensionNumbers fields from the layouts ``[b, 0, 1, f]``
    (input), ``[0, 1, i, o]`` (kernel) and ``[b, 0, 1, f]`` (output): the position of
    each label; spatial dims are numbered 0, 1, ... in every layout."""

    def find(layout, label, what):
        if layout.count(label) != 1:
            raise error(f"the {what} layout {layout} must contain {label!r} exactly once")
        return layout.index(label)

    def spatial(layout, what, n):
        pos = {}
        for i, d in enumerate(layout):
            if isinstance(d, int):
                if d in pos:
                    raise error(f"spatial dim {d} appears twice in the {what} layout {layout}")
                pos[d] = i
        if sorted(pos) != list(range(len(pos))) or (n is not None and len(pos) != n):
            raise error(f"the {what} layout {layout} must number its spatial dims 0..n-1")
        return [pos[d] for d in range(len(pos))]

    fields = {
        "input_batch_dimension": find(lhs, "b", "input"),
        "input_feature_dimension": find(lhs, "f", "input"),
        "input_spatial_dimensions": spatial(lhs, "input", None),
        "kernel_input_feature_dimension": find(rhs, "i", "kernel"),
        "kernel_output_feature_dimension": find(rhs, "o", "kernel"),
        "output_batch_dimension": find(out, "b", "output"),
        "output_feature_dimension": find(out, "f", "output"),
    }
    n = len(fields["input_spatial_dimensions"])
    fields["kernel_spatial_dimensions"] = spatial(rhs, "kernel", n)
    fields["output_spatial_dimensions"] = spatial(out, "output", n)
    return fields


# ---------------------------------------------------------------------------------------
# Pretty forms -> the generic form's attributes
# ---------------------------------------------------------------------------------------

_RENAME = {
    "stablehlo.iota": {"dim": "iota_dimension"},
    "stablehlo.dynamic_iota": {"dim": "iota_dimension"},
    "stablehlo.broadcast_in_dim": {"dims": "broadcast_dimensions"},
    "stablehlo.dynamic_broadcast_in_dim": {"dims": "broadcast_dimensions"},
    "stablehlo.broadcast": {"sizes": "broadcast_sizes"},
    "stablehlo.transpose": {"dims": "permutation"},
    "stablehlo.reverse": {"dims": "dimensions"},
    "stablehlo.concatenate": {"dim": "dimension"},
    "stablehlo.get_dimension_size": {"dim": "dimension"},
    "stablehlo.set_dimension_size": {"dim": "dimension"},
    "stablehlo.dynamic_slice": {"sizes": "slice_sizes"},
    "stablehlo.pad": {
        "low": "edge_padding_low",
        "high": "edge_padding_high",
        "interior": "interior_padding",
    },
    "stablehlo.fft": {"type": "fft_type", "length": "fft_length"},
    "stablehlo.rng": {"distribution": "rng_distribution"},
    "stablehlo.rng_bit_generator": {"algorithm": "rng_algorithm"},
    "stablehlo.dot_general": {"precision": "precision_config"},
    "stablehlo.dot": {"precision": "precision_config"},
    "stablehlo.convolution": {"dim_numbers": "dimension_numbers"},
    "stablehlo.sort": {"dim": "dimension"},
    "stablehlo.all_gather": {"dim": "all_gather_dim"},
    "stablehlo.reduce_scatter": {"dim": "scatter_dimension"},
}


# Ops whose pretty form is ``name dense<...> : type`` (the type belongs to the literal).
_CONSTANT_LIKE = (
    "stablehlo.constant",
    "chlo.constant",
    "check.expect_eq_const",
    "check.expect_almost_eq_const",
)


def normalize(op, positional, extra):
    """Give a pretty-form op the attributes (and operand order) of its generic form."""
    name = op.name
    for old, new in _RENAME.get(name, {}).items():
        if old in op.attrs:
            op.attrs[new] = op.attrs.pop(old)
    a = op.attrs
    if name == "stablehlo.compare" or name == "chlo.broadcast_compare":
        if positional:
            a["comparison_direction"] = EnumAttr(positional[0], "comparison_direction")
        if len(positional) > 1:
            a["compare_type"] = EnumAttr(positional[1], "comparison_type")
    elif name in _CONSTANT_LIKE:
        if positional:
            a["value"] = positional[0]
    elif name in ("func.call", "call"):
        a["callee"] = positional[0]
    elif name == "stablehlo.custom_call":
        if positional and isinstance(positional[0], SymbolRef):
            a.setdefault("call_target_name", positional[0].name)
    elif name == "stablehlo.composite":
        if positional:
            a.setdefault("name", positional[0])
    elif name == "stablehlo.get_tuple_element":
        if "index" in extra:
            a["index"] = extra["index"]
    elif name == "stablehlo.slice" and "slice" in extra:
        ents = extra["slice"]
        a["start_indices"] = [e[0] for e in ents]
        a["limit_indices"] = [e[1] for e in ents]
        a["strides"] = [e[2] if len(e) > 2 else 1 for e in ents]
    elif name == "stablehlo.reduce_precision" and "format" in a:
        m = re.fullmatch(r"e([0-9]+)m([0-9]+)", str(a.pop("format")))
        a["exponent_bits"], a["mantissa_bits"] = int(m.group(1)), int(m.group(2))
    elif name == "stablehlo.dot_general":
        fields = {}
        for key, (l_name, r_name) in (
            ("batching_dims", ("lhs_batching_dimensions", "rhs_batching_dimensions")),
            ("contracting_dims", ("lhs_contracting_dimensions", "rhs_contracting_dimensions")),
        ):
            if key in a:
                v = a.pop(key)
                if not (isinstance(v, tuple) and v[0] == "x"):
                    raise ValueError(f"{key} must be '[...] x [...]'")
                fields[l_name], fields[r_name] = v[1], v[2]
        if fields or "dot_dimension_numbers" not in a:
            for f in (
                "lhs_batching_dimensions",
                "rhs_batching_dimensions",
                "lhs_contracting_dimensions",
                "rhs_contracting_dimensions",
            ):
                fields.setdefault(f, [])
            a["dot_dimension_numbers"] = StructAttr("dot", fields)
    elif name == "stablehlo.convolution" or name == "stablehlo.dynamic_conv":
        w = a.pop("window", None)
        if isinstance(w, dict):
            for old, new in (
                ("stride", "window_strides"),
                ("pad", "padding"),
                ("lhs_dilate", "lhs_dilation"),
                ("rhs_dilate", "rhs_dilation"),
                ("reverse", "window_reversal"),
            ):
                if old in w:
                    a[new] = w.pop(old)
            if w:
                raise ValueError(f"unknown window fields {sorted(w)}")
        if isinstance(a.get("dimension_numbers"), dict):
            a["dimension_numbers"] = StructAttr("conv", a["dimension_numbers"])
    elif name == "stablehlo.reduce":
        pairs = extra.get("reduce_pairs")
        if pairs:
            op.operands = [p[0] for p in pairs] + [p[1] for p in pairs] + op.operands
        if "applies" in extra:
            a["applies"] = extra["applies"]
    elif name == "chlo.scan":
        n_in = extra.get("num_inputs", len(op.operands))
        a["operandSegmentSizes"] = [n_in, len(op.operands) - n_in]
    if name not in ("stablehlo.compare", "chlo.broadcast_compare") and positional:
        # Other pretty forms' bare words and literals, kept for the handler.
        a.setdefault("_positional", positional)


def result_types(op, types):
    """The declared result types of a pretty op from its type section: a function
    type gives them directly; a type list ``t`` or ``t1, ..., tn`` gives the last
    len(results) types (or the one type for every result: SameOperandsAndResultType)."""
    operand_types, ts = types
    n = len(op.results)
    if operand_types is not None:
        return list(ts)
    if op.name in _CONSTANT_LIKE and not ts:
        v = op.attrs.get("value")
        return [v.type] * n if isinstance(v, DenseAttr) else []
    if n == 0:
        op.operand_types = list(ts) if ts else None
        return []
    if len(ts) >= n:
        if op.name == "stablehlo.while" or op.name == "stablehlo.optimization_barrier":
            op.operand_types = list(ts)
        return list(ts[-n:])
    if len(ts) == 1:
        return [ts[0]] * n
    return list(ts)
