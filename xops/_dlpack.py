"""The DLPack ABI as ctypes structures, shared by the CPU interop (:mod:`xops._interop`)
and the CUDA one (:mod:`xops.kernels.cuda.interop`).

Layouts follow ``dlpack.h`` (v1.1): ``DLTensor``, the legacy ``DLManagedTensor``
(capsule name ``"dltensor"``, renamed ``"used_dltensor"`` by the consumer) and
``DLManagedTensorVersioned`` (``"dltensor_versioned"``). Type codes: kDLInt 0, kDLUInt 1,
kDLFloat 2, kDLBfloat 4, kDLComplex 5, kDLBool 6, and DLPack 1.1's float8 codes 7-14.
"""

import ctypes

import numpy as np

__all__ = ["CPU", "CUDA", "CUDA_MANAGED", "NARROW_CODES", "CODE_NAMES", "capsule_name"]

CPU = 1  # kDLCPU
CUDA = 2  # kDLCUDA
CUDA_MANAGED = 13  # kDLCUDAManaged
INT, UINT, FLOAT, BFLOAT, COMPLEX, BOOL = 0, 1, 2, 4, 5, 6
# DLPack 1.1 type codes of the narrow floats (bits 8, bf16 16), as PyTorch uses them
NARROW_CODES = {
    "bf16": BFLOAT,
    "f8E3M4": 7,
    "f8E4M3": 8,
    "f8E4M3B11FNUZ": 9,
    "f8E4M3FN": 10,
    "f8E4M3FNUZ": 11,
    "f8E5M2": 12,
    "f8E5M2FNUZ": 13,
    "f8E8M0FNU": 14,
}
CODE_NAMES = {c: n for n, c in NARROW_CODES.items()}
UINT_OF = {1: np.uint8, 2: np.uint16}  # the unsigned view of a narrow type, by size
READ_ONLY = 1  # DLPACK_FLAG_BITMASK_READ_ONLY
KIND_CODES = {"b": BOOL, "i": INT, "u": UINT, "f": FLOAT, "c": COMPLEX}  # NumPy kind -> code


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("version", DLPackVersion),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", DLTensor),
    ]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [
        ("dl_tensor", DLTensor),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
    ]


# Private function objects (not ctypes.pythonapi's shared ones, whose argtypes are global)
_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi)
)
_get_name = ctypes.PYFUNCTYPE(ctypes.c_char_p, ctypes.py_object)(
    ("PyCapsule_GetName", ctypes.pythonapi)
)


def capsule_name(capsule):
    """A capsule's name (bytes; None when it has none)."""
    return _get_name(capsule)


def managed(capsule):
    """``(struct, versioned)``: the DLManagedTensor(Versioned) inside a not yet consumed
    DLPack capsule (a BufferError for anything else)."""
    name = _get_name(capsule)
    if name == b"dltensor_versioned":
        return DLManagedTensorVersioned.from_address(_get_pointer(capsule, name)), True
    if name == b"dltensor":
        return DLManagedTensor.from_address(_get_pointer(capsule, name)), False
    raise BufferError(f"from_dlpack: not a DLPack capsule (name {name!r}), or one already consumed")


def dl_tensor(capsule):
    """The DLTensor inside a (not yet consumed) DLPack capsule."""
    return managed(capsule)[0].dl_tensor


def export_code(dt, typ):
    """``(code, bits)`` of DLPack's element type for xops DType ``dt`` (``typ``: the
    tensor's type string, for messages); a BufferError for the types DLPack has not."""
    if dt.quantized:
        raise BufferError(
            f"__dlpack__: quantized {typ} has no DLPack element type; "
            f"export xo.uniform_dequantize(t) or the storage values "
            f"xo.bitcast_convert(t, {dt.storage_type.name!r})"
        )
    code = NARROW_CODES.get(dt.name)
    kind = np.dtype(dt.np).kind
    if code is None and kind not in KIND_CODES:  # ml_dtypes' other types (kind 'V')
        raise BufferError(
            f"__dlpack__: {typ} has no DLPack element type (DLPack has no "
            f"i2/i4/ui2/ui4, f4 or f6); convert with xo.convert first"
        )
    return (KIND_CODES[kind] if code is None else code), 8 * dt.itemsize


def import_name(dtype):
    """The xops element type name of a DLDataType (a BufferError for one xops lacks)."""
    code, bits, lanes = dtype.code, dtype.bits, dtype.lanes
    name = None
    if lanes == 1:
        if code in CODE_NAMES:
            name = CODE_NAMES[code] if bits == (16 if code == BFLOAT else 8) else None
        elif code == BOOL:
            name = "i1" if bits == 8 else None
        elif code in (INT, UINT) and bits in (8, 16, 32, 64):
            name = f"{'si' if code == INT else 'ui'}{bits}"
        elif code == FLOAT and bits in (16, 32, 64):
            name = f"f{bits}"
        elif code == COMPLEX and bits in (64, 128):
            name = f"complex<f{bits // 2}>"
    if name is None:
        raise BufferError(
            f"from_dlpack: DLPack element type (code {code}, bits {bits}, lanes {lanes}) "
            f"has no xops element type"
        )
    return name
