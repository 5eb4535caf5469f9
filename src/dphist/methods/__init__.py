"""Registered methods; importing this package fills the registry."""

from . import catalog as _catalog  # noqa: F401  (registers every recipe)
from .registry import MethodInfo, get_method, methods, register

__all__ = ["MethodInfo", "get_method", "methods", "register"]
