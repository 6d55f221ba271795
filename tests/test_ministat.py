"""mtabench.stats.ministat against the real ministat binary and against seed 004's printed tables."""

from __future__ import annotations

import ast
import json
import math
import random
import re
import struct
import subprocess
from pathlib import Path

import pytest
from conftest import debian_tool

from mtabench.stats.ministat import Stats, compare, compare_from_summary, fmt_g, render, to_json
from mtabench.stats.ministat_table import CONFIDENCES, STUDENT_T, rows, t_value

MINISTAT = "/usr/bin/ministat"
SEED_004 = Path(__file__).parent / "fixtures/seeds/004_653119c13a67b49d.txt"
SEED_CSV = Path(__file__).resolve().parents[1] / "dbt_project" / "seeds" / "student_t.csv"


def _ministat() -> str:
    return debian_tool("ministat")


_rng = random.Random(20261121)
DATASETS: dict[str, list[list[float]]] = {
    "check": [[1, 2, 3, 4], [11, 12, 13, 14]],
    "ties": [[5, 5, 5, 7, 7, 9], [5, 7, 7, 7, 9, 9, 9], [6, 6, 6]],
    "n3": [[10.5, 11.25, 9.75], [12.0, 13.5, 12.75], [10.0, 11.0, 12.0]],
    "large_small_spread": [
        [1e9 + d for d in (0.001, 0.002, 0.004, 0.003)],
        [1e9 + d for d in (0.002, 0.005, 0.003, 0.006, 0.004)],
    ],
    "large_cancellation": [  # Σx² cancellation: ministat prints -nan / 0 / 2 here
        [123456789.123, 123456789.124, 123456789.125],
        [100000000.1, 100000000.2, 100000000.3, 100000000.1],
    ],
    "equal_means": [[1, 2, 3, 4, 5], [3, 3, 3, 3, 3], [0, 6, 3, 1, 5]],
    "negative": [[-3.5, -2.25, -4.0, -1.0], [-10.0, -12.5, -11.0], [0.5, -0.5, 1.5, -1.5, 0.0]],
    "df_over_100": [
        [round(_rng.gauss(100, 15), 3) for _ in range(60)],
        [round(_rng.gauss(104, 15), 3) for _ in range(70)],
    ],
    "df_exactly_100": [
        [round(_rng.gauss(50, 5), 2) for _ in range(51)],
        [round(_rng.gauss(51, 5), 2) for _ in range(51)],
    ],
    "microseconds": [
        [446674, 460635, 454535, 452000, 455123, 451234, 458765, 449876, 456543, 457200],
        [134600, 144921, 142604, 141000, 139876, 143210, 140987, 142100, 138765, 141500],
        [440470, 457910, 452367, 451000, 449999, 455555, 453210, 448765, 450123, 457000],
    ],
}

VITALS = re.compile(r"^(?P<sym>[x+*%#@O])\s+(?P<n>\d+)\s+(?P<rest>.+)$")


def _write(tmp_path: Path, name: str, sets: list[list[float]]) -> list[str]:
    files = []
    for i, values in enumerate(sets):
        f = tmp_path / f"{name}.{i}"
        f.write_text("".join(f"{v!r}\n" for v in values))
        files.append(str(f))
    return files


def _parse_ministat(text: str) -> tuple[list[list[str]], list[dict]]:
    vitals, comps = [], []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if m := VITALS.match(line):
            vitals.append([m["n"], *m["rest"].split()])
        elif line.startswith("Difference at"):
            d, e = lines[i + 1].strip().split(" +/- ")
            pd, pe = lines[i + 2].strip().split(" +/- ")
            s = re.search(r"pooled s = (\S+)\)", lines[i + 3])[1]
            comps.append({"verdict": line, "d": d, "e": e, "pd": pd, "pe": pe, "s": s})
        elif line.startswith("No difference proven"):
            comps.append({"verdict": line})
    return vitals, comps


