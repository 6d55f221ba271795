"""ministat-exact statistics (FreeBSD ministat, Debian package `ministat`) for `mtabench compare`.

The figures are ministat's own arithmetic, operation by operation, so that formatting them as
ministat does (`%13.8g` in the table, `%g` in the comparison) prints the same text. That
arithmetic is SQL written once (dbt_project/macros/ministat.sql, shared with the comparisons
mart and the serving file's compare_runs()), run here in an in-memory DuckDB:

- points are summed in input order (Σx, Σx²); the median is the sorted value at index n // 2
  (upper middle for even n, not averaged);
- variance = (Σx² − (Σx)²/n) / (n − 1), with its cancellation error for large values
  with a small spread (ministat then prints `-nan` for a negative variance);
- comparison of set B with the first set A: df = n1 + n2 − 2, t from ministat's table
  (`mtabench.stats.ministat_table`, df > 100 uses the infinity row), pooled
  s = sqrt(((n2−1)·v2 + (n1−1)·v1) / df), e = t·s·sqrt(1/n2 + 1/n1), d = mean2 − mean1,
  percentages 100·d/mean1 and 100·e/mean1; a difference is shown when |d| > e.

`welch=True` swaps the pooled test for Welch's (unpooled standard error,
Welch–Satterthwaite df, truncated to an integer for the table lookup: conservative).
`compare_from_summary` redoes a comparison from printed N / mean / stddev only, as
needed for archives that hold ministat's output but not its input (seed 004).
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from functools import cache

import duckdb

from mtabench.stats import sql
from mtabench.stats.ministat_table import CONFIDENCES, rows

SYMBOLS = " x+*%#@O"

# One set's figures. `v` keeps the input order, which ministat sums in; the median's rank breaks
# ties by input position, as ministat's sort does (-0 before 0 when it came first), and takes
# the value from `v` (a sort key loses the sign of -0).
STATS_SQL = """
with
v as (select unnest($values::double[]) as value, generate_subscripts($values::double[], 1) as pos),
ranked as (
    select v.value, r.idx, r.n
    from (
        select pos, row_number() over (order by value, pos) - 1 as idx, count(*) over () as n from v
    ) as r
    join v using (pos)
),
s as (
    select
        count(*) as n,
        min(value) as min_value,
        max(value) as max_value,
        (select {{ m.ministat_median('value', 'idx', 'n') }} from ranked) as median,
        {{ m.ministat_mean('value') }} as mean,
        {{ m.ministat_variance('value') }} as variance
    from v
)
select n, min_value, max_value, median, mean, {{ m.ministat_sqrt('variance') }} as stddev, variance
from s
"""

# Set b against the baseline a, from each set's n, mean and variance. With both variances 0,
# Welch's df is undefined: the table row is the pooled test's.
COMPARE_SQL = """
{%- set margin = m.ministat_margin('s.t', 'w.pooled_s', 'w.n1', 'w.n2') %}
{%- set welch_margin = m.ministat_welch_margin('t.t', 'w.welch_se') %}
{%- set significant = m.ministat_significant('w.difference', margin) %}
{%- set welch_significant = m.ministat_significant('w.difference', welch_margin) %}
with
a as (select $n1::bigint as n, $mean1::double as mean, $var1::double as variance),
b as (select $n2::bigint as n, $mean2::double as mean, $var2::double as variance),
f as (select a.n as n1, b.n as n2, a.mean as mean1, {{ m.ministat_pair('a', 'b') }} from a, b),
w as (select *, coalesce(welch_df, df) as welch_t_df from f)
select
    w.df,
    s.t,
    w.pooled_s,
    {{ m.ministat_pooled_se('w.pooled_s', 'w.n1', 'w.n2') }} as se,
    w.difference,
    {{ margin }} as margin,
    {{ m.ministat_pct('w.difference', 'w.mean1') }} as difference_pct,
    {{ m.ministat_pct(margin, 'w.mean1') }} as margin_pct,
    {{ significant }} as is_significant,
    {{ m.ministat_verdict(significant, '$confidence') }} as verdict,
    w.welch_t_df,
    t.t as welch_t,
    w.welch_se,
    {{ welch_margin }} as welch_margin,
    {{ m.ministat_pct(welch_margin, 'w.mean1') }} as welch_margin_pct,
    {{ welch_significant }} as welch_is_significant,
    {{ m.ministat_verdict(welch_significant, '$confidence') }} as welch_verdict
