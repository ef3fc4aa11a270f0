"""The public LDP libraries' protocols, run through their own clients and aggregators.

Each protocol takes the true answers of n respondents (option indices 0..d-1, or an
(n, k) array of 0/1 answers for a multi-question survey) and returns unbiased estimates
of the option shares. Only the bench's own virtualenv has these libraries
(bench/utility/setup.sh); the product never imports this module.

pure-ldp (Maddock): servers return unbiased counts with ``estimate_all(normalization=0)``.
multi-freq-ldpy (Arcolezi): every aggregator ends in ``MI`` (matrix inversion), which
clips negative estimates to 0 and renormalises; ``_unbiased_mi`` swaps that function for
the same inversion without the post-processing while a protocol aggregates, so both
libraries are measured on the unbiased estimate that ldp-survey reports (the one its
intervals are about). RS+FD inlines its clipping: `rsfd_both` returns its estimate as shipped and the same
formula without the clipping (unbiased).
"""

from __future__ import annotations

import contextlib
import itertools
import math
import random
import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np

try:
    import numba
    from multi_freq_ldpy.mdim_freq_est import RSpFD_solution, SMP_solution, SPL_solution
    from multi_freq_ldpy.pure_frequency_oracles import GRR, HE, LH, SS, UE
    from pure_ldp.frequency_oracles import (DEClient, DEServer, HadamardMechClient, HadamardMechServer,
                                            HadamardResponseClient, HadamardResponseServer, HEClient,
                                            HEServer, LHClient, LHServer, UEClient, UEServer)
    IMPORT_ERROR = None
except ImportError as exc:  # the product's own environment: the bench says how to get them
    IMPORT_ERROR = exc


@dataclass(frozen=True)
class Protocol:
    """One library protocol for one task: ``run(true_values, d, epsilon)`` returns share estimates."""

    library: str
    name: str
    run: Callable


def seed_all(seed: int) -> None:
    """Seed every random source the libraries draw from: numpy's global, random, numba's own."""
    np.random.seed(seed % 2**32)
    random.seed(seed)
    _seed_numba(seed % 2**32)


if IMPORT_ERROR is None:
    @numba.njit(cache=False)
    def _seed_numba(seed):
        np.random.seed(seed)

    _MI_MODULES = (GRR, UE, SS, LH, HE)


@contextlib.contextmanager
def _unbiased_mi():
    """Make multi-freq-ldpy's MI return (C − nq)/(n(p − q)) without clipping or renormalising."""
    def unbiased(count_report, n, p, q):
        return (np.asarray(count_report, dtype=float) - n * q) / (n * (p - q))
    saved = [module.MI for module in _MI_MODULES]
    for module in _MI_MODULES:
        module.MI = unbiased
    try:
        yield
    finally:
        for module, original in zip(_MI_MODULES, saved):
            module.MI = original


def _pure(client_factory, server_factory):
    """Run a pure-ldp frequency oracle: privatise each value (1-based), aggregate, unbiased counts / n."""
    def run(values, d, epsilon):
        server = server_factory(epsilon, d)
        client = client_factory(epsilon, d, server)
        reports = [client.privatise(int(v) + 1) for v in values]
        server.aggregate_all(reports)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            counts = server.estimate_all(range(1, d + 1), suppress_warnings=True, normalization=0)
        return np.asarray(counts, dtype=float) / len(values)
    return run


def _mfl(client, aggregator):
    """Run a multi-freq-ldpy frequency oracle: its client per respondent, its aggregator, unbiased MI."""
    def run(values, d, epsilon):
        reports = [client(int(v), d, epsilon) for v in values]
        with _unbiased_mi():
            return np.asarray(aggregator(reports, d, epsilon), dtype=float)
    return run


