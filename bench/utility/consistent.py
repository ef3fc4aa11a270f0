"""The consistent view of a choice question (issue 16, item 3): our rule's MSE beside Norm-Sub, IBU and the MLE.

Every estimator runs on the same reports: the bench's choice tasks (d = 8, 32, 128 options, Zipf
shares) at each ε, built, randomized and tallied exactly as ``run.py`` does for ours (same seeds,
so the same answers and reports as its n = 100,000 run), then post-processed by

- **Norm-Sub**: ``survey.core.estimators.project_simplex`` of the unbiased estimates (Wang et al. 2020);
- **IBU**: multi-freq-ldpy's own ``IBU`` (``estimators.Histogram_estimator``) with its defaults
  (10,000 iterations, tolerance 1e-12, from uniform shares; Agrawal & Aggarwal 2001), on our counts
  with our channel (p on the diagonal, q elsewhere), as its ``*_Aggregator_IBU`` builds it;
- **MLE**: the same ``IBU`` run to convergence (100,000 iterations): multi-freq-ldpy 0.2.5 has no
  function named MLE, and for GRR the limit of its EM is the exact maximum-likelihood estimate
  (checked against ``survey.core.consistent.indicator_mle``); for a bit-vector mechanism it is the
  maximum of the library's likelihood of the count vector;
- **MI**: multi-freq-ldpy's default post-processing (clip negatives to 0 and renormalise), for reference;
- **ours**: the ``consistent`` column of ``aggregate_counts``, the product's rule
  (``consistent.consistent_view``).

It also reports the mean width of the simultaneous intervals before and after tightening by the
sum (``consistent_low``/``consistent_high``). Run it in the bench venv:
``/tmp/bench-venv/bin/python bench/utility/consistent.py --json bench/utility/results/consistent.json --write-readme``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import run
from run import Measure, fmt

from survey.core import codec
from survey.core.aggregate import QuestionCounts, aggregate_counts
from survey.core.estimators import project_simplex, relative_noise
from survey.core.mechanisms import mechanism_for, randomize_question
from survey.core.reports import check_report_array

BEGIN, END = "<!-- consistent:begin -->", "<!-- consistent:end -->"
NAMES = ("Norm-Sub", "IBU", "MLE", "MI", "ours")
COMPARED = ("Norm-Sub", "IBU", "MLE")


def library_estimators():
    """Return multi-freq-ldpy's IBU and MI functions (only the bench venv has the library)."""
    from multi_freq_ldpy.estimators.Histogram_estimator import IBU, MI
    return IBU, MI


def one_rep(task, task_index: int, design: dict, n: int, rep: int, seed: int, library) -> dict:
    """Randomize and aggregate one repetition as run.py does; return every estimator's shares and the intervals."""
    ibu, mi = library
    question = design["questions"][0]
    answers = run.true_answers(design, task.truth, n, run.rep_seed(seed, task_index, rep, 0))
    rng = np.random.default_rng(run.rep_seed(seed, task_index, rep, 1, design["epsilon"]))
    reports = check_report_array(question, randomize_question(question, answers[question["id"]], rng))
    ones = np.asarray(codec.tally(question, codec.encode_column(question, reports)), dtype=np.int64)
    started = time.perf_counter()
    rows = aggregate_counts(design, {question["id"]: QuestionCounts(n=n, ones=ones)})
    seconds = time.perf_counter() - started
    p, q = mechanism_for(question).response_probabilities()
    d = ones.size
    channel = np.full((d, d), q)
    np.fill_diagonal(channel, p)
    observed = ones / ones.sum()
    estimates = np.array([row.estimate for row in rows])
    return {
        "Norm-Sub": project_simplex(estimates),
        "IBU": np.asarray(ibu(d, channel, observed, 10_000, 1e-12, "max_abs")),
        "MLE": np.asarray(ibu(d, channel, observed, 100_000, 1e-12, "max_abs")),
        "MI": np.asarray(mi(ones.astype(float), n, p, q)),
        "ours": np.array([row.consistent for row in rows]),
        "box": (np.array([row.ci_low for row in rows]), np.array([row.ci_high for row in rows])),
        "tight": (np.array([row.consistent_low for row in rows]), np.array([row.consistent_high for row in rows])),
        "seconds": seconds,
    }


