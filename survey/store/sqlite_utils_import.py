"""sqlite_utils, imported without the pandas it would import if it could (0.1–0.2 s of every command's start-up).

sqlite_utils imports pandas, when installed, only to map ``pandas.Timestamp`` columns to TEXT;
the store never hands it a pandas object. So pandas is hidden while sqlite_utils is first
imported (``sys.modules["pandas"] = None`` makes its guarded import fail as if pandas were
absent), unless pandas is already imported. Everything else (exports to SPSS and Stata)
imports pandas as before.
"""

from __future__ import annotations

import sys

if "pandas" in sys.modules or "sqlite_utils" in sys.modules:
    import sqlite_utils
else:
    sys.modules["pandas"] = None  # type: ignore[assignment]
    try:
        import sqlite_utils
    finally:
        del sys.modules["pandas"]

__all__ = ["sqlite_utils"]