def frequency_protocols() -> list[Protocol]:
    """Every protocol of the two libraries that estimates the shares of d options.

    Left out: multi-freq-ldpy's ADP (it runs GRR or OUE, both measured here), BLH and SUE-style
    "non-optimal" variants where the optimal one is measured, SHE (worse than THE), and
    pure-ldp's sketches (CMS, PCS, RAPPOR, SketchResponse: built for huge domains, and
    biased by hash collisions at d <= 128).
    """
    pure = [
        Protocol("pure-ldp", "DE (GRR)", _pure(lambda e, d, s: DEClient(e, d), lambda e, d: DEServer(e, d))),
        Protocol("pure-ldp", "OUE", _pure(lambda e, d, s: UEClient(e, d, use_oue=True),
                                          lambda e, d: UEServer(e, d, use_oue=True))),
        Protocol("pure-ldp", "SUE", _pure(lambda e, d, s: UEClient(e, d, use_oue=False),
                                          lambda e, d: UEServer(e, d, use_oue=False))),
        Protocol("pure-ldp", "OLH", _pure(lambda e, d, s: LHClient(e, d, g=s.g, use_olh=True),
                                          lambda e, d: LHServer(e, d, use_olh=True))),
        Protocol("pure-ldp", "HR", _pure(lambda e, d, s: HadamardResponseClient(e, d, s.get_hash_funcs()),
                                         lambda e, d: HadamardResponseServer(e, d))),
        Protocol("pure-ldp", "HM", _pure(lambda e, d, s: HadamardMechClient(e, d, t=1, use_optimal_t=True),
                                         lambda e, d: HadamardMechServer(e, d, t=1, use_optimal_t=True))),
        Protocol("pure-ldp", "THE", _pure(lambda e, d, s: HEClient(e, d),
                                          lambda e, d: HEServer(e, d, use_the=True))),
    ]
    mfl = [
        Protocol("multi-freq-ldpy", "GRR", _mfl(GRR.GRR_Client, GRR.GRR_Aggregator_MI)),
        Protocol("multi-freq-ldpy", "OUE", _mfl(lambda v, d, e: UE.UE_Client(v, d, e, True),
                                                lambda r, d, e: UE.UE_Aggregator_MI(r, e, True))),
        Protocol("multi-freq-ldpy", "SUE", _mfl(lambda v, d, e: UE.UE_Client(v, d, e, False),
                                                lambda r, d, e: UE.UE_Aggregator_MI(r, e, False))),
        Protocol("multi-freq-ldpy", "SS", _mfl(SS.SS_Client, SS.SS_Aggregator_MI)),
        Protocol("multi-freq-ldpy", "OLH", _mfl(lambda v, d, e: LH.LH_Client(v, d, e, True),
                                                lambda r, d, e: LH.LH_Aggregator_MI(r, d, e, True))),
        Protocol("multi-freq-ldpy", "THE", _mfl(HE.HE_Client, lambda r, d, e: HE.HE_Aggregator_MI(r, d, e, True))),
    ]
    return pure + mfl


def _mdim(client, aggregator, *, unbiased=True):
    """Run a multi-freq-ldpy multi-attribute solution on an (n, k) array of 0/1 answers; return P(yes) per attribute."""
    def run(values, d, epsilon):
        k = values.shape[1]
        domains = [2] * k
        reports = [client(row, domains, k, epsilon) for row in values.tolist()]
        context = _unbiased_mi() if unbiased else contextlib.nullcontext()
        with context:
            estimates = aggregator(reports, domains, k, epsilon)
        return np.array([float(estimate[1]) for estimate in estimates])
    return run


def survey_protocols(allocation: str) -> list[Protocol]:
    """multi-freq-ldpy's solutions for k yes/no questions: SPL (split) for ``split``; SMP and RS+FD for ``sample``.

    pure-ldp has single-question oracles only. LH and UE are left out: at 2 options GRR is
    optimal and both are worse (UE's bits at least 4x GRR's variance).
    """
    lib = "multi-freq-ldpy"
    if allocation == "split":
        return [Protocol(lib, "SPL[GRR]", _mdim(SPL_solution.SPL_GRR_Client, SPL_solution.SPL_GRR_Aggregator_MI)),
                Protocol(lib, "SPL[SS]", _mdim(SPL_solution.SPL_SS_Client, SPL_solution.SPL_SS_Aggregator_MI))]
    return [Protocol(lib, "SMP[GRR]", _mdim(SMP_solution.SMP_GRR_Client, SMP_solution.SMP_GRR_Aggregator_MI)),
            Protocol(lib, "SMP[SS]", _mdim(SMP_solution.SMP_SS_Client, SMP_solution.SMP_SS_Aggregator_MI)),
            Protocol(lib, "RS+FD[GRR] (as shipped)",
                     _mdim(RSpFD_solution.RSpFD_GRR_Client, RSpFD_solution.RSpFD_GRR_Aggregator_MI, unbiased=False))]


