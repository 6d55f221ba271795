"""Engines that build the marts other than DuckDB itself."""
