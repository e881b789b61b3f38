"""The public API contract: every op of the spec is xo.<name>, and every op that takes
tensors is a tape primitive (an op that is not would silently cut gradients)."""

import inspect

import pytest

import xops as xo
from xops import registry

# Every op of the StableHLO spec (seed 004), Python keywords with a trailing underscore.
SPEC_OPS = """abs add after_all all_gather all_reduce all_to_all and_ atan2 batch_norm_grad
batch_norm_inference batch_norm_training bitcast_convert broadcast_in_dim case cbrt ceil
cholesky clamp collective_broadcast collective_permute compare complex concatenate constant
convert convolution cosine count_leading_zeros custom_call divide dot_general dynamic_slice
dynamic_update_slice exponential exponential_minus_one fft floor gather get_dimension_size
get_tuple_element if_ imag infeed iota is_finite log log_plus_one logistic map maximum
minimum multiply negate not_ optimization_barrier or_ outfeed pad partition_id popcnt power
real recv reduce reduce_precision reduce_scatter reduce_window remainder replica_id reshape
reverse rng rng_bit_generator round_nearest_afz round_nearest_even rsqrt scatter select
select_and_scatter send shift_left shift_right_arithmetic shift_right_logical sign sine
slice sort sqrt subtract tan tanh transpose triangular_solve tuple uniform_dequantize
uniform_quantize while_ xor composite""".split()

# XLA-only ops of seeds 000-003.
XLA_OPS = """broadcast collapse dot erf top_k rng_uniform rng_normal call conditional
set_dimension_size conv conv_with_general_padding cross_replica_sum rng_bernoulli
composite_call""".split()

# Not implemented yet, each with the issue that brings it (none left).
PENDING = {}


def test_every_name_is_declared_once_in_the_registry():
    # one declaration per op: the public function is the registry's, under every name
    for name in SPEC_OPS + XLA_OPS:
        d = registry.get(name)
        assert getattr(xo, d.public) is d.fn, name
        assert d.spec == ("xla" if name in XLA_OPS else "stablehlo"), (name, d.spec)
    spec = {d.public for d in registry.ops() if d.spec == "stablehlo"}
    assert spec == set(SPEC_OPS), spec ^ set(SPEC_OPS)


@pytest.mark.parametrize(
    "d", [d for d in registry.ops() if d.spec in ("stablehlo", "xla")], ids=lambda d: d.name
)
def test_ops_taking_tensors_are_primitives(d):
    """Every op records on the tape (itself, or the primitive core it calls), unless its
    declaration says it is not a primitive: a composite that runs bodies the user passes
    (their ops record themselves) or an op that takes no tensors."""
    if d.primitive or d.core is not None:
        assert hasattr(d.core or d.fn, "op_name")
        return
    params = inspect.signature(d.fn).parameters
    runs_bodies = any(
        w in p for p in params for w in ("body", "computation", "branch", "cond", "decomposition")
    )
    takes_no_tensor = d.name in ("replica_id", "partition_id", "create_token", "recv", "infeed")
    assert runs_bodies or takes_no_tensor, (
        f"xo.{d.public} is not a @primitive: it would cut gradients silently"
    )
