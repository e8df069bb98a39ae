"""The partitionable noise-weighted sum: any split, order or tree of the blocks gives the same
integers; it is at least as accurate as the one float32 pass; overflow is refused, never wrapped."""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from blackbox.core import reduce
from blackbox.core.noise import NoiseTable
from blackbox.core.population import Population
from blackbox.errors import ReductionError, SumOverflowError

TABLE = NoiseTable.get(2**16, seed=11)


def population(rng, rows, dim, *, mirrored=True, dead=0, repeats=0):
    """A compact population: mirrored pairs or single rows, some rows with sign 0, some offsets repeated."""
    if mirrored:
        half = rng.integers(0, TABLE.size - dim + 1, size=(rows + 1) // 2)
        offsets = np.repeat(half, 2)[:rows]
        signs = np.tile(np.array([1, -1], dtype=np.int8), (rows + 1) // 2)[:rows]
    else:
        offsets = rng.integers(0, TABLE.size - dim + 1, size=rows)
        signs = rng.choice(np.array([1, -1], dtype=np.int8), size=rows)
    for _ in range(repeats):  # an offset drawn twice by different rows
        i, j = rng.integers(0, rows, size=2)
        offsets[i] = offsets[j]
    signs[rng.permutation(rows)[:dead]] = 0
    return Population.compact(TABLE, np.zeros(dim), offsets, signs, 0.1)


def weights_for(rng, rows, kind):
    if kind == "ranks":
        return np.argsort(np.argsort(rng.standard_normal(rows))) / max(rows - 1, 1) - 0.5
    if kind == "raw":  # large raw returns, zeros and negative zeros
        w = rng.standard_normal(rows) * 10.0 ** rng.integers(-3, 9)
        w[rng.random(rows) < 0.2] = 0.0
        w[rng.random(rows) < 0.1] = -0.0
        return w
    return rng.standard_normal(rows) * 10.0 ** rng.integers(-40, -30)  # tiny: the float64 fixed-point path


def random_tree_sum(rng, parts):
    """Combine parts pairwise in a random tree (integer sums cannot tell)."""
    parts = list(parts)
    while len(parts) > 1:
        i, j = sorted(rng.choice(len(parts), size=2, replace=False))
        merged = reduce.combine(parts[i], parts[j])
        parts = [p for k, p in enumerate(parts) if k not in (i, j)] + [merged]
    return parts[0]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), rows=st.integers(2, 700), dim=st.integers(1, 120),
       mirrored=st.booleans(), kind=st.sampled_from(["ranks", "raw", "tiny"]), squares=st.booleans(),
       nodes=st.integers(1, 12))
def test_any_partition_order_and_tree_gives_the_same_integers(seed, rows, dim, mirrored, kind, squares, nodes):
    rng = np.random.default_rng(seed)
    pop = population(rng, rows, dim, mirrored=mirrored, dead=int(rng.integers(0, 3)), repeats=int(rng.integers(0, 3)))
    w = weights_for(rng, rows, kind)
    v = weights_for(rng, rows, kind) if squares else None
    plan = reduce.plan_sums(pop, w, v)
    whole = plan.block_sums()
    # any assignment of blocks to nodes, each node summing its blocks in any order
    owner = rng.integers(0, nodes, size=plan.n_blocks)
    parts = [plan.block_sums(rng.permutation(np.flatnonzero(owner == k))) for k in range(nodes)]
    total = random_tree_sum(rng, [parts[i] for i in rng.permutation(len(parts))])
    assert total.blocks == whole.blocks == plan.all_blocks
    assert np.array_equal(total.linear, whole.linear)
    if squares:
        assert np.array_equal(total.squares, whole.squares)
    # a plan rebuilt elsewhere from the same population and weights is the same plan
    again = reduce.plan_sums(pop, w.copy(), None if v is None else v.copy())
    assert again.key == plan.key
    linear, sq = plan.finish(total)
    ref_linear, ref_sq = again.finish(again.block_sums(reversed(range(again.n_blocks))))
    assert linear.tobytes() == ref_linear.tobytes()
    assert (sq is None) == (not squares) and (sq is None or sq.tobytes() == ref_sq.tobytes())


