"""numba on demand: ``@njit`` that imports and compiles only when first called.

Importing numba takes a few hundred milliseconds and creating a dispatcher for every
kernel more, so ``import dphist`` loads neither: :func:`njit` wraps each kernel in a
:class:`LazyDispatcher`, which makes numba's dispatcher (and imports numba) the first
time the kernel runs. Compiled code calling another kernel sees the wrapper as that
kernel's dispatcher (a ``typeof`` registration, made before any compilation and also
offered to numba as a ``numba_extensions`` entry point), so kernels call each other
exactly as plain numba functions do, and ``cache=True`` keeps its on-disk cache.
Setup that needs numba itself (``@overload`` definitions) registers with
:func:`on_load`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

__all__ = ["LazyDispatcher", "load", "njit", "on_load"]

_numba: Any = None
_hooks: list[Callable[[], None]] = []
_registered = False


class LazyDispatcher:
    """A kernel compiled with ``numba.njit(**options)`` on first use."""

    def __init__(self, py_func: Callable, options: dict[str, Any]):
        self.py_func = py_func
        self._options = options
        self._dispatcher: Any = None
        self.__name__ = py_func.__name__
        self.__qualname__ = py_func.__qualname__
        self.__module__ = py_func.__module__
        self.__doc__ = py_func.__doc__
        self.__wrapped__ = py_func

    def dispatcher(self) -> Any:
        """numba's dispatcher for the kernel (imports numba the first time)."""
        d = self._dispatcher
        if d is None:
            d = self._dispatcher = load().njit(**self._options)(self.py_func)
        return d

    def __call__(self, *args: Any) -> Any:
        d = self._dispatcher
        return (d if d is not None else self.dispatcher())(*args)

    def __getattr__(self, name: str) -> Any:  # signatures, overloads, ...
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.dispatcher(), name)

    def __repr__(self) -> str:
        return f"<lazily compiled kernel {self.__module__}.{self.__qualname__}>"


def njit(*args: Any, **options: Any) -> Any:
    """``numba.njit`` (bare or with options), compiled on first call."""
    if args and callable(args[0]) and len(args) == 1 and not options:
        return LazyDispatcher(args[0], {})
    if args:
        raise TypeError("dphist's njit takes keyword options only (no signatures)")

    def wrap(func: Callable) -> LazyDispatcher:
        return LazyDispatcher(func, options)

    return wrap


def register_numba() -> None:
    """Type :class:`LazyDispatcher` as its dispatcher inside compiled code (numba's
    ``numba_extensions`` ``init`` entry point calls this too)."""
    global _registered
    if _registered:
        return
    from numba.core import types
    from numba.extending import typeof_impl

    @typeof_impl.register(LazyDispatcher)
    def _typeof(val: LazyDispatcher, c: Any) -> Any:
        return types.Dispatcher(val.dispatcher())

    _registered = True


def load() -> Any:
    """Import numba, register the wrapper type and run the :func:`on_load` hooks."""
    global _numba
    if _numba is None:
        import numba

        _numba = numba
        _ready()
    return _numba


def _ready() -> None:
    register_numba()
    while _hooks:
        _hooks.pop(0)()


def on_load(hook: Callable[[], None]) -> None:
    """Run ``hook`` once numba is imported (at once if it already is)."""
    _hooks.append(hook)
    if "numba" in sys.modules:
        _ready()


if "numba" in sys.modules:  # numba already imported: registering costs nothing
    register_numba()
