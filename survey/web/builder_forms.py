"""Flask-WTF forms of the survey builder, and their conversion to and from a definition mapping.

Every field is taken as text and converted here, so that a bad value reaches
definition_errors as typed (e.g. epsilon "two") and its message says what was wrong.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from flask_wtf import FlaskForm
from flask_wtf.file import FileAllowed, FileField, FileSize
from wtforms import BooleanField, FieldList, Form, FormField, SelectField, StringField, TextAreaField
from wtforms.fields.choices import SelectChoice
from wtforms.validators import Length

from ..core.definition import DECLINE_LABEL, KINDS, MAX_QUESTIONS, NUMBER_MECHANISMS
from ..core.mechanisms import for_kind
from ..core.planning import DEFAULT_MARGIN, DEFAULT_RESPONDENTS
from ..core.precision import DEFAULT_ODDS_RATIO
from .builder_languages import parse_languages, translation_formdata, translation_values, translations_from_form
from .forms import MAX_DEFINITION_SIZE

KIND_NAMES = {"yes_no": "yes/no", "choice": "single choice", "multi": "multiple choice", "number": "number"}
MECHANISM_NAMES = {"auto": "Automatic: least worst-case error",
                   **{mechanism.name: mechanism.label for mechanism in for_kind("number")}}
NO_AUTOFILL = {"autocomplete": "off", "spellcheck": "false", "autocapitalize": "off"}


class QuestionForm(Form):
    """One question; every field is on the page, and only those of its kind are shown and read (form_to_mapping)."""

    kind = SelectField("Kind", choices=[SelectChoice(kind, KIND_NAMES[kind]) for kind in KINDS])
    id = StringField("Question id", render_kw=NO_AUTOFILL)
    text = TextAreaField("Question text", render_kw={"rows": 2})
    options = TextAreaField("Options, one per line", render_kw={"rows": 4})
    decline = BooleanField(f"Offer “{DECLINE_LABEL}”")
    min = StringField("Smallest answer", render_kw={"inputmode": "numeric", **NO_AUTOFILL})
    max = StringField("Largest answer", render_kw={"inputmode": "numeric", **NO_AUTOFILL})
    mechanism = SelectField("Mechanism", default="auto",
                            choices=[SelectChoice(name, MECHANISM_NAMES[name]) for name in NUMBER_MECHANISMS])
    weight = StringField("Weight", default="1", render_kw={"inputmode": "decimal", **NO_AUTOFILL})
    # Display logic (survey/core/branching.py): the earlier question's id, and the answers of it that show this one.
    show_if = StringField("Show only if the answer to question (id)", render_kw=NO_AUTOFILL)
    show_if_equals = TextAreaField("… is one of these answers, one per line", render_kw={"rows": 2})


class BuilderForm(FlaskForm):
    """A whole survey: its fields, its questions and the numbers the precision preview is computed for."""

    title = StringField("Title")
    slug = StringField("Address (slug)", render_kw=NO_AUTOFILL)
    description = TextAreaField("Description shown to respondents", render_kw={"rows": 3})
    epsilon = StringField("Privacy budget ε per respondent", default="2",
                          render_kw={"inputmode": "decimal", **NO_AUTOFILL})
    allocation = SelectField("How questions share the budget", default="split",
                             choices=[SelectChoice("split", "Split: every question"),
                                      SelectChoice("sample", "Sample: a few questions each")])
    sample = StringField("Questions per respondent (sample only)", render_kw={"inputmode": "numeric", **NO_AUTOFILL})
    access = SelectField("Who may answer", default="open",
                         choices=[SelectChoice("open", "Anyone with the link"),
                                  SelectChoice("invite", "Only people with an invitation link")])
    series = StringField("Series (optional)", render_kw=NO_AUTOFILL)
    wave_epsilon = StringField("Per-wave ε₁ of the series (optional)", render_kw={"inputmode": "decimal", **NO_AUTOFILL})
    release_every = StringField("Release results every … responses (optional)",
                                render_kw={"inputmode": "numeric", **NO_AUTOFILL})
    thank_you = TextAreaField("Thank-you text (optional)", render_kw={"rows": 2})
    panel_parameters = StringField("Panel parameters (optional)", render_kw=NO_AUTOFILL)
    panel_code = StringField("Completion code (optional)", render_kw=NO_AUTOFILL)
    panel_redirect = StringField("Completion redirect URL (optional)", render_kw={"inputmode": "url", **NO_AUTOFILL})
    languages = StringField("Languages (optional)", render_kw=NO_AUTOFILL)
    questions = FieldList(FormField(QuestionForm), min_entries=0, max_entries=MAX_QUESTIONS)
    respondents = StringField("Respondents you expect", default=str(DEFAULT_RESPONDENTS),
                              render_kw={"inputmode": "numeric", **NO_AUTOFILL})
    margin = StringField("Margin of error you want (± percentage points)", default=f"{DEFAULT_MARGIN * 100:g}",
                         render_kw={"inputmode": "decimal", **NO_AUTOFILL})
    # The pair of the crosstab preview: choices are the form's questions (builder.pair_choices), set per request.
    pair_a = SelectField("First question (A)", choices=[], validate_choice=False)
    pair_b = SelectField("Second question (B)", choices=[], validate_choice=False)
    odds_ratio = StringField("Odds ratio to detect (two yes/no questions)", default=f"{DEFAULT_ODDS_RATIO:g}",
                             render_kw={"inputmode": "decimal", **NO_AUTOFILL})
    # The power preview: a yes/no question (builder.power_choices, set per request) and two shares in percent.
    power_question = SelectField("Yes/no question", choices=[], validate_choice=False)
    power_null = StringField("Share to test against (%)", default="10", render_kw={"inputmode": "decimal", **NO_AUTOFILL})
    power_share = StringField("Share you expect (%)", default="20", render_kw={"inputmode": "decimal", **NO_AUTOFILL})

    def process(self, formdata=None, obj=None, data=None, extra_filters=None, **kwargs):
        """Fill the fields, and keep the translation fields (one per language, builder_languages) as posted."""
        formdata = self.meta.wrap_formdata(self, formdata)
        self.translation_data = translation_values(formdata) if formdata is not None else {}
        super().process(formdata, obj, data=data, extra_filters=extra_filters, **kwargs)


class ImportForm(FlaskForm):
    """Load a TOML definition into the builder, pasted or uploaded (the upload wins)."""

    toml = TextAreaField("TOML definition", validators=[Length(max=MAX_DEFINITION_SIZE)],
                         render_kw={"rows": 8, **NO_AUTOFILL})
    upload = FileField("Or a .toml file",
                       validators=[FileAllowed(["toml"], "The file must be a .toml file."),
                                   FileSize(max_size=MAX_DEFINITION_SIZE,
                                            message=f"The file must be at most {MAX_DEFINITION_SIZE} bytes.")],
                       render_kw={"accept": ".toml"})


def _number(text: str | None, kind=float):
    """Return ``text`` as a number of ``kind`` if it reads as one, else the text itself (None when blank)."""
    text = (text or "").strip()
    if not text:
        return None
    try:
        return kind(text)
    except ValueError:
        if kind is int:
            try:
                value = float(text)
            except ValueError:
                return text
            return int(value) if value.is_integer() else value
        return text


def form_to_mapping(form: BuilderForm) -> dict:
    """Return the definition mapping the form describes (blank optional fields left out)."""
    languages = parse_languages(form.languages.data)
    data = {"slug": (form.slug.data or "").strip(), "title": form.title.data or "",
            "description": form.description.data or "", "epsilon": _number(form.epsilon.data),
            "allocation": form.allocation.data or "split", "access": form.access.data or "open",
            "series": (form.series.data or "").strip() or None,
            "release_every": _number(form.release_every.data, int)}
    wave_epsilon = _number(form.wave_epsilon.data)
    if wave_epsilon is not None:
        data["wave_epsilon"] = wave_epsilon
    if data["allocation"] == "sample":
        data["sample"] = _number(form.sample.data, int)
    data.update(_completion_mapping(form))
    questions = []
    for entry in form.questions:
        sub = entry.form
        kind = sub.kind.data
        question = {"id": (sub.id.data or "").strip(), "kind": kind, "text": sub.text.data or ""}
        if kind in ("choice", "multi"):
            question["options"] = [line.strip() for line in (sub.options.data or "").splitlines() if line.strip()]
            if sub.decline.data:
                question["decline"] = True
        if kind == "number":
            question["min"] = _number(sub.min.data, int)
            question["max"] = _number(sub.max.data, int)
            mechanism = (sub.mechanism.data or "").strip() or "auto"
            if mechanism != "auto":
                question["mechanism"] = mechanism
        weight = _number(sub.weight.data)
        if weight is not None:
            question["weight"] = weight
        show_if = _show_if(sub.show_if.data, sub.show_if_equals.data)
        if show_if is not None:
            question["show_if"] = show_if
        questions.append(question)
    data["questions"] = questions
    if languages:
        data["languages"] = languages
        survey, by_question = translations_from_form(form.translation_data, languages, len(questions))
        if survey:
            data["translations"] = survey
        for question, texts in zip(questions, by_question):
            if "options" not in question:  # a kind without options: its hidden option translations are not read
                texts = {tag: {"text": own["text"]} for tag, own in texts.items() if own.get("text")}
            if texts:
                question["translations"] = texts
    return {name: value for name, value in data.items() if value is not None}


def _completion_mapping(form: BuilderForm) -> dict:
    """Return the definition's thank_you and panel as the form gives them (each left out when blank)."""
    data = {}
    if (form.thank_you.data or "").strip():
        data["thank_you"] = form.thank_you.data.replace("\r\n", "\n")
    parameters = re.split(r"[\s,]+", (form.panel_parameters.data or "").strip())
    panel = {"parameters": [name for name in parameters if name], "code": (form.panel_code.data or "").strip(),
             "redirect": (form.panel_redirect.data or "").strip()}
    if any(panel.values()):
        data["panel"] = {name: value for name, value in panel.items() if value or name == "parameters"}
    return data


