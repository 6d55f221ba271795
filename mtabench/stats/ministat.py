"""ministat-exact statistics in pure Python (FreeBSD ministat, Debian package `ministat`).

The figures reproduce ministat's own arithmetic operation by operation, so that
formatting them as ministat does (`%13.8g` in the table, `%g` in the comparison)
prints the same text:

- points are summed in input order (Σx, Σx²), then sorted;
- median = sorted value at index n // 2 (upper middle for even n, not averaged);
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
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

from mtabench.stats.ministat_table import CONFIDENCES, t_value

SYMBOLS = " x+*%#@O"


def _sqrt(x: float) -> float:
    # C's sqrt() of a negative number gives NaN (printed "-nan" by glibc on x86-64)
    return math.sqrt(x) if x >= 0 else math.nan


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
        pts: list[float] = []
        sy = syy = 0.0
        for v in values:  # same order and operations as ministat's AddPoint
            a = float(v)
            pts.append(a)
            sy += a
            syy += a * a
        n = len(pts)
        if n == 0:
            raise ValueError("empty data set")
        pts.sort()
        var = (syy - sy * sy / n) / (n - 1.0) if n > 1 else math.nan
        return cls(n, pts[0], pts[-1], pts[n // 2], sy / n, _sqrt(var), var)

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

    @property
    def verdict(self) -> str:
        if self.significant:
            return f"Difference at {self.confidence:.1f}% confidence"
        return f"No difference proven at {self.confidence:.1f}% confidence"

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
    d = b.avg - a.avg
    if not welch:
        df = b.n + a.n - 2
        t = t_value(df, confidence)
        spool = (b.n - 1) * b.variance + (a.n - 1) * a.variance
        spool /= b.n + a.n - 2
        spool = _sqrt(spool)
        se = spool * math.sqrt(1.0 / b.n + 1.0 / a.n)
        pooled: float | None = spool
        df_out: float = df
    else:
        qa, qb = a.variance / a.n, b.variance / b.n
        se = _sqrt(qa + qb)
        denom = qa * qa / (a.n - 1) + qb * qb / (b.n - 1)
        df_out = (qa + qb) ** 2 / denom if denom > 0 else float(a.n + b.n - 2)
        t = t_value(max(1, int(df_out)), confidence)
        pooled = None
    e = t * se
    return Comparison(
        confidence=float(confidence),
        method="welch" if welch else "student",
        df=df_out,
        t=t,
        pooled_s=pooled,
        se=se,
        d=d,
        e=e,
        pct_d=d * 100 / a.avg if a.avg else math.nan,
        pct_e=e * 100 / a.avg if a.avg else math.nan,
        significant=abs(d) > e,  # False when e is NaN, as in C
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
