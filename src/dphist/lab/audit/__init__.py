"""Statistical privacy audit of histogram mechanisms (a testing tool, not a privacy tool).

This module *tests* implementations; it adds no privacy to anything. It runs a
mechanism many times in seeded (non-private) mode, with the production sampler, on
two neighbouring histograms ``x`` and ``x' = x +- e_i`` and looks for an event whose
probability differs by more than a factor ``exp(epsilon)`` between the two. A pass
is evidence, never proof: the audit only sees the inputs and events it tries.

One audit of one neighbour pair has two phases on disjoint random streams:

1. **Search.** ``n_search`` runs per side. Every event of a fixed catalogue is
   scored and the ``k`` (default 5) most promising ones, with the side they favour,
   are kept. The catalogue (privacy-assurance spec §1.2.3):

   * thresholds ``s >= t`` and ``s < t`` on scalar statistics ``s`` of the output:
     every coordinate, range sums and differences of coordinates (bin ``i`` against
     every other bin, every interval through ``i``, every prefix), the rank of bin
     ``i``, the number of distinct values, equality with a neighbour and with zero,
     two linear classifiers fitted on the search runs (mean difference and its
     whitened, Fisher-discriminant form), and joint-tail statistics on the
     coordinates that moved and on the windows and group around ``i``: the minimum
     and maximum of the standardised deviations and a clipped sum, which is the
     log-likelihood ratio of a claimed Laplace model (E3, E4); the output's
     orthonormal Fourier coefficients, how many of them are non-zero (a spectral
     method's released K) and the same joint-tail statistics on the coefficients
     that moved (E5);
   * thresholds are the pooled search quantiles, or every observed value for a
     statistic with few values (this includes the lattice points ``x_i`` and
     ``x_i + 1`` of integer outputs);
   * categorical events: the released grouping pattern, the index of the largest
     bin and, when the output takes few values, the whole output vector; each
     observed category and the unions of categories ranked by their search ratio.

   An event's score is the confirm-phase bound it would reach if its true
   probabilities were the one-sided 95% Clopper-Pearson bounds of the search
   counts; it only ranks events.

2. **Confirm.** ``n_confirm`` fresh runs per side. For each kept event ``E``
   favouring ``a`` over ``b``: ``eps_lb(E) = ln(CP_lower(p_a) / CP_upper(p_b))``,
   each bound exact Clopper-Pearson at level ``alpha / (2k)``. By the union bound
   the probability that *any* ``eps_lb(E)`` exceeds the true privacy loss of the
   mechanism on this pair is at most ``alpha`` (default ``1e-6``), whatever the
   mechanism does; a mechanism is flagged when ``max_E eps_lb(E) > epsilon``.

False alarms. A correct epsilon-DP mechanism is flagged on a given pair with
probability at most ``alpha``. A suite of ``P`` pair audits flags a correct
mechanism anywhere with probability at most ``P * alpha``
(:func:`suite_false_alarm_bound`); with a fixed audit seed the outcome is
deterministic, so a test suite built on it cannot be flaky.

Approximate DP. A mechanism may claim (epsilon, delta)-DP (``Mechanism.delta > 0``):
a zCDP method audited at the epsilon its rho implies for a chosen delta
(:func:`zcdp_claim`). Events are then ranked and confirmed by the lower bound
``CP_lower(p_a) - e^epsilon CP_upper(p_b)`` on ``P_x(E) - e^epsilon P_x'(E)``
(:func:`delta_lower_bound`), and a pair is flagged when it exceeds delta; the false
alarm bound is again ``alpha`` per pair. Sampling can only see deltas of about the
Clopper-Pearson width, so zCDP audits use a large delta (0.05 to 0.3) where the implied
epsilon is small and under-noising shows as excess delta.

White-box backstop. :func:`ledger_check` runs one release with a counting noise
source and checks that the ledger recomposes exactly to the claimed epsilon, that
every charge's noise scale is at least sensitivity/epsilon and certified, and that
every value drawn from the sampler was covered by a charge made before the draw.
Uncharged stages that sampling cannot see (spec §1.2.7) are caught here.

Mechanisms. A :class:`Mechanism` runs a batch: ``run(x, runs, seed)`` returns
:class:`Outputs` (one row per run, plus the released grouping if any).
:func:`method_mechanism` wraps a registered method (``dphist.publish`` in seeded
mode), :func:`pipeline_mechanism` a pipeline of blocks run through the kernel,
:func:`function_mechanism` a plain function; :func:`seeded_laplace` gives plain
functions the production sampler.

Neighbours. :func:`catalogue` and :func:`neighbours` give the default pairs (spec
§1.2.2); :func:`probe_boundaries` finds decision boundaries with common random
numbers, and :func:`decision_pairs` finds them exactly by running a registered
method noise-free: a neighbour only reveals a data-dependent decision (a threshold,
a clustering cut, a private choice) when it moves it, so methods whose decisions
are far from the default pairs need these.

Record pairs. :func:`record_catalogue` gives pairs of record sets one record apart in
each source (CSV, Parquet, list, numpy, pandas, polars, Arrow, Spark): ``-0.0`` at an
edge, NaN, NULL and None unit ids, ragged records. :func:`audit_records` counts both
sides through :func:`dphist.ingest.count` (both must count, or raise the same error,
and stay one record apart whatever the salt of the per-unit bound) and audits a
mechanism on the counts.

Example
-------
>>> from dphist import audit
>>> report = audit.audit_method("identity", epsilon=1.0, n_search=500, n_confirm=2000,
...                             pairs=1, seed=1)
>>> report.flagged
False
"""

from __future__ import annotations

from .audits import AuditResult, PairResult, audit, audit_method, audit_pair, method_catalogue
from .bounds import (
    ALPHA,
    clopper_pearson,
    delta_lower_bound,
    epsilon_lower_bound,
    suite_false_alarm_bound,
)
from .events import EventResult
from .ledger import MEASUREMENT_PRIMITIVES, SELECTION_PRIMITIVES, LedgerReport, ledger_check
from .mechanisms import (
    Mechanism,
    Outputs,
    function_mechanism,
    method_mechanism,
    pipeline_mechanism,
    seeded_laplace,
    zcdp_claim,
)
from .neighbours import (
    Neighbour,
    catalogue,
    decision_pairs,
    neighbours,
    pair,
    probe_boundaries,
    standard_histogram,
)
from .records import (
    RecordOutcome,
    RecordPair,
    RecordResult,
    audit_records,
    ingest_pair,
    record_catalogue,
)

__all__ = [
    "ALPHA",
    "MEASUREMENT_PRIMITIVES",
    "SELECTION_PRIMITIVES",
    "AuditResult",
    "EventResult",
    "LedgerReport",
    "Mechanism",
    "Neighbour",
    "Outputs",
    "PairResult",
    "RecordOutcome",
    "RecordPair",
    "RecordResult",
    "audit",
    "audit_method",
    "audit_pair",
    "audit_records",
    "catalogue",
    "clopper_pearson",
    "decision_pairs",
    "delta_lower_bound",
    "epsilon_lower_bound",
    "function_mechanism",
    "ingest_pair",
    "ledger_check",
    "method_catalogue",
    "method_mechanism",
    "neighbours",
    "pair",
    "pipeline_mechanism",
    "probe_boundaries",
    "record_catalogue",
    "seeded_laplace",
    "standard_histogram",
    "suite_false_alarm_bound",
    "zcdp_claim",
]