def panel_field(definition_field: str | None) -> str:
    """Return the builder field of a panel error's definition field ("panel.redirect" -> "panel_redirect")."""
    name = "panel_" + (definition_field or "").partition(".")[2]
    return name if name in ("panel_parameters", "panel_code", "panel_redirect") else "panel_code"


def _completion_formdata(data: Mapping) -> dict:
    """Return the builder's thank-you and panel fields (name -> text) for a definition mapping."""
    panel = data.get("panel") if isinstance(data.get("panel"), Mapping) else {}
    parameters = panel.get("parameters")
    return {"thank_you": _text(data.get("thank_you")),
            "panel_parameters": ", ".join(map(str, parameters)) if isinstance(parameters, list) else _text(parameters),
            "panel_code": _text(panel.get("code")), "panel_redirect": _text(panel.get("redirect"))}


def _show_if(question: str | None, equals: str | None) -> dict | None:
    """Return the show_if table of the builder's two fields (None when both are blank)."""
    question = (question or "").strip()
    answers = [line.strip() for line in (equals or "").splitlines() if line.strip()]
    if not question and not answers:
        return None
    return {"question": question, "equals": answers[0] if len(answers) == 1 else answers}


def _show_if_fields(value) -> tuple[str, str]:
    """Return the builder's two fields (question id, answers one per line) of a definition's show_if."""
    if not isinstance(value, Mapping):
        return ("", "") if value is None else (_text(value), "")
    equals = value.get("equals")
    lines = "\n".join(map(str, equals)) if isinstance(equals, list) else _text(equals)
    return _text(value.get("question")), lines


