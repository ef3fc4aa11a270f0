"""``GET /healthz``: the process answers, without touching the database (load balancers, benchmarks)."""

from __future__ import annotations

from flask import Blueprint, jsonify

bp = Blueprint("health", __name__)


@bp.get("/healthz")
def healthz():
    """Answer 200 {"status": "ok"}; never cached."""
    return jsonify({"status": "ok"}), 200, {"Cache-Control": "no-store"}
