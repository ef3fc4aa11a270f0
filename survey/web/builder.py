"""The survey builder: a form of questions with a live precision preview, TOML import and export.

Without JavaScript every step is a submit button whose ``action`` the server applies
and re-renders (``add:KIND``, ``kind:I``, ``remove:I``, ``up:I``, ``down:I``, ``preview``,
``save``, ``export``); with JavaScript (client_js/builder.js) adding, changing a question's
kind, removing and moving happen in place and the preview comes from
``/surveys/build/preview.json``. Every question carries the fields of every kind: those its
kind does not use are hidden, kept for a change back, and never read (form_to_mapping). Every number comes from
survey/core/planning.py, the module behind `ldp-survey plan`. Saving makes a draft owned by
its maker; re-saving one's own draft replaces it; publishing is the dashboard's button.
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass, field

from flask import Blueprint, Response, abort, flash, g, jsonify, redirect, render_template, request, url_for
from werkzeug.datastructures import MultiDict

from ..core.definition import DECLINE_LABEL, KINDS, LANGUAGE_RE, MAX_OPTIONS, SurveyDefinition, parse_definition
from ..core.definition import QUESTION_FIELDS as DEFINITION_QUESTION_FIELDS
from ..core.definition import SURVEY_FIELDS as DEFINITION_SURVEY_FIELDS, did_you_mean
from ..core.definition_check import FieldError, definition_errors, design_errors
from ..core.definition_toml import dump_definition
from ..core.languages import DEFAULT_LANGUAGE, translation_warnings
from ..core.planning import NOMINAL_EPSILON, nominal_warning, power_plan, question_previews, recommend
from ..core.precision import DEFAULT_WARN_MARGIN, crosstab_precision, power_sentence, precision_warnings
from ..store import SLUG_TAKEN, SlugTaken, StoreError, StoreUnavailable
from .access import survey_for_researcher
from .auth import login_required
from .builder_forms import (KIND_NAMES, BuilderForm, ImportForm, QuestionForm, form_to_mapping, mapping_to_formdata,
                            panel_field)
from .builder_languages import field_name, language_name, left_out, parse_languages
from .builder_text import preview_terms, summary
from .db import get_store
from .forms import LogoutForm
from .revising import BACK_TO_EDITING, back_to_builder, is_published_edit, propose, render_confirmation

bp = Blueprint("builder", __name__)

QUESTION_FIELDS = ("kind", "id", "text", "options", "decline", "min", "max", "mechanism", "weight", "show_if",
                   "show_if_equals")
SURVEY_FIELDS = ("title", "slug", "description", "epsilon", "allocation", "sample", "access", "series", "wave_epsilon",
                 "release_every", "thank_you", "panel_parameters", "panel_code", "panel_redirect", "languages")
# The fields of the precision preview: not part of the definition, kept across every button.
PREVIEW_FIELDS = ("respondents", "margin", "pair_a", "pair_b", "odds_ratio", "power_question", "power_null",
                  "power_share")
MAX_RESPONDENTS = 10**9
# The recommendation tries every allocation (split, and sample m = k..1): at most this many
# question designs, each computed once per shape (kind, options) and budget.
MAX_RECOMMENDATION_DESIGNS = 300


@dataclass
class Evaluation:
    """What the builder makes of a filled form: errors by field name, and the design and previews when valid."""

    errors: dict[str, list[str]] = field(default_factory=dict)
    defn: SurveyDefinition | None = None
    design: dict | None = None
    previews: list[dict] | None = None
    warnings: list[str] = field(default_factory=list)
    recommendation: dict | None = None
    crosstab: dict | None = None
    power: dict | None = None

    def add(self, name: str, message: str):
        self.errors.setdefault(name, []).append(message)


def _translation_field(error: FieldError) -> str | None:
    """Return the translation field a translation error belongs beside ("fr.options must ..."), else None."""
    found = re.match(r"([A-Za-z0-9-]+)\.(title|description|thank_you|text|options)\b", error.message)
    if error.field != "translations" or found is None:
        return None
    prefix = "" if error.question is None else f"questions-{error.question}-"
    return prefix + field_name(*found.groups())


def _field_name(error: FieldError) -> str:
    """Return the form field an error belongs beside (a question's fieldset for its kind or a whole-question error)."""
    translation = _translation_field(error)
    if translation is not None:
        return translation
    if error.question is None and error.field == "translations":
        return "languages"
    if error.question is None and (error.field or "").startswith("panel"):
        return panel_field(error.field)
    if error.question is None or (error.field in SURVEY_FIELDS and error.field not in QUESTION_FIELDS):
        # A question's share under sample allocation (field "sample") is fixed by the survey's fields.
        return error.field if error.field in SURVEY_FIELDS else "questions"
    prefix = f"questions-{error.question}"
    if error.field in QUESTION_FIELDS and error.field != "kind":
        return f"{prefix}-{error.field}"
    return prefix


def _message(message: str) -> str:
    return message[:1].upper() + message[1:] + ("" if message.endswith(".") else ".")


def _planning_inputs(form: BuilderForm, evaluation: Evaluation) -> tuple[int, float] | None:
    respondents = margin = None
    try:
        respondents = int((form.respondents.data or "").strip())
    except ValueError:
        pass
    if respondents is None or not 1 <= respondents <= MAX_RESPONDENTS:
        evaluation.add("respondents", f"Type a whole number of respondents from 1 to {MAX_RESPONDENTS:,}.")
        respondents = None
    try:
        margin = float((form.margin.data or "").strip().rstrip("%"))
    except ValueError:
        pass
    if margin is None or not 0 < margin < 100:
        evaluation.add("margin", "Type a margin in percentage points above 0 and below 100, e.g. 5 for ±5 points.")
        margin = None
    return None if respondents is None or margin is None else (respondents, margin / 100)


def _odds_ratio(form: BuilderForm, evaluation: Evaluation) -> float | None:
    """Return the odds ratio the crosstab preview plans for, or None with an error beside its field."""
    try:
        value = float((form.odds_ratio.data or "").strip())
    except ValueError:
        value = None
    if value is None or not math.isfinite(value) or value <= 0 or value == 1:
        evaluation.add("odds_ratio", "Type an odds ratio above 0 and other than 1, e.g. 2 for twice the odds.")
        return None
    return value


def pair_choices(form: BuilderForm) -> list[tuple[str, str]]:
    """Set and return the choices of the crosstab pair's selects: each question with an id, numbered, once."""
    choices, seen = [], set()
    for index, entry in enumerate(form.questions):
        qid = (entry.form.id.data or "").strip()
        if qid and qid not in seen:
            seen.add(qid)
            choices.append((qid, f"{index + 1}. {qid} ({KIND_NAMES.get(entry.form.kind.data, 'question')})"))
    form.pair_a.choices = form.pair_b.choices = choices
    return choices


def chosen_pair(form: BuilderForm, defn: SurveyDefinition) -> tuple[str, str] | None:
    """Return the crosstab preview's pair: the questions chosen, else the first that can be crossed (None for one question)."""
    ids = [question.id for question in defn.questions]
    if len(ids) < 2:
        return None
    first = next((question.id for question in defn.questions if question.kind != "number"), ids[0])
    a = form.pair_a.data if form.pair_a.data in ids else first
    b = form.pair_b.data if form.pair_b.data in ids else next(qid for qid in ids if qid != a)
    return a, b


def _crosstab(form: BuilderForm, evaluation: Evaluation, respondents: int, odds_ratio: float) -> dict:
    """Return the crosstab preview of the chosen pair: its choices, the pair, and planning's lines and warning."""
    pair = chosen_pair(form, evaluation.defn)
    found = {"choices": pair_choices(form), "a": None, "b": None,
             "lines": ["Add a second question to see how precise a crosstab of two questions will be."],
             "warning": None}
    if pair is not None:
        form.pair_a.data, form.pair_b.data = pair
        found.update(a=pair[0], b=pair[1], **crosstab_precision(
            evaluation.defn, *pair, respondents=respondents, odds_ratio=odds_ratio, design=evaluation.design))
    return found


def power_choices(form: BuilderForm) -> list[tuple[str, str]]:
    """Set and return the choices of the power preview's select: each yes/no question with an id, once."""
    choices = [(qid, label) for qid, label in pair_choices(form)
               if any((entry.form.id.data or "").strip() == qid and entry.form.kind.data == "yes_no"
                      for entry in form.questions)]
    form.power_question.choices = choices
    return choices


def _percent_share(form: BuilderForm, evaluation: Evaluation, name: str) -> float | None:
    """Return a power preview share typed in percent as a share, or None with an error beside its field."""
    try:
        value = float((form[name].data or "").strip())
    except ValueError:
        value = None
    if value is None or not 0 <= value <= 100:
        evaluation.add(name, "Type a share from 0 to 100 (percent).")
        return None
    return value / 100


def _power(form: BuilderForm, evaluation: Evaluation, respondents: int, shares: tuple) -> dict:
    """Return the power preview: the yes/no questions to choose from, the one planned, and planning's sentence."""
    choices = power_choices(form)
    found = {"choices": choices, "question": None,
             "lines": ["Add a yes/no question to see the power of a test of its share."]}
    if choices and None not in shares:
        ids = [qid for qid, _ in choices]
        question = form.power_question.data if form.power_question.data in ids else ids[0]
        form.power_question.data = question
        try:
            result = power_plan(evaluation.design, question, *shares, respondents=respondents)
        except ValueError as exc:
            found.update(question=question, lines=[f"{str(exc)[:1].upper()}{str(exc)[1:]}."])
        else:
            found.update(question=question, lines=[power_sentence(result)])
    return found


def evaluate(form: BuilderForm) -> Evaluation:
    """Validate the whole form at once and, when it is valid, build the design and the precision preview."""
    evaluation = Evaluation()
    inputs = _planning_inputs(form, evaluation)
    odds_ratio = _odds_ratio(form, evaluation)
    shares = (_percent_share(form, evaluation, "power_null"), _percent_share(form, evaluation, "power_share"))
    mapping = form_to_mapping(form)
    errors = definition_errors(mapping)
    if not errors:
        evaluation.defn = parse_definition(mapping, source="the builder")
        evaluation.design, errors = design_errors(evaluation.defn)
    for error in errors:
        if error.question is None and error.field == "questions" and not form.questions.entries:
            evaluation.add("questions", "Add at least one question.")
            continue
        evaluation.add(_field_name(error), _message(error.message))
    if evaluation.defn is not None:
        evaluation.warnings.extend(translation_warnings(evaluation.defn))
    if evaluation.design is not None and inputs is not None:
        respondents, margin = inputs
        defn = evaluation.defn
        evaluation.previews = question_previews(defn, respondents=respondents, margin=margin,
                                                 design=evaluation.design)
        evaluation.recommendation = recommendation(defn, respondents=respondents, margin=margin)
        imprecise = precision_warnings(defn, respondents=respondents, design=evaluation.design,
                                       recommended=evaluation.recommendation, subject=lambda _: "this question")
        sample = defn.sample if defn.allocation == "sample" else None
        for numbers, entry in zip(evaluation.previews, evaluation.design["questions"]):
            if sample is not None:
                numbers.update(sample=sample, questions=len(defn.questions), budget=defn.epsilon / sample)
            numbers["terms"] = preview_terms(numbers, entry)
            numbers["warnings"] = [*([nominal_warning("This question", numbers["epsilon"])] if numbers["nominal"]
                                     else []), *([imprecise[numbers["id"]]] if numbers["id"] in imprecise else [])]
        if defn.epsilon > NOMINAL_EPSILON:
            evaluation.warnings.append(nominal_warning("Each respondent's set of answers", defn.epsilon))
        if imprecise:
            evaluation.warnings.append(imprecise_summary(len(imprecise), len(defn.questions), respondents))
        if evaluation.recommendation is not None:
            evaluation.recommendation["current"] = max(numbers["respondents_needed"]
                                                       for numbers in evaluation.previews)
        if odds_ratio is not None:
            evaluation.crosstab = _crosstab(form, evaluation, respondents, odds_ratio)
        evaluation.power = _power(form, evaluation, respondents, shares)
    return evaluation


def imprecise_summary(count: int, total: int, respondents: int) -> str:
    """Return the summary's warning that ``count`` of ``total`` questions are too imprecise at ``respondents``."""
    which = "This question is" if total == 1 else (f"All {total} questions are" if count == total
                                                  else f"{count} of the {total} questions are")
    return (f"{which} too imprecise to be useful with {respondents:,} respondents: a margin wider than "
            f"±{DEFAULT_WARN_MARGIN * 100:g} points (see the warning beside each, with the respondents it needs)")


def recommendation(defn: SurveyDefinition, *, respondents: int, margin: float) -> dict | None:
    """Return the allocation ``ldp-survey plan`` recommends for a definition (planning.recommend), for the preview.

    Adds whether it is the allocation chosen and whether the weights allow sampling. None
    when planning would take more than MAX_RECOMMENDATION_DESIGNS question designs (one
    per question shape and allocation; the page then points to the CLI).
    """
    shapes = {(question.kind, len(question.options or ())) for question in defn.questions}
    if len(shapes) * (len(defn.questions) + 1) > MAX_RECOMMENDATION_DESIGNS:
        return None
    best = recommend(defn, respondents=respondents, margin=margin)
    if best is not None:
        best.update(margin=margin, equal_weights=len({question.weight for question in defn.questions}) == 1,
                    chosen=best["allocation"] == defn.allocation and best["sample"] == (
                        defn.sample if defn.allocation == "sample" else None))
    return best


def _questions(form: BuilderForm) -> list[dict]:
    """Return each question's fields as form text (a ticked box as "y"), its translation fields included."""
    questions = []
    for index, entry in enumerate(form.questions):
        question = {name: ("y" if entry.form[name].data is True else entry.form[name].data or "")
                    for name in QUESTION_FIELDS}
        prefix = f"questions-{index}-"
        question.update({name.removeprefix(prefix): value for name, value in form.translation_data.items()
                         if name.startswith(prefix)})
        questions.append(question)
    return questions


def _rebuild(form: BuilderForm, questions: list[dict]) -> BuilderForm:
    """Return a fresh form with the survey's fields of ``form`` and these questions, in this order."""
    data = MultiDict({name: form[name].data or "" for name in (*SURVEY_FIELDS, *PREVIEW_FIELDS)})
    data.update({name: value for name, value in form.translation_data.items() if not name.startswith("questions-")})
    for index, question in enumerate(questions):
        for name, value in question.items():
            data[f"questions-{index}-{name}"] = value
    return BuilderForm(formdata=data)


def _apply(form: BuilderForm, action: str) -> tuple[BuilderForm, str | None] | None:
    """Apply add/kind/remove/up/down to the form; return (new form, field to focus), or None for another action.

    ``kind:I`` shows question I with the fields of the kind chosen in its select; what was typed stays.
    """
    verb, _, argument = action.partition(":")
    questions = _questions(form)
    if verb == "add" and argument in KINDS and len(questions) < form.questions.max_entries:
        questions.append({"kind": argument, "weight": "1"})
        return _rebuild(form, questions), f"questions-{len(questions) - 1}-id"
    if (verb == "kind" and argument.isdigit() and int(argument) < len(questions)
            and questions[int(argument)]["kind"] in KINDS):
        return _rebuild(form, questions), f"questions-{int(argument)}-kind"
    if verb in ("remove", "up", "down") and argument.isdigit() and int(argument) < len(questions):
        index = int(argument)
        if verb == "remove":
            del questions[index]
            return _rebuild(form, questions), f"add-{KINDS[0]}"
        other = index - 1 if verb == "up" else index + 1
        if 0 <= other < len(questions):
            questions[index], questions[other] = questions[other], questions[index]
            index = other
        return _rebuild(form, questions), f"questions-{index}-{verb}"
    return None


def _render(form: BuilderForm, evaluation: Evaluation | None = None, *, focus: str | None = None,
            import_form: ImportForm | None = None, status: int = 200, editing: str | None = None,
            unsaved: bool = False):
    """Render the builder page (``unsaved``: the form holds an edit brought back from the confirmation page)."""
    evaluation = evaluation or Evaluation()
    pair_choices(form)
    power_choices(form)
    question_templates = {}
    for kind in KINDS:
        template = QuestionForm(prefix="questions-__index__-")
        template.kind.data = kind
        question_templates[kind] = template
    languages = parse_languages(form.languages.data)
    # A field per valid language after the first, once each (a wrong list is an error beside Languages).
    others = [tag for tag in dict.fromkeys(languages[1:]) if LANGUAGE_RE.fullmatch(tag) and tag != languages[0]]
    published = bool(editing) and get_store().survey_exists(editing) and is_published_edit(editing)
    return render_template("builder.html", form=form, evaluation=evaluation, summary=summary(evaluation), focus=focus,
                           published=published,
                           other_languages=[(tag, language_name(tag)) for tag in others],
                           first_language=language_name((languages or [DEFAULT_LANGUAGE])[0]),
                           translated=form.translation_data,
                           import_form=import_form or ImportForm(), kinds=KINDS, kind_names=KIND_NAMES,
                           question_templates=question_templates, editing=editing, unsaved=unsaved,
                           max_options=MAX_OPTIONS, decline_label=DECLINE_LABEL,
                           logout_form=LogoutForm()), status


def _blank_form() -> BuilderForm:
    """Return the builder's first state: the default budget and one empty yes/no question."""
    return BuilderForm(formdata=MultiDict({"epsilon": "2", "allocation": "split", "access": "open",
                                           "respondents": "1000", "margin": "5", "questions-0-kind": "yes_no",
                                           "questions-0-weight": "1"}))


def _definition_form(text: str) -> BuilderForm:
    """Return the builder's form filled from a TOML definition (a stored one, or the confirmation's unsaved edit)."""
    data = tomllib.loads(text.replace("\r\n", "\n"))
    return BuilderForm(formdata=MultiDict({**mapping_to_formdata(data), "respondents": "1000", "margin": "5"}))


def _back_to_editing(editing: str | None):
    """Show the builder with the unsaved edit the confirmation page posted back ("Back to editing"); store nothing."""
    if not editing:
        abort(400, description="Back to editing needs the survey being edited; open it from its dashboard.")
    survey_for_researcher(editing)  # 404 unless the researcher may see it
    try:
        form = _definition_form(request.form.get("definition") or "")
    except (tomllib.TOMLDecodeError, ValueError, RecursionError):
        abort(400, description="The edit could not be read back; edit the survey again.")
    return _render(form, evaluate(form), editing=editing, unsaved=True)


def _starting_form() -> BuilderForm:
    edit = request.args.get("edit")
    if not edit:
        return _blank_form()
    survey_for_researcher(edit)  # 404 unless the researcher may see it
    return _definition_form(get_store().get_definition(edit))


def _save(evaluation: Evaluation, editing: str | None = None):
    """Store the evaluated definition as a draft of the researcher; return a redirect, or None with a slug error.

    An edit of a published survey (``editing`` its slug) returns the page saying what the save changes.
    """
    store = get_store()
    slug = evaluation.design["slug"]
    if editing == slug and store.survey_exists(slug) and store.can_access(slug, g.user["id"]) \
            and is_published_edit(slug):
        # A published survey: say whether the save corrects its text or starts a new version (issue 27).
        return render_confirmation(propose(slug, dump_definition(evaluation.defn)), back=back_to_builder(slug))
    resave = (store.survey_exists(slug) and store.can_access(slug, g.user["id"])
              and store.survey_status(slug) == "draft")
    try:
        store.create_survey(dump_definition(evaluation.defn), evaluation.design,
                            owner=None if resave else g.user["email"], status="draft", replace=resave)
    except StoreUnavailable:
        raise
    except SlugTaken:
        evaluation.add("slug", SLUG_TAKEN)
        return None
    except StoreError as exc:
        evaluation.add("slug", f"{_message(str(exc))} Choose another slug.")
        return None
    flash(f"Draft {'saved' if resave else 'created'}: respondents cannot see it until you publish it here; "
          f"then share {url_for('respond.page', slug=slug)}", "success")
    return redirect(url_for("research.results", slug=slug))


@bp.route("/surveys/build", methods=("GET", "POST"))
@login_required
def build():
    """Show the builder (``?edit=SLUG`` starts from one's own survey) or apply the button pressed."""
    if request.method == "GET":
        return _render(_starting_form(), editing=request.args.get("edit"))
    form = BuilderForm()
    action = request.form.get("action", "preview")
    editing = request.form.get("editing") or None
    if action == BACK_TO_EDITING:
        return _back_to_editing(editing)
    applied = _apply(form, action)
    if applied is not None:
        return _render(applied[0], focus=applied[1], editing=editing)
    evaluation = evaluate(form)
    if evaluation.design is not None and not evaluation.errors:
        if action == "save":
            saved = _save(evaluation, editing)
            if saved is not None:
                return saved
        elif action == "export":
            return Response(dump_definition(evaluation.defn), mimetype="application/toml", headers={
                "Content-Disposition": f'attachment; filename="{evaluation.defn.slug}.toml"'})
    return _render(form, evaluation, status=422 if evaluation.errors else 200, editing=editing)


@bp.post("/surveys/build/import")
@login_required
def import_toml():
    """Load a pasted or uploaded TOML definition into the builder, with every error it has beside its field."""
    import_form = ImportForm()
    import_form.validate()
    text = None
    if import_form.upload.errors or import_form.toml.errors:
        pass
    elif import_form.upload.data:
        try:
            text = import_form.upload.data.read().decode("utf-8-sig")
        except UnicodeDecodeError:
            import_form.upload.errors.append("The file must be UTF-8 text.")
    else:
        text = import_form.toml.data or ""
    data = None
    if text is not None and not text.strip():
        import_form.toml.errors.append("Paste a TOML definition or choose a .toml file.")
    elif text is not None:
        try:
            data = tomllib.loads(text.replace("\r\n", "\n"))
        except (tomllib.TOMLDecodeError, ValueError, RecursionError) as exc:
            # Beside the field it came from: an uploaded file's error beside the upload (issue 27).
            (import_form.upload if import_form.upload.data else import_form.toml).errors.append(
                f"This is not valid TOML ({exc}).")
    if data is None:
        return _render(_blank_form(), import_form=import_form, status=422)
    form = BuilderForm(formdata=MultiDict({**mapping_to_formdata(data), "respondents": "1000", "margin": "5"}))
    evaluation = evaluate(form)
    unknown = [f"{name}{did_you_mean(name, DEFINITION_SURVEY_FIELDS)}"
               for name in sorted(set(data) - DEFINITION_SURVEY_FIELDS)]
    if "sample" in data and data.get("allocation") != "sample":
        unknown.append('sample (used only with allocation = "sample")')
    questions = data.get("questions") if isinstance(data.get("questions"), list) else []
    unknown_in_questions = set()
    for index, question in enumerate(questions):
        if not isinstance(question, dict):
            continue
        known = DEFINITION_QUESTION_FIELDS.get(question.get("kind"), DEFINITION_QUESTION_FIELDS["yes_no"])
        unknown_in_questions |= {f"questions.{name}{did_you_mean(name, known)}" for name in set(question) - known}
        decline = question.get("decline")
        if "decline" in question and "decline" in known and not isinstance(decline, bool):
            evaluation.add(f"questions-{index}-decline",
                           f"Must be true or false, got {decline!r}; the box was left unticked.")
    unknown += sorted(unknown_in_questions) + left_out(data)
    if unknown:
        evaluation.add("questions", f"Fields the builder does not know were left out: {', '.join(unknown)}.")
    return _render(form, evaluation, import_form=import_form, status=422 if evaluation.errors else 200)


@bp.post("/surveys/build/preview.json")
def preview_json():
    """Return the live preview of the posted builder form: errors by field, and per question its numbers and HTML.

    Requires a signed-in researcher (401 otherwise) and the form's CSRF token (400 otherwise).
    """
    if g.user is None:
        return jsonify({"error": "sign in first"}), 401
    evaluation = evaluate(BuilderForm())
    return jsonify({"ok": not evaluation.errors, "errors": evaluation.errors, "questions": evaluation.previews,
                    "summary": summary(evaluation), "crosstab": evaluation.crosstab, "power": evaluation.power})
