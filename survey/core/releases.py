"""Releases of results in batches, and what they guarantee, in numbers and plain words.

A design's ``release_every`` = B: the results (every aggregate, crosstab, model, export and
API answer) change only when another B responses have arrived, so each release differs from
the last by a batch of at least B reports, seen only as a multiset. Anyone who sees released
results then learns about one respondent no more than the central (ε, δ) of a batch of B
(``shuffling.central_epsilon``, Feldman, McMillan & Talwar 2021). It does not bind whoever
runs the server, who sees each report as it arrives; forged reports shrink the honest batch.
Pure: no Flask, no SQL, no I/O.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from .design import release_every
from .shuffling import DEFAULT_DELTA, central_epsilon
from .wording import N_, number, tr
from .words import format_epsilon, percent_up, round_up


@dataclass(frozen=True)
class ReleaseView:
    """Where a survey's releases stand and what they guarantee.

    ``released`` responses are in the results, ``held`` wait for the next release (``to_go``
    more are needed); ``central_epsilon`` is the guarantee of a batch of ``every`` (of the
    smallest release, when the owner released fewer early: ``smallest_release``).
    """

    every: int
    released: int
    held: int
    to_go: int
    local_epsilon: float
    central_epsilon: float
    delta: float
    smallest_release: int | None

    def as_dict(self) -> dict:
        """Return the view as JSON-ready fields (the API's ``release`` object)."""
        return asdict(self)


def release_view(design: dict, *, released: int, held: int, smallest_release: int | None = None) -> ReleaseView:
    """Return the release view of a design given its released and held counts (``Store.release_state``)."""
    every = release_every(design)
    local = float(design["epsilon_spent"])
    batch = every if smallest_release is None else min(every, smallest_release)
    return ReleaseView(every=every, released=released, held=held, to_go=every - held if every > 1 else 0,
                       local_epsilon=local, central_epsilon=batch_epsilon(local, batch), delta=DEFAULT_DELTA,
                       smallest_release=smallest_release)


def batch_epsilon(local_epsilon: float, batch: int) -> float:
    """Return the central ε of releases of ``batch`` reports, rounded up to 4 decimals (the local ε for 0 or 1 report).

    Rounded up, it stays a valid bound and reads the same whatever the floating-point details
    of the libraries that computed it.
    """
    if batch <= 1 or local_epsilon <= 0:
        return local_epsilon
    return min(local_epsilon, math.ceil(central_epsilon(local_epsilon, batch) * 10_000) / 10_000)


_SUPERSCRIPTS = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def format_delta(delta: float) -> str:
    """Return δ as a power of ten where it is one (1e-06 → "10⁻⁶"), else rounded up to 6 significant digits."""
    exponent = round(math.log10(delta))
    if math.isclose(delta, 10.0**exponent):
        return f"10{str(exponent).translate(_SUPERSCRIPTS)}"
    return f"{float(round_up(delta, 6)):g}"


def delta_words(delta: float) -> str:
    """Return δ as a chance in words: 1e-6 → "one in a million" (else as ``format_delta``)."""
    named = {1e-6: N_("one in a million"), 1e-7: N_("one in ten million"), 1e-8: N_("one in a hundred million")}
    return named.get(delta, format_delta(delta))


def release_sentence(view: ReleaseView) -> str:
    """Return the researcher's sentences on what the results page shows and what that guarantees."""
    local = format_epsilon(view.local_epsilon)
    if view.every == 1:
        return (f"Results are updated after every response, so anyone who sees them — you, your collaborators, "
                f"readers of your paper — learns about a respondent as much as their own reports allow: "
                f"ε = {local}, the local guarantee. Releasing in batches (release_every in the definition) "
                f"would protect readers of the results far more.")
    shown = (f"These results hold the {view.released:,} responses released so far; {view.held:,} more have "
             f"arrived and will be added when {view.every:,} have ({view.to_go:,} to go).")
    batch = batch_epsilon(view.local_epsilon, view.every)
    compared = (f"far less than each report's own ε = {local} (amplification by shuffling, Feldman, McMillan & "
                f"Talwar 2021)" if batch < view.local_epsilon else
                f"no less than each report's own ε = {local}: batches of {view.every:,} are too small to amplify "
                f"reports at this ε (Feldman, McMillan & Talwar 2021)")
    guarantee = (f"Results are released {view.every:,} responses at a time, so everyone who sees only released "
                 f"results — you, your collaborators, readers of your paper — can learn about any one respondent "
                 f"no more than a central ε = {format_epsilon(batch)} allows "
                 f"(δ = {format_delta(view.delta)}: except with a chance of {delta_words(view.delta)}), {compared}. "
                 f"Whoever runs the server sees each report as it arrives and is bound only by ε = {local}.")
    if view.smallest_release is not None and view.smallest_release < view.every:
        guarantee += " " + early_release_sentence(view.local_epsilon, view.smallest_release)
    return f"{shown} {guarantee}"


def early_release_sentence(local_epsilon: float, size: int) -> str:
    """Return what an early release of ``size`` responses (fewer than the step) guarantees their respondents."""
    local = format_epsilon(local_epsilon)
    central = batch_epsilon(local_epsilon, size)
    if size <= 1:
        return ("One release was made early with a batch of one response: no amplification; the central ε "
                f"equals each report's ε = {local}.")
    if central >= local_epsilon:
        return (f"One release was made early with a batch of {size:,} responses, too few to amplify: the central "
                f"ε of their respondents equals each report's ε = {local}.")
    return (f"One release was made early with {size:,} responses: their respondents are protected at central "
            f"ε = {format_epsilon(central)} instead of each report's ε = {local}.")


def release_note(design: dict) -> str:
    """Return the respondent's plain sentence on who sees what (the respondent page)."""
    from .planning import posterior_bound  # here: planning imports scipy.stats, which the codebook's users need not

    view = release_view(design, released=0, held=0)
    if view.every == 1:
        return tr("Results change each time a set of answers arrives. So anyone who reads the results gets the "
                  "protection above.")
    sure = percent_up(posterior_bound(view.central_epsilon))
    return tr("Researchers and readers see only totals over at least %(every)s people. They never see your "
              "reports one by one. From those totals, someone who thought it 50/50 could be at most %(sure)s sure "
              "of any answer of yours (central ε = %(epsilon)s, except with a chance of %(delta)s). The person who "
              "runs the server sees each report as it arrives. For them, the protection above holds.",
              every=number(view.every),
              sure=sure, epsilon=format_epsilon(view.central_epsilon), delta=tr(delta_words(view.delta)))


def early_release_warning(view: ReleaseView) -> str:
    """Return what releasing the held responses now costs their respondents (the owner's confirmation)."""
    guarantee = format_epsilon(batch_epsilon(view.local_epsilon, view.held))
    instead = format_epsilon(batch_epsilon(view.local_epsilon, view.every))
    if view.held == 1:
        return (f"Releasing the 1 held response now, fewer than {view.every:,}, protects its respondent only at "
                f"central ε = {guarantee} (a batch of one response: no amplification; the central ε equals the "
                f"report's own ε) instead of {instead}: anyone who compares the results before and after learns "
                f"about this person from their report alone.")
    return (f"Releasing the {view.held:,} held responses now, fewer than {view.every:,}, protects their "
            f"respondents only at central ε = {guarantee} instead of {instead}: anyone who compares the results "
            f"before and after learns about these {view.held:,} people from fewer reports.")


def release_plan_sentence(design: dict) -> str:
    """Return how a design's results will be released and the central ε that gives (``create`` and the builder)."""
    view = release_view(design, released=0, held=0)
    local = format_epsilon(view.local_epsilon)
    if view.every == 1:
        return (f"Releases: after every response (release_every = 1), so readers of the results get the local "
                f"ε′ = {local}.")
    return (f"Releases: every {view.every:,} responses, so readers of the results get central "
            f"ε = {format_epsilon(view.central_epsilon)} (δ = {format_delta(view.delta)}) instead of the local "
            f"ε′ = {local}; results show nothing until the first {view.every:,} responses have arrived.")