def exact_sums(pop, w, v, cols):
    """Exactly rounded sum_i w_i s_i eps_i and sum_i v_i eps_i^2 at ``cols`` (float64 weights split
    into a float32 head and a tail, so each product is exact; math.fsum rounds once)."""
    lin, sq = [], []
    for col in cols:
        terms, sq_terms = [], []
        for wi, vi, si, oi in zip(w.tolist(), v.tolist(), pop.signs.tolist(), pop.offsets.tolist()):
            if si == 0:
                continue
            e = float(TABLE.data[oi + col])
            c = wi * si
            head = float(np.float32(c))
            terms += [head * e, (c - head) * e]
            e2 = e * e  # exact: 24-bit mantissas
            vh = float(np.float32(vi))
            sq_terms += [vh * e2, (vi - vh) * e2]
        lin.append(math.fsum(terms))
        sq.append(math.fsum(sq_terms))
    return np.array(lin), np.array(sq)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), rows=st.integers(2, 1500), dim=st.integers(1, 40),
       kind=st.sampled_from(["ranks", "raw"]))
def test_error_against_an_exactly_rounded_sum_is_within_the_block_bound(seed, rows, dim, kind):
    rng = np.random.default_rng(seed)
    pop = population(rng, rows, dim, mirrored=bool(rng.integers(0, 2)))
    w, v = weights_for(rng, rows, kind), np.abs(weights_for(rng, rows, kind))
    linear, squares = reduce.weighted_sums(pop, w, v)
    cols = np.arange(dim)
    exact_lin, exact_sq = exact_sums(pop, w, v, cols)
    live = pop.signs != 0
    noise = np.abs(TABLE.gather(pop.offsets[live], dim).astype(np.float64))
    # per coordinate: float32 coefficient casts (2**-24 each), a block of <= 64 float32 adds
    # (2**-17 of the terms' magnitudes), the fixed-point grid and the final float64 rounding
    scale_lin = (np.abs(w * pop.signs)[live, None] * noise).sum(axis=0)
    scale_sq = (np.abs(v)[live, None] * noise**2).sum(axis=0)
    assert np.all(np.abs(linear - exact_lin) <= 2.0**-16 * scale_lin + 1e-300)
    assert np.all(np.abs(squares - exact_sq) <= 2.0**-16 * scale_sq + 1e-300)


def test_more_accurate_than_the_one_float32_pass_on_a_large_population():
    rng = np.random.default_rng(5)
    rows, dim = 10_000, 64
    pop = population(rng, rows, dim)
    w = weights_for(rng, rows, "ranks")
    v = np.abs(w)
    cols = np.arange(0, dim, 4)
    exact_lin, exact_sq = exact_sums(pop, w, v, cols)
    old_lin, old_sq = pop.noise_weighted_sums(w, v)
    new_lin, new_sq = reduce.weighted_sums(pop, w, v)
    assert np.max(np.abs(new_lin[cols] - exact_lin)) < np.max(np.abs(old_lin[cols] - exact_lin)) / 4
    assert np.max(np.abs(new_sq[cols] - exact_sq)) < np.max(np.abs(old_sq[cols] - exact_sq)) / 4
    assert np.array_equal(new_lin, reduce.weighted_sum(pop, w))  # the linear sum alone: same bits


@pytest.mark.parametrize("rows, dim", [(2, 3), (128, 50), (128, 5000), (64, 3000)])
def test_one_block_is_exactly_todays_float32_sum(rows, dim):
    """Up to 64 distinct slices the block is the whole sum: the value of the float32 pass, widened."""
    rng = np.random.default_rng(rows + dim)
    pop = population(rng, rows, dim, mirrored=rows == 128 or rows == 2)
    w = weights_for(rng, rows, "ranks")
    assert np.array_equal(reduce.weighted_sum(pop, w), pop.noise_weighted_sum(w).astype(np.float64))


