"""Linkage of a series' waves, one layer (kept reports resent) against two layers (kept reports randomized again).

For each configuration of issue 29 (yes/no questions, a number question and its mechanism, ε),
simulates two waves of N respondents (default 1,000; answers unchanged) with
survey.core.linkage and prints: the share of respondents whose wave-1 record is unique, the
share an equality attacker and a nearest-match attacker link to themselves minus chance (1/N)
with the most any attacker can under two layers (e^ε₁/(e^ε₁ + N − 1), minus chance), and for the first yes/no question the exact advantage of the best change-detection test
against its bound (e^ε₁ − 1)/(e^ε₁ + 1). Seeded: the figures are the same on every machine;
no clock is read.

    python bench/waves_linkage.py
    python bench/waves_linkage.py --n 10000 --no-nearest
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from survey.core.linkage import (change_advantage, change_bound, linkage_bound, measure_linkage,  # noqa: E402
                                  series_design)

CONFIGURATIONS = [
    ("8 yes/no, ε = 2", dict(yes_no=8, number=None, epsilon=2.0)),
    ("4 yes/no + piecewise 0..100, ε = 2", dict(yes_no=4, number=(0, 100), epsilon=2.0, mechanism="piecewise")),
    ("8 yes/no + piecewise 0..100, ε = 4", dict(yes_no=8, number=(0, 100), epsilon=4.0, mechanism="piecewise")),
    ("4 yes/no + hybrid 0..100, ε = 2", dict(yes_no=4, number=(0, 100), epsilon=2.0, mechanism="hybrid")),
    ("4 yes/no + opm 0..100, ε = 2", dict(yes_no=4, number=(0, 100), epsilon=2.0, mechanism="opm")),
    ("8 yes/no + piecewise 0..152, ε = 4", dict(yes_no=8, number=(0, 152), epsilon=4.0, mechanism="piecewise")),
    ("8 yes/no + auto 0..152, ε = 4", dict(yes_no=8, number=(0, 152), epsilon=4.0)),
]


def row(name: str, config: dict, wave_epsilon, n: int, seed: int, nearest: bool) -> str:
    """Return one line of the table: a configuration under one layer (wave_epsilon None) or two."""
    if wave_epsilon is not None and config.get("mechanism") in ("hybrid", "opm"):
        return f"{name:38} ε₁ = {wave_epsilon:<4} (no per-wave layer for this mechanism)"
    design = series_design(**config, wave_epsilon=wave_epsilon)
    linkage = measure_linkage(design, n, seed, nearest=nearest)
    first = design["questions"][0]
    layers = "one layer " if wave_epsilon is None else f"ε₁ = {wave_epsilon:<5g}"
    near = f"{linkage.above_chance('nearest'):+8.2%}" if nearest else f"{'-':>8}"
    return (f"{name:38} {layers}  unique {linkage.unique:7.1%}  equality {linkage.above_chance('equality'):+8.2%}  "
            f"nearest {near}  (any attacker at most {linkage_bound(design, n) - 1 / n:+.2%})  "
            f"change {change_advantage(first):.3f} (bound {change_bound(first):.3f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="respondents per wave (default 1,000)")
    parser.add_argument("--seed", type=int, default=29, help="the simulation's seed (default 29)")
    parser.add_argument("--no-nearest", action="store_true", help="skip the nearest-match attacker (slow at large N)")
    args = parser.parse_args()
    print(f"{args.n:,} respondents, two waves, answers unchanged; linked shares are above chance (1/{args.n:,})")
    for name, config in CONFIGURATIONS:
        for wave_epsilon in (None, config["epsilon"] / 4, config["epsilon"] / 2):
            print(row(name, config, wave_epsilon, args.n, args.seed, not args.no_nearest))


if __name__ == "__main__":
    main()
