"""The op table the executor reads, filled by the handler modules as they are imported.

``OPS`` maps an op name (``"stablehlo.add"``) to its handler ``handler(ctx, op, args)``;
``XO_NAMES`` to the ``xo.*`` functions it needs (for status tables); ``ELEMENTWISE``
holds the ops whose 0-d operands are broadcast inside vectorised bodies;
``TERMINATORS`` the ops that end a block; ``TARGETS`` maps a ``stablehlo.custom_call``
target to its handler. The handler modules (:mod:`.handlers`, :mod:`.collectives`,
:mod:`.chlo`, :mod:`.targets`) sit above this module and :func:`register` into it;
``xops/stablehlo/__init__.py`` imports them all, so the table is full before any
program runs, and the executor imports none of them.
"""

from .. import registry

__all__ = ["OPS", "XO_NAMES", "ELEMENTWISE", "TERMINATORS", "TARGETS", "register"]

OPS = {}
XO_NAMES = {}  # op name -> the xo functions it needs (for status tables)
ELEMENTWISE = set()
TERMINATORS = {"func.return", "return", "stablehlo.return", "chlo.return", "mhlo.return"}
TARGETS = {}  # custom_call target -> handler (ApproxTopK, LAPACK; see .targets)


def register(name, handler, needs=(), elementwise=False):
    """Op ``name`` runs ``handler(ctx, op, args)``, which calls the ``xo`` functions
    ``needs``; ``elementwise``: its 0-d operands broadcast inside vectorised bodies."""
    OPS[name] = handler
    XO_NAMES[name] = tuple(needs)
    for fn in needs:  # the op registry lists, per op, the StableHLO ops that run it
        d = registry._BY_NAME.get(fn)
        if d is not None and name not in d.handlers:
            d.handlers.append(name)
    if elementwise:
        ELEMENTWISE.add(name)
