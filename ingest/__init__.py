"""Ingest: archive folders into the DuckDB landing, every input line parsed, noise, or
quarantined with its reason (parsers/ by format, the loader, the Parquet and ledger tables)."""
