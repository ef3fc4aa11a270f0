"""Hatch build hook: compile the message catalogs (survey/translations/*/LC_MESSAGES/messages.po) into the wheel.

Each .po is compiled by Babel into the .mo beside it in the wheel, so an installed app reads its
catalogs as they are (survey/web/i18n.py compiles them at start-up only where no .mo is up to date).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class CompileCatalogs(BuildHookInterface):
    """Add a compiled messages.mo beside every messages.po of the wheel."""

    PLUGIN_NAME = "custom"

    def initialize(self, version, build_data):
        """Compile each catalog into a temporary folder and force-include the .mo files in the wheel."""
        from babel.messages.mofile import write_mo
        from babel.messages.pofile import read_po

        if self.target_name != "wheel":
            return
        root = Path(self.root)
        self._compiled = tempfile.TemporaryDirectory(prefix="ldp-survey-mo-")
        for po in sorted((root / "survey" / "translations").glob("*/LC_MESSAGES/messages.po")):
            relative = po.relative_to(root).with_suffix(".mo")
            mo = Path(self._compiled.name) / relative
            mo.parent.mkdir(parents=True, exist_ok=True)
            with po.open("rb") as source:
                catalog = read_po(source, locale=po.parent.parent.name)
            with mo.open("wb") as target:
                write_mo(target, catalog, use_fuzzy=False)
            build_data["force_include"][str(mo)] = relative.as_posix()

    def finalize(self, version, build_data, artifact_path):
        """Remove the temporary folder of compiled catalogs."""
        compiled = getattr(self, "_compiled", None)
        if compiled is not None:
            compiled.cleanup()