@pytest.mark.parametrize("confidence", CONFIDENCES)
@pytest.mark.parametrize("name", sorted(DATASETS))
def test_matches_ministat_binary(tmp_path, name, confidence):
    binary = _ministat()
    sets = DATASETS[name]
    files = _write(tmp_path, name, sets)
    out = subprocess.run(
        [binary, "-A", "-c", f"{confidence:g}", *files], capture_output=True, text=True, check=True
    ).stdout
    vitals, comps = _parse_ministat(out)
    stats = [Stats.of(s) for s in sets]
    assert len(vitals) == len(sets) and len(comps) == len(sets) - 1
    for printed, s in zip(vitals, stats, strict=True):
        ours = [str(s.n)] + [fmt_g(v, ".8g") for v in (s.min, s.max, s.median, s.avg, s.stddev)]
        assert ours == printed
    for printed, s in zip(comps, stats[1:], strict=True):
        c = compare(stats[0], s, confidence)
        assert c.verdict == printed["verdict"]
        if c.significant:
            assert fmt_g(c.d) == printed["d"]
            assert fmt_g(c.e) == printed["e"]
            assert fmt_g(c.pct_d) + "%" == printed["pd"]
            assert fmt_g(c.pct_e) + "%" == printed["pe"]
            assert fmt_g(c.pooled_s) == printed["s"]
    # and the whole text, byte for byte (names are the file paths)
    assert render(sets, files, confidence) == out


def test_documented_check():
    c = compare([1, 2, 3, 4], [11, 12, 13, 14], 95)
    assert c.df == 6 and c.t == 2.447
    assert (fmt_g(c.d), fmt_g(c.e)) == ("10", "2.2338")
    assert (fmt_g(c.pct_d), fmt_g(c.pct_e)) == ("400", "89.3518")
    assert fmt_g(c.pooled_s) == "1.29099"
    assert c.significant


def test_median_and_variance_rules():
    s = Stats.of([4, 1, 3, 2])
    assert s.median == 3  # sorted[n // 2]: upper middle, not 2.5
    assert s.variance == pytest.approx(5 / 3)
    assert Stats.of([7, 1, 5]).median == 5


def test_t_table_matches_binary_and_seed_csv():
    data = Path(_ministat()).read_bytes()
    start = data.find(struct.pack("<6d", *STUDENT_T[0]))
    assert start >= 0, "infinity row not found in the ministat binary"
    raw = struct.unpack(f"<{101 * 6}d", data[start : start + 101 * 6 * 8])
    assert tuple(tuple(raw[i * 6 : i * 6 + 6]) for i in range(101)) == STUDENT_T
    assert t_value(101, 95) == 1.960 and t_value(100, 95) == 1.984 and t_value(1, 99.5) == 318.313
    csv_lines = SEED_CSV.read_text().splitlines()
    assert csv_lines[0] == "df,confidence,t"
    parsed = [(int(df), float(conf), float(t)) for df, conf, t in (ln.split(",") for ln in csv_lines[1:])]
    assert parsed == rows()


def test_welch():
    a, b = [1, 2, 3, 4, 5, 6], [2, 4, 6, 8, 10, 12, 14, 16]
    c = compare(a, b, 95, welch=True)
    va, vb = Stats.of(a).variance, Stats.of(b).variance
    se = math.sqrt(va / 6 + vb / 8)
    df = (va / 6 + vb / 8) ** 2 / ((va / 6) ** 2 / 5 + (vb / 8) ** 2 / 7)
    assert c.se == pytest.approx(se) and c.df == pytest.approx(df)
    assert c.t == t_value(int(df), 95) and c.e == pytest.approx(c.t * se) and c.pooled_s is None
    # equal n and equal variances: Welch coincides with the pooled test
    w = compare([1, 2, 3, 4], [11, 12, 13, 14], 95, welch=True)
    s = compare([1, 2, 3, 4], [11, 12, 13, 14], 95)
    assert w.df == pytest.approx(6) and w.e == pytest.approx(s.e)
    assert "Welch" in w.lines()[-1]


def test_to_json():
    doc = json.loads(to_json([[1, 2, 3, 4], [11, 12, 13, 14]], ["a", "b"], 95))
    assert doc["sets"][0] == {
        "name": "a", "n": 4, "min": 1.0, "max": 4.0, "median": 3.0, "avg": 2.5,
        "stddev": pytest.approx(1.2909944), "variance": pytest.approx(5 / 3),
    }  # fmt: skip
    comp = doc["comparisons"][0]
    assert comp["verdict"] == "Difference at 95.0% confidence" and comp["d"] == 10.0
    assert comp["e"] == pytest.approx(2.2338, abs=1e-4)


