"""Hand out a survey's link: ``qr`` (a QR code of the survey or an invitation link) and the ``mail`` group
(e-mailed invitations from a CSV file, reminders, the send log, deleting the addresses)."""

from __future__ import annotations

import csv
import io
import sys
from pathlib import Path

import click

from .common import load_design, open_store

BASE = click.option("--base", default="http://127.0.0.1:5000", show_default=True,
                    help="The public address respondents reach the server at.")
TEMPLATE = click.option("--template", type=click.Path(exists=True, dir_okay=False, path_type=Path),
                        help="A message template: a first line 'Subject: ...', then the body; both may use "
                             "{title} and {link}, and the body must hold {link}.")


def _token_for(db: str):
    """Return ``token_for(slug, nonce)`` of e-mailed links, from the secret key the server of ``db`` loads."""
    from ..web.secret import SecretKeyError, link_tokens, load_secret_key

    try:
        return link_tokens(load_secret_key(db))
    except (SecretKeyError, OSError) as exc:
        raise click.ClickException(f"cannot load the secret key of e-mailed links: {exc}") from exc


def _base(base: str) -> str:
    """Return the checked public address, or fail with why."""
    from ..core.invitations import check_base

    try:
        return check_base(base)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc


@click.command()
@click.argument("slug")
@click.option("--out", "-o", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The file to write: NAME.svg or NAME.png (the format follows the name), or - for SVG on stdout.")
@click.option("--invite", metavar="TOKEN", help="Encode this invitation's link (…?invite=TOKEN) instead of the survey's.")
@BASE
@click.pass_obj
def qr(db, slug, out, invite, base):
    """Write the QR code of a survey's link (SVG, PNG).

    The survey's link, or with --invite one invitation's link. Print it on a poster or a card: a phone's camera opens the link. The SVG scales to any
    size; the PNG has 8 pixels a module.

    \b
    Examples:
      ldp-survey qr smoking-2026 --base https://surveys.example.org --out link.svg
      ldp-survey qr panel --invite Fq5AagnPRwETiCtQ3eDsEA --base https://surveys.example.org -o card.png
    """
    from ..core.invitations import invitation_links, survey_link
    from ..exports.qr import qr_image

    base = _base(base)
    kind = "svg" if str(out) == "-" else out.suffix.lower().lstrip(".")
    if kind not in ("svg", "png"):
        raise click.ClickException(f"--out names an .svg or a .png file, got {out}")
    store = open_store(db, must_exist=True)
    try:
        load_design(store, slug)
        if invite is not None and store.invitation_status(slug, invite) == "unknown":
            raise click.ClickException(f"{invite!r} is not an invitation of {slug}")
    finally:
        store.close()
    link = invitation_links(base, slug, [invite])[0] if invite else survey_link(base, slug)
    image = qr_image(link, kind)
    if str(out) == "-":
        click.echo(image.decode("utf-8"), nl=False)
    else:
        try:
            out.write_bytes(image)
        except OSError as exc:
            raise click.ClickException(f"cannot write {out}: {exc.strerror or exc}") from exc
        click.echo(f"Wrote the QR code of {survey_link(base, slug)}{'?invite=…' if invite else ''} to {out}", err=True)


@click.group()
def mail():
    """E-mail invitation links and reminders.

    Each invitee of an invitation-only survey gets their own single-use link; a reminder
    goes to those whose link is unused. A link's token is never stored: it is derived from
    the server's secret key (LDP_SURVEY_SECRET_KEY, else the key beside the database), so run
    these commands with the same key as the server. The SMTP server comes from the
    environment: LDP_SURVEY_SMTP_HOST, LDP_SURVEY_SMTP_PORT,
    LDP_SURVEY_SMTP_SECURITY (starttls, ssl or none), LDP_SURVEY_SMTP_USER,
    LDP_SURVEY_SMTP_PASSWORD and LDP_SURVEY_MAIL_FROM; never the database.

    \b
    Examples:
      ldp-survey mail add panel people.csv
      ldp-survey mail send panel --base https://surveys.example.org
      ldp-survey mail remind panel --base https://surveys.example.org
      ldp-survey mail delete panel --yes
    """


@mail.command("add")
@click.argument("slug")
@click.argument("csv_file", type=click.File("r", encoding="utf-8-sig"))
@click.pass_obj
def add(db, slug, csv_file):
    """Add addresses from a CSV file's email column.

    Each address of CSV_FILE's `email` column gets its own new invitation; nothing is
    sent yet. Other columns are ignored; an address already on the list is skipped; the file is refused
    whole if a row holds something that is not an address.

    \b
    Examples:
      ldp-survey mail add panel people.csv
      ldp-survey --db study.db mail add panel - < people.csv
    """
    from ..core.invitations import read_addresses

    try:
        addresses, problems = read_addresses(csv_file.read())
    except (ValueError, csv.Error) as exc:
        raise click.ClickException(f"{csv_file.name}: {exc}") from exc
    if problems:
        raise click.ClickException(f"{csv_file.name}: nothing was added: " + "; ".join(problems[:10])
                                   + (f" (and {len(problems) - 10} more)" if len(problems) > 10 else ""))
    store = open_store(db, must_exist=True)
    try:
        load_design(store, slug)
        added, known = store.add_addresses(slug, addresses, _token_for(db))
    finally:
        store.close()
    click.echo(f"Added {added} address{'es' if added != 1 else ''} to {slug}"
               + (f"; {known} already on the list" if known else "") + ". Send them with `ldp-survey mail send`.")


def _run(db, slug, base, template, kind):
    """Send ``kind`` to every address due one, with a progress bar on stderr; fail if any address failed."""
    from ..core.invitations import parse_template
    from ..web.mail import MailError, mail_config
    from ..web.mailing import NotOpen, send_mail, stale_words

    base = _base(base)
    try:
        chosen = parse_template(template.read_text(encoding="utf-8")) if template else None
        config = mail_config(None)
    except (ValueError, MailError) as exc:
        raise click.ClickException(str(exc)) from exc
    store = open_store(db, must_exist=True)
    bar = None

    def progress(done, total):
        nonlocal bar
        if bar is None:
            bar = click.progressbar(length=total, label=f"Sending {kind}s", file=sys.stderr)
            bar.__enter__()
        bar.update(1)

    try:
        load_design(store, slug)
        run = send_mail(store, config, slug, base, kind, _token_for(db), template=chosen, progress=progress)
    except NotOpen as exc:
        raise click.ClickException(str(exc)) from exc
    except MailError as exc:
        raise click.ClickException(f"{exc}. The messages sent so far are logged; run the command again "
                                   "to go on with the rest") from exc
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)
        store.close()
    click.echo(f"Sent {run.sent} {kind}{'s' if run.sent != 1 else ''}"
               + (f"; {len(run.failed)} failed:" if run.failed else "."))
    for address, error in run.failed:
        click.echo(f"  {address}: {error}")
    problems = [stale_words(run.stale, kind)] if run.stale else []
    if run.failed:
        problems.append(f"{len(run.failed)} address{'es' if len(run.failed) != 1 else ''} failed "
                        "(kept in `ldp-survey mail log`); run the command again to retry them")
    if problems:
        raise click.ClickException(". ".join(problems))


