"""The read-only JSON API under ``/api/``: views (``views.py``), OpenAPI document (``openapi.py``), error format (``errors.py``).

Nothing is imported here, so that importing the error format (as ``web/errors.py`` does) does not
import the views; the app factory registers ``views.bp`` through ``views.init_app``.
"""
