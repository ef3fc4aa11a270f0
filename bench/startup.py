"""Start-up of the command line: `ldp-survey --version`, `--help` and real commands against `python -c pass`.

Each command runs as a subprocess (`python -m survey ...`, this checkout first on PYTHONPATH), --runs times,
interleaved so that a change in the machine's load falls on all of them; prints the median and the spread of
the wall times, each median's ratio to the reference's, the median CPU seconds (user + system, steadier than
the wall time on a loaded machine) and the child's peak RSS. Every command runs in a temporary directory
(``python -m`` puts the working directory first on sys.path). The real commands read small inputs, so their
time is nearly all start-up: `aggregate --sandbox` of the smoking survey with 1,000 simulated respondents
(the store, numpy, scipy.special), `analyze … aggregate` of its 1,000-row responses.csv, `analyze … regress`
of the same file (scipy.optimize) and `release` (the survey's release step and central ε: scipy.stats, for the
shuffling bound). With --compare DIR, the same commands also run from another checkout (e.g. the main branch
before a change), in the same interleaved rounds.

    python bench/startup.py
    python bench/startup.py --runs 20 --compare /path/to/other/checkout
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402

TIME = Path("/usr/bin/time").is_file()


def env_for(root: Path) -> dict:
    """Return the environment that runs ``root``'s survey package (first on PYTHONPATH)."""
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": str(root) + (os.pathsep + path if path else "")}


def timed(command: list[str], env: dict, timeout: float, cwd: Path, cpu: list | None = None) -> tuple[float, float]:
    """Run a command to completion in ``cwd``; return (wall seconds, its peak RSS in MB); raise if it fails.

    ``cpu``, if given, gets the command's CPU seconds (user + system) appended: on a loaded machine they
    move less than the wall time, which includes waiting for a core.

    Run under /usr/bin/time when there is one: a child's own peak RSS (wait4) starts at this process's RSS,
    which it shares at the fork; time's child is forked from time, whose RSS is a few MB. The wall time is
    taken here either way (time adds one fork and exec, about a millisecond, to every command alike).
    """
    rss_file = cwd / "peak-rss.txt"
    wrapped = ["/usr/bin/time", "-f", "%M %U %S", "-o", str(rss_file), *command] if TIME else command
    start = time.perf_counter()
    process = subprocess.Popen(wrapped, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            process.kill()
            process.wait()
            raise RuntimeError(f"{' '.join(command)} took longer than {timeout} s")
        time.sleep(0.001)
    elapsed = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    error = process.stderr.read().decode(errors="replace")
    process.stderr.close()
    if code:
        raise RuntimeError(f"{' '.join(command)} exited {code}: {error[-2000:]}")
    if TIME:
        kib, user, system = rss_file.read_text().split()[-3:]
        kib, used = int(kib), float(user) + float(system)
    else:
        kib, used = usage.ru_maxrss, usage.ru_utime + usage.ru_stime
    if cpu is not None:
        cpu.append(used)
    return elapsed, kib / 1024


def prepare(folder: Path) -> tuple[Path, Path, Path]:
    """Make the database (smoking survey, 1,000 simulated respondents), its responses.csv and codebook."""
    db = folder / "startup.db"
    common.cli(db, "create", str(common.SMOKING_TOML), timeout=120)
    common.cli(db, "simulate", common.SLUG, "--n", "1000", "--seed", "1", timeout=120)
    responses, book = folder / "responses.csv", folder / "codebook.json"
    common.cli(db, "export", common.SLUG, "--responses", "--sandbox", "-o", str(responses), timeout=120)
    common.cli(db, "export", common.SLUG, "--codebook", "--sandbox", "-o", str(book), timeout=120)
    return db, responses, book


def commands(db: Path, responses: Path, book: Path) -> dict[str, list[str]]:
    """Return the command lines to time after the reference, by name."""
    survey = [common.PYTHON, "-m", "survey"]
    analyze = [*survey, "analyze", str(responses)]
    return {
        "--version": [*survey, "--version"],
        "--help": [*survey, "--help"],
        "aggregate": [*survey, "--db", str(db), "aggregate", common.SLUG, "--sandbox", "--format", "csv"],
        "analyze aggregate": [*analyze, "aggregate", "--codebook", str(book), "--format", "csv"],
        "analyze regress": [*analyze, "regress", "lung_disease", "smoker", "--codebook", str(book), "--format", "csv"],
        "release": [*survey, "--db", str(db), "release", common.SLUG],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10, help="timings of each command (median)")
    parser.add_argument("--compare", type=Path, default=None, metavar="DIR",
                        help="another checkout whose commands are timed in the same rounds")
    parser.add_argument("--tmp", type=Path, default=None, help="directory for the database and the files")
    parser.add_argument("--timeout", type=float, default=120)
    args = parser.parse_args()
    common.header("startup: the command line's start-up against python -c pass", args)
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        todo = {"reference": ([common.PYTHON, "-c", "pass"], os.environ.copy())}
        sources = {"": common.ROOT} if args.compare is None else {"": common.ROOT, "compare ": args.compare.resolve()}
        made = prepare(Path(tmp))
        for prefix, root in sources.items():
            for name, command in commands(*made).items():
                todo[prefix + name] = (command, env_for(root))
        times = {name: [] for name in todo}
        peaks = {name: [] for name in todo}
        cpus = {name: [] for name in todo}
        for _ in range(args.runs):
            for name, (command, env) in todo.items():
                elapsed, peak = timed(command, env, args.timeout, Path(tmp), cpus[name])
                times[name].append(elapsed)
                peaks[name].append(peak)
        reference = common.median(times["reference"])
        if args.compare is not None:
            print(f"compare: {args.compare.resolve()}")
        print(f"{'command':<28} {'median':>9} {'min':>8} {'max':>8} {'ratio':>8} {'CPU':>8} {'peak RSS':>9}")
        for name in todo:
            print(f"{name:<28} {common.median(times[name]):7.3f} s {min(times[name]):6.3f} s {max(times[name]):6.3f} s "
                  f"{common.median(times[name]) / reference:7.2f}x {common.median(cpus[name]):6.2f} s "
                  f"{max(peaks[name]):6.0f} MB")
    common.footer()


if __name__ == "__main__":
    main()
