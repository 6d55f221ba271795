"""Write dbt_project/seeds/median_ci_ranks.csv: exact order-statistic ranks for a
confidence interval of the median (distribution-free).

For n values and confidence c, the interval [x_(k), x_(n+1-k)] (1-based sorted values)
covers the true median with probability 1 - 2 P(Binomial(n, 1/2) <= k - 1). The table
holds the largest k whose coverage is at least c, and that coverage; n with no such k
(too few values for the level) has no row. Exact rational arithmetic, no dependencies.
Usage: python scripts/median_ci_ranks.py [MAX_N]
"""

from __future__ import annotations

import sys
from fractions import Fraction
from math import comb
from pathlib import Path

CONFIDENCES = ("80", "90", "95", "98", "99", "99.5")  # ministat's levels
OUT = Path(__file__).resolve().parent.parent / "dbt_project" / "seeds" / "median_ci_ranks.csv"


def main(max_n: int) -> None:
    rows = ["n,confidence,lower_rank,coverage"]
    for n in range(1, max_n + 1):
        total = 2**n
        cdf = []  # cdf[j] = P(B <= j)
        acc = 0
        for j in range(n + 1):
            acc += comb(n, j)
            cdf.append(Fraction(acc, total))
        for conf in CONFIDENCES:
            level = Fraction(conf) / 100
            best = None
            for k in range(1, n // 2 + 1):
                coverage = 1 - 2 * cdf[k - 1]
                if coverage >= level:
                    best = (k, coverage)
                else:
                    break
            if best:
                rows.append(f"{n},{conf},{best[0]},{float(best[1]):.6f}")
    OUT.write_text("\n".join(rows) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1440)