def rsfd_amplified_pq(k: int, epsilon: float, d: int = 2) -> tuple[float, float]:
    """RS+FD[GRR]'s GRR (p, q) at the amplified ε′ = ln(k(e^ε − 1) + 1), as RSpFD_solution sets them."""
    amplified = math.log(k * (math.exp(epsilon) - 1) + 1)
    p = math.exp(amplified) / (math.exp(amplified) + d - 1)
    return p, (1 - p) / (d - 1)


def rsfd_unbiased(reports: np.ndarray, k: int, epsilon: float, d: int = 2) -> np.ndarray:
    """RS+FD[GRR]'s own estimator (RSpFD_GRR_Aggregator_MI) without its clip(0) and renormalisation: P(yes) per question.

    f̂ = (C·k·d − n(k − 1 + q·d)) / (n·d·(p − q)), C the count of reports of "yes" (value 1) for the
    question; unbiased (its expectation is the share), as the library's formula is before it clips.
    """
    p, q = rsfd_amplified_pq(k, epsilon, d)
    n = reports.shape[0]
    counts = (reports == 1).sum(axis=0).astype(float)
    return (counts * k * d - n * (k - 1 + q * d)) / (n * d * (p - q))


def rsfd_both(values: np.ndarray, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    """Run RS+FD[GRR]'s client once per respondent; return (unbiased estimate, the library's clipped estimate as shipped)."""
    k = values.shape[1]
    domains = [2] * k
    reports = [RSpFD_solution.RSpFD_GRR_Client(row, domains, k, epsilon) for row in values.tolist()]
    shipped = RSpFD_solution.RSpFD_GRR_Aggregator_MI(reports, domains, k, epsilon)
    return (rsfd_unbiased(np.asarray(reports, dtype=int), k, epsilon),
            np.array([float(estimate[1]) for estimate in shipped]))


def rsfd_variance(f: float, k: int, epsilon: float, d: int = 2) -> float:
    """Per-respondent variance of the unbiased RS+FD[GRR] estimate against the population share f (Variance_RSpFD).

    Each report of the question is "yes" with probability σ = (q + f(p − q) + (k − 1)/d)/k, so
    Var = k²σ(1 − σ)/(n(p − q)²); this returns n·Var.
    """
    p, q = rsfd_amplified_pq(k, epsilon, d)
    sigma = (q + f * (p - q) + (k - 1) / d) / k
    return k * k * sigma * (1 - sigma) / (p - q) ** 2


# --- Theory: each protocol's (p, q) exactly as the libraries set them -------------------------------

def _grr(epsilon: float, d: int) -> tuple[float, float]:
    """GRR (pure-ldp DE, multi-freq-ldpy GRR): p = e^ε/(e^ε+d−1), q = 1/(e^ε+d−1)."""
    return math.exp(epsilon) / (math.exp(epsilon) + d - 1), 1 / (math.exp(epsilon) + d - 1)


def _ue(epsilon: float, optimal: bool) -> tuple[float, float]:
    """OUE: p = 1/2, q = 1/(e^ε+1); SUE: p = e^{ε/2}/(e^{ε/2}+1), q = 1 − p (both libraries)."""
    if optimal:
        return 0.5, 1 / (math.exp(epsilon) + 1)
    half = math.exp(epsilon / 2)
    return half / (half + 1), 1 / (half + 1)


def _olh(epsilon: float) -> tuple[float, float]:
    """OLH with g = round(e^ε) + 1 (both libraries): p = e^ε/(e^ε+g−1), support of another value q = 1/g."""
    g = int(round(math.exp(epsilon))) + 1
    return math.exp(epsilon) / (math.exp(epsilon) + g - 1), 1 / g


def _ss(epsilon: float, d: int) -> tuple[float, float]:
    """multi-freq-ldpy SS: subset size max(1, rint(d/(e^ε+1))) and its (p, q) (SS.py, SS_Aggregator_MI)."""
    e = math.exp(epsilon)
    k = int(max(1, np.rint(d / (e + 1))))
    p = k * e / (k * e + d - k)
    q = ((k - 1) * k * e + (d - k) * k) / ((d - 1) * (k * e + d - k))
    return p, q


def _the_objective(theta: float, epsilon: float) -> float:
    """The variance factor both libraries minimise over the THE threshold θ in [1/2, 1]."""
    return ((2 * math.exp(epsilon * theta / 2) - 1)
            / (1 + math.exp(epsilon * (theta - 0.5)) - 2 * math.exp(epsilon * theta / 2)) ** 2)


def _the(epsilon: float, library: str) -> tuple[float, float]:
    """THE: a bit + Laplace(2/ε) above θ: p = 1 − e^{ε(θ−1)/2}/2, q = e^{−εθ/2}/2, θ found as each library does.

    pure-ldp: round(fminbound(·, 0.5, 1), 4); multi-freq-ldpy: minimize_scalar(bounded [0.5, 1]).x.
    """
    from scipy.optimize import fminbound, minimize_scalar
    if library == "pure-ldp":
        theta = round(float(fminbound(_the_objective, 0.5, 1, args=(epsilon,))), 4)
    else:
        theta = float(minimize_scalar(_the_objective, bounds=[0.5, 1], method="bounded", args=(epsilon,)).x)
    return 1 - 0.5 * math.exp(epsilon * (theta - 1) / 2), 0.5 * math.exp(-epsilon * theta / 2)


def frequency_pq(library: str, name: str, d: int, epsilon: float) -> tuple[float, float] | None:
    """Return (p, q) of a frequency protocol of ``frequency_protocols()``, or None where no pure (p, q) is derived.

    pure-ldp's HR (k2k Hadamard response) and HM (Hadamard mechanism with t coefficients) are not
    pure protocols in this sense: their variance is not derived here.
    """
    table = {
        "DE (GRR)": lambda: _grr(epsilon, d), "GRR": lambda: _grr(epsilon, d),
        "OUE": lambda: _ue(epsilon, True), "SUE": lambda: _ue(epsilon, False),
        "OLH": lambda: _olh(epsilon), "SS": lambda: _ss(epsilon, d), "THE": lambda: _the(epsilon, library),
    }
    return table[name]() if name in table else None


def survey_pq(name: str, k: int, epsilon: float) -> tuple[float, float, float] | None:
    """Return (p, q, share of respondents who answer each question) of a ``survey_protocols`` solution for yes/no.

    SPL runs GRR or SS on every question at ε/k (SS at d = 2 has subset size 1: GRR); SMP samples
    one question per respondent (share 1/k) at full ε. RS+FD is not of this form (its reports mix
    fake data in; see ``rsfd_variance``), and as shipped it clips its estimates: None.
    """
    if name in ("SPL[GRR]", "SPL[SS]"):
        return (*_grr(epsilon / k, 2), 1.0) if name == "SPL[GRR]" else (*_ss(epsilon / k, 2), 1.0)
    if name in ("SMP[GRR]", "SMP[SS]"):
        return (*_grr(epsilon, 2), 1 / k) if name == "SMP[GRR]" else (*_ss(epsilon, 2), 1 / k)
    return None


def rsfd_privacy_loss(k: int, epsilon: float) -> tuple[float, float]:
    """Return RS+FD[GRR]'s exact privacy loss on k yes/no questions: (two whole answers, two answers one question apart).

    From its client (``RSpFD_GRR_Client``): one question drawn uniformly is reported by GRR at the
    amplified ε′, every other one is a uniform fake, so P(y | x) = (1/k)(1/2)^(k−1) Σ_j P_GRR(y_j | x_j).
    The loss is the largest log ratio of P(y | x) / P(y | x′) over all reports y, enumerated over all
    2^k answers x, x′: between answers one question apart it is ε (the library's claim), between any two
    answers it is ε′ = ln(k(e^ε − 1) + 1) (x′ the opposite of x on every question).
    """
    p, q = rsfd_amplified_pq(k, epsilon)
    answers = list(itertools.product((0, 1), repeat=k))
    table = np.array([[sum(p if y[j] == x[j] else q for j in range(k)) for y in answers] for x in answers])
    whole = one = 0.0
    for a, x in enumerate(answers):
        for b, other in enumerate(answers):
            loss = float(np.max(np.log(table[a] / table[b])))
            whole = max(whole, loss)
            if sum(u != v for u, v in zip(x, other)) == 1:
                one = max(one, loss)
    return whole, one
