"""``ldp-survey interview``: start, list and end interviewer (handover) sessions of a survey."""

from __future__ import annotations

from datetime import datetime, timezone

import click

from ..core import defaults as rules
from .common import load_design, open_store


def _when(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _print_sessions(sessions: list[dict]):
    """Print a header and one line per listed session: id, label, count, state, expiry, late sends until."""
    from ..core import interviews as interview_rules  # its mechanisms are not loaded at start-up

    if not sessions:
        click.echo("No active interviewer session, and none expired that still accepts late answers.")
        return
    click.echo("ID\tLABEL\tANSWERED\tSTATE\tEXPIRES\tLATE SENDS UNTIL")
    for session in sessions:
        click.echo(f"{session['id']}\t{session['label'] or '-'}\t{session['answered']} of {session['allowance']} "
                   f"answered\t{interview_rules.STATE_WORDS[session['state']]}\t{_when(session['expires_at'])}\t"
                   f"{interview_rules.utc_minute(session['late_sends_until'])}")


@click.command()
@click.argument("slug")
@click.option("--label", default="", help=f"A name for the device or interviewer, e.g. \"Tablet 3\" "
                                          f"(at most {rules.LABEL_MAX} characters).")
@click.option("--hours", type=click.IntRange(1, rules.MAX_HOURS), default=rules.DEFAULT_HOURS, show_default=True,
              help="How long the link works.")
@click.option("--allowance", type=click.IntRange(1, rules.MAX_ALLOWANCE), default=rules.DEFAULT_ALLOWANCE,
              show_default=True, help="How many responses the link may send; it replaces the per-network flood "
                                      "limit for this device.")
@click.option("--base", default="http://127.0.0.1:5000", show_default=True,
              help="The public address the device reaches the server at.")
@click.option("--list", "listing", is_flag=True,
              help="List instead the active sessions and the expired ones that still accept late answers, for "
                   f"{rules.EXPIRY_GRACE_HOURS} hours after their expiry (id, label, count, state, expiry, "
                   "late sends until).")
@click.option("--end", "end_id", type=int, metavar="ID",
              help="End the session with this id (from --list) instead; an expired one then refuses late answers.")
@click.pass_obj
def interview(db, slug, label, hours, allowance, base, listing, end_id):
    """Print a new handover (interviewer) session link.

    Open the link on a tablet or phone that goes from respondent to respondent: after each
    one's answers are sent the page starts again, with nothing of them left on the page or
    the device. The link works until it expires, its allowance is used or it is ended; it is
    printed once (only its hash is kept). On an invitation-only survey the link stands for the
    invitations. No response records which session sent it; only a count per session is kept.

    For some hours after its expiry (see --list) a session still stores answers randomized
    offline before it (state "late sends only", within its allowance): --list shows such
    sessions, with the time until which they accept them, and --end refuses them.

    \b
    Examples:
      ldp-survey interview smoking-2026 --label "Tablet 3" --hours 8 --base https://surveys.example.org
      ldp-survey interview smoking-2026 --list      # active and late-sends-only sessions
      ldp-survey interview smoking-2026 --end 4     # also refuses session 4's late sends
    """
    from ..core.invitations import check_base

    if listing and end_id is not None:
        raise click.UsageError("use --list or --end, not both")
    try:
        check_base(base)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc
    store = open_store(db, must_exist=True)
    try:
        load_design(store, slug)
        if listing:
            _print_sessions(store.interview_sessions(slug, late_sends=True))
            return
        if end_id is not None:
            if not store.end_interview(slug, end_id):
                raise click.ClickException(f"survey {slug!r} has no interviewer session {end_id} to end "
                                           "(none with this id, or it has ended already)")
            click.echo(f"Ended interviewer session {end_id}: its link no longer takes answers, not even late sends")
            return
        token, session = store.start_interview(slug, label=label, hours=hours, allowance=allowance)
    finally:
        store.close()
    from ..core.interviews import interview_link

    click.echo(interview_link(base, slug, token))
    click.echo(f"Session {session['id']}{' “' + session['label'] + '”' if session['label'] else ''}: up to "
               f"{session['allowance']} responses until {_when(session['expires_at'])}; keep the link, it is not "
               "shown again.", err=True)
