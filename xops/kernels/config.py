"""The one place where Numba options are chosen (audited; no scattered fastmath).

* ``fastmath`` is never used: IEEE NaN/inf/signed-zero behaviour is part of the spec.
* ``error_model="numpy"``: no Python exception machinery inside kernels (integer
  division by zero is handled explicitly before it can happen, as the spec requires).
* ``cache=True`` by default (set ``XOPS_NUMBA_CACHE=0`` to turn it off). Serial and
  parallel variants of one loop get distinct qualified names so their cache index
  files never collide. If no cache directory is writable Numba raises at decoration
  time; we then fall back to compiling in memory instead of failing ``import xops``.
* Small inputs run the serial variant (a parallel region costs 2-50 us to enter);
  inputs with at least ``PARALLEL_THRESHOLD`` elements run the ``prange`` variant.
  Both variants compile lazily, on first use, so ``import xops`` stays fast.
"""

import glob
import hashlib
import os
import threading
import types

PARALLEL_THRESHOLD = int(os.environ.get("XOPS_PARALLEL_THRESHOLD", 1 << 16))
CACHE = os.environ.get("XOPS_NUMBA_CACHE", "1") != "0"
_OPTIONS = dict(nogil=True, error_model="numpy")


_checked_cache = False


def _drop_stale_cache():
    """Numba's cache notices edits to a kernel's own file only, not to helpers it calls
    in other files. So the in-tree cache is keyed on a hash of every kernel source: when
    any of them changes, every cached xops kernel is dropped (once per process)."""
    global _checked_cache
    _checked_cache = True
    here = os.path.dirname(os.path.abspath(__file__))
    digest = hashlib.sha1()
    for path in sorted(glob.glob(os.path.join(here, "*.py"))):
        with open(path, "rb") as f:
            digest.update(f.read())
    cache = os.path.join(here, "__pycache__")
    stamp = os.path.join(cache, "xops-kernels.sha1")
    try:
        with open(stamp) as f:
            if f.read() == digest.hexdigest():
                return
    except OSError:
        pass
    try:
        for path in glob.glob(os.path.join(cache, "*.nb[ic]")):
            os.remove(path)
        os.makedirs(cache, exist_ok=True)
        with open(stamp, "w") as f:
            f.write(digest.hexdigest())
    except OSError:
        pass  # read-only install: Numba uses its per-user cache, keyed on file stamps


def _skip_blas_probe():
    """Numba's first compile or cache load imports ``numba.np.arraymath``, whose import
    probes for BLAS with ``import scipy.linalg.cython_blas``: that imports all of
    scipy.linalg (~0.3 s, half of the main job's first cache load) to learn whether
    ``np.dot`` / ``np.vdot`` may use BLAS, and no xops kernel calls them. A one-shot
    import hook (:class:`_ArraymathImport`, installed here once, before the first
    dispatcher exists) answers that probe by finding the module's file instead (the same
    answer) when arraymath is imported, whenever that is: ``import xops`` imports
    neither. Numba's BLAS and LAPACK functions still import scipy.linalg, and check its
    integer width, when a kernel first uses one."""
    global _blas_probe_skipped
    _blas_probe_skipped = True
    import sys

    if "numba.np.arraymath" not in sys.modules:
        sys.meta_path.insert(0, _ArraymathImport())


def _find_blas():
    """numba.np.linalg.ensure_blas's answer without the import: ImportError unless
    scipy's cython_blas module is installed."""
    import importlib.util

    spec = importlib.util.find_spec("scipy")  # (finds the package, does not import it)
    dirs = (spec.submodule_search_locations or []) if spec is not None else []
    if not any(glob.glob(os.path.join(d, "linalg", "cython_blas.*")) for d in dirs):
        raise ImportError("scipy 0.16+ is required for linear algebra")


class _ArraymathImport:
    """A meta path finder for ``numba.np.arraymath`` alone, used once: the module
    executes with ``numba.np.linalg.ensure_blas`` replaced by :func:`_find_blas`, which
    is put back right after (arraymath calls it only while it is imported)."""

    def find_spec(self, name, path=None, target=None):
        if name != "numba.np.arraymath":
            return None
        import importlib.util
        import sys

        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass
        spec = importlib.util.find_spec(name)
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module

        def exec_module(module):
            from numba.np import linalg

            probe = getattr(linalg, "ensure_blas", None)
            if probe is None:  # another Numba: leave its probe alone
                return run(module)
            linalg.ensure_blas = _find_blas
            try:
                return run(module)
            finally:
                linalg.ensure_blas = probe

        loader.exec_module = exec_module
        return spec


_blas_probe_skipped = False


