"""Registered methods; importing this package fills the registry."""

from . import catalog as _catalog  # noqa: F401  (registers every recipe)
from .auto import choose
from .registry import MethodInfo, get_method, methods, register

__all__ = ["MethodInfo", "choose", "get_method", "methods", "register"]
