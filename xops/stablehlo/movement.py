"""Handlers of the spec's data-movement ops: iota, reshape, broadcast, transpose,
reverse, slice, concatenate, pad, dynamic_slice / dynamic_update_slice, the
dimension-size ops, gather and scatter, with their ``dynamic_*`` variants. Each maps the
op's MLIR attributes to the arguments of ``xo.<name>`` (see :func:`.handlers.call_xo`)
and registers into the table the executor reads (xops/stablehlo/table.py).
"""

from .handlers import body_of, call_xo, ints, tensor_ints, to_int
from .ir import StructAttr
from .table import register as _register


def _output_shape(ctx, op, args, i, name):
    """The result shape of iota, reshape and broadcast_in_dim: their result type's, or
    in their ``dynamic_*`` forms the 1-D operand ``i`` (the spec's ``name``)."""
    if op.name.startswith("stablehlo.dynamic_"):
        return tensor_ints(args[i], name)
    return ctx.result_shape()


def _iota(ctx, op, args):
    dimension = to_int(op.attrs.get("iota_dimension"))
    shape = _output_shape(ctx, op, args, 0, "output_shape")
    return call_xo("iota", op.name, dimension, shape, ctx.result_dtype())


def _reshape(ctx, op, args):
    return call_xo("reshape", op.name, args[0], _output_shape(ctx, op, args, 1, "output_shape"))


def _broadcast_in_dim(ctx, op, args):
    dims = ints(op.attrs.get("broadcast_dimensions", []))
    shape = _output_shape(ctx, op, args, 1, "output_dimensions")
    return call_xo("broadcast_in_dim", op.name, args[0], dims, shape)


for _name, _h in (("iota", _iota), ("reshape", _reshape), ("broadcast_in_dim", _broadcast_in_dim)):
    _register(f"stablehlo.{_name}", _h, [_name])
    _register(f"stablehlo.dynamic_{_name}", _h, [_name])


def _broadcast(ctx, op, args):
    return call_xo("broadcast", op.name, args[0], ints(op.attrs.get("broadcast_sizes")))


_register("stablehlo.broadcast", _broadcast, ["broadcast"])


def _transpose(ctx, op, args):
    return call_xo("transpose", op.name, args[0], ints(op.attrs.get("permutation")))


def _reverse(ctx, op, args):
    return call_xo("reverse", op.name, args[0], ints(op.attrs.get("dimensions")))


def _concatenate(ctx, op, args):
    return call_xo("concatenate", op.name, list(args), to_int(op.attrs.get("dimension")))


def _static_and_dynamic(name, attrs, leading):
    """The handlers of ``xo.<name>`` as a static op and as its dynamic twin, whose
    integer-list attributes ``attrs`` are the 1-D tensor operands after the first
    ``leading`` ones (slice / real_dynamic_slice, pad / dynamic_pad)."""

    def static(ctx, op, args):
        values = [ints(op.attrs.get(a)) for a in attrs]
        return call_xo(name, op.name, *args[:leading], *values)

    def dynamic(ctx, op, args):
        values = [tensor_ints(args[leading + i], a) for i, a in enumerate(attrs)]
        return call_xo(name, op.name, *args[:leading], *values)

    static.__name__, dynamic.__name__ = f"run_{name}", f"run_dynamic_{name}"
    return static, dynamic


_slice, _real_dynamic_slice = _static_and_dynamic(
    "slice", ("start_indices", "limit_indices", "strides"), leading=1
)
_pad, _dynamic_pad = _static_and_dynamic(
    "pad", ("edge_padding_low", "edge_padding_high", "interior_padding"), leading=2
)


def _dynamic_slice(ctx, op, args):
    return call_xo(
        "dynamic_slice", op.name, args[0], list(args[1:]), ints(op.attrs.get("slice_sizes"))
    )


def _dynamic_update_slice(ctx, op, args):
    return call_xo("dynamic_update_slice", op.name, args[0], args[1], list(args[2:]))


