"""One-line docstrings for the array API functions of ``xops.numpy`` that the standard
defines and that have none beside their code; each points at the standard's entry.

``fill`` runs once when ``xops.numpy`` is imported and sets ``__doc__`` only where it is
empty, so a docstring written beside a function always wins. tests/test_api_docs.py checks
that every public function ends up with one.
"""

_SPEC = "Array API standard 2024.12: ``{}``. Promotion and deviations: docs/numpy.md."

NAMESPACE = {
    "__array_namespace_info__": "The namespace's inspection object: capabilities, default "
    "dtypes, the dtypes per kind, and the one device (CPU).",
    "finfo": "Machine limits (bits, eps, max, min, smallest_normal, dtype) of a "
    "floating-point dtype or array.",
    "iinfo": "Machine limits (bits, max, min, dtype) of an integer dtype or array.",
    "matmul": "Matrix product of ``x1`` and ``x2`` with NumPy's rules for 1-D operands and "
    "broadcast batch dimensions (``x1 @ x2``).",
    "tensordot": "Sum of products over the last ``axes`` dimensions of ``x1`` and the first of "
    "``x2`` (or the given pairs of axes).",
    "abs": "Absolute value, element-wise (the modulus for complex numbers).",
    "acos": "Inverse cosine, element-wise.",
    "acosh": "Inverse hyperbolic cosine, element-wise.",
    "add": "``x1 + x2``, element-wise.",
    "asin": "Inverse sine, element-wise.",
    "asinh": "Inverse hyperbolic sine, element-wise.",
    "atan": "Inverse tangent, element-wise.",
    "atan2": "The angle of the point (``x2``, ``x1``), element-wise, in [-pi, pi].",
    "atanh": "Inverse hyperbolic tangent, element-wise.",
    "bitwise_and": "Bitwise AND of integer or boolean arrays, element-wise.",
    "bitwise_invert": "Bitwise NOT of an integer or boolean array, element-wise.",
    "bitwise_left_shift": "``x1 << x2`` for integers, element-wise (shifts >= the bit width "
    "give 0).",
    "bitwise_or": "Bitwise OR of integer or boolean arrays, element-wise.",
    "bitwise_right_shift": "``x1 >> x2`` for integers, element-wise (arithmetic for signed types).",
    "bitwise_xor": "Bitwise XOR of integer or boolean arrays, element-wise.",
    "ceil": "The smallest integer-valued number >= x, element-wise (integers unchanged).",
    "conj": "Complex conjugate, element-wise (real arrays unchanged).",
    "copysign": "The magnitude of ``x1`` with the sign of ``x2``, element-wise.",
    "cos": "Cosine, element-wise.",
    "cosh": "Hyperbolic cosine, element-wise.",
    "equal": "``x1 == x2``, element-wise, as a boolean array.",
    "exp": "e to the power x, element-wise.",
    "expm1": "exp(x) - 1, element-wise, accurate for small x.",
    "floor": "The largest integer-valued number <= x, element-wise (integers unchanged).",
    "greater": "``x1 > x2``, element-wise, as a boolean array.",
    "greater_equal": "``x1 >= x2``, element-wise, as a boolean array.",
    "hypot": "sqrt(x1**2 + x2**2), element-wise, without undue overflow or underflow.",
    "isfinite": "Whether each element is finite (not infinite, not NaN).",
    "isinf": "Whether each element is positive or negative infinity.",
    "isnan": "Whether each element is NaN.",
    "less": "``x1 < x2``, element-wise, as a boolean array.",
    "less_equal": "``x1 <= x2``, element-wise, as a boolean array.",
    "log": "Natural logarithm, element-wise.",
    "log1p": "log(1 + x), element-wise, accurate for small x.",
    "log2": "Base-2 logarithm, element-wise.",
    "log10": "Base-10 logarithm, element-wise.",
    "logaddexp": "log(exp(x1) + exp(x2)), element-wise, without overflow.",
    "logical_and": "Logical AND of boolean arrays, element-wise.",
    "logical_not": "Logical NOT of a boolean array, element-wise.",
    "logical_or": "Logical OR of boolean arrays, element-wise.",
    "logical_xor": "Logical XOR of boolean arrays, element-wise.",
    "minimum": "The smaller of ``x1`` and ``x2``, element-wise (NaN if either is NaN).",
    "multiply": "``x1 * x2``, element-wise.",
    "negative": "``-x``, element-wise.",
    "nextafter": "The next representable floating-point value after ``x1`` towards ``x2``, "
    "element-wise.",
    "not_equal": "``x1 != x2``, element-wise, as a boolean array.",
    "positive": "``+x``, element-wise (a new array with the same values).",
    "pow": "``x1 ** x2``, element-wise.",
    "reciprocal": "1 / x, element-wise.",
    "sign": "The sign of each element: -1, 0 or 1 (x / |x| for complex numbers).",
    "signbit": "Whether the sign bit of each element is set (True for -0.0).",
    "sin": "Sine, element-wise.",
    "sinh": "Hyperbolic sine, element-wise.",
    "sqrt": "Square root, element-wise.",
    "square": "``x * x``, element-wise.",
    "subtract": "``x1 - x2``, element-wise.",
    "tan": "Tangent, element-wise.",
    "tanh": "Hyperbolic tangent, element-wise.",
    "trunc": "The integer-valued number nearest to x towards zero, element-wise.",
    "arange": "Evenly spaced values in the half-open interval [start, stop) with ``step``.",
    "empty": "A new array of ``shape`` (its values unspecified; xops fills zeros).",
    "empty_like": "A new array with the shape (and by default the dtype) of ``x``; values "
    "unspecified (xops fills zeros).",
    "eye": "A 2-D array with ones on diagonal ``k`` and zeros elsewhere.",
    "full": "A new array of ``shape`` filled with ``fill_value``.",
    "full_like": "A new array with the shape (and by default the dtype) of ``x``, filled with "
    "``fill_value``.",
    "linspace": "``num`` evenly spaced values from ``start`` to ``stop`` (included unless "
    "``endpoint=False``).",
    "meshgrid": 'Coordinate matrices from coordinate vectors (``indexing`` "xy" or "ij").',
    "ones": "A new array of ``shape`` filled with ones.",
    "ones_like": "A new array with the shape (and by default the dtype) of ``x``, filled with "
    "ones.",
    "tril": "The lower triangle of (each matrix in) ``x``: elements above diagonal ``k`` zeroed.",
    "triu": "The upper triangle of (each matrix in) ``x``: elements below diagonal ``k`` zeroed.",
    "zeros": "A new array of ``shape`` filled with zeros.",
    "zeros_like": "A new array with the shape (and by default the dtype) of ``x``, filled with "
    "zeros.",
    "broadcast_arrays": "The arrays broadcast against each other to one shape.",
    "broadcast_to": "``x`` broadcast to ``shape``.",
    "concat": "The arrays joined along an existing ``axis`` (flattened first if ``axis`` is None).",
    "flip": "``x`` with the order of elements reversed along ``axis`` (all axes if None).",
    "matrix_transpose": "``x`` with its last two dimensions swapped.",
    "moveaxis": "``x`` with the axes ``source`` moved to the positions ``destination``.",
    "permute_dims": "``x`` with its dimensions permuted by ``axes``.",
    "repeat": "Each element of ``x`` repeated ``repeats`` times along ``axis`` (flattened "
    "if None).",
    "reshape": "``x`` with a new ``shape`` and the same elements in row-major order.",
    "roll": "``x`` with its elements shifted by ``shift`` along ``axis`` (wrapping around).",
    "squeeze": "``x`` without the size-1 dimensions ``axis``.",
    "take_along_axis": "Elements of ``x`` picked by ``indices`` along ``axis``.",
    "tile": "``x`` repeated ``repetitions`` times along each dimension.",
    "unstack": "The slices of ``x`` along ``axis``, as a tuple of arrays.",
    "all": "Whether all elements (along ``axis``) are true.",
    "any": "Whether any element (along ``axis``) is true.",
    "argmin": "The index of the first smallest element (along ``axis``).",
    "argsort": "The indices that sort ``x`` along ``axis`` (stable; ``descending`` optional).",
    "count_nonzero": "The number of non-zero elements (along ``axis``).",
    "cumulative_prod": "Cumulative product along ``axis`` (``include_initial`` prepends 1).",
    "cumulative_sum": "Cumulative sum along ``axis`` (``include_initial`` prepends 0).",
    "diff": "The ``n``-th forward difference along ``axis`` (with optional ``prepend`` / "
    "``append``).",
    "min": "The smallest element (along ``axis``); NaN if any element is NaN.",
    "nonzero": "The indices of the non-zero elements, one array per dimension.",
    "prod": "The product of the elements (along ``axis``).",
    "searchsorted": "The indices at which the values ``x2`` would be inserted into the sorted "
    '1-D ``x1`` (``side`` "left" or "right").',
    "std": "The standard deviation (along ``axis``) with ``correction`` degrees of freedom.",
    "sum": "The sum of the elements (along ``axis``).",
    "unique_counts": "The unique elements of ``x`` and how often each occurs.",
    "unique_inverse": "The unique elements of ``x`` and the indices that rebuild ``x`` from them.",
    "unique_values": "The unique elements of ``x``, sorted.",
    "where": "Elements of ``x1`` where ``condition`` is true, else of ``x2`` (broadcast).",
}

