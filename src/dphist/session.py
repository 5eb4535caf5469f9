"""Publishing: one-shot :func:`publish` and :class:`Session` for several releases.

A session seals the true counts in the kernel and owns one budget cap. Each
release reserves its epsilon from the session (refused at once if it does not fit),
runs its method's blocks through the kernel and returns a :class:`Release`.

Noise modes: ``rng=None`` draws secure noise from the operating system (releases are
private); an int seed or a ``numpy.random.Generator`` gives reproducible noise for
experiments, and every release made with it has ``private=False``.

``method="auto"`` spends ``auto_share`` of the release's epsilon or rho (default
:data:`~dphist.methods.selector.DEFAULT_SHARE`, 0 for public facts only) on a noisy
total and the noisy records in the fullest tenth of the bins, then picks a
registered method and its settings with :func:`dphist.methods.advisor.choose` from
them, the number of bins, the rest of epsilon, ``workload=`` and ``time_budget=``; the
release names the chosen method, its ledger holds both steps and ``params["auto"]``
records the noisy facts, the reason in words and the model's leaf. Under zCDP the
features get Gaussian noise and the model reads rho through
:func:`~dphist.methods.advisor.pure_equivalent`.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from ._kernel import (
    Accountant,
    Charge,
    is_grid,
    noise_source,
    protect,
    protect_grid,
    validate_epsilon,
)
from .definitions import PureDP, zCDP
from .errors import PrivacyError, ValidationError
from .guarantee import histogram_guarantee, unit_terms
from .methods import get_method, list_methods
from .methods.advisor import (
    choose,
    feature_share,
    features_pipeline,
    time_budget_seconds,
    workload_kind,
)
from .methods.run import run
from .methods.selector import CANDIDATES, SMALL_DOMAIN, Model
from .release import Release
from .resources import check_bins
from .store import session_budget, stored_cost

if TYPE_CHECKING:
    from .twod import Release2D

__all__ = ["Session", "publish", "zcdp_methods"]


class Session:
    """Several releases of one histogram under one total budget.

    Parameters
    ----------
    counts : array-like of non-negative integers
        The true histogram (bins in their public order). It is validated and copied.
    epsilon : float, int, Fraction, Decimal or decimal string
        Total budget of the session, read exactly as written (0.1 means 1/10).
    budget : dh.PureDP(epsilon) or dh.zCDP(rho), instead of ``epsilon``
        ``dh.zCDP(rho)`` runs the session under zero-concentrated DP: releases spend
        ``rho=`` and measure with discrete Gaussian noise (the methods whose every
        step has a Gaussian form: :func:`zcdp_methods`).
        A stored budget (``dh.BudgetStore(...).budget(name)``) makes the session
        durable: each release's whole charge is committed to the store before the
        data is read, and the release is recorded there when it returns. The session
        runs under the budget's definition with what it has left as its cap, or, with
        ``epsilon=`` as well, under pure DP with that cap (charged as rho =
        epsilon**2 / 2 to a zCDP budget).
    rng : None, int or numpy.random.Generator
        None for secure noise; a seed or Generator for reproducible, non-private runs.
    privacy_unit, max_records : str or None, int
        What the guarantee protects: by default one record. When one unit (a person)
        may contribute several records, give its name and the public bound ``K`` on its
        records; the counts must already keep at most ``K`` records per unit (as
        :func:`dphist.histogram` and the ingest layer do) and every sensitivity is
        multiplied by ``K``.

    Example
    -------
    >>> import dphist as dh
    >>> with dh.Session([3, 0, 5, 1], epsilon=1.0, rng=0) as s:
    ...     a = s.publish("identity", epsilon=0.3)
    ...     b = s.publish("uniform", epsilon=0.7)
    ...     float(s.remaining)
    0.0
    """

    def __init__(
        self,
        counts: object,
        *,
        epsilon: object = None,
        budget: object = None,
        rng: object = None,
        privacy_unit: str | None = None,
        max_records: int = 1,
    ):
        self._budget, self._stored = session_budget(epsilon, budget)
        noise = noise_source(rng)
        self._unit, k = unit_terms(privacy_unit, max_records)
        seal = protect_grid if is_grid(counts) else protect
        self._data = seal(counts, max_records=k)
        self._accountant = Accountant(self._budget.amount, label="session")
        self._noise = noise
        self._closed = False

    @property
    def n(self) -> int:
        """Number of bins (public)."""
        return self._data.n

    @property
    def epsilon(self) -> Fraction:
        return self._accountant.cap

    @property
    def spent(self) -> Fraction:
        return self._accountant.spent

    @property
    def remaining(self) -> Fraction:
        return self._accountant.remaining

    @property
    def ledger(self) -> tuple[Charge, ...]:
        return self._accountant.ledger

    @property
    def private(self) -> bool:
        return self._noise.private

    @property
    def definition(self) -> PureDP | zCDP:
        """The session's privacy definition and total budget."""
        return self._budget

    def publish(
        self, method: str, *, epsilon: object = None, rho: object = None, **params: Any
    ) -> Release | Release2D:
        """Release the histogram with ``method`` spending at most ``epsilon`` of the session
        (``rho`` in a zCDP session).

        The method and its parameters are validated and the budget is reserved before
        the data is read. ``method="auto"`` accepts only ``workload=``,
        ``time_budget=`` and ``auto_share=`` (see :mod:`dphist.methods.advisor`).
        """
        if self._closed:
            raise PrivacyError("this session is closed; open a new one to publish again")
        amount = self._amount(epsilon, rho)
        if len(self._data.shape) == 2:  # a 2-D histogram: dphist.twod
            return self._publish_grid(method, amount, params)
        if isinstance(method, str) and method.strip().lower() == "auto":
            return self._publish_auto(epsilon=amount, **params)
        info, pipeline = self._checked(method, params)
        check_bins(self._data.n, info.name)  # machine memory, a public fact: before any spend
        budget = self._accountant.part(amount, label=info.name)
        grant = self._charge(amount, info.name)
        return self._settle(grant, self._release(info, pipeline, params, amount, budget))

    def _checked(self, method: str, params: dict[str, Any]) -> tuple[Any, Any]:
        """The method and its pipeline, checked: nothing read, nothing spent."""
        info = get_method(method)
        pipeline = info.pipeline(**params)
        if self._budget.definition == "zcdp" and not zcdp_ready(pipeline):
            raise ValidationError(
                f"method {info.name!r} has no zero-concentrated DP version yet; under zCDP "
                f"use one of {', '.join(zcdp_methods())}"
            )
        return info, pipeline

    def _release(
        self, info: Any, pipeline: Any, params: dict[str, Any], eps: Fraction, budget: Accountant
    ) -> Release:
        outcome = run(
            pipeline,
            self._data,
            epsilon=eps,
            budget=budget,
            noise=self._noise.spawn(),
            definition=self._budget.definition,
        )
        private, certified = self._noise.private, outcome.certified
        definition, k = self._budget.definition, self._data.max_records
        return Release(
            estimate=outcome.estimate,
            method=info.name,
            params={**info.defaults, **params},
            epsilon=eps,
            ledger=outcome.ledger,
            private=private and certified,
            guarantee=histogram_guarantee(private, certified, self._unit, k, definition),
            noise_variance=outcome.variance,
            groups=outcome.groups,
            uncertainty=outcome.uncertainty,
            timings=outcome.timings,
            privacy_unit=self._unit,
            max_records=k,
            definition=definition,
        )

    @property
    def shape(self) -> tuple[int, int] | None:
        """``(rows, cols)`` of a 2-D histogram (public), None for a 1-D one."""
        shape = self._data.shape
        return shape if len(shape) == 2 else None

    def _publish_grid(self, method: str, amount: Fraction, params: dict) -> Release2D:
        """A 2-D release (:func:`dphist.twod.release_grid`): checked, reserved and charged
        to a stored budget as a 1-D one, before the data is read."""
        from .twod import checked_grid, release_grid  # 2-D methods load on first use

        definition = self._budget.definition
        resolved, pipeline = checked_grid(method, params, definition)
        budget = self._accountant.part(amount, label=resolved.name)
        grant = self._charge(amount, resolved.name)
        release = release_grid(
            self._data,
            resolved,
            pipeline,
            params,
            epsilon=amount,
            budget=budget,
            noise=self._noise.spawn(),
            definition=definition,
            guarantee=lambda certified: histogram_guarantee(
                self._noise.private, certified, self._unit, self._data.max_records, definition
            ),
            private_noise=self._noise.private,
            unit=self._unit,
        )
        return self._settle(grant, release)

    def _charge(self, amount: Fraction, label: str) -> Any:
        """Commit a release's whole charge to the stored budget (None without one)."""
        if self._stored is None:
            return None
        return self._stored.charge(**{self._budget.name: amount}, method=label)

    @staticmethod
    def _settle(grant: Any, release: Any) -> Any:
        """Record the release with its stored charge, if it has one."""
        if grant is not None:
            grant.record(release)
        return release

    def _amount(self, epsilon: object, rho: object) -> Fraction:
        """The release's budget, named as the session's definition names it."""
        name = self._budget.name
        given, other = (epsilon, rho) if name == "epsilon" else (rho, epsilon)
        if other is not None:
            raise ValidationError(
                f"this session runs under {'pure epsilon-DP' if name == 'epsilon' else 'zCDP'}: "
                f"give {name}=, not {'rho' if name == 'epsilon' else 'epsilon'}="
            )
        return validate_epsilon(given, name=name)

    def _publish_auto(
        self,
        *,
        epsilon: Fraction,
        workload: object = None,
        time_budget: object = None,
        auto_share: object = None,
        auto_model: Model | None = None,
        **rest: Any,
    ) -> Release:
        """Measure a noisy total and the records in the fullest tenth of the bins with
        ``auto_share`` of ``epsilon``, choose a method from them and the public facts
        (:func:`dphist.methods.advisor.choose`; ``auto_model`` replaces the shipped
        model), publish with the rest; one release whose ledger holds both."""
        if rest:
            raise ValidationError(
                "method 'auto' chooses the parameters itself; it accepts only workload=, "
                f"time_budget= and auto_share= (got {', '.join(map(repr, sorted(rest)))})"
            )
        share = feature_share(auto_share)
        if self.n <= SMALL_DOMAIN:  # the choice reads no features there
            share = Fraction(0)
        workload_kind(self.n, workload)  # checked before anything is spent
        time_budget_seconds(time_budget)
        check_bins(self.n, heaviest_candidate(self.n))  # the choice depends on the data
        self._accountant.child(epsilon, label="auto")  # refused at once if it does not fit
        grant = self._charge(epsilon, "auto")
        eps_features = epsilon * share
        eps_method = epsilon - eps_features
        total = top = None
        features: tuple[Charge, ...] = ()
        if eps_features > 0:
            outcome = run(
                features_pipeline(),
                self._data,
                epsilon=eps_features,
                budget=self._accountant.child(eps_features, label="auto features"),
                noise=self._noise.spawn(),
                definition=self._budget.definition,
            )
            total, top = outcome.state.notes["features"]
            features = outcome.ledger
        choice = choose(
            self.n,
            eps_method,
            workload,
            time_budget,
            noisy_total=total,
            noisy_top_tenth=top,
            model=auto_model,
            definition=self._budget.definition,
            share=share,
        )
        info, pipeline = self._checked(choice.method, choice.params)
        budget = self._accountant.child(eps_method, label=info.name)
        release = self._release(info, pipeline, choice.params, eps_method, budget)
        auto = {
            "method": choice.method,
            "params": choice.params,
            "share": str(share),
            "noisy_total": total,
            "noisy_top_tenth": top,
            "reason": choice.reason,
            "leaf": choice.leaf,
        }
        release = replace(
            release,
            epsilon=epsilon,
            ledger=features + release.ledger,
            params={**release.params, "auto": auto},
        )
        return self._settle(grant, release)

    def close(self) -> None:
        """Refuse further releases."""
        self._closed = True

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        mode = "secure" if self.private else "seeded, not private"
        name = self._budget.name
        return (
            f"Session(n={self.n}, {name}={float(self.epsilon):g}, "
            f"remaining={float(self.remaining):g}, {mode})"
        )

    def __reduce__(self):
        raise TypeError(
            "a live session cannot be pickled or copied: its budget would be duplicated"
        )


