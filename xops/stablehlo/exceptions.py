"""The exceptions of the StableHLO runner, at the bottom of ``xops.stablehlo``.

Every module of the package (the executor, the checks, the handlers) raises these, so
they live here and import nothing of the package; ``xops.stablehlo`` and
``xops.stablehlo.executor`` re-export them.

* :class:`OpNotImplemented`: the program uses an op whose ``xo.*`` function does not
  exist yet;
* :class:`Unsupported`: a feature the executor does not run (``reason`` says which);
* :class:`CheckFailure`: a ``check.expect_*`` op of the program failed;
* :class:`LoadError`: a program file that is missing, unreadable or not UTF-8 text (a
  :class:`xops.SpecError`).
"""

from ..errors import SpecError

__all__ = ["OpNotImplemented", "Unsupported", "CheckFailure", "LoadError"]


class OpNotImplemented(NotImplementedError):
    """The program uses an op whose xops function does not exist yet."""

    def __init__(self, xo_name, op_name=None):
        self.xo_name = xo_name
        self.op_name = op_name or xo_name
        super().__init__(f"op not implemented in xops yet: xo.{xo_name} (for {self.op_name})")


class Unsupported(NotImplementedError):
    """A feature the StableHLO executor does not run yet (``reason`` says which)."""

    def __init__(self, reason):
        self.reason = reason
        super().__init__(reason)


class CheckFailure(AssertionError):
    """A ``check.expect_*`` op of the program failed."""


class LoadError(SpecError):
    """A program file that is missing, unreadable or not UTF-8 text."""

    def __init__(self, message):
        super().__init__("stablehlo.load", "", message)
