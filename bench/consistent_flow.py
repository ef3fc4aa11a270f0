"""The consistent view's worst case: a run from scratch, step by step against the flow, in process.

Seeded OUE counts of one choice question (--options options, --epsilon, --n reports, Dirichlet
shares), the rule's deviance factor; times ``survey.core.consistent._update`` from uniform shares
step by step (the reference) and with ``flow_after=FLOW_AFTER`` (what the results page runs), the
median of --repeat each, and prints how far apart their shares are in standard errors of one option
at uniform shares. The import of scipy.integrate (once per process) is done before timing.

    python bench/consistent_flow.py
    python bench/consistent_flow.py --options 128 --epsilon 0.5 --n 100000 --repeat 3
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402
import numpy as np  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--options", type=int, default=128, help="options of the question (default 128)")
    parser.add_argument("--epsilon", type=float, default=0.5, help="epsilon of the question (default 0.5)")
    parser.add_argument("--n", type=int, default=100_000, help="reports (default 100000)")
    parser.add_argument("--repeat", type=int, default=3, help="timings of each (default 3)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    common.header("consistent view from scratch: step by step vs the flow", args)
    import scipy.integrate  # noqa: F401  (imported once per worker; not timed)

    from survey.core.consistent import DEVIANCE_FACTORS, FLOW_AFTER, IBU_ITERATIONS, _update
    from survey.core.estimators import relative_noise

    rng = np.random.default_rng(args.seed)
    d, n = args.options, args.n
    p, q = 0.5, 1 / (math.exp(args.epsilon) + 1)
    chosen = rng.multinomial(n, rng.dirichlet(np.ones(d)))
    counts = [int(c) for c in rng.binomial(chosen, p) + rng.binomial(n - chosen, q)]
    factor = min(max(0.2 + 0.4 * relative_noise(n, p=p, q=q, d=d), DEVIANCE_FACTORS[0]), DEVIANCE_FACTORS[1])
    rate = q + (p - q) / d
    se = math.sqrt(rate * (1 - rate) / n) / (p - q)
    results = {}
    for name, flow in (("step by step (reference)", None), ("flow after %d steps" % FLOW_AFTER, FLOW_AFTER)):
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            result = _update(counts, n, p=p, q=q, multinomial=False, iterations=IBU_ITERATIONS,
                             deviance_factor=factor, flow_after=flow)
            times.append(time.perf_counter() - start)
        results[name] = (common.median(times), result)
        print(f"  {name}: {result[1]:,} steps, stopped by {result[2]}; median {common.ms(common.median(times))} "
              f"over {args.repeat}")
    (reference, exact), (flowed, fast) = results.values()
    print(f"  ratio flow / step by step: {flowed / reference:.3f}; largest difference of a share: "
          f"{np.max(np.abs(exact[0] - fast[0])) / se:.1e} standard errors")
    common.footer()


if __name__ == "__main__":
    main()