def _text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def mapping_to_formdata(data: Mapping) -> dict:
    """Return the builder's form fields (name → text) for a definition mapping, e.g. one read from TOML.

    Values of the wrong type are kept as text, so the form shows them with their errors;
    only ``decline``, a tick box, cannot hold one (import_toml reports it beside the box).
    """
    fields = {"title": _text(data.get("title")), "slug": _text(data.get("slug")),
              "description": _text(data.get("description")), "epsilon": _text(data.get("epsilon")),
              "allocation": _text(data.get("allocation", "split")), "sample": _text(data.get("sample")),
              "access": _text(data.get("access", "open")), "series": _text(data.get("series")),
              "wave_epsilon": _text(data.get("wave_epsilon")),
              "release_every": _text(data.get("release_every")), **_completion_formdata(data)}
    languages = data.get("languages")
    if isinstance(languages, list):
        fields["languages"] = ", ".join(map(str, languages))
        fields.update(translation_formdata(data))
    questions = data.get("questions")
    for index, question in enumerate(questions if isinstance(questions, list) else []):
        if not isinstance(question, Mapping):
            question = {}
        prefix = f"questions-{index}-"
        kind = question.get("kind")
        options = question.get("options")
        if question.get("decline") is True:
            fields[prefix + "decline"] = "y"
        fields[prefix + "show_if"], fields[prefix + "show_if_equals"] = _show_if_fields(question.get("show_if"))
        fields.update({
            prefix + "kind": kind if kind in KINDS else "yes_no", prefix + "id": _text(question.get("id")),
            prefix + "text": _text(question.get("text")),
            prefix + "options": "\n".join(map(str, options)) if isinstance(options, list) else _text(options),
            prefix + "min": _text(question.get("min")), prefix + "max": _text(question.get("max")),
            prefix + "mechanism": _text(question.get("mechanism", "auto")),
            prefix + "weight": _text(question.get("weight", 1))})
    return fields