from w
join student_t as s on s.confidence = $confidence and s.df = {{ m.ministat_t_df('w.df') }}
join student_t as t on t.confidence = $confidence and t.df = {{ m.ministat_welch_t_df('w.welch_t_df') }}
"""


@cache
def _sql() -> tuple[str, str]:
    return sql.render(STATS_SQL), sql.render(COMPARE_SQL)


_local = threading.local()


def _con() -> duckdb.DuckDBPyConnection:
    """This thread's in-memory DuckDB holding ministat's t table (the student_t seed's rows)."""
    con = getattr(_local, "con", None)
    if con is None:
        con = _local.con = duckdb.connect(":memory:")
        con.execute("create table student_t (df integer, confidence double, t double)")
        con.executemany("insert into student_t values (?, ?, ?)", rows())
    return con


def _nan(x: float | None) -> float:
    return math.nan if x is None else float(x)


def fmt_g(x: float, spec: str = "g") -> str:
    """printf-style %g (or e.g. '13.8g') as glibc prints it, including its '-nan'."""
    if math.isnan(x):
        width = spec.split(".")[0] if "." in spec else ""
        return f"{'-nan':>{width}}" if width else "-nan"
    return ("%" + spec) % x


@dataclass(frozen=True)
class Stats:
    n: int
    min: float
    max: float
    median: float
    avg: float
    stddev: float
    variance: float

    @classmethod
    def of(cls, values: Iterable[float]) -> Stats:
        pts = [float(v) for v in values]
        if not pts:
            raise ValueError("empty data set")
        n, *figures = _con().execute(_sql()[0], {"values": pts}).fetchone()
        return cls(n, *(_nan(x) for x in figures))

    @classmethod
    def from_summary(cls, n: int, mean: float, stddev: float) -> Stats:
        """Stats known only from printed N, mean and stddev (min/max/median unknown: NaN)."""
        return cls(n, math.nan, math.nan, math.nan, mean, stddev, stddev * stddev)

    def vitals(self, symbol: str = "x") -> str:
        cols = (self.min, self.max, self.median, self.avg, self.stddev)
        return f"{symbol} {self.n:3d} " + " ".join(fmt_g(v, "13.8g") for v in cols)


@dataclass(frozen=True)
class Comparison:
    confidence: float
    method: str  # 'student' (ministat's pooled test) or 'welch'
    df: float  # degrees of freedom (Welch: the Satterthwaite value, unrounded)
    t: float
    pooled_s: float | None  # Student only
    se: float  # standard error of the difference
    d: float  # mean2 - mean1
    e: float  # half-width of the confidence interval: t * se
    pct_d: float  # 100 * d / mean1
    pct_e: float  # 100 * e / mean1
    significant: bool  # |d| > e
    verdict: str  # ministat's line: "Difference at 95.0% confidence", or "No difference proven ..."

    def lines(self) -> list[str]:
        """The lines ministat prints for this comparison."""
        if not self.significant:
            return [self.verdict]
        tail = (
            f"(Student's t, pooled s = {fmt_g(self.pooled_s)})"
            if self.method == "student" and self.pooled_s is not None
            else f"(Welch's t, df = {fmt_g(self.df)}, se = {fmt_g(self.se)})"
        )
        return [
            self.verdict,
            f"\t{fmt_g(self.d)} +/- {fmt_g(self.e)}",
            f"\t{fmt_g(self.pct_d)}% +/- {fmt_g(self.pct_e)}%",
            f"\t{tail}",
        ]


def _relative(a: Stats, b: Stats, confidence: float, welch: bool) -> Comparison:
    if a.n < 2 or b.n < 2:
        raise ValueError("each data set needs at least 2 points to compare")
    params = {
        "n1": a.n, "mean1": a.avg, "var1": a.variance,
        "n2": b.n, "mean2": b.avg, "var2": b.variance,
        "confidence": float(confidence),
    }  # fmt: skip
    r = _con().execute(_sql()[1], params).fetchone()
    df, t, pooled_s, se, d, e, pct_d, pct_e, significant, verdict = r[:10]
    if welch:
        df, t, se, e, pct_e, significant, verdict = r[10:]
        pooled_s = None
    return Comparison(
        confidence=float(confidence),
        method="welch" if welch else "student",
        df=df,
        t=t,
        pooled_s=None if pooled_s is None else _nan(pooled_s),
        se=_nan(se),
        d=d,
        e=_nan(e),
        pct_d=_nan(pct_d),
        pct_e=_nan(pct_e),
        significant=bool(significant),  # False when e is NaN, as in C
        verdict=verdict,
    )


def _stats(x: Stats | Iterable[float]) -> Stats:
    return x if isinstance(x, Stats) else Stats.of(x)


def compare(
    a: Stats | Iterable[float], b: Stats | Iterable[float], confidence: float = 95, welch: bool = False
) -> Comparison:
    """Compare data set `b` with the baseline `a` as ministat does (`ministat -c confidence a b`)."""
    if float(confidence) not in CONFIDENCES:
        raise ValueError(f"ministat supports confidence {CONFIDENCES}, not {confidence}")
    return _relative(_stats(a), _stats(b), confidence, welch)


def compare_from_summary(
    n1: int,
    mean1: float,
    sd1: float,
    n2: int,
    mean2: float,
    sd2: float,
    confidence: float = 95,
    welch: bool = False,
) -> Comparison:
    """Comparison from printed summary statistics (N, mean, stddev of each set)."""
    return compare(Stats.from_summary(n1, mean1, sd1), Stats.from_summary(n2, mean2, sd2), confidence, welch)


def render(
    sets: Sequence[Stats | Iterable[float]],
    names: Sequence[str] | None = None,
    confidence: float = 95,
    welch: bool = False,
) -> str:
    """ministat's text without the plot (what `ministat -A -c confidence f1 f2 ...` prints)."""
    if not 1 <= len(sets) <= len(SYMBOLS) - 1:
        raise ValueError(f"ministat compares 1 to {len(SYMBOLS) - 1} data sets")
    stats = [_stats(s) for s in sets]
    names = list(names) if names is not None else [f"set{i + 1}" for i in range(len(stats))]
    out = [f"{SYMBOLS[i + 1]} {name}" for i, name in enumerate(names)]
    out.append("    N           Min           Max        Median           Avg        Stddev")
    for i, s in enumerate(stats):
        out.append(s.vitals(SYMBOLS[i + 1]))
        if i:
            out.extend(compare(stats[0], s, confidence, welch).lines())
    return "\n".join(out) + "\n"


def _num(x: float | None) -> float | None:
    return None if x is None or math.isnan(x) else x


def to_json(
    sets: Sequence[Stats | Iterable[float]],
    names: Sequence[str] | None = None,
    confidence: float = 95,
    welch: bool = False,
) -> str:
    """The same figures as `render`, as JSON (NaN becomes null)."""
    stats = [_stats(s) for s in sets]
    names = list(names) if names is not None else [f"set{i + 1}" for i in range(len(stats))]
    doc: dict = {"confidence": float(confidence), "sets": [], "comparisons": []}
    for name, s in zip(names, stats, strict=True):
        doc["sets"].append({"name": name, **{k: _num(v) for k, v in asdict(s).items()}})
    for name, s in zip(names[1:], stats[1:], strict=True):
        c = compare(stats[0], s, confidence, welch)
        row = {k: (_num(v) if isinstance(v, float) else v) for k, v in asdict(c).items()}
        doc["comparisons"].append({"baseline": names[0], "name": name, **row, "verdict": c.verdict})
    return json.dumps(doc, indent=2)
