"""Give each request its own Store on ``g`` and close it at teardown."""

from __future__ import annotations

from flask import current_app, g

from ..store import Store


def get_store() -> Store:
    """Return this request's Store, opening it on first use."""
    if "store" not in g:
        g.store = Store(current_app.config["DATABASE"])
    return g.store


def close_store(exc=None):
    """Close this request's Store, if one was opened."""
    store = g.pop("store", None)
    if store is not None:
        store.close()


def init_app(app):
    """Register the teardown and make sure the database exists and is migrated."""
    app.teardown_appcontext(close_store)
    store = Store(app.config["DATABASE"])
    try:
        if not app.config.get("SECRET_KEY"):
            app.config["SECRET_KEY"] = store.secret_key()
    finally:
        store.close()
