"""Bundle extraction safety and manifest parsing."""

from __future__ import annotations

import io
import tarfile
import zipfile

import pytest
from conftest import SAMPLES

from ingest.archive import UnsafeArchive, extract_bundle
from ingest.manifest import ManifestError, parse_manifest, utc_offset_minutes


def _tar(path, add):
    with tarfile.open(path, "w:gz") as tar:
        add(tar)


@pytest.mark.parametrize(
    ("name", "kind"),
    [("../up.txt", "'..'"), ("/abs.txt", "absolute"), ("ok/../../up.txt", "'..'")],
)
def test_tar_members_that_escape_are_refused(tmp_path, name, kind):
    def add(tar):
        info = tarfile.TarInfo(name)
        info.size = 2
        tar.addfile(info, io.BytesIO(b"x\n"))

    _tar(tmp_path / "b.tar.gz", add)
    with pytest.raises(UnsafeArchive, match=kind):
        extract_bundle(tmp_path / "b.tar.gz", tmp_path / "out")
    assert not list((tmp_path).rglob("up.txt"))


def test_tar_links_are_refused(tmp_path):
    def add(tar):
        info = tarfile.TarInfo("link")
        info.type = tarfile.SYMTYPE
        info.linkname = "/etc/passwd"
        tar.addfile(info)

    _tar(tmp_path / "b.tgz", add)
    with pytest.raises(UnsafeArchive, match="link"):
        extract_bundle(tmp_path / "b.tgz", tmp_path / "out")


def test_zip_symlink_and_dotdot_are_refused(tmp_path):
    with zipfile.ZipFile(tmp_path / "a.zip", "w") as zf:
        info = zipfile.ZipInfo("evil")
        info.external_attr = 0o120777 << 16
        zf.writestr(info, "/etc/passwd")
    with pytest.raises(UnsafeArchive, match="link"):
        extract_bundle(tmp_path / "a.zip", tmp_path / "out")
    with zipfile.ZipFile(tmp_path / "b.zip", "w") as zf:
        zf.writestr("..\\win.txt", "x")
    with pytest.raises(UnsafeArchive):
        extract_bundle(tmp_path / "b.zip", tmp_path / "out")


def test_recorded_manifests_parse():
    m = parse_manifest((SAMPLES / "runs/c-throttled-queue-backlog/run.toml").read_text())
    assert m.run_id == "c-throttled-queue-backlog"
    assert m.tool["name"] == "postal" and m.mta["version"] == "3.7.11"
    assert m.changed_settings["default_destination_rate_delay"] == "1s"
    assert str(m.start_utc) == "2026-11-21 22:15:36"


def test_timezones():
    assert utc_offset_minutes("Asia/Shanghai", None) == 480
    assert utc_offset_minutes("+05:30", None) == 330
    assert utc_offset_minutes("UTC-0500", None) == -300
    # a bad field is left out and named; the rest of the manifest still counts
    m = parse_manifest('run_id = "r"\ntimezone = "Mars/Olympus"')
    assert (m.run_id, m.timezone) == ("r", "UTC")
    assert m.problems and "unknown timezone 'Mars/Olympus'" in m.problems[0]


def test_invalid_toml_says_so():
    with pytest.raises(ManifestError, match="not valid TOML"):
        parse_manifest("run_id = ")


def test_comparison_keys_parse():
    m = parse_manifest(
        'group = " disk tuning "\nbaseline = "seed000-s12-disk-rw-8192-4096"\n[tool]\nname = "postal"\n'
    )
    assert (m.group, m.baseline) == ("disk tuning", "seed000-s12-disk-rw-8192-4096")
    assert "group" not in m.extra and "baseline" not in m.extra
    blank = parse_manifest('group = ""\nbaseline = "  "\n')
    assert (blank.group, blank.baseline) == (None, None)  # blank = the default grouping
    assert parse_manifest("").group is None


def test_comparison_keys_land_in_raw_runs(tmp_path):
    """group/baseline reach raw.runs, also in a landing created before the columns existed."""
    import duckdb

    from ingest.landing import ensure_schema
    from mtabench.cli.main import main

    db = tmp_path / "t.duckdb"
    with duckdb.connect(str(db)) as con:  # a landing of an older release: raw.runs without them
        ensure_schema(con)
        con.execute("alter table raw.runs drop column group_name")
        con.execute("alter table raw.runs drop column baseline_run_id")
    archive = tmp_path / "archive"
    for name, extra in (("x", 'group = "g1"\n'), ("y", 'baseline = "x"\n'), ("z", "")):
        run = archive / "exp" / name
        run.mkdir(parents=True)
        (run / "run.toml").write_text(f'run_id = "{name}"\n{extra}')
        (run / "queue-read.Priority").write_text("1\n2\n3\n")
    assert main(["ingest", str(archive), "--db", str(db)]) == 0
    with duckdb.connect(str(db), read_only=True) as con:
        got = con.execute("select run_id, group_name, baseline_run_id from raw.runs order by 1").fetchall()
    assert got == [("x", "g1", None), ("y", None, "x"), ("z", None, None)]