def measure(task, task_index: int, epsilon: float, n: int, reps: int, seed: int, library, log) -> dict | None:
    """Return one point's MSE per estimator, interval widths and coverage over the repetitions."""
    design, reason = run.build(task, epsilon)
    if design is None:
        log(f"{task.label}, ε = {epsilon:g}: not supported ({reason})")
        return None
    question = design["questions"][0]
    mechanism = mechanism_for(question)
    p, q = mechanism.response_probabilities()
    truth = np.asarray(task.truth[question["id"]])
    errors = {name: [] for name in NAMES}
    widths = {"box": [], "tight": []}
    covered = {"box": 0, "tight": 0}
    seconds = []
    clock = time.perf_counter()
    for rep in range(reps):
        result = one_rep(task, task_index, design, n, rep, seed, library)
        for name in NAMES:
            errors[name].append(float(np.mean((result[name] - truth) ** 2)))
        for name, spans in widths.items():
            low, high = result[name]
            spans.append(float(np.mean(high - low)))
            covered[name] += bool(np.all((low <= truth) & (truth <= high)))
        seconds.append(result["seconds"])
    point = {"task": task.key, "label": task.label, "d": int(truth.size), "epsilon": epsilon,
             "mechanism": question["mechanism"], "n": n, "reps": reps,
             "relative_noise": relative_noise(n, p=p, q=q, d=int(truth.size)),
             "mse": {name: Measure.of(values).__dict__ for name, values in errors.items()},
             "per_rep": errors, "width": {name: float(np.mean(v)) for name, v in widths.items()},
             "covered": covered, "aggregate_seconds": float(np.mean(seconds)),
             "seconds": time.perf_counter() - clock}
    best = min(COMPARED, key=lambda name: point["mse"][name]["mse"])
    log(f"{task.label}, ε = {epsilon:g} ({question['mechanism']}): " + ", ".join(
        f"{name} {point['mse'][name]['mse']:.4g}" for name in NAMES)
        + f"; ours / {best} = {point['mse']['ours']['mse'] / point['mse'][best]['mse']:.3f} ({point['seconds']:.0f} s)")
    return point


def paired_ratio(ours: list[float], other: list[float]) -> tuple[float, float]:
    """Return mean(ours)/mean(other) and its standard error by the delta method on paired repetitions."""
    a, b = np.asarray(ours), np.asarray(other)
    ratio = a.mean() / b.mean()
    if a.size < 2:
        return float(ratio), math.nan
    residual = (a - ratio * b) / b.mean()
    return float(ratio), float(residual.std(ddof=1) / math.sqrt(a.size))


