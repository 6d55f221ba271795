"""Fuzz every format through `mtabench parse` and ingest, and run.toml manifests through
ingest (fields of every type and value, cut and arbitrary bytes), for N minutes; print cases,
crashes and lost lines (the harness is tests/fuzz_harness.py, also run bounded by
tests/test_fuzz.py and tests/test_manifest_trust.py).

    uv run python bench/fuzz.py --minutes 10 [--ingest-share 0.2] [--seed 1]

Exits 1 if any case crashed or lost a line; the first examples of each are printed.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fuzz_harness import (  # noqa: E402
    cases,
    check_ingest,
    check_manifest,
    check_parse,
    manifest_cases,
    seed_lines,
    workdir,
)
from hypothesis import HealthCheck, given, settings  # noqa: E402

from ingest.parsers import PARSERS  # noqa: E402

MANIFEST = "run.toml"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--ingest-share", type=float, default=0.2, help="share of cases also ingested")
    ap.add_argument("--seed", type=int, default=None)
    args = ap.parse_args()
    rnd = random.Random(args.seed)
    formats = sorted(PARSERS)
    seeds = seed_lines()
    print(f"formats: {', '.join(f'{f} ({len(seeds[f])} seed files)' for f in formats)}", flush=True)
    deadline = time.monotonic() + args.minutes * 60
    n_cases: Counter[str] = Counter()
    n_ingested: Counter[str] = Counter()
    crashes: list[str] = []
    lost: list[str] = []
    round_ = 0

    def run_format(fmt: str) -> None:
        @settings(max_examples=25, deadline=None, database=None, suppress_health_check=list(HealthCheck))
        @given(data=cases(fmt))
        def one(data: bytes) -> None:
            n_cases[fmt] += 1
            outs = [check_parse(fmt, data, work)]
            if rnd.random() < args.ingest_share:
                n_ingested[fmt] += 1
                outs.append(check_ingest(fmt, data, work))
            for o in outs:
                crashes.extend(f"{c}  input={data[:120]!r}" for c in o.crashes)
                lost.extend(f"{c}  input={data[:120]!r}" for c in o.lost_lines)

        one()

    def run_manifests() -> None:
        @settings(max_examples=10, deadline=None, database=None, suppress_health_check=list(HealthCheck))
        @given(doc=manifest_cases())
        def one(doc: bytes) -> None:
            n_cases[MANIFEST] += 1
            n_ingested[MANIFEST] += 1
            o = check_manifest(doc, work)
            crashes.extend(f"{c}  run.toml={doc[:120]!r}" for c in o.crashes)
            lost.extend(f"{c}  run.toml={doc[:120]!r}" for c in o.lost_lines)

        one()

    with workdir() as work:
        while time.monotonic() < deadline:
            round_ += 1
            for fmt in formats:
                if time.monotonic() >= deadline:
                    break
                run_format(fmt)
            if time.monotonic() < deadline:
                run_manifests()
            print(
                f"round {round_}: {sum(n_cases.values())} cases, {sum(n_ingested.values())} ingested, "
                f"{len(crashes)} crashes, {len(lost)} lost-line findings",
                flush=True,
            )
    print()
    print(f"{'format':15} {'cases':>8} {'ingested':>9}")
    for fmt in [*formats, MANIFEST]:
        print(f"{fmt:15} {n_cases[fmt]:8d} {n_ingested[fmt]:9d}")
    print(f"\ncases {sum(n_cases.values())}  ingested {sum(n_ingested.values())}  "
          f"crashes {len(crashes)}  lost lines {len(lost)}  ({args.minutes:g} min)")  # fmt: skip
    for title, items in (("crashes", crashes), ("lost lines", lost)):
        for line in items[:10]:
            print(f"  {title}: {line}")
    return 1 if crashes or lost else 0


if __name__ == "__main__":
    sys.exit(main())
