"""Bounded fuzzing for CI: every format, arbitrary bytes and mutated real lines, through
`mtabench parse` and through ingest (bench/fuzz.py runs the same harness for minutes)."""

from __future__ import annotations

import pytest
from fuzz_harness import cases, check_ingest, check_parse, seed_lines, workdir
from hypothesis import HealthCheck, given, settings

from ingest.parsers import PARSERS

FORMATS = sorted(PARSERS)
SETTINGS = settings(
    max_examples=40, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck), database=None
)


def test_every_format_has_real_seed_lines():
    assert FORMATS and all(seed_lines()[fmt] for fmt in FORMATS), {f: len(v) for f, v in seed_lines().items()}


@pytest.mark.parametrize("fmt", FORMATS)
def test_parse_survives_fuzzing(fmt):
    with workdir() as work:

        @SETTINGS
        @given(data=cases(fmt))
        def run(data: bytes) -> None:
            out = check_parse(fmt, data, work)
            assert out.ok, (out.crashes, out.lost_lines, data[:300])

        run()


@pytest.mark.parametrize("fmt", FORMATS)
def test_ingest_survives_fuzzing(fmt):
    with workdir() as work:

        @settings(SETTINGS, max_examples=8)
        @given(data=cases(fmt))
        def run(data: bytes) -> None:
            out = check_ingest(fmt, data, work)
            assert out.ok, (out.crashes, out.lost_lines, data[:300])

        run()
