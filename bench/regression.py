"""Regression with randomized answers: its cost at N stored responses, and its efficiency against a naive estimate.

Cost. Builds the smoking survey in a temporary SQLite file with N responses (default 1,000,000)
drawn in process with lung disease depending on smoking (18% against 6%, as the demo), stored
as real responses (`Store.add_report_columns`), then times (best of --repeat, time.perf_counter):

  patterns     Store.joint_patterns(slug, [lung_disease, smoker, cigarettes]): one GROUP BY
  fit          fit_words(...) on those patterns (maximum likelihood, information, LR test)
  reference    a bare sqlite3 table t(v INTEGER) of N rows with an index on v (Store's PRAGMAs):
               SELECT v, count(*) FROM t GROUP BY v

and prints each one's ratio to the reference, the number of distinct patterns, and the same
timings on --n-small responses to show whether the fit's time depends on N (it should not:
it reads counts of patterns).

Efficiency. In process, --surveys simulated surveys of --respondents each, with a randomized
yes/no outcome and a randomized yes/no covariate at ε′ = 1 each, true odds ratio 3: the log
odds ratio by maximum likelihood (this product's regression) against the naive estimate from
the debiased crosstab cells (`survey.core.crosstab`'s odds ratio); their bias, spread, the
ratio of their mean squared errors over the surveys where both exist, and how often the naive
one is not defined (a debiased cell not positive). With one covariate the model is saturated,
so the two agree whenever every debiased cell is positive; they part where one is not.

    python bench/regression.py
    python bench/regression.py --n 200000 --surveys 100
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402
import numpy as np  # noqa: E402

from aggregate import build_reference  # noqa: E402

QUESTIONS = ["lung_disease", "smoker", "cigarettes"]
GIVEN = ["lung_disease|smoker=1:0.18", "lung_disease|smoker=0:0.06"]


def build_db(db: Path, n: int, seed: int) -> float:
    """Create the smoking survey with n responses (lung disease going with smoking); return the seconds."""
    from survey.core.simulate import complete_truth, parse_given, simulate_report_batches
    from survey.store import Store

    start = time.perf_counter()
    design = common.smoking_design()
    store = Store(db)
    try:
        store.create_survey(common.SMOKING_TOML.read_text(encoding="utf-8"), design)
        if store.survey_status(design["slug"]) == "draft":
            store.publish_survey(design["slug"])
        rng = np.random.default_rng(seed)
        truth = complete_truth(design, {}, rng)
        given = parse_given(design, GIVEN)
        for columns, asked in simulate_report_batches(design, truth, n=n, batch=100_000, rng=rng, given=given):
            store.add_report_columns(design["slug"], design["hash"], columns, asked=asked)
    finally:
        store.close()
    return time.perf_counter() - start


def time_fit(db: Path, repeat: int) -> dict:
    from survey.core.modelling import fit_words
    from survey.store import Store

    store = Store(db)
    try:
        design = store.get_design(common.SLUG)
        patterns, (words, counts) = common.best_of(repeat, lambda: store.joint_patterns(common.SLUG, QUESTIONS))
        # The patterns of the three questions serve the model of two: the fit sums the counts it sees.
        fit, model = common.best_of(repeat, lambda: fit_words(
            design, QUESTIONS[0], QUESTIONS[1:2], words[:2], counts))
    finally:
        store.close()
    return {"patterns": patterns, "fit": fit, "distinct": len(counts), "model": model}


def efficiency(surveys: int, respondents: int, seed: int) -> dict:
    """Return the MLE's and the naive crosstab's log odds ratios over simulated surveys."""
    from scipy.special import expit

    from survey.core import codec
    from survey.core.crosstab import crosstab
    from survey.core.definition import parse_definition_toml
    from survey.core.design import build_design
    from survey.core.mechanisms import mechanism_for
    from survey.core.regression import logistic_regression, question_variable

    text = ('slug = "e"\ntitle = "e"\nepsilon = 2\n[[questions]]\nid = "a"\nkind = "yes_no"\ntext = "a"\n'
            '[[questions]]\nid = "b"\nkind = "yes_no"\ntext = "b"\n')
    design = build_design(parse_definition_toml(text, source="bench"))
    a_question, b_question = design["questions"]
    truth = math.log(3.0)
    rng = np.random.default_rng(seed)
    mle, naive, undefined, paired = [], [], 0, []
    for _ in range(surveys):
        a = (rng.random(respondents) < 0.3).astype(np.int64)
        b = (rng.random(respondents) < expit(math.log(0.1 / 0.9) + truth * a)).astype(np.int64)
        reports = np.column_stack([mechanism_for(b_question).randomize(b, rng),
                                   mechanism_for(a_question).randomize(a, rng)])
        patterns, counts = np.unique(reports, axis=0, return_counts=True)
        fit = logistic_regression(question_variable(b_question, patterns[:, 0]),
                                  [question_variable(a_question, patterns[:, 1])], counts)
        mle.append(fit.terms[1].estimate)
        table = crosstab(a_question, b_question, codec.encode_column(a_question, patterns[:, 1].tolist()),
                         codec.encode_column(b_question, patterns[:, 0].tolist()), counts)
        odds = table.get("odds_ratio", "", "")
        if odds is None or odds.estimate is None or not odds.estimate > 0:
            undefined += 1
        else:
            naive.append(math.log(odds.estimate))
            paired.append(fit.terms[1].estimate)
    return {"truth": truth, "mle": np.array(mle), "naive": np.array(naive), "undefined": undefined,
            "paired": np.array(paired)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[1:]))
    parser.add_argument("--n", type=int, default=1_000_000, help="stored responses (default 1000000)")
    parser.add_argument("--n-small", type=int, default=1_000, help="responses of the second database (default 1000)")
    parser.add_argument("--repeat", type=int, default=5, help="runs per timing, best kept (default 5)")
    parser.add_argument("--surveys", type=int, default=300, help="simulated surveys for the efficiency (default 300)")
    parser.add_argument("--respondents", type=int, default=3_000, help="respondents per simulated survey (default 3000)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--tmp", type=Path, default=None, help="directory for the temporary databases")
    args = parser.parse_args(argv)
    common.header("regression: a model over report patterns vs a bare GROUP BY; MLE vs naive crosstab", args)
    with tempfile.TemporaryDirectory(dir=args.tmp) as directory:
        root = Path(directory)
        for label, n in (("N", args.n), ("small", args.n_small)):
            db = root / f"{label}.db"
            built = build_db(db, n, args.seed)
            timing = time_fit(db, args.repeat)
            reference = build_reference(root / f"{label}-ref.db", n, 2, args.seed)
            ref, _ = common.best_of(args.repeat, lambda: reference.execute(
                "SELECT v, count(*) FROM t GROUP BY v").fetchall())
            reference.close()
            odds = timing["model"].terms[1]
            print(f"\n{n:,} responses (built in {built:.1f} s): {timing['distinct']} distinct patterns of "
                  f"{', '.join(QUESTIONS)}")
            print(f"  reference GROUP BY      {common.ms(ref):>10}")
            print(f"  patterns (GROUP BY)     {common.ms(timing['patterns']):>10}  {timing['patterns'] / ref:6.2f}x")
            print(f"  fit lung_disease~smoker {common.ms(timing['fit']):>10}  {timing['fit'] / ref:6.2f}x")
            print(f"  odds ratio of smoking {odds.odds_ratio:.2f} [{odds.ci_low:.2f}, {odds.ci_high:.2f}] "
                  f"(simulated truth {(0.18 / 0.82) / (0.06 / 0.94):.2f})")
    result = efficiency(args.surveys, args.respondents, args.seed)
    truth, mle, naive = result["truth"], result["mle"], result["naive"]
    mse_mle = float(np.mean((mle - truth) ** 2))
    mse_naive = float(np.mean((naive - truth) ** 2)) if len(naive) else math.nan
    mse_paired = float(np.mean((result["paired"] - truth) ** 2)) if len(naive) else math.nan
    print(f"\nefficiency over {args.surveys} surveys of {args.respondents:,} (ε′ = 1 each, true log OR {truth:.4f}):")
    print(f"  MLE    bias {mle.mean() - truth:+.4f}  sd {mle.std(ddof=1):.4f}  MSE {mse_mle:.5f}")
    if len(naive):
        print(f"  naive  bias {naive.mean() - truth:+.4f}  sd {naive.std(ddof=1):.4f}  MSE {mse_naive:.5f}"
              f"  (undefined in {result['undefined']} of {args.surveys})")
        print(f"  MSE ratio naive / MLE where both exist: {mse_naive / mse_paired:.3f}; the MLE's MSE over all "
              f"{args.surveys}: {mse_mle:.5f}; largest |MLE - naive| where both exist: "
              f"{np.max(np.abs(result['paired'] - naive)):.2e}")
    common.footer()


if __name__ == "__main__":
    main()
