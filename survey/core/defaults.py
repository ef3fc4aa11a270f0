"""Defaults the command line shows in its help before it computes anything, kept apart so reading them is light.

The modules that use them (anytime, precision) re-export them; this module imports nothing, so
``ldp-survey --help`` need not load numpy or scipy to print them.
"""

from __future__ import annotations

# The two kinds of interval (survey.core.anytime): valid at the planned end, or at every look.
FIXED, ANYTIME = "fixed", "anytime"
# The respondents an anytime interval is tuned for unless told (survey.core.anytime).
DEFAULT_PLANNED = 1000
# A question whose expected 95% margin is wider than this share is warned about (survey.core.precision).
DEFAULT_WARN_MARGIN = 0.10
# The population an odds ratio is planned for: the share with A, and with B among those without A.
DEFAULT_SHARES = (0.5, 0.2)
# An interviewer session (survey.core.interviews): its label's length, its life in hours and its allowance.
LABEL_MAX = 60
DEFAULT_HOURS = 12
MAX_HOURS = 24 * 14
# How long after its expiry a session still stores sends (hours): answers given offline before the expiry arrive
# later (a device back online days after); the expired session's page shows no form. Ended sessions have none.
EXPIRY_GRACE_HOURS = 72
DEFAULT_ALLOWANCE = 200
MAX_ALLOWANCE = 10_000