LINALG = {
    "cholesky": "The Cholesky factor of (each) symmetric/Hermitian positive-definite matrix: "
    "lower, or upper with ``upper=True``.",
    "cross": "The cross product of 3-element vectors along ``axis``.",
    "det": "The determinant of (each) square matrix.",
    "diagonal": "The diagonal ``offset`` of (each) matrix in ``x``.",
    "eigh": "Eigenvalues (ascending) and eigenvectors of (each) symmetric/Hermitian matrix.",
    "eigvals": "The eigenvalues of (each) square matrix.",
    "eigvalsh": "The eigenvalues (ascending) of (each) symmetric/Hermitian matrix.",
    "inv": "The inverse of (each) square matrix.",
    "matrix_norm": 'The matrix norm ``ord`` ("fro", "nuc", 1, 2, inf, ...) of (each) matrix.',
    "matrix_power": "(Each) square matrix raised to the integer power ``n`` (negative: of "
    "the inverse).",
    "matrix_rank": "The rank of (each) matrix: singular values above ``rtol`` times the largest.",
    "outer": "The outer product of two vectors.",
    "pinv": "The Moore-Penrose pseudo-inverse of (each) matrix.",
    "qr": 'The QR decomposition of (each) matrix (``mode`` "reduced" or "complete").',
    "slogdet": "The sign and the natural log of the absolute determinant of (each) matrix.",
    "svd": "The singular value decomposition U, S, Vh of (each) matrix.",
    "svdvals": "The singular values of (each) matrix, descending.",
    "trace": "The sum along the diagonal ``offset`` of (each) matrix.",
    "vector_norm": "The vector norm ``ord`` over ``axis`` (all elements if None).",
}