def test_negative_zero_weights_are_zeros_and_sign_zero_rows_are_never_read():
    rng = np.random.default_rng(2)
    pop = population(rng, 300, 20, dead=5)
    w = weights_for(rng, 300, "ranks")
    w[rng.random(300) < 0.3] = 0.0
    base = reduce.weighted_sum(pop, w)
    flipped = np.where(w == 0.0, -0.0, w)
    flipped[pop.signs == 0] = np.nan  # a dead row's weight is never read
    assert reduce.weighted_sum(pop, flipped).tobytes() == base.tobytes()
    assert not np.any(np.signbit(base) & (base == 0))  # integers carry no negative zero


def test_all_zero_weights_give_exact_zeros():
    rng = np.random.default_rng(3)
    pop = population(rng, 64, 10)
    out = reduce.weighted_sum(pop, np.zeros(64))
    assert out.dtype == np.float64 and not out.any() and not np.signbit(out).any()


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_a_non_finite_weight_is_refused(bad):
    rng = np.random.default_rng(4)
    pop = population(rng, 10, 5)
    w = np.zeros(10)
    w[7] = bad
    with pytest.raises(SumOverflowError) as info:
        reduce.plan_sums(pop, w)
    assert str(info.value) == (
        f"the noise-weighted sum got weights[7] = {bad!r}; every weight must be finite "
        f"(a fitness shaping such as centered_ranks gives finite weights)"
    )
    assert isinstance(info.value, OverflowError)  # Strategy.tell turns it into a diverged update


def test_sums_beyond_float32_are_refused_not_infinite():
    rng = np.random.default_rng(4)
    pop = population(rng, 10, 5, mirrored=False)
    with pytest.raises(SumOverflowError, match=r"beyond float32's range \(3\.4e38\); scale the weights down"):
        reduce.plan_sums(pop, np.full(10, 1e39))
    with pytest.raises(SumOverflowError, match=r"the linear noise-weighted sum could leave float32's range: "
                                               r"sum \|coefficient\| x max \|noise\| = .*, not below 2\*\*127"):
        reduce.plan_sums(pop, np.full(10, 1e37))
    with pytest.raises(SumOverflowError, match="the squared noise-weighted sum could leave float32's range"):
        reduce.plan_sums(pop, np.ones(10), np.full(10, 1e36))
    reduce.plan_sums(pop, np.full(10, 1e30))  # large but safe: accepted


def test_integers_beyond_the_bound_are_refused_never_wrapped():
    rng = np.random.default_rng(6)
    pop = population(rng, 300, 4)
    plan = reduce.plan_sums(pop, weights_for(rng, 300, "ranks"))
    a, b = plan.block_sums([0]), plan.block_sums([1])
    near = reduce.PartialSums(a.key, a.blocks, np.full(4, 2**62 - 1, dtype=np.int64), None)
    with pytest.raises(ReductionError, match=r"combining partial noise-weighted sums overflows the fixed-point "
                                             r"bound \+-4611686018427387903 \(2\*\*62 - 1\)"):
        reduce.combine(near, reduce.PartialSums(b.key, b.blocks, np.full(4, 2**62 - 1, dtype=np.int64), None))
    huge = reduce.PartialSums(a.key, a.blocks, np.full(4, 2**63 - 1, dtype=np.int64), None)
    with pytest.raises(ReductionError, match="holds an integer beyond"):
        reduce.combine(huge, b)


