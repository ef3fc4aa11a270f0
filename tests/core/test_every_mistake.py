"""Every mistake of a definition at once, with "did you mean" for a misspelt key (issue 27)."""

from __future__ import annotations

from survey.core.definition_check import every_mistake

BAD = '''slug = "bad-one"
titel = "Misspelt"
epsilon = "two"

[[questions]]
id = "q1"
kind = "yes_no"
txt = "Do you?"

[[questions]]
id = "q2"
kind = "choice"
text = "Which?"
option = ["a", "b"]
'''


def test_every_mistake_is_listed_with_did_you_mean():
    mistakes = every_mistake(BAD, source="bad.toml")
    assert len(mistakes) == 7, mistakes
    assert any("field 'titel': unknown field (did you mean 'title'?)" in line for line in mistakes)
    assert any("question 'q1', field 'txt': not a field of a yes_no question (did you mean 'text'?)" in line
               for line in mistakes)
    assert any("question 'q2', field 'option':" in line and "(did you mean 'options'?)" in line for line in mistakes)
    assert any("field 'epsilon': must be a number" in line for line in mistakes)
    assert all(line.startswith("bad.toml, ") for line in mistakes)


def test_a_valid_definition_has_none_and_bad_toml_has_one():
    good = BAD.replace("titel", "title").replace('"two"', "2").replace("txt", "text").replace("option =", "options =")
    assert every_mistake(good) == []
    assert len(every_mistake("slug = ", source="x.toml")) == 1
    assert "did you mean" not in every_mistake(BAD.replace("titel", "zzzzz"))[1]
