"""Landing: provenance, line accounting, idempotency and bad input, on real DuckDB files."""

from __future__ import annotations

import gzip
import io
import os
import shutil
import tarfile
import zipfile
from pathlib import Path

import duckdb
import pytest
from conftest import SAMPLES, raw_line_count

from ingest.landing import per_file_tables
from ingest.loader import ingest_archive, scan_archive


def snapshot(db: Path) -> dict[str, list]:
    with duckdb.connect(str(db), read_only=True) as con:
        tables = ["files", "runs", *per_file_tables()]
        return {t: sorted(map(repr, con.execute(f"select * from raw.{t}").fetchall())) for t in tables}


def _landed(tmp_path: Path, **runs: str) -> tuple[Path, Path]:
    """Sample runs copied into an archive under the given folder names (copytree's copy2 keeps
    the samples' old mtimes) and ingested once: (archive, landing DB)."""
    archive, db = tmp_path / "archive", tmp_path / "t.duckdb"
    for name, run in runs.items():
        shutil.copytree(SAMPLES / "runs" / run, archive / name)
    ingest_archive(archive, db, tmp_path / "work")
    return archive, db


@pytest.fixture(scope="module")
def ingested(tmp_path_factory):
    d = tmp_path_factory.mktemp("ingest")
    db = d / "t.duckdb"
    report = ingest_archive(SAMPLES, db, d / "work")
    return db, d, report


def test_every_line_of_every_parsed_sample_is_accounted_for(ingested):
    db, _, _ = ingested
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute(
            "select path, lines_total, lines_parsed, lines_noise, lines_quarantined from raw.files "
            "where status = 'loaded'"
        ).fetchall()
        not_loaded = con.execute(
            "select path, status, message from raw.files where status <> 'loaded'"
        ).fetchall()
    assert not_loaded == []  # every sample file's format is recognised and parsed
    assert len(rows) == sum(1 for p in SAMPLES.rglob("*") if p.is_file())
    for path, total, parsed, noise, quarantined in rows:
        assert total == raw_line_count(SAMPLES / path), path
        assert parsed + noise + quarantined == total, path


def test_landed_rows_carry_provenance_that_points_at_the_line(ingested):
    db, _, _ = ingested
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute(
            "select f.path, r.line_no, r.clock_label, r.messages from raw.postal_rows r "
            "join raw.files f using (file_id) where f.path like 'runs/%'"
        ).fetchall()
    for path, line_no, label, messages in rows:
        line = (SAMPLES / path).read_text().splitlines()[line_no - 1]
        assert line.startswith(f"{label},{messages},")


def test_reingesting_unchanged_samples_changes_no_row(ingested):
    db, d, _ = ingested
    before = snapshot(db)
    report = ingest_archive(SAMPLES, db, d / "work")
    assert {f.status for f in report.files} == {"unchanged"}
    assert snapshot(db) == before


def test_changed_content_replaces_only_that_files_rows(tmp_path):
    archive, db = _landed(tmp_path, a="a-baseline-t5", c="c-throttled-queue-backlog")
    csv = archive / "a/postal.csv"
    csv.write_text(csv.read_text().replace("22:07,4902,", "22:07,4000,"))
    report = ingest_archive(archive, db, tmp_path / "work")
    reloaded = [f.path for f in report.files if f.status != "unchanged"]
    assert reloaded == ["a/postal.csv"]
    with duckdb.connect(str(db), read_only=True) as con:
        got = con.execute(
            "select count(*), sum(messages) from raw.postal_rows r join raw.files f using (file_id) "
            "where f.path = 'a/postal.csv'"
        ).fetchone()
    assert got == (4, 4954 + 4000 + 3767 + 3087)


def _postal_a(db: Path) -> tuple[int, int]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(
            "select count(*), sum(messages) from raw.postal_rows r join raw.files f using (file_id) "
            "where f.path = 'a/postal.csv'"
        ).fetchone()


