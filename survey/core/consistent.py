"""The consistent view of a choice question: shares ≥ 0 summing to 1, inside intervals that hold together.

The rule (``consistent_view``) is Norm-Sub where the noise is small beside the shares, else the
iterative Bayesian update (EM) stopped by the discrepancy principle; the point is then projected
onto the tightened simultaneous intervals (``estimators.simplex_intervals``). The EM can run tens of
thousands of iterations at d = 128 (0.1 to 0.6 s), and the results page asks for the view again
after every new response. So the update is warm-started: the last from-scratch runs are kept as
anchors (their counts' shares, the shares they returned, their iterations and why they stopped),
and counts whose shares lie within WARM_SHIFT/√n of an anchor's (each, in absolute terms: a tenth
of the largest standard error of a share at n) go on from a point of the anchor's path WARM_BACK to
2·WARM_BACK iterations before its end, with the new counts, the same rules and what is left of the
iteration budget (so the last hundred or more steps, and the stop, are the new counts' own), or,
where the anchor ended at the EM's limit, take the new counts' limit in closed form. Counts farther away run from scratch and become an anchor. The
result equals the from-scratch one to within a small fraction of a standard error
(tests/core/test_consistent_warm.py states and checks the tolerance). A run that has not stopped after
FLOW_AFTER steps (a flat channel: at d = 128, ε = 0.5 the EM is still creeping at 100,000 steps, 1 to 2 s)
follows the rest of its path as the flow its steps trace (``_flow_rest``: about 0.1 s, equal to the steps
one by one within 1e-3 standard errors, tests/core/test_consistent_flow.py), so no view waits for a
hundred thousand steps. Pure: numpy/scipy only, no I/O.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from .estimators import (
    ConsistentView,
    check_count,
    check_counts,
    check_probability,
    project_box_simplex,
    project_simplex,
    relative_noise,
    simplex_intervals,
)

# The consistent view's rule, chosen by measurement (bench/utility/consistent.py, bench/README.md): where one
# option's standard error at uniform shares is under QUIET_NOISE of the uniform share 1/d, Norm-Sub; above,
# the iterative Bayesian update stopped by the discrepancy principle at a deviance of k·d, k = 0.2 + 0.4·noise
# kept within DEVIANCE_FACTORS (the bench: the noisier, the later the best stop). The deviance is checked every
# DEVIANCE_EVERY iterations; the EM's limit (the maximiser of Σ c log λ, as the EM normalises the counts) may fit
# worse than k·d (bit vectors: its binomial deviance has a floor), so once the deviance falls by less than
# DEVIANCE_STALL of its remaining gap to k·d per check (at that pace the target is over 100 checks away) and the
# limit's own deviance is above k·d, the target cannot be met; if at that pace the deviance would also move by
# DEVIANCE_REACH times its distance to the limit's within the iterations left, the EM would end at the limit
# anyway, so it returns that limit, computed in closed form (``indicator_mle``), rather than creep towards it for
# IBU_ITERATIONS (a channel so flat, p − q near 0, that the EM would not get there keeps the old run to the cap).
QUIET_NOISE = 0.05
DEVIANCE_FACTORS = (0.25, 0.4)
DEVIANCE_EVERY = 10
DEVIANCE_STALL = 1e-2
DEVIANCE_REACH = 10.0
IBU_ITERATIONS = 100_000



def consistent_view(counts, n, *, p, q, multinomial, lows, highs) -> ConsistentView:
    """Return the consistent view of indicator counts: the rule's point estimate inside the tightened intervals.

    The rule: Norm-Sub (``project_simplex`` of the unbiased estimates; Wang et al. 2020) when
    ``relative_noise`` r < QUIET_NOISE, else the iterative Bayesian update (Agrawal & Aggarwal 2001)
    stopped by the discrepancy principle at a deviance of k·d, k = 0.2 + 0.4r within
    DEVIANCE_FACTORS (``iterative_bayesian_update``), which the bench measured better where the
    noise is large beside the shares. Either point is then projected onto the tightened
    box ∩ simplex (``project_box_simplex``; a point already inside stays), so it lies within its
    intervals and is never farther from true shares that lie in them. When the box misses the
    simplex, the point is projected onto the simplex within the bounds that can all hold (the
    upper ones when Σ lo > 1, the lower ones when Σ hi < 1).
    """
    n = check_count(n, "n")
    counts = check_counts(counts, n, least=2)
    p, q = _check_pq(p, q)
    if n == 0:
        raise ValueError("the consistent view needs at least one report, got n = 0")
    d = len(counts)
    estimates = (np.asarray(counts, dtype=float) / n - q) / (p - q)
    method = "norm-sub"
    point = project_simplex(estimates)
    noise = relative_noise(n, p=p, q=q, d=d)
    if noise >= QUIET_NOISE and sum(counts) > 0:
        method = "ibu"
        factor = min(max(0.2 + 0.4 * noise, DEVIANCE_FACTORS[0]), DEVIANCE_FACTORS[1])
        point = warm_update(counts, n, p=p, q=q, multinomial=multinomial, deviance_factor=factor)
    tight_lows, tight_highs, tightened = simplex_intervals(lows, highs)
    if tightened:
        point = project_box_simplex(point, tight_lows, tight_highs)
    elif float(tight_lows.sum()) > 1.0:
        point = project_box_simplex(point, np.zeros(d), tight_highs)
    else:
        point = project_box_simplex(point, tight_lows, np.ones(d))
    return ConsistentView(shares=tuple(float(v) for v in point), lows=tuple(float(v) for v in tight_lows),
                          highs=tuple(float(v) for v in tight_highs), method=method, tightened=tightened)



def indicator_mle(counts, n, *, p, q, multinomial) -> np.ndarray:
    """Return the shares on the simplex that maximise the likelihood of indicator counts.

    Option v's count has mean n·λᵥ, λᵥ = q + (p − q)fᵥ. ``multinomial``: the counts are one
    multinomial draw (GRR: each report names one option), log-likelihood Σ Cᵥ log λᵥ, the exact
    MLE; otherwise (bit vectors) Σ Cᵥ log λᵥ + (n − Cᵥ) log(1 − λᵥ), each indicator's binomial
    likelihood (a composite likelihood: the counts alone do not give the bits' joint law). Both
    are concave: by the KKT conditions every positive fᵥ has the same slope μ, so fᵥ(μ) has a
    closed form and μ is found by bisection (Kairouz et al. 2016 for GRR).
    """
    n = check_count(n, "n")
    counts = np.asarray(check_counts(counts, n, least=2), dtype=float)
    p, q = _check_pq(p, q)
    if n == 0:
        raise ValueError("the maximum-likelihood shares need at least one report, got n = 0")
    spread = p - q

    def shares(slope):
        if multinomial:
            # Cλ capped at 1 before dividing (a larger rate clips to f = 1 all the same), so a tiny μ cannot overflow.
            rate = np.minimum(counts * spread, slope) / slope
        elif abs(slope) < 1e-300:
            rate = counts / n
        else:
            # The root in [0, 1] of slope·λ² − (slope + n)λ + C = 0, written to avoid cancellation.
            b = slope + n
            rate = 2.0 * counts / (b + np.sqrt(np.maximum(b * b - 4.0 * slope * counts, 0.0)))
        return np.clip((rate - q) / spread, 0.0, 1.0)

    # Σ f(μ) decreases in μ: widen [low, high] until it brackets 1, then bisect (in log μ for GRR, μ > 0).
    transform = math.exp if multinomial else float
    low, high = (-700.0, 700.0) if multinomial else (-1.0, 1.0)
    for _ in range(2000):
        if shares(transform(low)).sum() > 1.0 or multinomial:
            break
        low *= 2.0
    for _ in range(2000):
        if shares(transform(high)).sum() <= 1.0 or multinomial:
            break
        high *= 2.0
    for _ in range(200):
        middle = 0.5 * (low + high)
        if shares(transform(middle)).sum() > 1.0:
            low = middle
        else:
            high = middle
    result = shares(transform(0.5 * (low + high)))
    total = float(result.sum())
    return result / total if total > 0 else np.full(counts.size, 1.0 / counts.size)


def iterative_bayesian_update(counts, n, *, p, q, multinomial, iterations=10_000, tolerance=1e-12,
                              deviance_factor=None) -> tuple[np.ndarray, int]:
    """Return the shares of the iterative Bayesian update (EM) of indicator counts and its iterations.

    Agrawal & Aggarwal (2001): from the uniform shares, f ← f ⊙ Aᵀ(c / A f) over the channel
    A = (p − q)I + q·11ᵀ (option v's indicator is 1 w.p. p if v is the answer, else q), c the
    counts as shares of their sum, as multi-freq-ldpy's IBU does (for GRR this is the EM of the
    exact likelihood, converging to ``indicator_mle``). It stops after ``iterations``, when no
    share moves by ``tolerance`` or more, or, with ``deviance_factor`` k, as soon as the fit's
    deviance from the counts (multinomial, or binomial per indicator) is at most k·d: Morozov's
    discrepancy principle, which stops the EM before it fits the noise (as in Richardson-Lucy
    deconvolution, of which this is an instance). The EM's limit maximises Σ c log λ over the
    simplex (the multinomial likelihood, also for bit vectors since c is normalised), which is
    ``indicator_mle(..., multinomial=True)``; its deviance can stay above k·d (a bit vector's
    binomial deviance has a floor there). So, with ``deviance_factor``, when the deviance fell by
    less than DEVIANCE_STALL of its gap to k·d since the last check (the fit has stalled: at that pace
    the target is more than 1/DEVIANCE_STALL checks away) and the limit's deviance is above k·d,
    the target cannot be met; then, if at the last check's pace the deviance would move by
    DEVIANCE_REACH times its distance to the limit's within the iterations left, the EM would end
    at its limit anyway (it creeps there, slowly where shares reach 0) and returns it at once, with
    the iterations run so far. Otherwise (a channel so flat, p − q near 0, that the EM would not get
    near its limit within ``iterations``) it goes on as before, to the target, the tolerance or
    ``iterations``.
    """
    n = check_count(n, "n")
    shares, iteration, _, _ = _update(check_counts(counts, n, least=2), n, p=p, q=q, multinomial=multinomial,
                                      iterations=iterations, tolerance=tolerance, deviance_factor=deviance_factor)
    return shares, iteration


def _update(checked: list[int], n: int, *, p, q, multinomial, iterations, tolerance=1e-12, deviance_factor=None,
            start=None, done=0, flow_after=None) -> tuple[np.ndarray, int, str, tuple[int, np.ndarray]]:
    """Return ``iterative_bayesian_update``'s shares and iterations, why it stopped, and a point of its path.

    Why: target, limit, tolerance or cap. The point of the path is (iteration, shares) from
    WARM_BACK to 2·WARM_BACK iterations before the end (or the start): where a warm start goes on
    from. ``start`` (shares) and ``done`` (iterations already run) go on from an earlier run (``warm_update``).
    ``flow_after``: after that many iterations of this call (at a deviance check), the rest of the path
    is followed as the flow the EM's steps trace (``_flow_rest``) instead of step by step.
    """
    counts = np.asarray(checked, dtype=float)
    p, q = _check_pq(p, q)
    if n == 0 or counts.sum() == 0:
        raise ValueError("the iterative Bayesian update needs at least one report with an indicator set")
    spread = p - q
    observed = counts / counts.sum()
    shares = np.full(counts.size, 1.0 / counts.size) if start is None else np.array(start, dtype=float)
    target = None if deviance_factor is None else float(deviance_factor) * counts.size
    saturated = _saturated(counts, n, multinomial)
    previous = limit = None
    older = newer = (done, shares)
    for iteration in range(done, iterations):
        if iteration % WARM_BACK == 0 and iteration > done:
            older, newer = newer, (iteration, shares)
        if (flow_after is not None and iteration - done >= flow_after and iteration % DEVIANCE_EVERY == 0
                and target is not None):
            path = _Path(counts=counts, n=n, p=p, spread=spread, q=q, multinomial=multinomial, saturated=saturated,
                         checked=checked, target=target)
            return _flow_rest(path, shares, iteration, iterations, previous, tolerance, older, newer)
        if target is not None and iteration % DEVIANCE_EVERY == 0:
            deviance = _deviance(counts, n, q + spread * shares, multinomial, saturated)
            if deviance <= target:
                return shares, iteration, "target", _back(older, newer, iteration)
            drop = None if previous is None else previous - deviance
            if drop is not None and drop < DEVIANCE_STALL * (deviance - target):
                if limit is None:
                    limit = indicator_mle(checked, n, p=p, q=q, multinomial=True)
                    floor = _deviance(counts, n, q + spread * limit, multinomial, saturated)
                # Out of reach: the limit, if at this pace the deviance would cover DEVIANCE_REACH times its
                # distance to the limit's within the iterations left (else, p − q near 0, the EM goes on).
                if floor > target and (abs(drop) * (iterations - iteration) / DEVIANCE_EVERY
                                       >= DEVIANCE_REACH * abs(deviance - floor)):
                    return limit, iteration, "limit", _back(older, newer, iteration)
            previous = deviance
        ratio = observed / (spread * shares + q)
        updated = shares * (spread * ratio + q * ratio.sum())
        if np.abs(updated - shares).max() < tolerance:
            return updated, iteration + 1, "tolerance", _back(older, newer, iteration + 1)
        shares = updated
    end = max(iterations, done)
    return shares, end, "cap", _back(older, newer, end)


# The flow (``_flow_rest``): an EM step is f ← f + G(f), G(f) = f ⊙ (m(f) − 1), m the update's multiplier, i.e. one
# Euler step of unit length of df/dt = G(f). Where the EM is slow (a flat channel, p − q small beside q: tens of
# thousands of steps), its iterate k is the solution at t = k of the modified equation df/dt = G − ½ J_G G (Hairer,
# Lubich & Wanner 2006, "Geometric Numerical Integration", ch. IX: Euler's method follows it to second order),
# which an adaptive Runge-Kutta method (DOP853) integrates in some hundreds of evaluations: at d = 128, ε = 0.5 the
# 100,000th iterate to 1e-9 standard errors in about 0.1 s instead of 1–2 s (bench/README.md). FLOW_AFTER steps are
# run one by one first, so an EM that stops early is exact.
FLOW_AFTER = 2000
FLOW_RTOL = 1e-10
FLOW_ATOL = 1e-13


@dataclass(frozen=True)
class _Path:
    """What the update's stopping rules need: the counts, n, the channel, the deviance's constant and its target."""

    counts: np.ndarray
    n: int
    p: float
    spread: float
    q: float
    multinomial: bool
    saturated: float
    checked: list
    target: float


def _flow_rest(path: _Path, shares: np.ndarray, start: int, iterations: int, previous, tolerance: float,
               older: tuple, newer: tuple) -> tuple[np.ndarray, int, str, tuple[int, np.ndarray]]:
    """Go on from iterate ``start`` as ``_update`` does, along the flow of the EM's steps; the same four returns.

    The flow is integrated over windows of FLOW_AFTER iterations growing fourfold, each checked before the
    next. The deviance is checked at every DEVIANCE_EVERY-th iterate as in ``_update`` (target, then the
    stall and limit rule with the previous check's deviance); the tolerance (no share moves by
    ``tolerance``, the step being G(f) exactly) is checked at those iterates only, so a run can stop
    there up to 9 steps later.
    """
    from scipy.integrate import solve_ivp

    flow = _Flow(path)
    state, low, window, limit = np.asarray(shares, dtype=float), start, max(FLOW_AFTER, DEVIANCE_EVERY), None
    while True:
        high = min(low + window, iterations)
        solution = solve_ivp(flow.modified, (float(low), float(high)), state, method="DOP853", rtol=FLOW_RTOL,
                             atol=FLOW_ATOL, dense_output=True)
        if not solution.success:  # never seen; the steps one by one are always right
            raise RuntimeError(f"the consistent view's flow failed: {solution.message}")
        flow.pieces.append((float(high), solution.sol))
        checks = np.arange(low, high, DEVIANCE_EVERY)
        stop, previous, limit = _flow_stop(flow, checks, iterations, previous, tolerance, limit)
        if stop is not None or high >= iterations:
            break
        state, low, window = solution.y[:, -1], high, 4 * window
    if stop is None:
        end, reason, result = iterations, "cap", flow.at([iterations])[0]
    else:
        reason, end, result = stop
    back = (end - WARM_BACK) // WARM_BACK * WARM_BACK
    point = (back, flow.at([back])[0]) if back >= start and back > 0 else _back(older, newer, end)
    return result, end, reason, point


class _Flow:
    """The flow of the EM's steps for one set of counts: its vector fields and the pieces of its solution."""

    def __init__(self, path: _Path):
        self.path = path
        self.observed = path.counts / path.counts.sum()
        self.pieces: list[tuple[float, object]] = []

    def step(self, f: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return the EM's step G(f) = f ⊙ (m(f) − 1) (rows of f at once) and the ratio c / λ it used."""
        ratio = self.observed / (self.path.spread * f + self.path.q)
        return f * (self.path.spread * ratio + self.path.q * ratio.sum(axis=-1, keepdims=True) - 1.0), ratio

    def modified(self, _, f: np.ndarray) -> np.ndarray:
        """Return the modified equation's field G − ½ J_G G (J_G: diagonal plus rank one)."""
        spread, q = self.path.spread, self.path.q
        move, ratio = self.step(f)
        weight = ratio / (spread * f + q)
        slope = (spread * ratio + q * ratio.sum() - 1.0) * move - f * spread * (spread * weight * move
                                                                              + q * float(weight @ move))
        return move - 0.5 * slope

    def at(self, times) -> np.ndarray:
        """Return the flow's shares at ``times`` (rows), clipped at 0 and summing to 1."""
        times = np.asarray(times, dtype=float)
        ends = np.array([end for end, _ in self.pieces])
        which = np.minimum(np.searchsorted(ends, times), len(ends) - 1)
        points = np.empty((times.size, self.observed.size))
        for index in np.unique(which):
            points[which == index] = self.pieces[index][1](times[which == index]).T
        points = np.clip(points, 0.0, None)
        return points / points.sum(axis=1, keepdims=True)


def _flow_stop(flow: _Flow, checks: np.ndarray, iterations: int, previous, tolerance: float, limit):
    """Return the first stop among ``checks`` as (reason, iteration, shares) or None, the last deviance and the limit."""
    from scipy.special import xlogy  # here, not at the top: a store or an export needs no scipy (start-up)

    path, spread, q = flow.path, flow.path.spread, flow.path.q
    if not checks.size:
        return None, previous, limit
    points = flow.at(checks)
    expected = path.n * (q + spread * points)
    deviance = path.saturated - np.sum(xlogy(path.counts, expected), axis=1)
    if not path.multinomial:
        deviance -= np.sum(xlogy(path.n - path.counts, path.n - expected), axis=1)
    deviance *= 2.0
    drop = np.concatenate(([np.nan if previous is None else previous], deviance[:-1])) - deviance
    with np.errstate(invalid="ignore"):
        stalled = drop < DEVIANCE_STALL * (deviance - path.target)
    stops = {"target": deviance <= path.target}
    if np.any(stalled):
        if limit is None:
            limit = indicator_mle(path.checked, path.n, p=path.p, q=q, multinomial=True)
        floor = _deviance(path.counts, path.n, q + spread * limit, path.multinomial, path.saturated)
        stops["limit"] = stalled & (floor > path.target) & (np.abs(drop) * (iterations - checks) / DEVIANCE_EVERY
                                                             >= DEVIANCE_REACH * np.abs(deviance - floor))
    stops["tolerance"] = np.abs(flow.step(points)[0]).max(axis=1) < tolerance
    first = {reason: int(np.argmax(hit)) for reason, hit in stops.items() if np.any(hit)}
    if not first:
        return None, float(deviance[-1]), limit
    reason = min(first, key=lambda name: (first[name], ("target", "limit", "tolerance").index(name)))
    at, end = points[first[reason]], int(checks[first[reason]])
    if reason == "limit":
        return (reason, end, limit), previous, limit
    if reason == "tolerance":
        return (reason, end + 1, at + flow.step(at)[0]), previous, limit
    return (reason, end, at), previous, limit


def _back(older: tuple, newer: tuple, end: int) -> tuple[int, np.ndarray]:
    """Return the later of two points of the path that is at least WARM_BACK iterations before ``end`` (or the older)."""
    return newer if newer[0] <= end - WARM_BACK else older


def _saturated(counts: np.ndarray, n: int, multinomial: bool) -> float:
    """Return Σ C log C (+ Σ (n − C) log(n − C) for binomial indicators): the deviance's constant part."""
    from scipy.special import xlogy  # here, not at the top: a store or an export needs no scipy (start-up)

    value = float(np.sum(xlogy(counts, counts)))
    return value if multinomial else value + float(np.sum(xlogy(n - counts, n - counts)))


def _deviance(counts: np.ndarray, n: int, rates: np.ndarray, multinomial: bool, saturated: float) -> float:
    """Return the deviance 2Σ C log(C/E) (+ the same for the n − C zeros of each indicator when not multinomial)."""
    from scipy.special import xlogy

    expected = n * rates
    value = saturated - float(np.sum(xlogy(counts, expected)))
    if not multinomial:
        value -= float(np.sum(xlogy(n - counts, n - expected)))
    return 2.0 * value



# Warm start: an anchor serves counts whose shares each lie within WARM_SHIFT/√n of its own; at most
# WARM_ANCHORS anchors are kept (least recently used out), a few per channel (d, p, q, multinomial).
WARM_SHIFT = 0.05
WARM_ANCHORS = 64
WARM_PER_CHANNEL = 4
WARM_BACK = 100


@dataclass(frozen=True)
class _Anchor:
    """A from-scratch run of the update: its counts' shares c/n, a point of its path (iteration, shares) and why it stopped."""

    rates: np.ndarray
    shares: np.ndarray
    iteration: int
    reason: str


_ANCHORS: OrderedDict[tuple, list[_Anchor]] = OrderedDict()
_ANCHORS_LOCK = threading.Lock()


def warm_update(counts, n, *, p, q, multinomial, deviance_factor) -> np.ndarray:
    """Return the shares ``iterative_bayesian_update`` gives with IBU_ITERATIONS, warm-started from a near anchor.

    See the module's docstring: equal to the from-scratch shares within a small fraction of a standard error.
    """
    n = check_count(n, "n")
    checked = check_counts(counts, n, least=2)
    p, q = _check_pq(p, q)
    if n == 0:
        raise ValueError("the iterative Bayesian update needs at least one report, got n = 0")
    rates = np.asarray(checked, dtype=float) / n
    channel = (len(checked), p, q, bool(multinomial))
    anchor = _nearest_anchor(channel, rates, WARM_SHIFT / math.sqrt(n))
    if anchor is None:
        shares, _, reason, (iteration, back) = _update(checked, n, p=p, q=q, multinomial=multinomial,
                                                       iterations=IBU_ITERATIONS, deviance_factor=deviance_factor,
                                                       flow_after=FLOW_AFTER)
        _remember(channel, _Anchor(rates=rates, shares=back, iteration=iteration, reason=reason))
        return shares
    if anchor.reason == "limit":
        return indicator_mle(checked, n, p=p, q=q, multinomial=True)
    shares, _, _, _ = _update(checked, n, p=p, q=q, multinomial=multinomial, iterations=IBU_ITERATIONS,
                              deviance_factor=deviance_factor, start=anchor.shares, done=anchor.iteration,
                              flow_after=FLOW_AFTER)
    return shares


def _nearest_anchor(channel: tuple, rates: np.ndarray, reach: float) -> _Anchor | None:
    """Return the kept anchor of ``channel`` whose shares are nearest ``rates`` (largest difference), if within ``reach``."""
    with _ANCHORS_LOCK:
        anchors = _ANCHORS.get(channel)
        if not anchors:
            return None
        _ANCHORS.move_to_end(channel)
        distance, anchor = min(((float(np.max(np.abs(a.rates - rates))), a) for a in anchors), key=lambda x: x[0])
    return anchor if distance <= reach else None


def _remember(channel: tuple, anchor: _Anchor) -> None:
    """Keep ``anchor`` for its channel (the newest WARM_PER_CHANNEL, WARM_ANCHORS channels at most)."""
    with _ANCHORS_LOCK:
        anchors = _ANCHORS.setdefault(channel, [])
        anchors.insert(0, anchor)
        del anchors[WARM_PER_CHANNEL:]
        _ANCHORS.move_to_end(channel)
        while len(_ANCHORS) > WARM_ANCHORS:
            _ANCHORS.popitem(last=False)


def forget_anchors() -> None:
    """Drop every kept anchor (the next views run from scratch)."""
    with _ANCHORS_LOCK:
        _ANCHORS.clear()


def _check_pq(p, q) -> tuple[float, float]:
    p, q = check_probability(p, "p"), check_probability(q, "q")
    if not p > q:
        raise ValueError(f"p must exceed q for the reports to carry information, got p={p!r}, q={q!r}")
    return p, q