FFT = {
    "fft": "One-dimensional discrete Fourier transform along ``axis``.",
    "ifft": "One-dimensional inverse discrete Fourier transform along ``axis``.",
    "fftn": "N-dimensional discrete Fourier transform over ``axes``.",
    "ifftn": "N-dimensional inverse discrete Fourier transform over ``axes``.",
    "rfft": "One-dimensional discrete Fourier transform of a real signal (the non-negative "
    "frequencies).",
    "irfft": "Inverse of ``rfft``: a real signal of length ``n`` from its non-negative "
    "frequencies.",
    "rfftn": "N-dimensional discrete Fourier transform of a real signal.",
    "irfftn": "Inverse of ``rfftn``.",
    "ihfft": "Inverse discrete Fourier transform of a real signal with Hermitian symmetry.",
    "fftfreq": "The sample frequencies of an ``n``-point ``fft`` with sample spacing ``d``.",
    "rfftfreq": "The sample frequencies of an ``n``-point ``rfft`` with sample spacing ``d``.",
    "fftshift": "``x`` with the zero-frequency term moved to the centre along ``axes``.",
    "ifftshift": "The inverse of ``fftshift``.",
}


def fill(namespace, table, prefix=""):
    """Set ``__doc__`` of each function named in ``table`` that has none in ``namespace``."""
    for name, line in table.items():
        fn = namespace[name]
        if not (fn.__doc__ or "").strip():
            fn.__doc__ = line + "\n\n" + _SPEC.format(prefix + name)
