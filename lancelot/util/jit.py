"""numba kernels that cost nothing until they are first called.

Importing numba takes 0.3-0.5 s and compiling a kernel up to seconds (on an empty
cache: a fresh install, a new Spark executor, a container).  ``njit`` here is
``numba.njit`` made lazy: decorating records the function and returns a
``LazyKernel``; the first call of any lazy kernel imports numba, turns every
recorded function into a real dispatcher (same options: ``cache=True`` keeps the
on-disk cache) and rebinds the module globals that named the lazy kernels to the
dispatchers, so kernels calling kernels compile as plain numba code.  Until then
a process that only opens files and takes a few rows (numpy paths,
miniblock_points / fsst small-input paths) never imports numba.

``lazy_intrinsic(module, name)`` is the same for a numba ``@intrinsic`` (which cannot be
defined without importing numba): a placeholder the kernels name as a global, replaced by
the real intrinsic from ``module`` when numba is loaded, before any kernel compiles.

``compiled(kernel)`` says whether a kernel already has a machine-code
specialization in this process (the take paths use it to choose numpy for a few
rows while the kernel would still have to be loaded or compiled).  A path that
keeps running its numpy formulation (``NumpyUntilHot``: ``HOT_CALLS`` calls) has the
kernel compiled, or loaded from the cache, on a background thread with the
arguments of a real call, and switches to it once it is ready: short scripts never
pay for numba, long-running processes end up on the kernels.
"""

from __future__ import annotations

import importlib
import sys
import threading
from collections.abc import Callable
from typing import Any, Generic, ParamSpec, TypeVar

_P = ParamSpec("_P")
_R = TypeVar("_R")

_KERNELS: list[LazyKernel[..., Any]] = []
_INTRINSICS: list[LazyIntrinsic] = []
_LOCK = threading.RLock()
#: set once numba has been imported by a lazy kernel (tests read it)
state = {"numba_loaded": False}