def publish(
    counts: object,
    *,
    epsilon: object = None,
    method: str,
    rho: object = None,
    budget: object = None,
    rng: object = None,
    privacy_unit: str | None = None,
    max_records: int = 1,
    **params: Any,
) -> Release:
    """Publish ``counts`` once under ``epsilon`` (or zCDP's ``rho``) with ``method``.

    ``counts`` are bin counts in the public bin order (a numpy array, a list, or a
    pandas Series with the default index); raw records go to :func:`dphist.histogram`.
    ``privacy_unit`` and ``max_records`` are as for :class:`Session`. ``budget`` is a
    stored budget (``dh.BudgetStore(...).budget(name)``) charged first, durably, and
    left holding the release (see :class:`Session`).

    Example
    -------
    >>> import dphist as dh
    >>> rel = dh.publish([4, 0, 7, 2], epsilon=0.5, method="identity", rng=7)
    >>> rel.n, float(rel.spent), rel.private
    (4, 0.5, False)
    """
    if rho is not None and epsilon is not None:
        raise ValidationError("give either epsilon= (pure DP) or rho= (zCDP), not both")
    amount = {"rho": rho} if rho is not None else {"epsilon": epsilon}
    if budget is None:
        budget = zCDP(rho) if rho is not None else PureDP(epsilon)
        amount = {budget.name: budget.amount}  # read once: the release takes the whole cap
        epsilon = None
    else:
        stored_cost(budget, epsilon, rho)  # a rho release on a pure budget: refused here
    session = Session(
        counts,
        epsilon=epsilon,
        budget=budget,
        rng=rng,
        privacy_unit=privacy_unit,
        max_records=max_records,
    )
    return session.publish(method, **amount, **params)


def heaviest_candidate(n: int) -> str:
    """The candidate of ``method="auto"`` that needs the most memory at ``n`` bins (its
    choice depends on the data, so memory is planned for the heaviest)."""
    from .resources import memory_estimate

    return max((c.method for c in CANDIDATES), key=lambda m: memory_estimate(n, m))


def zcdp_ready(pipeline: Any) -> bool:
    """True when every block of ``pipeline`` has a zero-concentrated DP form."""
    return all(block.zcdp for block in pipeline.blocks)


def zcdp_methods() -> list[str]:
    """The registered methods that run under zCDP (every step has a Gaussian form)."""
    return [m.name for m in list_methods() if zcdp_ready(m.pipeline(**m.example))]
