"""Private group counts (spec §7.9): sensitivities by brute force under the wider
neighbour relation (one entity, or one empty group), the consistent whole counts, the
release and its ledger, and the command line."""

import itertools
from fractions import Fraction

import numpy as np
import pytest

from dphist import cli
from dphist import groupsize as gs
from dphist._kernel import Accountant, noise_source, protect_groups
from dphist._kernel.group_counts import PrivateGroupsMeasurer
from dphist._kernel.groups import _truncated
from dphist.errors import ValidationError
from dphist.groupsize.counts import consistent_counts

PARENT = [-1, 0, 0]  # a root with two leaf regions


def measured(leaves, k, m0):
    """Exact answers (noise of scale 1e-12) of both measurements, per level."""
    data = gs.GroupSizeData.from_leaf_sizes(gs.Hierarchy(np.array(PARENT)), leaves)
    sealed = protect_groups(data.hierarchy.parent, data.offsets, data.sizes, data.counts)
    m = PrivateGroupsMeasurer(sealed, Accountant(Fraction(10**13)), noise_source(0))
    out = []
    for level in (0, 1):
        counts = [v for _, v in m.group_counts(level, epsilon=10**12, block="c")]
        rc = [v for _, v in m.reverse_cumulative(level, k, m0, epsilon=10**12, block="r")]
        hc = [np.cumsum(_truncated(sealed, r, k))[m0:k] for r in sealed.level_nodes(level)]
        out.append((np.concatenate(counts), np.concatenate(rc), np.concatenate(hc)))
    return out


def neighbours(leaves, m0):
    """One entity more or less in one group, or one empty group more or less."""
    for j, leaf in enumerate(leaves):
        for g in range(len(leaf)):
            for d in (1, -1):
                if leaf[g] + d >= 0:
                    new = [list(x) for x in leaves]
                    new[j][g] += d
                    yield new
        yield [[*x, 0] if i == j else list(x) for i, x in enumerate(leaves)]
        if 0 in leaf:
            i0 = leaf.index(0)
            yield [x[:i0] + x[i0 + 1 :] if i == j else list(x) for i, x in enumerate(leaves)]


@pytest.mark.parametrize(("k", "m0"), [(3, 0), (4, 1)])
def test_sensitivities_under_empty_group_neighbours(k, m0):
    """Counts and groups-of-size->=i move by at most one per level, whichever neighbour;
    the cumulative Hc of the public-count method moves by K - m0 for one empty group
    (why the literal reading of §7.9 is not private)."""
    best = np.zeros(3, dtype=np.int64)
    for a in itertools.combinations_with_replacement(range(4), 2):
        for b in itertools.combinations_with_replacement(range(4), 1):
            leaves = [list(a), list(b)]
            base = measured(leaves, k, m0)
            for other in neighbours(leaves, m0):
                for level, new in enumerate(measured(other, k, m0)):
                    pairs = zip(base[level], new, strict=True)
                    best = np.maximum(best, [int(np.abs(x - y).sum()) for x, y in pairs])
    assert best.tolist() == [1, 1, k - m0]


def test_consistent_counts_are_whole_nonnegative_and_add_up():
    h = gs.Hierarchy.from_fanouts([[3], [2, 1, 2]])
    rng = np.random.default_rng(0)
    for _ in range(50):
        noisy = rng.normal(3, 4, h.n_nodes)
        g = consistent_counts(h, noisy)
        assert g.dtype == np.int64 and g.min() >= 0
        for r in range(h.first_leaf):
            assert g[r] == g[h.children(r)].sum()
    exact = np.array([10, 4, 0, 6, 2, 2, 0, 3, 3])
    assert consistent_counts(h, exact).tolist() == exact.tolist()  # consistent input kept
    assert consistent_counts(h, -np.ones(h.n_nodes)).tolist() == [0] * h.n_nodes


def test_release_with_private_counts():
    h = gs.Hierarchy.from_fanouts([[4], [3, 3, 3, 3]])
    rng = np.random.default_rng(1)
    leaves = [rng.poisson(2.5, int(rng.integers(50, 150))).tolist() for _ in range(12)]
    data = gs.GroupSizeData.from_leaf_sizes(h, leaves)
    rel = gs.publish_group_sizes(data, epsilon=1, K=50, m0=1, rng=3, group_counts_share=0.2)
    assert rel.group_counts == "private" and rel.counts_epsilon == Fraction(1, 5)
    assert sum((c.epsilon for c in rel.ledger), Fraction(0)) == 1
    blocks = [c.block for c in rel.ledger]
    assert sum("group counts" in b for b in blocks) == data.hierarchy.n_levels
    assert all(c.sensitivity == 1 for c in rel.ledger)
    for r in range(h.n_nodes):
        assert rel.histograms[r].sum() == rel.groups[r]
    for r in range(h.first_leaf):
        assert rel.groups[r] == rel.groups[h.children(r)].sum()
    assert not np.array_equal(rel.groups, data.groups)  # the counts are noisy
    public = gs.publish_group_sizes(data, epsilon=1, K=50, m0=1, rng=3)
    assert public.group_counts == "public" and np.array_equal(public.groups, data.groups)
    with pytest.raises(ValidationError, match="cumulative method"):
        gs.publish_group_sizes(data, epsilon=1, K=50, method="ranked", group_counts_share=0.2)
    with pytest.raises(ValidationError, match="less the group counts' share"):
        gs.publish_group_sizes(data, epsilon=1, K=50, group_counts_share=0.5,
                               level_epsilon=[0.2, 0.2, 0.2])  # fmt: skip


def test_cli_needs_a_budget_and_offers_private_counts(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "g.csv").write_text("gid,state\n" + "".join(f"g{i},s{i % 3}\n" for i in range(30)))
    (tmp_path / "e.csv").write_text("gid\n" + "".join(f"g{i % 30}\n" for i in range(70)))
    args = ["groupsize", "g.csv", "--levels", "state", "--group-column", "gid",
            "--entities", "e.csv", "--K", "8"]  # fmt: skip
    assert cli.main(args) == 2
    assert "give --epsilon" in capsys.readouterr().err
    assert cli.main([*args, "--epsilon", "1", "--private-group-counts", "1.5"]) == 2
    assert cli.main([*args, "--epsilon", "1", "--private-group-counts", "0.25",
                     "--method", "ranked"]) == 2  # fmt: skip
    capsys.readouterr()
    code = cli.main([*args, "--epsilon", "1", "--private-group-counts", "0.25", "--out", "o.csv"])
    out = " ".join(capsys.readouterr().out.split())
    assert code == 0 and "number of groups per region is private" in out
    side = (tmp_path / "o.csv.ledger.json").read_text()
    assert '"group_counts": "private"' in side
    code = cli.main(["groupsize", "--help"])
    assert "Default 10,000" in " ".join(capsys.readouterr().out.split())