def _get_dimension_size(ctx, op, args):
    return call_xo("get_dimension_size", op.name, args[0], to_int(op.attrs.get("dimension")))


def _set_dimension_size(ctx, op, args):
    return call_xo(
        "set_dimension_size", op.name, args[0], args[1], to_int(op.attrs.get("dimension"))
    )


for _name, _h, _needs in (
    ("transpose", _transpose, ["transpose"]),
    ("reverse", _reverse, ["reverse"]),
    ("slice", _slice, ["slice"]),
    ("real_dynamic_slice", _real_dynamic_slice, ["slice"]),
    ("concatenate", _concatenate, ["concatenate"]),
    ("pad", _pad, ["pad"]),
    ("dynamic_pad", _dynamic_pad, ["pad"]),
    ("dynamic_slice", _dynamic_slice, ["dynamic_slice"]),
    ("dynamic_update_slice", _dynamic_update_slice, ["dynamic_update_slice"]),
    ("get_dimension_size", _get_dimension_size, ["get_dimension_size"]),
    ("set_dimension_size", _set_dimension_size, ["set_dimension_size"]),
):
    _register(f"stablehlo.{_name}", _h, _needs)


def _gather_kwargs(dn, slice_sizes, sorted_):
    f = dn.fields if isinstance(dn, StructAttr) else dict(dn or {})
    kw = dict(
        offset_dims=ints(f.get("offset_dims", [])),
        collapsed_slice_dims=ints(f.get("collapsed_slice_dims", [])),
        start_index_map=ints(f.get("start_index_map", [])),
        index_vector_dim=to_int(f.get("index_vector_dim", 0)),
        slice_sizes=slice_sizes,
        indices_are_sorted=bool(sorted_),
    )
    opt = dict(
        operand_batching_dims=ints(f.get("operand_batching_dims", [])),
        start_indices_batching_dims=ints(f.get("start_indices_batching_dims", [])),
    )
    return kw, opt


def _gather(ctx, op, args):
    a = op.attrs
    kw, opt = _gather_kwargs(
        a.get("dimension_numbers"), ints(a.get("slice_sizes")), a.get("indices_are_sorted", False)
    )
    return call_xo("gather", op.name, args[0], args[1], optional=opt, **kw)


def _dynamic_gather(ctx, op, args):
    a = op.attrs
    kw, opt = _gather_kwargs(
        a.get("dimension_numbers"),
        tensor_ints(args[2], "slice_sizes"),
        a.get("indices_are_sorted", False),
    )
    return call_xo("gather", op.name, args[0], args[1], optional=opt, **kw)


def _scatter(ctx, op, args):
    a = op.attrs
    n = (len(args) - 1) // 2
    inputs, indices, updates = list(args[:n]), args[n], list(args[n + 1 :])
    dn = a.get("scatter_dimension_numbers")
    f = dn.fields if isinstance(dn, StructAttr) else {}
    kw = dict(
        update_window_dims=ints(f.get("update_window_dims", [])),
        inserted_window_dims=ints(f.get("inserted_window_dims", [])),
        scatter_dims_to_operand_dims=ints(f.get("scatter_dims_to_operand_dims", [])),
        index_vector_dim=to_int(f.get("index_vector_dim", 0)),
        indices_are_sorted=bool(a.get("indices_are_sorted", False)),
        unique_indices=bool(a.get("unique_indices", False)),
        update_computation=body_of(ctx, 0, operands=args),
    )
    opt = dict(
        input_batching_dims=ints(f.get("input_batching_dims", [])),
        scatter_indices_batching_dims=ints(f.get("scatter_indices_batching_dims", [])),
    )
    return call_xo(
        "scatter",
        op.name,
        inputs if n > 1 else inputs[0],
        indices,
        updates if n > 1 else updates[0],
        optional=opt,
        **kw,
    )


_register("stablehlo.gather", _gather, ["gather"])
_register("stablehlo.dynamic_gather", _dynamic_gather, ["gather"])
_register("stablehlo.scatter", _scatter, ["scatter"])
