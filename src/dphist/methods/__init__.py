"""Registered methods; importing this package fills the registry.

``dphist.methods.list_methods()`` lists them, ``get_method(name)`` finds one,
``choose(n, epsilon, ...)`` picks one for ``method="auto"``.
"""

from . import catalog  # registers every recipe
from .advisor import choose
from .registry import MethodInfo, get_method, list_methods, register

__all__ = ["MethodInfo", "catalog", "choose", "get_method", "list_methods", "register"]
