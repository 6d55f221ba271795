"""Does this tree land the same rows as another commit? Every raw.* table, compared both ways.

For each sample folder (samples/runs, seed000, mtas, variants by default) the landing is built
twice in fresh folders: once with this tree's ingest code and once with the code of --base (a
git commit, exported with `git archive`; the compiled maillog crate in the environment is
shared). Each raw.* table of the first is compared with the second's by `EXCEPT ALL` in both
directions (without the columns that differ by design: raw.files.ingested_at, the code hash of
raw.folder_states and the part paths of raw.parquet_files); any row one has and the other
lacks is printed and the exit status is 1.

--batch-lines N lands this tree's side in batches of N lines (e.g. 7: every parser's state
crosses many batch boundaries, in files of a few hundred lines).

    uv run --frozen python bench/landing_parity.py [--base main] [--batch-lines N] [--archive DIR ...]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_FOLDERS = ("runs", "seed000", "mtas", "variants")
# columns that differ by design between two builds: when the file landed, the hash of the
# ingest code a folder was read with, and where a Parquet part sits (the landing's own folder
# and a random part name; the rows in the parts are compared through their views)
EXCLUDED = {"files": "ingested_at", "folder_states": "state", "parquet_files": "path"}

BUILD = """
import sys
sys.path.insert(0, sys.argv[1])
from pathlib import Path
import ingest.ledger
from ingest.loader import ingest_archive
if len(sys.argv) > 5:  # batches this small carry every parser's state across many boundaries
    ingest.ledger.BATCH_LINES = int(sys.argv[5])
ingest_archive(Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4]))
"""


def export_tree(ref: str, dest: Path) -> Path:
    """The Python packages of commit `ref` in `dest`."""
    dest.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", ref, "ingest", "mtabench", "expectations"],
        check=True,
        capture_output=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def build(src: Path, archive: Path, out: Path, batch_lines: int | None = None) -> Path:
    out.mkdir(parents=True)
    db = out / "landing.duckdb"
    env = {**os.environ, "MTABENCH_DATA": str(out)}
    subprocess.run(
        [sys.executable, "-c", BUILD, str(src), str(archive), str(db), str(out / "work")]
        + ([str(batch_lines)] if batch_lines else []),
        check=True,
        env=env,
        cwd=out,
        stdout=subprocess.DEVNULL,
    )
    return db


def compare(ours: Path, theirs: Path) -> tuple[list[str], int]:
    """One line per table (its row counts), the first rows only one side has, and how many
    rows differ in all."""
    con = duckdb.connect()
    con.execute(f"attach '{ours}' as ours (read_only)")
    con.execute(f"attach '{theirs}' as theirs (read_only)")
    tables = sorted(
        {
            r[0]
            for r in con.execute(
                "select table_name from duckdb_tables() where schema_name = 'raw' and database_name = 'ours'"
                " union select view_name from duckdb_views()"
                " where schema_name = 'raw' and database_name = 'ours'"
            ).fetchall()
        }
    )
    lines, problems, n_diff = [], [], 0
    for table in tables:
        drop = f" exclude ({EXCLUDED[table]})" if table in EXCLUDED else ""
        a, b = f"(select *{drop} from ours.raw.{table})", f"(select *{drop} from theirs.raw.{table})"
        n_a = con.execute(f"select count(*) from {a}").fetchone()[0]
        n_b = con.execute(f"select count(*) from {b}").fetchone()[0]
        only_a = con.execute(f"select * from {a} except all select * from {b}").fetchall()
        only_b = con.execute(f"select * from {b} except all select * from {a}").fetchall()
        n_diff += len(only_a) + len(only_b)
        lines.append(
            f"  raw.{table}: {n_a} rows here, {n_b} there, {len(only_a)} only here, {len(only_b)} only there"
        )
        for row in only_a[:5]:
            problems.append(f"  only here  raw.{table}: {row}")
        for row in only_b[:5]:
            problems.append(f"  only there raw.{table}: {row}")
    return lines + problems, n_diff


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default="main", help="the commit to compare with (default: main)")
    ap.add_argument("--batch-lines", type=int, help="lines per ledger batch here (default: the parsers')")
    ap.add_argument("--archive", nargs="*", type=Path, help="archive folders (default: each samples/ folder)")
    args = ap.parse_args()
    archives = [a.resolve() for a in args.archive or [ROOT / "samples" / name for name in SAMPLE_FOLDERS]]
    tmp = Path(tempfile.mkdtemp(prefix="landing-parity-"))
    differ = False
    try:
        base = export_tree(args.base, tmp / "base-src")
        for archive in archives:
            ours = build(ROOT, archive, tmp / archive.name / "here", args.batch_lines)
            theirs = build(base, archive, tmp / archive.name / "base")
            report, n_diff = compare(ours, theirs)
            differ |= n_diff > 0
            print(f"{archive.relative_to(ROOT) if archive.is_relative_to(ROOT) else archive}:")
            print("\n".join(report))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("DIFFERENT" if differ else f"IDENTICAL: every raw.* table, both ways, against {args.base}")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