def test_bad_confidence():
    with pytest.raises(ValueError):
        compare([1, 2, 3], [4, 5, 6], 97.5)


# -- seed 004: reproduce the printed comparisons from the printed summaries -------------------------

NUM = r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?"


def _seed_blocks() -> list[dict]:
    lines = SEED_004.read_text().splitlines()
    blocks = []
    for i, line in enumerate(lines):
        if not line.startswith("N | Min | Max"):
            continue
        rows_ = [ln for ln in lines[i + 1 : i + 4] if re.match(r"^[x+] \| ", ln)]
        assert len(rows_) == 2, lines[i : i + 4]
        sets = []
        for r in rows_:
            cells = [c.strip() for c in r.split("|")]
            n, _mn, _mx, _med, mean, sd = cells[1:7]
            sets.append((int(n), float(mean), float(sd)))
        j = lines.index(next(ln for ln in lines[i + 1 :] if "confidence" in ln), i + 1)
        verdict = lines[j].split("|")[0].strip()
        block = {"line": i + 1, "sets": sets, "verdict": verdict}
        if verdict.startswith("Difference"):
            nums: list[str] = []
            k = j + 1
            while len(nums) < 4:
                nums += re.findall(NUM + "%?", lines[k].replace("+/-", " "))
                k += 1
            block["printed"] = nums[:4]
        blocks.append(block)
    return blocks


def test_seed_004_tables_reproduced():
    blocks = _seed_blocks()
    assert len(blocks) == 15
    assert sum(b["verdict"].startswith("Difference") for b in blocks) == 12
    assert sum(b["verdict"].startswith("No difference") for b in blocks) == 3
    for b in blocks:
        (n1, m1, s1), (n2, m2, s2) = b["sets"]
        c = compare_from_summary(n1, m1, s1, n2, m2, s2, 99.5)
        assert c.verdict == b["verdict"], b
        if c.significant:
            ours = [fmt_g(c.d), fmt_g(c.e), fmt_g(c.pct_d) + "%", fmt_g(c.pct_e) + "%"]
            assert ours == b["printed"], b


def test_seed_004_first_table():
    c = compare_from_summary(10, 454258.5, 4333.0399, 10, 141415.2, 3545.6063, 99.5)
    assert c.lines()[1:3] == ["\t-312843 +/- 6391.49", "\t-68.869% +/- 1.40702%"]


# -- one implementation: the arithmetic is dbt_project/macros/ministat.sql's only ---------------------

REPO = Path(__file__).resolve().parents[1]
ARITHMETIC = re.compile(r"\b(sqrt|power|floor|greatest)\(|\bsum\(|/ \(count\(\*\) - 1\)")


@pytest.mark.parametrize(
    "path",
    [
        "dbt_project/models/marts/comparisons.sql",
        "dbt_project/models/intermediate/int_sample_set_stats.sql",
        "mtabench/stats/compare_sql.py",
        "mtabench/stats/ministat.py",
    ],
)
def test_no_copy_of_the_arithmetic(path):
    """The mart, its input stats, compare_runs() and `mtabench compare` call the macros; none
    spells a formula of its own."""
    text = (REPO / path).read_text()
    if path.endswith(".py"):  # the code, not the docstring that states the formulas
        text = text.replace(ast.get_docstring(ast.parse(text), clean=False) or "", "")
    text = re.sub(r"--.*", "", text)  # nor SQL comments
    assert "ministat_" in text
    assert ARITHMETIC.findall(text) == []


def test_compare_runs_is_the_macros_sql():
    from mtabench.stats.compare_sql import compare_runs_sql
    from mtabench.stats.sql import macros

    sql = compare_runs_sql()
    m = macros()
    for expr in (m.ministat_pair("a", "b"), m.ministat_variance("value"), m.ministat_t_df("p.df")):
        assert str(expr) in sql
    assert "{{" not in sql and "{%" not in sql
