"""Direct or randomized? (survey.core.versus_direct): the break-even sensitivity bias, checked by hand."""

from __future__ import annotations

import math

import pytest

from survey.core.definition import parse_definition
from survey.core.planning import question_previews
from survey.core.versus_direct import BreakEven, break_even_bias, check_theta, direct_sentence


def _definition(*questions, epsilon=math.log(3), **fields):
    return parse_definition({"slug": "v", "title": "V", "epsilon": epsilon, "questions": list(questions), **fields})


SMOKER = {"id": "smoker", "kind": "yes_no", "text": "Smoke?"}


def test_warner_break_even_by_hand():
    """ε = ln 3: p = 3/4, q = 1/4; at θ = ½, V = λ(1 − λ)/(p − q)² = ¼/¼ = 1 and the direct variance is ¼,
    so at 1,000 respondents b* = √((1 − ¼)/1000) = 0.0273861…; at θ = 0.2 Warner's excess variance
    p(1 − p)/(2p − 1)² = 3/4 is the same, so b* is too."""
    for theta in (0.5, 0.2):
        (preview,) = question_previews(_definition(SMOKER), respondents=1000, theta=theta)
        (found,) = preview["versus_direct"]
        assert found["bias"] == pytest.approx(math.sqrt(0.75 / 1000), abs=1e-9)
        assert found["direct_std_error"] == pytest.approx(math.sqrt(theta * (1 - theta) / 1000), abs=1e-12)
        assert found["rr_std_error"] ** 2 - found["direct_std_error"] ** 2 == pytest.approx(0.75 / 1000, abs=1e-9)


def test_sample_allocation_counts_the_reports_a_question_gets():
    """Each respondent answers 1 of 2 questions: 500 reports against 1,000 direct answers,
    b* = √(1/500 − ¼/1000) at θ = ½ with the design's ε′ = ln 3 per question."""
    second = {"id": "other", "kind": "yes_no", "text": "Other?"}
    previews = question_previews(_definition(SMOKER, second, allocation="sample", sample=1), respondents=1000)
    for preview in previews:
        assert preview["versus_direct"][0]["bias"] == pytest.approx(math.sqrt(1 / 500 - 0.25 / 1000), abs=1e-9)


def test_choice_options_and_number_range():
    """A choice gives one b* per option; a number's is a share of its range, its sentence in the question's units."""
    choice = {"id": "c", "kind": "choice", "text": "C?", "options": ["a", "b", "c"]}
    number = {"id": "x", "kind": "number", "text": "X?", "min": 0, "max": 40}
    first, second = question_previews(_definition(choice, number, epsilon=2.0), respondents=2000)
    assert [entry["option"] for entry in first["versus_direct"]] == ["a", "b", "c"]
    assert all(0 < entry["bias"] < 1 for entry in first["versus_direct"])
    (mean,) = second["versus_direct"]
    assert mean["bias"] == pytest.approx(math.sqrt(mean["rr_std_error"] ** 2 - 0.25 / 2000), abs=1e-12)
    sentence = direct_sentence([BreakEven(**mean)], respondents=2000, scale=40)
    shown = f"{math.ceil(mean['bias'] * 1000) / 10:.1f}% of the range ({math.ceil(mean['bias'] * 40 * 1000) / 1000:g})"
    assert shown in sentence  # both rounded up: 2.32…% reads 2.4%, 0.9261… reads 0.927


def test_break_even_edges():
    """No excess variance: b* = 0; no reports: infinite; θ outside (0, 1) refused."""
    assert break_even_bias(0.25, 0.25, 1000, 1000) == 0.0
    assert break_even_bias(1.0, 0.25, 0, 1000) == math.inf
    for bad in (0, 1, 1.5, True):
        with pytest.raises(ValueError, match="planning share"):
            check_theta(bad)
