"""postconf -n dumps recorded beside the sample runs."""

from __future__ import annotations

import pytest
from conftest import SAMPLES, found

from ingest.parsers.base import ParseContext
from ingest.parsers.postconf import PostconfParser
from ingest.source import FileSource


@pytest.mark.parametrize(
    "path", found(SAMPLES.glob("runs/*/postconf-n.txt"), "postconf"), ids=lambda p: p.parent.name
)
def test_every_setting_line_lands(path):
    src = FileSource(path, path.name)
    lines = list(src.lines())
    assert PostconfParser().sniff(path.read_text()[:65536], path.name) >= 50
    ledger = PostconfParser().parse(lines, ParseContext())
    rows = ledger.rows["postconf_settings"]
    # independent reading: `name = value` per line, split at the first " = "
    expected = [tuple(line.split(" =", 1)) for line in path.read_text().splitlines()]
    assert [(r["name"], r["value"]) for r in rows] == [(n, v.strip()) for n, v in expected]
    assert ledger.counts(len(lines)).parsed == len(lines)