def _dispatcher(fn, parallel):
    import numba

    if not _blas_probe_skipped:
        _skip_blas_probe()
    if parallel:
        # a distinct function object and qualified name: Numba names the cache file after
        # the function's __qualname__ (taken from the original, not from the code object,
        # so kernels made from one code object under several names stay distinct)
        qualname = fn.__qualname__
        fn = types.FunctionType(
            fn.__code__, fn.__globals__, fn.__name__ + "_parallel", fn.__defaults__, fn.__closure__
        )
        fn.__qualname__ = qualname + "_parallel"
    disp = numba.njit(parallel=parallel, **_OPTIONS)(fn)
    if _cache_checked():
        try:
            disp.enable_caching()
        except RuntimeError:  # no writable cache location: compile in memory
            pass
    return disp


def renamed(fn, name, consts):
    """A copy of ``fn`` named ``name`` (its qualified name too: Numba names cache files
    after it) whose globals add ``consts``: compile-time constants of one variant of a
    kernel. The globals are a snapshot of fn's module: make variants at its end."""
    code = fn.__code__.replace(co_name=name)
    if hasattr(code, "co_qualname"):  # Python >= 3.11
        code = code.replace(co_qualname=name)
    new = types.FunctionType(code, {**fn.__globals__, **consts}, name, fn.__defaults__)
    new.__qualname__ = name
    new.__doc__ = fn.__doc__
    return new


def _cache_checked():
    """CACHE, after the once-per-process stale-cache check when caching is on."""
    if CACHE and not _checked_cache:
        _drop_stale_cache()
    return CACHE


def cfunc(signature, py_func):
    """A C entry point of ``py_func`` (``numba.cfunc``) with the kernels' options,
    cached like them (in memory where no cache location is writable)."""
    import numba

    if not _blas_probe_skipped:
        _skip_blas_probe()
    if _cache_checked():
        try:
            return numba.cfunc(signature, cache=True, **_OPTIONS)(py_func)
        except RuntimeError:  # no writable cache location: compile in memory
            pass
    return numba.cfunc(signature, **_OPTIONS)(py_func)


class Kernel:
    """A loop written once with ``prange``, compiled on demand as a serial and a
    parallel (``parallel=True``) variant. ``kernel(n, *args)`` runs the serial one
    when ``n < PARALLEL_THRESHOLD`` and the parallel one otherwise.

    The loop's race-free pattern must be stated in its docstring.
    """

    __slots__ = ("py_func", "_serial", "_parallel", "__name__")

    def __init__(self, py_func):
        self.py_func = py_func
        self._serial = None
        self._parallel = None
        self.__name__ = py_func.__name__

    @property
    def __doc__(self):
        return self.py_func.__doc__

    @property
    def serial(self):
        if self._serial is None:
            self._serial = _dispatcher(self.py_func, False)
        return self._serial

    @property
    def parallel(self):
        if self._parallel is None:
            self._parallel = _dispatcher(self.py_func, True)
        return self._parallel

    def __call__(self, n, *args):
        if n < PARALLEL_THRESHOLD:
            return self.serial(*args)
        if _layer_threadsafe:
            return self.parallel(*args)
        with _launch_lock:  # see _note_layer
            out = self.parallel(*args)
            _note_layer()
        return out


# Numba's "workqueue" threading layer (its fallback where neither TBB nor OpenMP loads)
# must not run two parallel regions at once: concurrent launches from several Python
# threads abort the process. Until the first parallel launch tells which layer runs,
# and for good if it is workqueue, launches are serialised by this lock; with the omp
# or tbb layer (thread-safe) they run concurrently, lock-free.
_launch_lock = threading.Lock()
_layer_threadsafe = False


def _note_layer():
    global _layer_threadsafe
    import numba

    try:
        _layer_threadsafe = numba.threading_layer() in ("omp", "tbb")
    except ValueError:  # not initialised (cannot happen after a launch)
        pass


def kernel(py_func):
    """Decorator: make a :class:`Kernel` from a prange loop."""
    return Kernel(py_func)


def scalar(py_func):
    """Decorator for scalar helpers called from kernels (compiled into their callers).

    Inlined at Numba's IR level (``inline="always"``): the callers' compile-time constant
    op codes then prune the helpers' other branches before typing. Measured against
    ``inline="never"`` (helpers compiled once and left to LLVM to inline; 2026-11-25,
    first calls of batch norm, its gradient, max pool, its gradient and a reduce on the
    main job's shapes, empty cache, load ~11): no compile time saved (196 s vs 188 s in
    all) and slower kernels (batch_norm_grad 203 vs 128 us, select_and_scatter 227 vs
    140 us), so the helpers stay inlined."""
    import numba

    return numba.njit(inline="always", **_OPTIONS)(py_func)
