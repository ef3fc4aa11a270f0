"""Compare guaranteed odds-ratio intervals by simulation at the planning test's setting."""
import math, sys, time
import numpy as np
from survey.core.definition import parse_definition
from survey.core.design import build_design, response_probabilities
from survey.core import crosstab_bounds as bounds
from survey.core.planning import odds_ratio_cells, respondents_for_odds_ratio

defn = parse_definition({"slug": "or", "title": "OR", "epsilon": 4, "questions": [
    {"id": "a", "kind": "yes_no", "text": "A?"}, {"id": "b", "kind": "yes_no", "text": "B?"}]})
qa, qb = build_design(defn)["questions"]
pa, qa_ = response_probabilities(qa); pb, qb_ = response_probabilities(qb)
cells = odds_ratio_cells(0.3, 0.2, 2.5)
print("p,q", pa, qa_, "wald n", respondents_for_odds_ratio(qa, qb, share_a=0.3, share_b_without_a=0.2, odds_ratio=2.5))
# reported pair probabilities: order (ra, rb) in 00,01,10,11
PA = np.array([[1-qa_, 1-pa], [qa_, pa]]); PB = np.array([[1-qb_, 1-pb], [qb_, pb]])
rep = np.kron(PA, PB) @ cells
ra = np.array([0, 0, 1, 1.]); rb = np.array([0, 1, 0, 1.])
fa = ((ra - qa_) / (pa - qa_))[:, None]; fb = ((rb - qb_) / (pb - qb_))[:, None]
range_a = bounds.factor_range(qa, pa, qa_); range_b = bounds.factor_range(qb, pb, qb_)
odds = lambda c: c / (1 - c)
SIDES = [(True, True), (True, False), (False, True), (False, False)]

def box(counts, level):
    cellsobj = bounds.Cells(fa, fb, counts.astype(float), range_a, range_b, SIDES)
    lo, hi = bounds.batched([cellsobj.joint_request()], cellsobj.n, bounds.odds_level(level))[0]
    lo, hi, _ = bounds.clipped(lo, hi)
    d = {s: (float(cellsobj.split(lo)[s][0, 0]), float(cellsobj.split(hi)[s][0, 0])) for s in SIDES}
    (l00, u00), (l11, u11), (l01, u01), (l10, u10) = d[False, False], d[True, True], d[False, True], d[True, False]
    return l00 * l11 / (u01 * u10), (u00 * u11 / (l01 * l10) if l01 > 0 and l10 > 0 else math.inf)

def cond(counts, level, swap=False):
    x, y = (fb, fa) if swap else (fa, fb)
    rx, ry = (range_b, range_a) if swap else (range_a, range_b)
    sides = [(True, True), (False, True)]
    cellsobj = bounds.Cells(x, y, counts.astype(float), rx, ry, sides)
    seeds = np.full(2, np.nan)
    _, c, _ = bounds.table_intervals(cellsobj, 1 - (1 - level) / 2, seeds, joint=False, odds=False)
    l1, h1, _ = c[True, True]; l0, h0, _ = c[False, True]
    l1, h1, l0, h0 = (float(v[0, 0]) for v in (l1, h1, l0, h0))
    low = odds(l1) / odds(h0) if h0 < 1 and l1 > 0 else 0.0
    high = odds(h1) / odds(l0) if l0 > 0 and h1 < 1 else math.inf
    return low, high

METHODS = {"box": box, "cond": cond, "cond_swap": lambda c, l: cond(c, l, True)}
rng = np.random.default_rng(1)
reps = int(sys.argv[1]) if len(sys.argv) > 1 else 200
for n in [int(v) for v in sys.argv[2:]]:
    draws = rng.multinomial(n, rep, size=reps)
    for name, fn in METHODS.items():
        t = time.time()
        ints = np.array([fn(d, 0.95) for d in draws])
        with np.errstate(divide="ignore", invalid="ignore"):
            w = np.log(ints[:, 1]) - np.log(ints[:, 0])
        cover = np.mean((ints[:, 0] <= 2.5) & (2.5 <= ints[:, 1]))
        print(f"n={n:7d} {name:10s} power={np.mean(ints[:,0] > 1):.3f} median logwidth={np.median(w):.3f} "
              f"median low={np.median(ints[:,0]):.3f} cover={cover:.3f} ({time.time()-t:.1f}s)", flush=True)
