"""CUDA kernel of XLA's Dot (``xo.dot``): the CPU op's own body, whose only check is on
the operands' ranks (types only) and which then calls ``dot_general`` with lhs's last
and rhs's first dimension contracted. ``dot_general`` is a primitive that dispatches by
device, so on CUDA operands it runs the device GEMM (:mod:`.linalg`) with the same
constraint checks (errors relabelled to ``dot`` as on the CPU); nothing moves to the
host."""

from ...ops.linalg import dot as _dot_op

__all__ = ["KERNELS"]


def dot(lhs, rhs, precision_config=None, preferred_element_type=None):
    return _dot_op.kernels["cpu"](lhs, rhs, precision_config, preferred_element_type)


KERNELS = {"dot": dot}
