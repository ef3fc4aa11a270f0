"""A recount of a survey's stored reports against every count kept at insert (``ldp-survey check``).

The counts a researcher reads are kept current at insert (tallies, response counts, report patterns);
this reads every stored report once and says where they differ, if anywhere.
"""

from __future__ import annotations

from ..core.design import release_every
from . import patterns
from .schema import pending_table_name, sandbox_table_name, table_name


def check_counts(store, slug: str) -> tuple[int, list[str]]:
    """Recount a survey's stored reports and compare every count kept at insert; return (reports read, differences).

    Compared in one snapshot: the released and held response counts, the per-question tallies
    and the report patterns of the released reports and of the sandbox (each source).
    """
    design = store.get_design(slug)
    problems = []
    with store._snapshot():
        state = store.release_state(slug)
        stored = store._execute(f'SELECT count(*) FROM "{table_name(design)}"').fetchone()[0]
        held = 0 if release_every(design) == 1 else store._execute(
            f'SELECT count(*) FROM "{pending_table_name(design)}"').fetchone()[0]
        sandbox = store._execute(f'SELECT count(*) FROM "{sandbox_table_name(design["hash"])}"').fetchone()[0]
        if (stored, held) != (state["released"], state["held"]):
            problems.append(f"{stored} released and {held} held reports are stored, the counts say "
                            f"{state['released']} and {state['held']}")
        if sandbox != sum(store.sandbox_counts(slug).values()):
            problems.append(f"{sandbox} sandbox reports are stored, the counts say "
                            f"{sum(store.sandbox_counts(slug).values())}")
        for in_sandbox, where in ((False, "released reports"), (True, "sandbox")):
            if store.question_counts(slug, sandbox=in_sandbox) != store.recount(slug, sandbox=in_sandbox):
                problems.append(f"the per-question tallies of the {where} differ from a recount")
            table = sandbox_table_name(design["hash"]) if in_sandbox else table_name(design)
            kept, counted = patterns.kept_and_recounted(store._execute, design, table, sandbox=in_sandbox)
            if kept != counted:
                problems.append(f"the report patterns of the {where} differ from a recount "
                                f"({len(set(kept.items()) ^ set(counted.items()))} patterns differ)")
    return stored + held + sandbox, problems

