"""Flask-WTF forms of the researcher pages."""

from __future__ import annotations

from flask_wtf import FlaskForm
from wtforms import EmailField, PasswordField
from wtforms.validators import DataRequired, Length


class LoginForm(FlaskForm):
    """Sign a researcher in with email and password."""

    email = EmailField("Email", validators=[DataRequired(), Length(max=254)],
                       render_kw={"autocomplete": "username", "autofocus": True})
    password = PasswordField("Password", validators=[DataRequired(), Length(max=1024)],
                             render_kw={"autocomplete": "current-password"})


class LogoutForm(FlaskForm):
    """Sign out (a POST with a CSRF token, so another site cannot sign a researcher out)."""