def table(points: list[dict], header: str) -> str:
    """Return the section for bench/README.md: the header, the table and the largest ratio."""
    lines = [header, "",
             ("| task | ε | mechanism | noise r | rule | Norm-Sub MSE | IBU (multi-freq-ldpy, 10⁴ iterations) MSE | MLE "
              "(multi-freq-ldpy IBU, 10⁵ iterations) MSE | MI (multi-freq-ldpy, for reference) MSE | **ours** MSE | "
              "best of the three | **ours / best** ± se | interval width: box → tightened | simultaneous coverage: "
              "box, tightened |"),
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    worst, ratios = None, []
    for point in points:
        mse = point["mse"]
        best = min(COMPARED, key=lambda name: mse[name]["mse"])
        ratio, se = paired_ratio(point["per_rep"]["ours"], point["per_rep"][best])
        worst = ratio if worst is None else max(worst, ratio)
        ratios.append(ratio)
        rule = "Norm-Sub" if point["relative_noise"] < 0.05 else "IBU, discrepancy stop"
        cells = [f"{fmt(mse[name]['mse'], 4)} ± {fmt(mse[name]['se'], 2)}" for name in NAMES]
        lines.append(f"| choice d={point['d']} | {point['epsilon']:g} | {point['mechanism']} | "
                     f"{point['relative_noise']:.3f} | {rule} | " + " | ".join(cells[:4]) + f" | **{cells[4]}** | "
                     f"{best} | **{ratio:.3f}** ± {se:.3f} | {point['width']['box']:.4f} → "
                     f"{point['width']['tight']:.4f} | {point['covered']['box']}/{point['reps']}, "
                     f"{point['covered']['tight']}/{point['reps']} |")
    ties = sum(abs(r - 1.0) < 1e-6 for r in ratios)
    lines += ["", (f"Largest ratio ours / best of Norm-Sub, IBU and MLE: **{worst:.3f}**; {ties} of {len(points)} "
               "points are ties (ours is the same estimate as the best, to 6 significant digits or more: Norm-Sub where "
               "the rule picks it and every estimate is already inside the simplex, or, at d = 128, ε = 0.5, the "
               "update stopped by its iteration cap as the 10⁵-iteration column is). Tightening by the sum left the "
               "mean widths unchanged at these points: with 8 or more options at n = 100,000, the other options' "
               "intervals leave every option more room than its own interval; it narrows an interval where an option "
               "holds most of the shares or the options are few (tests/core/test_consistent.py).")]
    return "\n".join(lines)


def write_readme(section: str) -> None:
    """Replace the consistent-view section of bench/README.md (between its markers) with ``section``."""
    text = run.README.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{run.README} has no {BEGIN} ... {END} markers")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    run.README.write_text(f"{head}{BEGIN}\n{section}\n{END}{tail}", encoding="utf-8")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000, help="respondents per repetition (default 100,000)")
    parser.add_argument("--reps", type=int, default=20, help="repetitions per point (default 20)")
    parser.add_argument("--epsilons", default="0.5,1,2,4")
    parser.add_argument("--tasks", default="choice8,choice32,choice128")
    parser.add_argument("--seed", type=int, default=20261122, help="base seed (default 20261122, run.py's)")
    parser.add_argument("--json", type=Path, help="write every figure to this JSON file (after every point)")
    parser.add_argument("--render", type=Path, nargs="+", metavar="JSON", help="render earlier --json files; run nothing")
    parser.add_argument("--write-readme", action="store_true", help="write the table into bench/README.md")
    args = parser.parse_args(argv)

    def log(message):
        print(message, file=sys.stderr, flush=True)

    if args.render:
        datas = [json.loads(path.read_text(encoding="utf-8")) for path in args.render]
        order = [task.key for task in run.tasks()]
        points = sorted((p for data in datas for p in data["points"]), key=lambda p: (order.index(p["task"]), p["epsilon"]))
        section = table(points, datas[0]["header"].replace("{seconds}", " + ".join(
            f"{data['elapsed']:.0f} s" for data in datas)))
    else:
        library = library_estimators()
        all_tasks = run.tasks()
        chosen = [task for task in all_tasks if task.key in args.tasks.split(",")]
        today = datetime.datetime.now(datetime.UTC).date().isoformat()
        header = (f"Measured {today} on {run.machine()}: n = {args.n:,} respondents, {args.reps} repetitions per "
                  f"point (seeded, base seed {args.seed}: the answers and reports of run.py's n = {args.n:,} run), "
                  "every estimator on the same counts. Run time: {seconds}.")
        points, started = [], time.perf_counter()
        for task in chosen:
            for epsilon in (float(e) for e in args.epsilons.split(",")):
                point = measure(task, all_tasks.index(task), epsilon, args.n, args.reps, args.seed, library, log)
                if point:
                    points.append(point)
                if args.json:
                    args.json.write_text(json.dumps({"header": header, "elapsed": time.perf_counter() - started,
                                                     "points": points}, indent=1), encoding="utf-8")
        section = table(points, header.replace("{seconds}", f"{time.perf_counter() - started:.0f} s"))
    print(section)
    if args.write_readme:
        write_readme(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