def _recorded_stats(db: Path) -> dict[str, tuple[int, int | None]]:
    with duckdb.connect(str(db), read_only=True) as con:
        return {
            p: (s, m)
            for p, s, m in con.execute("select path, size_bytes, mtime_ns from raw.files").fetchall()
        }


def test_a_file_with_its_recorded_size_and_mtime_is_not_read_again(tmp_path):
    archive, db = _landed(tmp_path, a="a-baseline-t5")  # the samples' old mtimes
    files = sorted(p for p in archive.rglob("*") if p.is_file())
    on_disk = {p.relative_to(archive).as_posix(): (p.stat().st_size, p.stat().st_mtime_ns) for p in files}
    assert _recorded_stats(db) == on_disk
    csv = archive / "a/postal.csv"
    original = csv.read_text()
    assert "22:07,4902," in original
    st = csv.stat()

    # new content of the same size, the old mtime put back: size and mtime say "unchanged",
    # so the file is not read (as git's index): its old rows stay
    csv.write_text(original.replace("22:07,4902,", "22:07,4000,"))
    assert csv.stat().st_size == st.st_size
    os.utime(csv, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert [s.state for s in scan_archive(archive, db, tmp_path / "work")] == ["unchanged"]
    report = ingest_archive(archive, db, tmp_path / "work")
    assert {f.status for f in report.files} == {"unchanged"}
    assert _postal_a(db) == (4, 4954 + 4902 + 3767 + 3087)
    # --rehash reads it: the change lands
    report = ingest_archive(archive, db, tmp_path / "work", trust_stat=False)
    assert [f.path for f in report.files if f.status != "unchanged"] == ["a/postal.csv"]
    assert _postal_a(db) == (4, 4954 + 4000 + 3767 + 3087)

    # the same size, a new mtime, new content: hashed, so re-landed
    csv.write_text(original)
    os.utime(csv, ns=(st.st_atime_ns, st.st_mtime_ns - 5_000_000_000))
    assert [s.state for s in scan_archive(archive, db, tmp_path / "work")] == ["changed"]
    report = ingest_archive(archive, db, tmp_path / "work")
    assert [f.path for f in report.files if f.status != "unchanged"] == ["a/postal.csv"]
    assert _postal_a(db) == (4, 4954 + 4902 + 3767 + 3087)

    # touched (same content, new mtime): hashed, nothing re-landed, the new mtime recorded
    before = snapshot(db)
    os.utime(csv, ns=(st.st_atime_ns, st.st_mtime_ns - 9_000_000_000))
    report = ingest_archive(archive, db, tmp_path / "work")
    assert {f.status for f in report.files} == {"unchanged"}
    after = snapshot(db)
    assert {t: rows for t, rows in after.items() if t != "files"} == {
        t: rows for t, rows in before.items() if t != "files"
    }
    assert _recorded_stats(db)["a/postal.csv"] == (st.st_size, st.st_mtime_ns - 9_000_000_000)

    # written just now: its mtime may tick again with the next write (racy), so none is recorded
    csv.write_text(original.replace("22:07,4902,", "22:07,4001,"))
    ingest_archive(archive, db, tmp_path / "work")
    assert _recorded_stats(db)["a/postal.csv"] == (st.st_size, None)
    assert _postal_a(db) == (4, 4954 + 4001 + 3767 + 3087)


def test_a_run_folder_as_its_last_ingest_left_it_is_not_read_again(tmp_path, monkeypatch):
    """ingest/folder_state.py: no run.toml parse and no run row rebuilt for a folder whose
    files and the ingest code are as recorded; any change takes the full path."""
    from ingest import folder_state, loader

    archive, db = _landed(tmp_path, a="a-baseline-t5")  # the samples' old mtimes: not racy
    parsed: list[str] = []
    real_parse = loader.parse_manifest

    def counting_parse(text):
        parsed.append(text)
        return real_parse(text)

    monkeypatch.setattr(loader, "parse_manifest", counting_parse)
    before = snapshot(db)
    report = ingest_archive(archive, db, tmp_path / "work")
    assert parsed == []
    assert [(r.run_key, r.run_id) for r in report.runs] == [("a", "a-baseline-t5")]
    assert {f.status for f in report.files} == {"unchanged"}
    assert len(report.files) == sum(1 for p in (archive / "a").iterdir())
    assert snapshot(db) == before

    # the ingest code changed: read once more, then trusted again
    monkeypatch.setattr(folder_state, "code_version", lambda: "another version")
    ingest_archive(archive, db, tmp_path / "work")
    assert len(parsed) == 1 and snapshot(db) == before
    ingest_archive(archive, db, tmp_path / "work")
    assert len(parsed) == 1

    # a new label in run.toml (an mtime in the past, so not racy): the run row follows it
    toml = archive / "a/run.toml"
    st = toml.stat()
    text = toml.read_text()
    assert text.startswith('run_id = "a-baseline-t5"\n') and "\nlabel" not in text
    toml.write_text(text.replace("\n", '\nlabel = "relabelled"\n', 1))
    os.utime(toml, ns=(st.st_atime_ns, st.st_mtime_ns - 5_000_000_000))
    ingest_archive(archive, db, tmp_path / "work")
    assert len(parsed) == 2
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("select label from raw.runs").fetchall() == [("relabelled",)]
        assert con.execute("select run_key from raw.folder_states").fetchall() == [("a",)]

    # a removed run forgets its state with its rows
    shutil.rmtree(archive / "a")
    (archive / "b").mkdir()
    ingest_archive(archive, db, tmp_path / "work")
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("select count(*) from raw.folder_states").fetchone() == (0,)


def test_a_landing_from_before_mtime_ns_gets_the_column_and_hashes_once(tmp_path):
    archive, db = _landed(tmp_path, a="a-baseline-t5")
    with duckdb.connect(str(db)) as con:
        con.execute("alter table raw.files drop column mtime_ns")  # the landing as it was
    before = snapshot(db)
    report = ingest_archive(archive, db, tmp_path / "work")
    assert {f.status for f in report.files} == {"unchanged"}  # hashed: the same content
    stats = _recorded_stats(db)
    assert all(m is not None for _, m in stats.values())  # recorded now: not hashed next time
    assert {t: r for t, r in snapshot(db).items() if t != "files"} == {
        t: r for t, r in before.items() if t != "files"
    }


def _tar_with(path: Path, members: dict[str, bytes]) -> None:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def test_bad_inputs_get_a_message_each_and_the_rest_loads(tmp_path):
    archive = tmp_path / "inbox"
    shutil.copytree(SAMPLES / "runs/a-baseline-t5", archive / "good")
    bad = archive / "bad"
    bad.mkdir()
    (bad / "binary.bin").write_bytes(bytes(range(256)) * 50)
    good_gz = gzip.compress((SAMPLES / "runs/a-baseline-t5/postal.csv").read_bytes() * 50)
    (bad / "postal.csv.gz").write_bytes(good_gz[: len(good_gz) // 2])
    (bad / "empty.csv").write_bytes(b"")
    (bad / "notgzip.log.gz").write_text("plain text\n")
    broken = (SAMPLES / "runs/a-baseline-t5/postal.csv").read_text().replace("22:07,4902,11804", "22:07,49#2")
    (bad / "postal-broken.csv").write_text(broken)
    with zipfile.ZipFile(archive / "evil.zip", "w") as zf:
        zf.writestr("run/postal.csv", "time,messages,data(K),errors,connections\n10:00,1,1,0,1\n")
        zf.writestr("../escape.txt", "gotcha\n")
    _tar_with(archive / "abs.tar.gz", {"/etc/evil": b"x\n"})
    good_tar = tmp_path / "bundle.tar.gz"
    _tar_with(
        good_tar, {"bundle/postal.csv": (SAMPLES / "runs/c-throttled-queue-backlog/postal.csv").read_bytes()}
    )
    truncated = good_tar.read_bytes()
    (archive / "truncated.tgz").write_bytes(truncated[: len(truncated) // 2])
    shutil.copy(good_tar, archive / "bundle.tar.gz")

    db = tmp_path / "t.duckdb"
    report = ingest_archive(archive, db, tmp_path / "work")
    by_path = {f.path: f for f in report.files}
    assert by_path["bad/binary.bin"].status == "error" and "binary" in by_path["bad/binary.bin"].message
    assert by_path["bad/postal.csv.gz"].status == "error" and "gzip" in by_path["bad/postal.csv.gz"].message
    assert by_path["bad/empty.csv"].status == "empty"
    assert (
        by_path["bad/notgzip.log.gz"].status == "error"
        and "not gzip" in by_path["bad/notgzip.log.gz"].message
    )
    broken_out = by_path["bad/postal-broken.csv"]
    assert broken_out.status == "loaded" and broken_out.lines[3] == 1
    assert by_path["evil.zip"].status == "error" and "'..'" in by_path["evil.zip"].message
    assert by_path["abs.tar.gz"].status == "error" and "absolute" in by_path["abs.tar.gz"].message
    assert by_path["truncated.tgz"].status == "error"
    assert not (tmp_path / "escape.txt").exists() and not list(tmp_path.rglob("escape.txt"))
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute(
            "select count(*) from raw.postal_rows r join raw.files f using (file_id) "
            "where f.path in ('good/postal.csv', 'bundle.tar.gz/postal.csv')"
        ).fetchone() == (8,)
        q = con.execute(
            "select f.path, q.line_no, q.reason from raw.quarantine q join raw.files f using (file_id) "
            "where f.path = 'bad/postal-broken.csv'"
        ).fetchall()
        assert q == [("bad/postal-broken.csv", 3, "malformed per-minute row")]
        statuses = dict(con.execute("select path, status from raw.files").fetchall())
        assert statuses["evil.zip"] == "error" and statuses["good/postal.csv"] == "loaded"


def test_run_without_manifest_loads_with_inferred_notes(tmp_path):
    archive = tmp_path / "a"
    (archive / "nomanifest").mkdir(parents=True)
    shutil.copy(SAMPLES / "runs/a-baseline-t5/postal.csv", archive / "nomanifest/out.txt")
    db = tmp_path / "t.duckdb"
    ingest_archive(archive, db, tmp_path / "work")
    with duckdb.connect(str(db), read_only=True) as con:
        run_id, tool, inferred, run_date = con.execute(
            "select run_id, tool_name, inferred, run_date from raw.runs"
        ).fetchone()
    assert run_id == "nomanifest" and tool == "postal"
    # postal's clock labels carry no day, and file modification times are not the run's
    assert "no run.toml" in inferred and "no date:" in inferred and run_date is None


def _files_as_landed(db: Path) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(
            "select path, sha256, format, parser_version, status, message, encoding, lines_total, "
            "lines_parsed, lines_noise, lines_quarantined from raw.files order by path"
        ).fetchall()


def test_a_file_unread_for_its_stat_is_sniffed_and_parsed_again_when_its_run_context_changes(tmp_path):
    """A changed run.toml (its start time: the parsers' context) re-lands the run's other
    files though their size and mtime are on record; each is then sniffed as a new file is,
    so the landing equals a fresh ingest of the same archive."""
    archive, db = _landed(tmp_path, a="a-baseline-t5")
    toml = archive / "a/run.toml"
    toml.write_text(toml.read_text().replace("2026-11-21T22:05:11Z", "2026-11-21T22:05:12Z"))
    report = ingest_archive(archive, db, tmp_path / "work")
    relanded = sorted(f.path for f in report.files if f.status != "unchanged")
    parsed = sorted(
        p.relative_to(archive).as_posix() for p in (archive / "a").iterdir() if p.name != "run.toml"
    )
    assert set(parsed) <= set(relanded)
    fresh = tmp_path / "fresh.duckdb"
    ingest_archive(archive, fresh, tmp_path / "work2")
    assert _files_as_landed(db) == _files_as_landed(fresh)
