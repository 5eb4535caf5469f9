"""Privacy budgets that outlive the process: a durable, race-free ledger per data set.

A :class:`BudgetStore` keeps one budget per data set (pure epsilon-DP or rho-zCDP) in
one SQLite file (the default, in the per-user data folder or ``$DPHIST_BUDGET_STORE``)
or in a PostgreSQL database shared by a team. Every release is charged first, in a
synced transaction, and recorded after its files are written; the charges form a hash
chain that is checked before anything is charged. See docs/budget.md.

>>> import dphist as dh
>>> store = dh.BudgetStore("budgets.sqlite")               # doctest: +SKIP
>>> census = store.create("census-2030", epsilon=4)       # doctest: +SKIP
>>> with dh.Session(counts, budget=census) as s:          # doctest: +SKIP
...     rel = s.publish("H", epsilon=0.5)                 # charged to census first
"""

from .backend import default_location
from .budget import (
    Entry,
    Grant,
    Status,
    StoredBudget,
    release_digest,
    session_budget,
    stored_cost,
)
from .store import BudgetStore, checked_name

__all__ = [
    "BudgetStore",
    "Entry",
    "Grant",
    "Status",
    "StoredBudget",
    "checked_name",
    "default_location",
    "release_digest",
    "session_budget",
    "stored_cost",
]
