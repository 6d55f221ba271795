# mtabench: `make run` builds data/mtabench.duckdb from samples/; `make test` runs the tests.
.PHONY: setup run ingest build validate docs test lint bench clean

UV ?= uv
ARCHIVE ?= samples

setup:
	@bash scripts/setup.sh

run: setup
	$(UV) run --frozen mtabench run $(ARCHIVE)

ingest build validate docs: setup
	$(UV) run --frozen mtabench $@ $(if $(filter ingest,$@),$(ARCHIVE))

test: setup
	$(UV) run --frozen ruff check .
	$(UV) run --frozen pytest -q

lint: setup
	$(UV) run --frozen ruff check .
	$(UV) run --frozen ruff format --check .

bench: setup
	$(UV) run --frozen python bench/maillog_bench.py

clean:
	rm -rf data dbt_project/target dbt_project/logs
