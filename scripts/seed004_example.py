"""Reproduce seed 004's ministat comparisons from the summary statistics it prints.

Usage: uv run python scripts/seed004_example.py > docs/seed004.md
"""

from __future__ import annotations

from mtabench.stats.ministat import Stats, compare_from_summary

PRIORITY = {
    "queue-read": (10, 454258.5, 4333.0399),
    "queue-sort": (10, 6754.011, 137.9286),
    "queue-sum": (10, 461012.51, 4299.6478),
}
# (phase, order): (N, mean, stddev) as printed in seed 004
OTHERS = {
    ("queue-read", "Filename"): (10, 141415.2, 3545.6063),
    ("queue-sort", "Filename"): (10, 25985.28, 1901.2515),
    ("queue-sum", "Filename"): (10, 167400.48, 4218.8583),
    ("queue-read", "Host"): (10, 479712.3, 6741.291),
    ("queue-sort", "Host"): (10, 11093.15, 253.04518),
    ("queue-sum", "Host"): (10, 490805.45, 6764.702),
    ("queue-read", "Modification"): (10, 139517.8, 4669.4914),
    ("queue-sort", "Modification"): (10, 11141.15, 184.26849),
    ("queue-sum", "Modification"): (10, 150658.95, 4609.4779),
    ("queue-read", "Random"): (10, 139220.9, 5049.021),
    ("queue-sort", "Random"): (8, 10634.789, 4767.6163),
    ("queue-sum", "Random"): (8, 150247.41, 5210.1916),
    ("queue-read", "Time"): (10, 451643.5, 5196.639),
    ("queue-sort", "Time"): (10, 11517.98, 411.79028),
    ("queue-sum", "Time"): (10, 463161.48, 5236.7017),
}


def main() -> None:
    print("# Worked example: seed 004 (sendmail QueueSortOrder, DTrace timings in µs)\n")
    print("Seed 004 times sendmail's queue read and sort phases with DTrace, 10 runs per sort order, and")
    print("compares each order with `Priority` using `ministat -c 99.5`. Only the summaries are printed, so")
    print("`mtabench.stats.ministat.compare_from_summary` recomputes each comparison from N, mean, stddev.")
    print("Every line below equals the seed's (checked by `tests/test_ministat.py`). With the raw series")
    print("in an archive (one number per line, e.g. `queue-read.Priority`), `mtabench compare")
    print("queue-read.Priority queue-read.Filename -c 99.5` prints the same, and the `comparisons`")
    print("mart holds it.\n")
    for (phase, order), (n2, m2, s2) in OTHERS.items():
        n1, m1, s1 = PRIORITY[phase]
        c = compare_from_summary(n1, m1, s1, n2, m2, s2, 99.5)
        print(f"## {phase}: Priority vs {order}\n\n```")
        print(f"x {phase}.Priority\n+ {phase}.{order}")
        print("    N           Min           Max        Median           Avg        Stddev")
        for sym, st in (("x", Stats.from_summary(n1, m1, s1)), ("+", Stats.from_summary(n2, m2, s2))):
            print(f"{sym} {st.n:3d} {'(not printed)':>41} {st.avg:13.8g} {st.stddev:13.8g}")
        print("\n".join(c.lines()))
        print("```\n")


if __name__ == "__main__":
    main()
