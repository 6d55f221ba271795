"""The maillog parse as a Spark mapInArrow function: one task per staged file, the very
parser the DuckDB landing runs (ingest/parsers/maillog.py over crates/maillog)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from ingest.parsers.base import ParseContext

TASK_COLUMNS = ["file_id", "run_key", "path", "name", "year", "utc_offset_minutes", "run_date", "start_utc"]


def task_table(staged: list) -> pa.Table:
    """One row per staged file (ingest.maillog_lines.StagedLines): what its task needs."""
    rows = [
        {
            "file_id": s.file_id,
            "run_key": s.run_key,
            "path": str(s.input),
            "name": s.name,
            "year": s.year,
            "utc_offset_minutes": s.ctx.utc_offset_minutes,
            "run_date": s.ctx.run_date.isoformat() if s.ctx.run_date else None,
            "start_utc": s.ctx.start_utc.isoformat() if s.ctx.start_utc else None,
        }
        for s in staged
    ]
    import pandas as pd

    return pd.DataFrame(rows, columns=TASK_COLUMNS)


def rows_schema():
    """Spark schema of the function's output: file_id, run_key, item_no and the parser's columns."""
    from pyspark.sql import types as T

    from ingest.parsers.maillog import arrow_schema

    conv = {
        pa.timestamp("us"): T.TimestampNTZType(),  # naive UTC, as DuckDB's TIMESTAMP
        pa.int32(): T.IntegerType(),
        pa.int64(): T.LongType(),
        pa.float64(): T.DoubleType(),
        pa.string(): T.StringType(),
    }
    fields = [T.StructField("file_id", T.LongType()), T.StructField("run_key", T.StringType())]
    fields.append(T.StructField("item_no", T.IntegerType()))
    for f in arrow_schema():
        typ = T.IntegerType() if f.name == "line_no" else conv[f.type]
        fields.append(T.StructField(f.name, typ))
    return T.StructType(fields)


class CountsParam:
    """Accumulator of {file_id: (noise, quarantined)} (pyspark AccumulatorParam protocol)."""

    def zero(self, value: dict) -> dict:
        return {}

    def addInPlace(self, a: dict, b: dict) -> dict:  # noqa: N802 (pyspark's name)
        for k, (n, q) in b.items():
            n0, q0 = a.get(k, (0, 0))
            a[k] = (n0 + n, q0 + q)
        return a


def parse_files_udf(threads: int = 1, counts=None):
    """The mapInArrow function; `threads` parser threads per task (Spark gives a task one
    core). It yields the maillog rows; noise and quarantine lines are only counted (`counts`)."""

    def parse(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from ingest.parsers.maillog import file_batches

        for task in batches:
            for t in task.to_pylist():
                ctx = ParseContext(
                    run_key=t["run_key"],
                    year=t["year"],
                    utc_offset_minutes=t["utc_offset_minutes"],
                    run_date=date.fromisoformat(t["run_date"]) if t["run_date"] else None,
                    start_utc=datetime.fromisoformat(t["start_utc"]) if t["start_utc"] else None,
                )
                noise = quarantined = 0
                for block in file_batches(Path(t["path"]), t["name"], ctx, threads=threads):
                    for b in block:
                        kind = b.column("kind")
                        is_noise, is_q = pc.equal(kind, "__noise"), pc.equal(kind, "__quarantine")
                        other = pc.or_(is_noise, is_q)
                        if pc.any(other).as_py():
                            noise += pc.sum(is_noise.cast(pa.int64())).as_py() or 0
                            quarantined += pc.sum(is_q.cast(pa.int64())).as_py() or 0
                            b = b.filter(pc.invert(other))
                        n = b.num_rows
                        cols = [
                            pa.repeat(pa.scalar(t["file_id"], pa.int64()), n),
                            pa.repeat(pa.scalar(t["run_key"], pa.string()), n),
                            pa.repeat(pa.scalar(0, pa.int32()), n),
                            *(b.column(i) for i in range(b.num_columns)),
                        ]
                        cols[3] = cols[3].cast(pa.int32())  # line_no as in raw.maillog
                        names = ["file_id", "run_key", "item_no", *b.schema.names]
                        yield pa.RecordBatch.from_arrays(cols, names=names)
                if counts is not None and (noise or quarantined):
                    counts.add({t["file_id"]: (noise, quarantined)})

    return parse
