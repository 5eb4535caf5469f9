"""Statistical privacy audit of every registered method and of the mutant zoo.

Run: python benchmarks/audit.py [--bins 8] [--pairs 2] [--n-search 800]
     [--n-confirm 3200] [--epsilon 1.0] [--seed 0] [--methods identity H ...]
     [--no-methods] [--no-targeted] [--no-mutants] [--no-records] [--spark]

Prints one row per audited mechanism: the claimed epsilon, the largest lower
confidence bound eps_lb over the neighbour pairs (alpha = 1e-6 per pair), the
number of mechanism runs, the seconds taken and the witness event with its pair.
Control rows (marked ``*``) are the correct twins of the mutants. Methods are
flagged when eps_lb exceeds the claim; mutants (deliberately broken variants from
``tests/audit/test_mutants.py``) must be flagged, by the audit or by the white-box
ledger check. ``--pairs all`` audits the whole neighbour catalogue. Targeted rows
audit AHP, sDAHP and EFPA on the noise-free decision-boundary pairs of
``tests/audit/test_targeted.py`` (1,000 search and 4,000 confirm runs per side, as
in the tests). Record rows (``records:``, one per source; Spark with ``--spark``)
count every record pair of ``audit.record_catalogue`` through the source at eight
salts and audit identity on the counts that differ: a pair is flagged when one side
raises alone or one record moves the counts by more than itself.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

import dphist as dh
from dphist.lab import audit
from dphist.lab.audit.bounds import TOP_K

ROOT = Path(__file__).resolve().parents[1]


def method_pairs(
    mech: audit.Mechanism, name: str, index: int, n: int, count: str, seed: int
) -> list[audit.Neighbour]:
    """One probed decision boundary, then catalogue pairs (as the methods test does:
    with ``--pairs 2`` the second pair rotates through the catalogue by method)."""
    pool = list(audit.method_catalogue(name, n))
    half = n // 2
    probed = list(
        audit.probe_boundaries(
            mech,
            audit.standard_histogram(n),
            bins=[half - 1, half, half + 1],
            span=6,
            probes=4,
            seed=[seed, index],
            limit=1,
        )
    )
    if count == "all":
        return probed + pool
    k = int(count)
    rotating = [pool[(index + j) % len(pool)] for j in range(max(0, k - len(probed)))]
    return (probed + rotating)[:k]


def row(name, claimed, eps_lb, verdict, runs, seconds, event) -> str:
    lb = "-" if eps_lb is None else f"{eps_lb:.3f}"
    return f"{name:<46} {claimed:>7} {lb:>7} {verdict:<8} {runs:>8,} {seconds:>7.1f}  {event}"


def header() -> str:
    return (
        f"{'mechanism':<46} {'claimed':>7} {'eps_lb':>7} {'verdict':<8} {'runs':>8} "
        f"{'seconds':>7}  best event [pair]"
    )


def load_test_module(name: str):
    """A module of tests/audit (the mutant zoo, the methods' public parameters)."""
    path = ROOT / "tests" / "audit" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"audit_bench_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def record_rows(args: argparse.Namespace) -> int:
    """One row per source: the record pairs counted through it, identity audited on the
    counts that differ. Returns the number of pair audits."""
    from dphist.lab.audit import records

    sources = list(records.FILES + records.IN_MEMORY)
    spark = None
    if args.spark:
        from pyspark.sql import SparkSession

        spark = SparkSession.builder.master("local[1]").getOrCreate()
        sources.append("spark")
    mech = audit.method_mechanism("identity", epsilon=args.epsilon)
    audited = 0
    for index, source in enumerate(sources):
        start = time.perf_counter()
        results = audit.audit_records(
            mech, audit.record_catalogue([source]), spark=spark, salts=8,
            n_search=args.n_search, n_confirm=args.n_confirm, seed=[args.seed, 34, index],
        )  # fmt: skip
        runs = [r.audit for r in results if r.audit is not None]
        audited += len(runs)
        flagged = [r for r in results if r.flagged]
        worst = max(results, key=lambda r: r.eps_lb)
        shown = flagged[0] if flagged else worst
        label = f"records: {source} ({len(results)} pairs, {len(runs)} audited)"
        print(
            row(label, f"{args.epsilon:g}", worst.eps_lb if runs else None,
                "FLAGGED" if flagged else "pass", sum(a.runs for a in runs),
                time.perf_counter() - start, shown.summary())
        )  # fmt: skip
        sys.stdout.flush()
    return audited


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bins", type=int, default=8)
    parser.add_argument("--pairs", default="2", help="pairs per method, or 'all'")
    parser.add_argument("--n-search", type=int, default=800)
    parser.add_argument("--n-confirm", type=int, default=3200)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--methods", nargs="*", default=None)
    parser.add_argument(
        "--start", type=int, default=0, help="skip methods listed before this index"
    )
    parser.add_argument("--stop", type=int, default=None, help="stop before this index")
    parser.add_argument("--no-methods", action="store_true")
    parser.add_argument("--no-targeted", action="store_true")
    parser.add_argument("--no-mutants", action="store_true")
    parser.add_argument("--no-records", action="store_true")
    parser.add_argument("--spark", action="store_true", help="record pairs in local Spark too")
    args = parser.parse_args()

    print(
        f"audit: alpha = {audit.ALPHA:g} per pair, top {TOP_K} events, "
        f"{args.bins} bins, N_search = {args.n_search}, N_confirm = {args.n_confirm} per side"
    )
    print(header())
    total_pairs = 0
    start = time.perf_counter()
    if not args.no_methods:
        params_of = load_test_module("test_audit_methods").params_of
        names = args.methods or [m.name for m in dh.list_methods()]
        for index, name in enumerate(names):
            if index < args.start or (args.stop is not None and index >= args.stop):
                continue  # the seed stays tied to the index: parts add up to a full run
            mech = audit.method_mechanism(name, epsilon=args.epsilon, **params_of(name))
            pairs = method_pairs(mech, name, index, args.bins, args.pairs, args.seed)
            total_pairs += len(pairs)
            res = audit.audit(
                mech,
                pairs,
                n_search=args.n_search,
                n_confirm=args.n_confirm,
                seed=[args.seed, index],
            )
            w = res.worst
            event = f"{w.best.event} [{w.pair.describe()}]" if w.best else "-"
            verdict = "FLAGGED" if res.flagged else "pass"
            print(row(name, f"{res.epsilon:g}", res.eps_lb, verdict, res.runs, res.seconds, event))
            sys.stdout.flush()
    if not args.no_targeted:
        targeted = load_test_module("test_targeted")
        for label, (name, params, make_pair, _) in targeted.TARGETS.items():
            mech = audit.method_mechanism(name, epsilon=1.0, **params)
            res = audit.audit(
                mech,
                [make_pair()],
                n_search=targeted.N_SEARCH,
                n_confirm=targeted.N_CONFIRM,
                seed=targeted.SEED,
            )
            total_pairs += 1
            w = res.worst
            p = w.pair
            event = f"{w.best.event} [{p.describe()}: {p.x.tolist()}]" if w.best else "-"
            verdict = "FLAGGED" if res.flagged else "pass"
            print(
                row(
                    f"targeted: {label}",
                    f"{res.epsilon:g}",
                    res.eps_lb,
                    verdict,
                    res.runs,
                    res.seconds,
                    event,
                )
            )
            sys.stdout.flush()
    if not args.no_mutants:
        zoo = load_test_module("test_mutants")
        for mutant in zoo.ZOO + zoo.CONTROLS:
            out = mutant.run()
            total_pairs += out.pairs
            kind = "mutant" if mutant in zoo.ZOO else "control"
            verdict = ("FLAGGED" if out.flagged else "pass") + ("" if kind == "mutant" else "*")
            print(
                row(
                    f"{kind}: {mutant.name}",
                    f"{out.claimed:g}",
                    out.eps_lb,
                    verdict,
                    out.runs,
                    out.seconds,
                    out.evidence,
                )
            )
            sys.stdout.flush()
    if not args.no_records:
        total_pairs += record_rows(args)
    print(
        f"{total_pairs} pair audits in {time.perf_counter() - start:.0f} s; false-alarm "
        f"probability for correct mechanisms <= {audit.suite_false_alarm_bound(total_pairs):.1e}"
    )


if __name__ == "__main__":
    main()
