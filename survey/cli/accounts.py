"""The `user` and `token` command groups: researcher accounts and their API tokens."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from .common import open_store

if TYPE_CHECKING:
    from ..store import Store


@click.group()
def user():
    """Manage researcher accounts.

    \b
    Examples:
      ldp-survey user add alice@example.org
      ldp-survey user passwd alice@example.org
      ldp-survey user unlock alice@example.org
      ldp-survey user reset alice@example.org --base https://surveys.example.org
      ldp-survey user list
    """


def _read_password() -> str:
    stdin = sys.stdin
    if stdin.isatty():
        return click.prompt("Password", hide_input=True, confirmation_prompt=True)
    return stdin.readline().rstrip("\r\n")


def _checked_password(password: str) -> str:
    from ..store import MIN_PASSWORD_LENGTH

    if len(password) < MIN_PASSWORD_LENGTH:
        raise click.ClickException(f"the password must have at least {MIN_PASSWORD_LENGTH} characters, "
                                   f"got {len(password)}")
    return password


@user.command("add")
@click.argument("email")
@click.option("--replace", is_flag=True,
              help="Set a new password if the account exists (ending its sessions and clearing its sign-in locks).")
@click.pass_obj
def user_add(db, email, replace):
    """Create a researcher account.

    The password is prompted twice, or read as one line from stdin when it is not a terminal.

    \b
    Examples:
      ldp-survey user add alice@example.org
      printf '%s\\n' "$PASSWORD" | ldp-survey user add alice@example.org --replace
    """
    from werkzeug.security import generate_password_hash

    from ..store import EMAIL_RE, StoreError

    email = email.strip()
    if not EMAIL_RE.match(email):
        raise click.BadParameter(f"must look like name@example.org, got {email!r}", param_hint="EMAIL")
    password = _checked_password(_read_password())
    store = open_store(db)
    try:
        store.add_user(email, generate_password_hash(password), replace=replace)
    except StoreError as exc:
        raise click.ClickException(f"{exc}; pass --replace to set a new password") from exc
    finally:
        store.close()
    click.echo(f"Saved researcher account {email}")


@user.command("passwd")
@click.argument("email")
@click.pass_obj
def user_passwd(db, email):
    """Set a researcher's password, end every session of the account and clear its sign-in locks.

    The password is prompted twice, or read as one line from stdin when it is not a terminal.

    \b
    Examples:
      ldp-survey user passwd alice@example.org
      printf '%s\\n' "$PASSWORD" | ldp-survey user passwd alice@example.org
    """
    from werkzeug.security import generate_password_hash

    password = _checked_password(_read_password())
    store = open_store(db, must_exist=True)
    try:
        store.set_password(email.strip(), generate_password_hash(password))
    finally:
        store.close()
    click.echo(f"Set a new password for {email.strip()}; its earlier sessions have ended and its sign-in "
               "locks are cleared")


@user.command("reset")
@click.argument("email")
@click.option("--base", default="http://127.0.0.1:5000", show_default=True,
              help="The public address researchers reach the server at.")
@click.pass_obj
def user_reset(db, email, base):
    """Print a single-use link with which a researcher sets a new password.

    The link works once, for one hour; only a hash of it is stored. A newer link replaces an
    older one. Using it ends every session of the account and clears its sign-in locks.
    Send it to the researcher over a channel you trust.

    \b
    Examples:
      ldp-survey user reset alice@example.org --base https://surveys.example.org
    """
    from ..core.invitations import check_base
    from ..store.accounts import RESET_SECONDS

    try:
        base = check_base(base)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc
    store = open_store(db, must_exist=True)
    try:
        issued = store.issue_password_reset(email.strip())
    finally:
        store.close()
    if issued is None:
        raise click.ClickException(f"no researcher account {email.strip()!r}")
    click.echo(f"{base}/reset/{issued[0]}")
    click.echo(f"A reset link for {issued[1]['email']}: it works once, for {RESET_SECONDS // 60} minutes, "
               "and is shown only this once", err=True)


@user.command("unlock")
@click.argument("email")
@click.pass_obj
def user_unlock(db, email):
    """Let a researcher sign in again at once after too many wrong passwords, keeping the password.

    Clears the account's locks and wrong-password counts from every device, in the running
    server too (they are kept in the database). Nobody has to restart anything.

    \b
    Examples:
      ldp-survey user unlock alice@example.org
      ldp-survey --db study.db user unlock alice@example.org
    """
    store = open_store(db, must_exist=True)
    try:
        cleared = store.unlock_account(email.strip())
    finally:
        store.close()
    if cleared:
        click.echo(f"Unlocked {email.strip()}: cleared its wrong-password counts from {cleared} "
                   f"place{'' if cleared == 1 else 's'}; it can sign in now")
    else:
        click.echo(f"{email.strip()} was not locked (no recent wrong passwords); it can sign in now")


@user.command("list")
@click.pass_obj
def user_list(db):
    """List the researcher accounts and how many surveys each owns.

    \b
    Examples:
      ldp-survey user list
    """
    store = open_store(db, must_exist=True)
    try:
        users = store.list_users()
    finally:
        store.close()
    if not users:
        click.echo("No researcher accounts yet; add one with `ldp-survey user add EMAIL`")
        return
    width = max(len(account["email"]) for account in users)
    for account in users:
        click.echo(f"{account['email']:<{width}}  since {account['created_day']}  owns {account['surveys']}")


@user.command("remove")
@click.argument("email")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_obj
def user_remove(db, email, yes):
    """Delete a researcher account.

    The surveys it owned keep their data but have no owner until `share` gives them one.

    \b
    Examples:
      ldp-survey user remove bob@example.org
      ldp-survey user remove bob@example.org --yes
    """
    if not yes:
        click.confirm(f"Delete the account {email.strip()}?", abort=True)
    store = open_store(db, must_exist=True)
    try:
        store.remove_user(email.strip())
    finally:
        store.close()
    click.echo(f"Removed the account {email.strip()}")


@click.group()
def token():
    """Manage researchers' API tokens for scripts and notebooks.

    A token is sent as `Authorization: Bearer TOKEN` to the read-only JSON API under /api/.

    \b
    Examples:
      ldp-survey token create alice@example.org --name laptop
      ldp-survey token list alice@example.org
      ldp-survey token revoke alice@example.org laptop
    """


def _account_id(store: Store, email: str) -> int:
    account = store.get_user(email.strip())
    if account is None:
        raise click.ClickException(f"no researcher account {email.strip()!r}")
    return account["id"]


@token.command("create")
@click.argument("email")
@click.option("--name", "label", metavar="LABEL", help="A label to tell the token apart (default: token-N).")
@click.pass_obj
def token_create(db, email, label):
    """Make a new API token for a researcher and print it, once.

    Only its SHA-256 hash is stored: keep the printed token, it cannot be shown again.
    A new password does not revoke tokens; `token revoke` does, and so does `user remove`.

    \b
    Examples:
      ldp-survey token create alice@example.org --name notebook
    """
    store = open_store(db, must_exist=True)
    try:
        record, secret = store.create_token(email.strip(), label)
    finally:
        store.close()
    click.echo(secret)
    click.echo(f"Created API token {record['label']!r} (id {record['id']}) for {record['email']}; "
               "it is shown only this once", err=True)


@token.command("list")
@click.argument("email")
@click.pass_obj
def token_list(db, email):
    """List a researcher's API tokens: id, label and creation day (never the token).

    \b
    Examples:
      ldp-survey token list alice@example.org
    """
    store = open_store(db, must_exist=True)
    try:
        tokens = store.list_tokens(_account_id(store, email))
    finally:
        store.close()
    if not tokens:
        click.echo(f"No API tokens for {email.strip()}; make one with `ldp-survey token create {email.strip()}`")
        return
    width = max(len(record["label"]) for record in tokens)
    for record in tokens:
        click.echo(f"{record['id']:>4}  {record['label']:<{width}}  created {record['created_day']}")


@token.command("revoke")
@click.argument("email")
@click.argument("which", metavar="LABEL|ID")
@click.pass_obj
def token_revoke(db, email, which):
    """Revoke one of a researcher's API tokens, by label or id; requests with it get 401 at once.

    \b
    Examples:
      ldp-survey token revoke alice@example.org notebook
      ldp-survey token revoke alice@example.org 3
    """
    store = open_store(db, must_exist=True)
    try:
        record = store.revoke_token(_account_id(store, email), which)
    finally:
        store.close()
    click.echo(f"Revoked API token {record['label']!r} (id {record['id']}) of {email.strip()}")


@click.command("uninvite")
@click.argument("slug")
@click.argument("links", nargs=-1, required=True, metavar="LINK|TOKEN...")
@click.pass_obj
def uninvite(db, slug, links):
    """Cancel invitation links (then refused like used ones).

    For an invitation-only survey. Give each link as made by `invite` (…/s/SLUG?invite=TOKEN) or just its token. A link
    already used or cancelled is reported and left as it is. A token may begin with "-": put `--` before the
    tokens (or give whole links), or it is read as an option.

    \b
    Examples:
      ldp-survey uninvite panel 'https://surveys.example.org/s/panel?invite=Fq5AagnPRwETiCtQ3eDsEA'
      ldp-survey uninvite panel -- Fq5AagnPRwETiCtQ3eDsEA -k3uMZ2b9Lq0aW1xYv7c8g
    """
    from ..core.invitations import invite_token

    store = open_store(db, must_exist=True)
    try:
        results = [(link, store.cancel_invitation(slug, invite_token(link))) for link in links]
    finally:
        store.close()
    for link, cancelled in results:
        click.echo(f"{'Cancelled' if cancelled else 'Not an unused invitation of ' + slug + ':'} {link}")
    if not all(cancelled for _, cancelled in results):
        raise click.ClickException("some links were not cancelled: unknown, used or cancelled already")
