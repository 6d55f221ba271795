"""`mtabench compare` on every pair of sample runs, as a user types it.

Each sample run folder is compared, as baseline, with every other run in the built database.
A pair the `comparisons` mart holds (same comparison group, both sides >= 2 full
load-generator minutes) must print the mart's N and median for both sides. Any other pair
prints what the serving file's compare_runs() macro answers (a pair across groups), or, when
that has no rows, ends in a one-line `compare:` error (exit 2), never a traceback.
"""

from __future__ import annotations

import json
import tomllib

import duckdb
import pytest
from conftest import SAMPLES

RUN_FOLDERS = sorted(p.parent for p in SAMPLES.glob("*/*/run.toml"))


def test_sample_run_folders_found():
    assert len(RUN_FOLDERS) >= 18, RUN_FOLDERS


def _run_ids(con, folder) -> list[str]:
    base = tomllib.loads((folder / "run.toml").read_text()).get("run_id", folder.name)
    rows = con.execute(
        "select run_id from main.runs where run_id = ? or run_id like ? || '#%' order by run_id", [base, base]
    ).fetchall()
    return [r[0] for r in rows]


@pytest.mark.parametrize("folder", RUN_FOLDERS, ids=[p.name for p in RUN_FOLDERS])
def test_compare_every_pair_through_the_cli(folder, con, built_db, capsys):
    from mtabench.cli.main import main

    all_runs = [r[0] for r in con.execute("select run_id from main.runs order by run_id").fetchall()]
    pairs = [(a, b) for a in _run_ids(con, folder) for b in all_runs if b != a]
    assert pairs, f"no runs of {folder} in the database"
    expected = {
        (r[0], r[1]): r[2:]
        for r in con.execute(
            "select baseline, candidate, n1, median1, n2, median2 from main.comparisons"
            " where set_kind = 'run_throughput'"
        ).fetchall()
    }
    serving = duckdb.connect(str(built_db.parent / "serving" / built_db.name), read_only=True)
    capsys.readouterr()
    on_demand = 0
    for a, b in pairs:
        rc = main(["compare", a, b, "--json", "--db", str(built_db)])
        out, err = capsys.readouterr()
        macro = serving.execute(
            "select n1, median1, n2, median2 from compare_runs(?, ?) where confidence = 95", [a, b]
        ).fetchall()
        if (a, b) in expected:
            assert rc == 0, (a, b, err)
            doc = json.loads(out)
            got = tuple(v for s in doc["sets"] for v in (s["n"], s["median"]))
            assert got == pytest.approx(expected[(a, b)]), (a, b)
            assert macro == [pytest.approx(expected[(a, b)])], (a, b)
        elif macro:
            on_demand += 1
            assert rc == 0, (a, b, err)
            doc = json.loads(out)
            got = tuple(v for s in doc["sets"] for v in (s["n"], s["median"]))
            assert got == pytest.approx(macro[0]), (a, b)
        else:
            assert rc == 2 and out == "", (a, b, rc, out)
            assert err.startswith("compare: ") and err.count("\n") == 1, (a, b, err)
    serving.close()
