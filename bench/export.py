"""`export --responses` of N responses (default 10,000,000) against `sqlite3 -csv` of the same rows.

Builds the smoking survey with N simulated responses (`demo --no-serve`, or reuses --db), then
runs, interleaved, --runs times each:

  export      `python -m survey --db DB export smoking-2026 --responses -o FILE.csv` (a subprocess)
  reference   `sqlite3 -csv DB "SELECT * FROM <report table> ORDER BY id" > FILE` (Debian's sqlite3
              command line), or, without it, Python's sqlite3 module writing the same SELECT with
              csv.writer (said in the output)
  start-up    `python -m survey --version`, the floor every command pays

and prints each one's median wall time, CPU seconds (user + system, from wait4) and peak RSS,
the export's ratio to the reference, and checks that the export has N rows and a header. The
machine may be shared: the footer gives its load.

    python bench/export.py
    python bench/export.py --n 1000000 --runs 3
    python bench/export.py --db /tmp/demo10m.db
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402

REFERENCE_SCRIPT = """
import csv, sqlite3, sys
conn = sqlite3.connect(sys.argv[1])
with open(sys.argv[3], "w", newline="") as out:
    writer = csv.writer(out)
    cursor = conn.execute(sys.argv[2])
    writer.writerow([column[0] for column in cursor.description])
    while rows := cursor.fetchmany(10000):
        writer.writerows(rows)
"""


TIME = shutil.which("time") or "/usr/bin/time"


def run(command: list[str], output: Path | None, timeout: float) -> tuple[float, float, int]:
    """Return wall seconds, CPU seconds and peak RSS (KiB) of a command, its stdout to ``output``.

    Measured by GNU time (``/usr/bin/time``), so the peak RSS is the command's own, not that of
    this process it was forked from.
    """
    with tempfile.NamedTemporaryFile("r") as measured, open(output or os.devnull, "wb") as sink:
        subprocess.run([TIME, "-f", "%e %U %S %M", "-o", measured.name, *command], stdout=sink,
                       stderr=subprocess.DEVNULL, env=common.child_env(), timeout=timeout, check=True)
        wall, user, system, rss = measured.read().split()[-4:]
    return float(wall), float(user) + float(system), int(rss)


def report_table(db: Path) -> str:
    """Return the name of the smoking survey's report table."""
    import sqlite3

    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'reports_%' "
                            "AND name NOT LIKE '%tally%'").fetchone()[0]
    finally:
        conn.close()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[1:]))
    parser.add_argument("--n", type=int, default=10_000_000, help="responses (default 10000000)")
    parser.add_argument("--runs", type=int, default=3, help="runs of each, interleaved (default 3)")
    parser.add_argument("--db", type=Path, help="an existing database with the smoking survey (else one is built)")
    parser.add_argument("--timeout", type=float, default=3600)
    parser.add_argument("--tmp", type=Path, default=Path("/tmp"), help="directory for the database and outputs")
    args = parser.parse_args(argv)
    common.header("export: export --responses against sqlite3 -csv of the same rows", args)
    sqlite3_cli = shutil.which("sqlite3")
    print(f"reference: {'sqlite3 -csv (' + sqlite3_cli + ')' if sqlite3_cli else 'Python sqlite3 + csv.writer'}")
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        tmp = Path(tmp)
        db = args.db
        if db is None:
            db = tmp / "export.db"
            wall, *_ = run([common.PYTHON, "-m", "survey", "--db", str(db), "demo", "--no-serve", "--respondents",
                            str(args.n), "--seed", "1"], None, args.timeout)
            print(f"built {args.n:,} responses with demo --no-serve in {wall:.1f} s", flush=True)
        select = f'SELECT * FROM "{report_table(db)}" ORDER BY id'
        out = tmp / "out.csv"
        commands = {
            "export": ([common.PYTHON, "-m", "survey", "--db", str(db), "export", common.SLUG, "--responses",
                        "-o", str(out)], None),
            "reference": (([sqlite3_cli, "-csv", "-header", str(db), select], out) if sqlite3_cli else
                          ([common.PYTHON, "-c", REFERENCE_SCRIPT, str(db), select, str(out)], None)),
            "start-up": ([common.PYTHON, "-m", "survey", "--version"], None),
        }
        results: dict[str, list] = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, (command, output) in commands.items():
                results[name].append(run(command, output, args.timeout))
                if name == "export":
                    with open(out, "rb") as handle:
                        lines = sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 22), b""))
                    if lines != args.n + 1 and args.db is None:
                        raise SystemExit(f"MISMATCH: the export has {lines - 1} rows, not {args.n}")
                out.unlink(missing_ok=True)
    medians = {}
    for name, values in results.items():
        wall, used, rss = (statistics.median(value[index] for value in values) for index in range(3))
        medians[name] = (wall, used)
        print(f"{name:<10} median of {args.runs}: {wall:7.2f} s wall  {used:7.2f} s CPU  peak RSS {rss / 1024:6.0f} MiB"
              f"   (walls: {', '.join(f'{value[0]:.2f}' for value in values)})")
    wall_ratio = medians["export"][0] / medians["reference"][0]
    cpu_ratio = medians["export"][1] / medians["reference"][1]
    print(f"\nexport / reference: {wall_ratio:.2f}x wall, {cpu_ratio:.2f}x CPU "
          f"(without start-up: {(medians['export'][0] - medians['start-up'][0]) / medians['reference'][0]:.2f}x wall)")
    common.footer()


if __name__ == "__main__":
    main()