def test_parts_that_do_not_make_one_whole_are_refused():
    rng = np.random.default_rng(7)
    pop = population(rng, 400, 6)
    w = weights_for(rng, 400, "ranks")
    plan = reduce.plan_sums(pop, w)
    assert plan.n_blocks == 4
    with pytest.raises(ReductionError, match=r"block 1 of the noise-weighted sum is counted twice"):
        reduce.combine(plan.block_sums([0, 1]), plan.block_sums([1, 2]))
    with pytest.raises(ReductionError, match=r"is missing blocks 2, 3 of 4; every block must be summed exactly once"):
        plan.finish(plan.block_sums([0, 1]))
    other = reduce.plan_sums(pop, -w)
    with pytest.raises(ReductionError, match="cannot combine partial noise-weighted sums of different plans"):
        reduce.combine(plan.block_sums([0]), other.block_sums([1]))
    with pytest.raises(ReductionError, match="were made for other coefficients than this plan's"):
        plan.finish(other.block_sums())
    with pytest.raises(ReductionError, match=r"block 4 does not exist: this sum has blocks 0..3"):
        plan.block_sums([4])
    with pytest.raises(ReductionError, match="block 2 is listed twice"):
        plan.block_sums([2, 2])
    assert np.array_equal(reduce.combine(plan.zeros(), plan.block_sums()).linear, plan.block_sums().linear)


def test_threads_split_columns_without_changing_a_bit(monkeypatch):
    monkeypatch.setattr(reduce, "_CHUNK", 16)  # several column chunks at a small dim
    rng = np.random.default_rng(9)
    pop = population(rng, 900, 100)
    w, v = weights_for(rng, 900, "ranks"), weights_for(rng, 900, "raw")
    plan = reduce.plan_sums(pop, w, v)
    one, three = plan.block_sums(), plan.block_sums(threads=3)
    assert np.array_equal(one.linear, three.linear) and np.array_equal(one.squares, three.squares)
    assert np.array_equal(plan.block_sums([1, 5], threads=4).linear, plan.block_sums([5, 1]).linear)


def test_blocks_depend_on_the_population_only():
    rng = np.random.default_rng(8)
    pop = population(rng, 1000, 3)
    a = reduce.plan_sums(pop, weights_for(rng, 1000, "ranks"))
    b = reduce.plan_sums(pop, weights_for(rng, 1000, "raw"))
    assert a.n_blocks == b.n_blocks == reduce.block_count(500) == 8
    assert np.array_equal(a.offsets, b.offsets) and np.all(np.diff(a.offsets) > 0)


def test_a_dense_population_is_refused():
    pop = Population.from_dense(np.zeros((4, 3)))
    with pytest.raises(ValueError, match="needs a compact population"):
        reduce.plan_sums(pop, np.zeros(4))


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), rows=st.integers(2, 900), dim=st.integers(1, 300),
       kind=st.sampled_from(["ranks", "raw", "tiny"]), squares=st.booleans(), batch=st.integers(1, 4096),
       group=st.sampled_from([0, 1, 500, 5000, 1 << 18]))
def test_gathered_slices_give_the_bits_of_the_slice_by_slice_loop(monkeypatch, seed, rows, dim, kind, squares, batch,
                                                                  group):
    """Narrow chunks are summed from gathered slices in whole-array operations (``_gathered_sums`` one block
    at a time, ``_gathered_blocks`` several blocks at once, up to ``group`` noise values); the block sums
    must be the slice-by-slice loop's, bit for bit, whatever the batch of slices and the group."""
    rng = np.random.default_rng(seed)
    pop = population(rng, rows, dim, mirrored=bool(seed % 2), dead=rows // 10, repeats=2)
    w = weights_for(rng, rows, kind)
    v = weights_for(rng, rows, "raw") if squares else None
    plan = reduce.plan_sums(pop, w, v)
    with monkeypatch.context() as patch:  # one example's settings, undone before the next example
        patch.setattr(reduce, "_GATHER_ELEMENTS", batch)
        patch.setattr(reduce, "_GATHER_BLOCK_ELEMENTS", group)
        gathered = plan.block_sums()
        patch.setattr(reduce, "_GATHER_WIDTH", 0)  # every chunk slice by slice
        looped = plan.block_sums()
    assert np.array_equal(gathered.linear, looped.linear)
    assert (gathered.squares is None) == (looped.squares is None)
    if v is not None:
        assert np.array_equal(gathered.squares, looped.squares)