@mail.command("send")
@click.argument("slug")
@BASE
@TEMPLATE
@click.pass_obj
def send(db, slug, base, template):
    """E-mail the invitations not yet sent.

    Every address not yet sent its invitation gets one, so a run cut short goes on where it
    stopped, and failed addresses are tried again. The survey must be open.

    \b
    Examples:
      ldp-survey mail send panel --base https://surveys.example.org
      ldp-survey mail send panel --base https://surveys.example.org --template invitation.txt
    """
    _run(db, slug, base, template, "invitation")


@mail.command("remind")
@click.argument("slug")
@BASE
@TEMPLATE
@click.pass_obj
def remind(db, slug, base, template):
    """Remind the invited whose link is unused.

    The reminder carries the same link, rebuilt from the secret key. An address gets at most one reminder a day, so running it
    again the same day goes on where a run cut short stopped. If the secret key changed since an address was added, its
    link cannot be rebuilt: it is sent nothing, and the command says so and fails.

    \b
    Examples:
      ldp-survey mail remind panel --base https://surveys.example.org
    """
    _run(db, slug, base, template, "reminder")


@mail.command("log")
@click.argument("slug")
@click.option("--format", "fmt", type=click.Choice(["table", "csv"]), default="table", show_default=True,
              help="table: one line a message; csv: the columns email,kind,status,error,day.")
@click.pass_obj
def log(db, slug, fmt):
    """Show the send log (nothing answered is in it).

    One line per message: address, kind, sent or failed (with the error) and day.

    \b
    Examples:
      ldp-survey mail log panel
      ldp-survey mail log panel --format csv > sent.csv
    """
    store = open_store(db, must_exist=True)
    try:
        load_design(store, slug)
        rows, counts = store.mail_log(slug), store.address_counts(slug)
    finally:
        store.close()
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\r\n")
        writer.writerow(["email", "kind", "status", "error", "day"])
        writer.writerows([_cell(r["email"]), r["kind"], r["status"], _cell(r["error"] or ""), r["day"]] for r in rows)
        click.echo(out.getvalue(), nl=False)
        return
    click.echo(f"{counts['addresses']} addresses, {counts['invited']} invited, {counts['unused']} of them "
               f"with an unused link; {len(rows)} messages logged")
    for r in rows:
        click.echo(f"{r['day']}  {r['kind']:<10}  {r['status']:<6}  {r['email']}"
                   + (f"  ({r['error']})" if r["error"] else ""))


def _cell(text: str) -> str:
    """Return a CSV cell that no spreadsheet reads as a formula."""
    return "'" + text if text[:1] in ("=", "+", "-", "@") else text


@mail.command("delete")
@click.argument("slug")
@click.option("--yes", is_flag=True, help="Delete without asking.")
@click.pass_obj
def delete(db, slug, yes):
    """Delete the addresses and the send log.

    Every address of the survey and its send log are deleted for good (once fieldwork ends).

    The links already sent keep working: close the survey to stop them. Nothing else changes.

    \b
    Examples:
      ldp-survey mail delete panel --yes
    """
    store = open_store(db, must_exist=True)
    try:
        load_design(store, slug)
        count = store.address_counts(slug)["addresses"]
        if not yes:
            click.confirm(f"Delete the {count} addresses of {slug} and their send log for good?", abort=True)
        deleted = store.delete_addresses(slug)
    finally:
        store.close()
    click.echo(f"Deleted {deleted} address{'es' if deleted != 1 else ''} and the send log of {slug}.")


@mail.command("test")
@click.argument("address")
def test(address):
    """Send a test message to ADDRESS.

    Checks the SMTP settings; nothing else is sent.

    \b
    Examples:
      LDP_SURVEY_SMTP_HOST=smtp.example.org LDP_SURVEY_MAIL_FROM=surveys@example.org ldp-survey mail test me@example.org
    """
    from ..web.mail import MailError, mail_config, send_message

    try:
        send_message(mail_config(None), address, "ldp-survey: test message",
                     "This message checks that ldp-survey can send e-mail. Nothing else was sent.\n")
    except MailError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"Sent a test message to {address}.")
