"""Re-analysis from the files: `ldp-survey analyze` on an exported responses.csv against pandas reading it.

Writes, in a temporary directory, the smoking survey's responses.csv of N respondents (default
1,000,000; lung disease going with smoking, drawn in process as `simulate` draws them and written
by the product's own export, `survey.exports.export.iter_responses_csv`, CRLF lines) and its codebook
(`survey.exports.codebook.codebook`). Then, --runs times each, as subprocesses (wall time and the
child's peak RSS from wait4):

  reference    python -c "import pandas; pandas.read_csv(FILE)"   (pandas' C engine, default types)
  aggregate    python -m survey analyze FILE aggregate --codebook BOOK --format csv
  crosstab     python -m survey analyze FILE crosstab smoker lung_disease --codebook BOOK --format csv
  regress      python -m survey analyze FILE regress lung_disease smoker cigarettes --codebook BOOK --format csv
  floor        python -m survey --version  (the interpreter's and the CLI's start-up)

and prints the medians, each command's ratio to the reference's median, and the peak RSS (measured by
/usr/bin/time when there is one, else wait4, which counts the benchmark's own RSS at the fork). The
runs interleave (reference, aggregate, crosstab, regress; then again) so that a change in the
machine's load falls on all of them.

    python bench/analyze.py
    python bench/analyze.py --n 10000000 --runs 1
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402
import numpy as np  # noqa: E402
import startup  # noqa: E402

GIVEN = ["lung_disease|smoker=1:0.18", "lung_disease|smoker=0:0.06"]
BATCH = 100_000


def write_files(directory: Path, n: int, seed: int) -> tuple[Path, Path, float]:
    """Write responses.csv of n respondents and its codebook; return their paths and the seconds taken."""
    from survey.exports.codebook import codebook
    from survey.exports.export import iter_responses_csv
    from survey.core.simulate import complete_truth, parse_given, simulate_answers

    start = time.perf_counter()
    design = common.smoking_design()
    rng = np.random.default_rng(seed)
    truth = complete_truth(design, {}, rng)
    given = parse_given(design, GIVEN)
    responses, book = directory / "responses.csv", directory / "codebook.json"
    with responses.open("w", encoding="utf-8", newline="") as out:
        for first in range(0, n, BATCH):
            answers = simulate_answers(design, truth, min(BATCH, n - first), rng, given=given)
            rows = ({"id": first + index + 1, "received_day": "2026-11-27", "answers": answer}
                    for index, answer in enumerate(answers))
            for index, text in enumerate(iter_responses_csv(design, rows, rows_per_chunk=10_000)):
                out.write(text if first == 0 or index else text.split("\r\n", 1)[1])
    book.write_text(json.dumps(codebook(design), indent=2), encoding="utf-8")
    return responses, book, time.perf_counter() - start


def commands(responses: Path, book: Path) -> dict[str, list[str]]:
    """Return the commands to time, the reference first."""
    analyze = [common.PYTHON, "-m", "survey", "analyze", str(responses)]
    tail = ["--codebook", str(book), "--format", "csv"]
    return {
        "reference": [common.PYTHON, "-c", f"import pandas; pandas.read_csv({str(responses)!r})"],
        "aggregate": [*analyze, "aggregate", *tail],
        "crosstab": [*analyze, "crosstab", "smoker", "lung_disease", *tail],
        "regress": [*analyze, "regress", "lung_disease", "smoker", "cigarettes", *tail],
        "floor": [common.PYTHON, "-m", "survey", "--version"],
    }


def timed(command: list[str], timeout: float, cwd: Path) -> tuple[float, float]:
    """Run a command in ``cwd``; return (wall seconds, its peak RSS in MB), as bench/startup.py measures them."""
    return startup.timed(command, common.child_env(), timeout, cwd)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1_000_000, help="respondents in the file")
    parser.add_argument("--runs", type=int, default=3, help="timings of each command (median)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--tmp", type=Path, default=None, help="directory for the files")
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--write", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--responses", type=Path, default=None, metavar="CSV",
                        help="time this responses.csv of the smoking survey (e.g. a 10M-row file made by repeating "
                             "a 1M-row one's data lines) instead of writing one; its codebook is written beside it "
                             "in the temporary directory")
    args = parser.parse_args()
    if args.write is not None:
        write_files(args.write, args.n, args.seed)
        return
    common.header("analyze: re-analysis from responses.csv against pandas.read_csv of the same file", args)
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        start = time.perf_counter()
        book = Path(tmp) / "codebook.json"
        if args.responses is None:
            # Written by a child process, so that this one stays small (see startup.timed).
            subprocess.run([common.PYTHON, __file__, "--write", tmp, "--n", str(args.n), "--seed", str(args.seed)],
                           env=common.child_env(), check=True, timeout=args.timeout)
            responses = Path(tmp) / "responses.csv"
        else:
            from survey.exports.codebook import codebook

            book.write_text(json.dumps(codebook(common.smoking_design()), indent=2), encoding="utf-8")
            responses = args.responses.resolve()
        with responses.open("rb") as handle:
            rows = sum(block.count(b"\n") for block in iter(lambda: handle.read(1 << 24), b"")) - 1
        size = responses.stat().st_size
        print(f"{'wrote' if args.responses is None else 'read'} {rows:,} rows, {size / 1e6:.1f} MB, "
              f"in {time.perf_counter() - start:.1f} s", flush=True)
        todo = commands(responses, book)
        times = {name: [] for name in todo}
        peaks = {name: [] for name in todo}
        for attempt in range(args.runs):
            for name, command in todo.items():
                elapsed, peak = timed(command, args.timeout, Path(tmp))
                times[name].append(elapsed)
                peaks[name].append(peak)
                print(f"run {attempt + 1} {name:<10} {elapsed:7.2f} s  peak RSS {peak:6.0f} MB", flush=True)
        reference = common.median(times["reference"])
        print(f"\n{'command':<10} {'median':>9} {'runs':<24} {'ratio':>7} {'peak RSS':>10}")
        for name in todo:
            runs = ", ".join(f"{value:.2f}" for value in times[name])
            print(f"{name:<10} {common.median(times[name]):7.2f} s {runs:<24} "
                  f"{common.median(times[name]) / reference:6.2f}x {max(peaks[name]):7.0f} MB")
    common.footer()


if __name__ == "__main__":
    main()
