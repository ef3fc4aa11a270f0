"""Keep the session cookie out of the requests that carry none: the JSON API and respondents' submissions.

There the session is Flask's NullSession (empty; writing to it raises): the cookie is
neither read nor set, and no time is spent building its signing serializer, which Flask
does on every request otherwise (a respondent's POST is the server's hot path).
"""

from __future__ import annotations

import re

from flask.sessions import NullSession, SessionInterface

API_PREFIX = "/api/"
# The respondent endpoint (survey.web.respond.submit), the survey's slug its group: any method, so
# that a 405 sets no cookie either.
SUBMISSIONS = re.compile(r"/s/([^/]+)/responses")
# An interviewer session's submissions and end (survey.web.handover): no cookie either.
INTERVIEW_POSTS = re.compile(r"/s/[^/]+/interview/[^/]+/(?:responses|end)")


def sessionless(path: str) -> bool:
    """Return whether a request for ``path`` runs without the session."""
    return (path.startswith(API_PREFIX) or SUBMISSIONS.fullmatch(path) is not None
            or INTERVIEW_POSTS.fullmatch(path) is not None)


class Sessionless(SessionInterface):
    """The app's session interface, except on ``sessionless`` paths, where the session is a NullSession."""

    def __init__(self, inner: SessionInterface):
        self.inner = inner

    def open_session(self, app, request):
        if sessionless(request.path):
            return self.make_null_session(app)
        return self.inner.open_session(app, request)

    def save_session(self, app, session, response):
        if isinstance(session, NullSession):
            return None
        return self.inner.save_session(app, session, response)

    def __getattr__(self, name):
        return getattr(self.inner, name)
