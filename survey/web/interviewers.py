"""Start and end interviewer (handover) sessions from a survey's dashboard: owner and collaborators only.

Every action is a POST with a CSRF token, checked after the access check (as in ``lifecycle``):
to anyone else it answers 404. A new session's link is shown once, on the page the start
answers (never stored, never flashed into the session cookie); the database keeps its hash.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask_wtf import FlaskForm
from wtforms import IntegerField, StringField
from wtforms.validators import InputRequired, Length, NumberRange, Optional

from ..core import interviews as rules
from ..store import StoreError, StoreUnavailable
from .auth import login_required
from .db import get_store
from .lifecycle import _submitted
from .security import csrf

bp = Blueprint("interviewers", __name__)
csrf.exempt(bp)  # checked in the view, after survey_for_researcher (see lifecycle)


class InterviewForm(FlaskForm):
    """A new interviewer session: its label, how long it lasts and how many responses it may admit."""

    label = StringField("Label (optional, e.g. “Tablet 3”)", validators=[Optional(), Length(max=rules.LABEL_MAX)],
                        render_kw={"autocomplete": "off", "maxlength": rules.LABEL_MAX})
    hours = IntegerField("Lasts (hours)", default=rules.DEFAULT_HOURS,
                         validators=[InputRequired(), NumberRange(min=1, max=rules.MAX_HOURS)],
                         render_kw={"min": 1, "max": rules.MAX_HOURS, "inputmode": "numeric"})
    allowance = IntegerField("Responses allowed", default=rules.DEFAULT_ALLOWANCE,
                             validators=[InputRequired(), NumberRange(min=1, max=rules.MAX_ALLOWANCE)],
                             render_kw={"min": 1, "max": rules.MAX_ALLOWANCE, "inputmode": "numeric"})


class EndInterviewForm(FlaskForm):
    """End one session (a POST with a CSRF token)."""


def _dashboard(slug: str):
    return redirect(url_for("research.results", slug=slug, _anchor="interviews"))


@bp.post("/surveys/<slug>/interviews")
@login_required
def start(slug):
    """Start a session of an open survey and show its secret link once."""
    form = _submitted(slug, InterviewForm)
    if form.errors:
        flash(f"Give a label of at most {rules.LABEL_MAX} characters, 1 to {rules.MAX_HOURS} hours and "
              f"1 to {rules.MAX_ALLOWANCE} responses.", "error")
        return _dashboard(slug)
    try:
        token, session = get_store().start_interview(slug, label=form.label.data or "", hours=form.hours.data,
                                                     allowance=form.allowance.data)
    except StoreUnavailable:
        raise
    except StoreError as exc:
        flash(f"Cannot start an interviewer session: {exc}.", "error")
        return _dashboard(slug)
    link = request.host_url.rstrip("/") + url_for("handover.page", slug=slug, token=token)
    page = render_template("interview_started.html", slug=slug, link=link, session=session)
    return page, 200, {"Cache-Control": "no-store"}


@bp.post("/surveys/<slug>/interviews/<int:session_id>/end")
@login_required
def end(slug, session_id):
    """End one session of the survey (live or storing late sends): its link stops working at once, on every device."""
    _submitted(slug, EndInterviewForm)
    if get_store().end_interview(slug, session_id):
        flash("The interviewer session has ended: its link no longer takes answers, not even late sends.", "success")
    else:
        flash("That interviewer session had already ended.", "error")
    return _dashboard(slug)


def listed_sessions(slug: str) -> dict:
    """Return a survey's sessions a researcher may end: "live" ones and "late" ones (expired, still storing late sends)."""
    now = time.time()
    sessions = get_store().interview_sessions(slug, now=now, late_sends=True)
    late = [dict(s, words=rules.late_sends_text(s["expires_at"], now)) for s in sessions if s["state"] == "late-sends"]
    return {"live": [s for s in sessions if s["state"] != "late-sends"], "late": late}


@bp.app_context_processor
def interview_context():
    """Give the dashboard the session forms and a survey's sessions that still take answers or late sends."""
    return {"interview_form": InterviewForm, "end_interview_form": EndInterviewForm,
            "interview_sessions": listed_sessions, "grace_hours": rules.EXPIRY_GRACE_HOURS}


@bp.app_template_filter("interview_time")
def interview_time(seconds: int) -> str:
    """Return a session's expiry (Unix seconds) as "YYYY-MM-DD HH:MM" in UTC."""
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%d %H:%M")
