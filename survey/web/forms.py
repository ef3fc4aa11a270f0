"""Flask-WTF forms of the researcher pages."""

from __future__ import annotations

from flask_wtf import FlaskForm
from flask_wtf.file import FileAllowed, FileField, FileSize
from wtforms import EmailField, PasswordField, SubmitField, TextAreaField
from wtforms.validators import DataRequired, Length


class LoginForm(FlaskForm):
    """Sign a researcher in with email and password."""

    email = EmailField("Email", validators=[DataRequired(), Length(max=254)],
                       render_kw={"autocomplete": "username", "autofocus": True})
    password = PasswordField("Password", validators=[DataRequired(), Length(max=1024)],
                             render_kw={"autocomplete": "current-password"})


class LogoutForm(FlaskForm):
    """Sign out (a POST with a CSRF token, so another site cannot sign a researcher out)."""


DEFINITION_TEMPLATE = """\
# A survey definition in TOML. Edit it, press Preview to check it, then Create survey.
# Every answer is randomized on the respondent's device; the server only stores noisy reports.

slug = "my-survey"        # the survey's address, /s/my-survey: lowercase letters, digits, inner hyphens
title = "My survey"
description = "A short anonymous survey. Each answer is randomized on your device before it is sent."
epsilon = 2.0             # privacy budget of one respondent, shared by all questions (at most 20)
allocation = "split"      # everyone answers every question; question i gets epsilon * weight_i / sum(weights)

[[questions]]             # yes_no: a yes/no answer, randomized response
id = "smoker"
kind = "yes_no"
text = "Do you smoke tobacco at least once a week?"

[[questions]]             # choice: exactly one of the options
id = "transport"
kind = "choice"
text = "How do you usually get to work?"
options = ["walk", "bicycle", "public transport", "car"]

[[questions]]             # multi: any number of the options
id = "pets"
kind = "multi"
text = "Which pets live in your home?"
options = ["dog", "cat", "other"]

[[questions]]             # number: an integer from min to max
id = "age"
kind = "number"
text = "How old are you?"
min = 18
max = 90
weight = 0.5              # half the budget share of the other questions (the default weight is 1)
"""

MAX_DEFINITION_SIZE = 60 * 1024


class NewSurveyForm(FlaskForm):
    """Preview or create a survey from a TOML definition, typed in or uploaded (the upload wins)."""

    definition = TextAreaField(
        "Survey definition (TOML)", default=DEFINITION_TEMPLATE,
        validators=[Length(max=MAX_DEFINITION_SIZE,
                           message=f"The definition must be at most {MAX_DEFINITION_SIZE} characters.")],
        render_kw={"rows": 24, "spellcheck": "false", "autocapitalize": "off", "autocomplete": "off",
                   "class": "definition-editor"})
    upload = FileField(
        "Or upload a .toml file (it replaces the text above)",
        validators=[FileAllowed(["toml"], "The file must be a .toml file."),
                    FileSize(max_size=MAX_DEFINITION_SIZE,
                             message=f"The file must be at most {MAX_DEFINITION_SIZE} bytes.")],
        render_kw={"accept": ".toml"})
    preview = SubmitField("Preview")
    create = SubmitField("Create survey")

    def definition_text(self) -> str | None:
        """Return the definition to use (the uploaded file's text if any), or None with a field error.

        Call after validate(); a file's text is copied into the textarea so the page keeps it.
        Line endings are normalised to LF.
        """
        upload = self.upload.data
        if upload:
            try:
                self.definition.data = upload.read().decode("utf-8-sig")
            except UnicodeDecodeError:
                self.upload.errors.append("The file must be UTF-8 text.")
                return None
        text = (self.definition.data or "").replace("\r\n", "\n")
        self.definition.data = text
        if not text.strip():
            self.definition.errors.append("Type a survey definition or choose a .toml file.")
            return None
        return text
