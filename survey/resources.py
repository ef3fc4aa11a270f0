"""Locate the top-level templates/, client_js/ and examples/ folders, installed or not.

A wheel carries them inside the package as ``_templates`` etc. (see pyproject.toml);
a source checkout has them beside the package.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def resource_dir(name: str) -> Path:
    """Return the folder ``name`` (templates, client_js or examples) of this installation."""
    for candidate in (_PACKAGE / f"_{name}", _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"cannot find the {name}/ folder of ldp-survey near {_PACKAGE}")