class LazyKernel(Generic[_P, _R]):
    """A function to be compiled by ``numba.njit(**options)`` on first use (typed as that function)."""

    def __init__(self, fn: Callable[_P, _R], options: dict[str, Any]) -> None:
        self.py_func = fn
        self.options = options
        self.dispatcher: Any = None
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__doc__ = fn.__doc__
        self.__module__ = fn.__module__

    def __call__(self, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        d = self.dispatcher
        if d is None:
            d = _materialize(self)
        result: _R = d(*args, **kwargs)
        return result

    def __repr__(self) -> str:
        state = "compiled on first call" if self.dispatcher is None else "dispatcher"
        return f"<lazy numba kernel {self.__module__}.{self.__qualname__} ({state})>"


def njit(**options: Any) -> Callable[[Callable[_P, _R]], LazyKernel[_P, _R]]:
    """``numba.njit(**options)``, deferred to the first call (see the module docstring)."""

    def wrap(fn: Callable[_P, _R]) -> LazyKernel[_P, _R]:
        kernel = LazyKernel(fn, options)
        with _LOCK:
            _KERNELS.append(kernel)
        return kernel

    return wrap


class LazyIntrinsic:
    """A numba intrinsic defined in ``module`` (imported with numba, see ``lazy_intrinsic``)."""

    def __init__(self, module: str, name: str) -> None:
        self.module = module
        self.name = name
        self.real: Any = None

    def __call__(self, *args: object) -> Any:
        raise RuntimeError(f"{self.module}.{self.name} is a numba intrinsic: callable only from a kernel")

    def __repr__(self) -> str:
        return f"<lazy numba intrinsic {self.module}.{self.name}>"


def lazy_intrinsic(module: str, name: str) -> LazyIntrinsic:
    """A placeholder for the intrinsic ``module.name``, bound when numba is loaded."""
    lazy = LazyIntrinsic(module, name)
    with _LOCK:
        _INTRINSICS.append(lazy)
    return lazy


def _materialize(kernel: LazyKernel[..., Any]) -> Any:
    """Give every recorded kernel its dispatcher and rebind module globals to them."""
    with _LOCK:
        if kernel.dispatcher is None:
            import numba

            state["numba_loaded"] = True
            for lazy in _INTRINSICS:
                if lazy.real is None:
                    lazy.real = getattr(importlib.import_module(lazy.module), lazy.name)
            fresh = [k for k in _KERNELS if k.dispatcher is None]
            for k in fresh:
                k.dispatcher = numba.njit(**k.options)(k.py_func)
            # rebind every lancelot module global naming a lazy kernel (the kernels' own
            # modules and those that imported them by name): numba resolves globals at compile time
            for name, module in list(sys.modules.items()):
                if not name.startswith("lancelot") or module is None:
                    continue
                namespace = vars(module)
                for attr, value in list(namespace.items()):
                    if isinstance(value, LazyKernel) and value.dispatcher is not None:
                        namespace[attr] = value.dispatcher
                    elif isinstance(value, LazyIntrinsic) and value.real is not None:
                        namespace[attr] = value.real
        return kernel.dispatcher


#: numpy calls of a path before its kernel is prepared in the background
HOT_CALLS = 32
#: bytes a large-input path (a scan's FSST decode, variable-width joins) runs through numpy before its
#: kernels are prepared: about what preparing them costs (numba's import and cache load, ~0.5-1 s of
#: CPU on a warm cache, at ~3 ms per MB of numpy FSST output), so that one full read of a big table
#: in a fresh process stays in numpy and a process that keeps reading ends up on the kernels
WARM_WORK = 256 << 20
_WARMING: set[int] = set()
_THREADS: list[threading.Thread] = []


def warm_in_background(key: object, warm: Callable[[], object]) -> threading.Thread | None:
    """Run ``warm`` (real kernel calls on copies of a real call's arguments: the kernels compile,
    or load from the cache, for exactly those types) on a daemon thread, once per ``key``."""
    with _LOCK:
        if id(key) in _WARMING:
            return None
        _WARMING.add(id(key))

    def run() -> None:
        try:
            warm()
        except Exception:  # only a warm-up: the calls that use the kernel report problems
            pass

    t = threading.Thread(target=run, name="lancelot-jit-warm-up", daemon=True)
    _THREADS.append(t)
    t.start()
    return t


def wait_for_warm_ups(timeout: float | None = None) -> None:
    """Wait until every background kernel preparation started so far has finished (benchmarks)."""
    for t in list(_THREADS):
        t.join(timeout)


class NumpyUntilHot:
    """Counts a path's numpy calls and starts the kernels' background preparation when it gets hot."""

    def __init__(self, *kernels: LazyKernel[..., Any], warm_work: int | None = None) -> None:
        self.kernels = kernels
        self.calls = 0
        self.work = 0  # the numpy calls' total ``work`` (bytes, rows: what the path counts)
        self.warm_work = warm_work  # prepare the kernels once this much work went through numpy
        self.thread: threading.Thread | None = None  # the background preparation, once started
        self._ready = False  # once loaded, a kernel stays loaded

    def ready(self) -> bool:
        if self._ready:
            return True
        self._ready = all(compiled(k) for k in self.kernels)
        return self._ready

    def numpy_call(self, warm: Callable[[], object], work: int = 0) -> None:
        """Record a numpy call doing ``work``; on the ``HOT_CALLS``-th call, or once the work reaches
        ``warm_work``, ``warm()`` runs in the background (few large calls cost as much as many small ones)."""
        self.calls += 1
        self.work += work
        if self.thread is None and (
            self.calls >= HOT_CALLS or (self.warm_work is not None and self.work >= self.warm_work)
        ):
            self.thread = warm_in_background(self, warm)


def compiled(kernel: Any) -> bool:
    """True when ``kernel`` (lazy or a dispatcher) has machine code loaded in this process."""
    if isinstance(kernel, LazyKernel):
        kernel = kernel.dispatcher
    return kernel is not None and bool(getattr(kernel, "overloads", None))  # (``signatures`` costs ~20 us)
