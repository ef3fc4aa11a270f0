"""One number style per kind of figure (issue 27): shares are percentages with the dashboard's decimals on the
results table, the crosstab page and the sandbox page."""

from __future__ import annotations

import random
import re

from survey.cli import main
from survey.store import Store

from conftest import OWNER, domain_report
from test_ownership import signed_in

SLUG = "smoking-2026"
SHARE = re.compile(r"-?\d{1,3}(?:\.\d{1,4})?%")  # a debiased share may fall below 0


def _cells(markup: str, table_id: str | None = None) -> list[str]:
    """Return the texts of a page's numeric cells (of one table when given its id)."""
    if table_id:
        markup = markup[markup.index(f'id="{table_id}"'):]
        markup = markup[:markup.index("</table>")]
    return [re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r'<td class="num">(.*?)</td>', markup, re.S)]


def test_shares_are_percentages_with_the_dashboards_decimals_on_every_page(app, db_path, accounts, cli_runner):
    store = Store(db_path)
    try:
        design = store.get_design(SLUG)
        rng = random.Random(3)
        store.add_responses(SLUG, design["hash"], [{q["id"]: domain_report(q, rng.randrange(60))
                                                    for q in design["questions"]} for _ in range(300)])
    finally:
        store.close()
    simulated = cli_runner.invoke(main, ["--db", str(db_path), "simulate", SLUG, "--n", "300", "--seed", "1",
                                         "--alongside-real"])
    assert simulated.exit_code == 0, simulated.output
    owner = signed_in(app, *OWNER)
    results = owner.get(f"/surveys/{SLUG}/results").get_data(as_text=True)
    sandbox = owner.get(f"/surveys/{SLUG}/sandbox").get_data(as_text=True)
    crosstab = owner.get(f"/surveys/{SLUG}/crosstab?a=smoker&b=cigarettes").get_data(as_text=True)
    # The dashboard's sentence and its table show smoker's share alike.
    sentence = re.search(r"best single estimate is (\S+?%)\.", results).group(1)
    row = results[results.index("(smoker)"):]
    assert _cells(row)[3] == sentence, (_cells(row)[:6], sentence)
    sandbox_cells = _cells(sandbox, "sandbox-estimates")
    shares = [cell for cell in sandbox_cells[1::3]] + [cell.strip("[]").split(", ")[0] for cell in sandbox_cells[2::3]]
    assert len(shares) >= 10
    # Sandbox rows: n, estimate, interval; the number question (age) keeps its mean, every share is a percentage.
    assert sum(bool(SHARE.fullmatch(cell)) for cell in shares) >= len(shares) - 2, shares
    crosstab_cells = _cells(crosstab)
    assert crosstab_cells and all(re.fullmatch(rf"(?:{SHARE.pattern}|no estimate) \[{SHARE.pattern}, {SHARE.pattern}\]"
                                               r"(?: \(.*\))?", cell) for cell in crosstab_cells), crosstab_cells
    # The results table: every cell of a share row is a percentage (smoker's row: noisy share to interval).
    assert all(SHARE.fullmatch(cell.strip("[]").split(", ")[0]) for cell in _cells(row)[2:6]), _cells(row)[:6]
