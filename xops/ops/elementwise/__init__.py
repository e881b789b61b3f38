"""Elementwise ops: StableHLO's unary and binary elementwise ops, select, clamp,
compare, complex/real/imag, and XLA's Erf and Tan.

Each op lists the element types the spec accepts ((I1)/(I2) labels) and checks that
operands have one type and one shape ((C1)). A Python scalar operand is weak: it takes
the other operand's element type and broadcasts like a 0-d value, as in ``jax.lax``.
Tensors of different shapes are an error here; the Python operators broadcast
NumPy-style through ``broadcast_in_dim`` first.

Where the work runs (measured in benchmarks/, written down in docs/kernels.md):
NumPy ufuncs for the ops whose NumPy semantics equal the spec's; Numba kernels
(``xops.kernels.elementwise``) for integer divide/remainder/power/shifts/clz,
IEEE-754-2019 maximum/minimum and round_nearest_afz.

Autodiff: every op is a ``@primitive``; the gradient rule of each float/complex op sits
right below it, written with xops ops (so rules record too and higher orders work).
Conventions, all those of ``jax.vjp`` of the matching ``jax.lax`` op:

* complex: no conjugation in linear maps; a holomorphic f sends g back as g * f'(z).
  real -> complex(g, 0); imag -> complex(0, -g); complex(lhs, rhs) -> (real(g), -imag(g));
  abs of complex -> complex(g) * conj(x) / |x| (0 at x = 0).
* kinks: abs'(0) = +1; maximum/minimum split a tie evenly (g/2 each, -0 vs +0 is a tie);
  clamp sends g to the operand only strictly inside (min, max), to min only where
  x < min < max, to max only where x > max (so at x == min or x == max nobody gets it);
  remainder is (g, -g * trunc(lhs / rhs)); power's exponent reads log(0) as 0.
* piecewise-constant float ops (sign, floor, ceil, round_*) give zeros; integer and
  boolean results (compare, is_finite, popcnt, ...) never record a node.

Where each op lives (one block per op: public function, checks, implementation, gradient
rule right below):

* :mod:`.arithmetic`: abs, negate, sign, rounding, is_finite, real/imag/complex, add ...
  minimum, compare, select, clamp, and the dispatch fast-path registrations;
* :mod:`.transcendental`: exp/log families, logistic, roots, trigonometry, erf, power, atan2;
* :mod:`.bitwise`: not, and, or, xor, popcnt, count_leading_zeros, shifts;
* :mod:`._base`: the shared operand checks and evaluation helpers.
"""

from . import arithmetic, bitwise, transcendental
from .arithmetic import *  # noqa: F403
from .bitwise import *  # noqa: F403
from .transcendental import *  # noqa: F403

__all__ = [*arithmetic.__all__, *transcendental.__all__, *bitwise.__all__]
