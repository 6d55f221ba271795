"""The MTAs' configuration files beside the recorded runs (samples/mtas): recognised, every line
a setting or noise, and the setting each pair of runs changed reads as its run.toml says."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from conftest import found

from ingest.detect import detect
from ingest.parsers.base import ParseContext
from ingest.parsers.mta_config import MtaConfigParser
from ingest.source import FileSource

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = found(
    [
        p
        for pat in ("*/exim4.conf", "*/sendmail.mc", "*/smtpd.conf")
        for p in (ROOT / "samples" / "mtas").glob(pat)
    ],
    "MTA configuration files",
)


def settings(path: Path) -> tuple[dict[str, list[str]], object]:
    lines = list(enumerate(path.read_text().splitlines(keepends=True), start=1))
    ledger = MtaConfigParser().parse(lines, ParseContext())
    out: dict[str, list[str]] = {}
    for row in ledger.rows["postconf_settings"]:
        out.setdefault(row["name"], []).append(row["value"])
    return out, ledger.counts(len(lines))


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_config_is_recognised_and_every_line_accounted_for(path):
    assert detect(FileSource(path, path.name)).format == "mta_config"
    got, counts = settings(path)
    assert counts.quarantined == 0
    assert counts.parsed + counts.noise == counts.total
    assert counts.parsed == sum(len(v) for v in got.values()) > 0


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_changed_setting_reads_as_the_manifest_says(path):
    changed = tomllib.loads((path.parent / "run.toml").read_text())["mta"]["changed_settings"]
    got, _ = settings(path)
    if path.name == "exim4.conf":
        assert got["queue_only"] == [changed["queue_only"]]
    elif path.name == "sendmail.mc":
        assert got["confCONNECTION_RATE_THROTTLE"] == [changed["confCONNECTION_RATE_THROTTLE"]]
    else:
        assert ("compression" in got.get("queue", [])) == (changed["queue_compression"] == "on")
