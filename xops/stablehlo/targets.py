"""``stablehlo.custom_call`` targets of JAX programs that are computations, not checks.

* ``@ApproxTopK`` (``jax.lax.approx_max_k``/``approx_min_k``): on CPU XLA computes it
  exactly, as here;
* ``@lapack_<t><routine>_ffi``: JAX's CPU lowering of ``jnp.linalg`` (:mod:`.lapack`).

The checks and annotations (``@check.*``, ``@shape_assertion``, ``@Sharding``...) are
in :mod:`.checks`; targets registered with ``xo.register_custom_call`` come last.
"""

import xops as xo

from ..errors import SpecError
from .handlers import _function, _results, call_xo, to_int
from .ir import SymbolRef
from .lapack import LAPACK_TARGETS
from .table import TARGETS as _TABLE

__all__ = ["TARGETS"]


def _approx_top_k(ctx, op, args):
    """N inputs, N init values, the comparator in ``called_computations``, options in
    ``mhlo.backend_config``: sort along ``reduction_dim`` by the comparator (stably),
    keep the first ``top_k``."""
    cfg = op.attrs.get("mhlo.backend_config")
    called = op.attrs.get("called_computations") or []
    if not isinstance(cfg, dict) or "top_k" not in cfg or len(called) != 1 or len(args) % 2:
        raise SpecError(
            op.name,
            "",
            "@ApproxTopK needs N inputs, N init values, one "
            "called computation and mhlo.backend_config.top_k",
        )
    inputs = list(args[: len(args) // 2])
    k, dim = to_int(cfg["top_k"]), to_int(cfg.get("reduction_dim", -1))
    dim = dim % inputs[0].ndim
    name = called[0].name if isinstance(called[0], SymbolRef) else str(called[0])
    cmp = _function(ctx, name, vectorised=True)
    out = call_xo("sort", op.name, inputs, dimension=dim, is_stable=True, comparator=cmp)
    out = list(out) if isinstance(out, (list, tuple)) else [out]
    limits = [list(t.shape) for t in out]
    for lim in limits:
        lim[dim] = k
    return _results(
        op, [xo.slice(t, [0] * t.ndim, lim, [1] * t.ndim) for t, lim in zip(out, limits)]
    )


TARGETS = {"ApproxTopK": _approx_top_k}
TARGETS.update(LAPACK_TARGETS)
_TABLE.update(TARGETS)  # what stablehlo.custom_call looks up (xops/stablehlo/table.py)
