"""The `mtabench` command line (main.py) and what only it uses: run selection, the run summary,
`mtabench compare`'s data sets, and its terse terminal with full logs in files."""
