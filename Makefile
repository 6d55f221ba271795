# mtabench: `make run` builds data/mtabench.duckdb from samples/; `make test` runs the tests.
.PHONY: setup run run-spark spark-pack ingest build validate docs dbt-docs test test-serial lint bench spark-bench clean \
	airflow-setup airflow-up airflow-down airflow-status \
	superset-setup serve serve-stop dashboards-import dashboards-export screenshots record-demo \
	s3-up s3-down

UV ?= uv
ARCHIVE ?= samples
RECORD_ARCHIVE ?= archive
RECORD_DATA ?= data/record
RECORD_RUN ?= demo-$(shell date -u +%Y%m%dT%H%M%S)

setup:
	@bash scripts/setup.sh

run: setup
	$(UV) run --frozen mtabench run $(ARCHIVE)

ingest build validate: setup
	$(UV) run --frozen mtabench $@ $(if $(filter ingest,$@),$(ARCHIVE))

# The documentation site (mkdocs.yml, docs/) into data/site/; --strict fails on a broken link.
docs: setup
	$(UV) run --frozen mkdocs build --strict

# dbt's own docs of the models (dbt docs generate) into data/dbt_target/.
dbt-docs: setup
	$(UV) run --frozen mtabench docs

# The suite on PYTEST_WORKERS processes (pytest-xdist); tests/xdist_groups.py keeps the tests
# that share a service, a Spark session or a module fixture on one worker. PYTEST_WORKERS=1
# (or `make test-serial`) runs it in one process; PYTEST_ARGS adds pytest options.
PYTEST_WORKERS ?= 2
PYTEST_ARGS ?=
PYTEST_PARALLEL = $(if $(filter-out 0 1,$(PYTEST_WORKERS)),-n $(PYTEST_WORKERS) --dist loadgroup --no-loadscope-reorder)

test: setup
	$(UV) run --frozen ruff check .
	$(UV) run --frozen pytest -q $(PYTEST_PARALLEL) $(PYTEST_ARGS)

test-serial:
	$(MAKE) test PYTEST_WORKERS=1

lint: setup
	$(UV) run --frozen ruff check .
	$(UV) run --frozen ruff format --check .

bench: setup
	$(UV) run --frozen python bench/maillog_bench.py

spark-bench: setup
	$(UV) run --frozen python bench/spark_bench.py

run-spark: setup
	$(UV) run --frozen mtabench run $(ARCHIVE) --engine spark

# The executors' Python for a Spark cluster (data/spark/executor-env.tar.gz); a session on a
# non-local master builds it too, and reuses it while its inputs are unchanged.
spark-pack: setup
	$(UV) run --frozen mtabench spark-pack

# An S3-compatible server on 127.0.0.1 (s3s-fs, built once into ~/.cache/mtabench) for s3a://
# Spark locations; `eval "$$(bash scripts/s3_server.sh env)"` gives a shell its endpoint and keys.
s3-up:
	bash scripts/s3_server.sh start

s3-down:
	bash scripts/s3_server.sh stop

airflow-setup: setup
	bash scripts/airflow_env.sh

airflow-up: setup
	bash scripts/airflow_services.sh start

airflow-down:
	bash scripts/airflow_services.sh stop

airflow-status:
	bash scripts/airflow_services.sh status

superset-setup: setup
	bash scripts/superset.sh setup

dashboards-import: superset-setup
	bash scripts/superset.sh import

serve: setup
	bash scripts/superset.sh up

serve-stop:
	bash scripts/superset.sh stop

dashboards-export:
	bash scripts/superset.sh export

# The dashboard pictures in docs/screenshots/, rendered from samples/ by a real Superset.
screenshots: setup
	$(UV) run --frozen mtabench run samples
	bash scripts/superset.sh screenshots

clean:
	rm -rf data dbt_project/target dbt_project/logs

# As root: set up Postfix on 127.0.0.1, record a 60 s postal run into $(RECORD_ARCHIVE)/, ingest it.
record-demo: setup
	bash scripts/setup_postfix_bench.sh
	$(UV) run --frozen mtabench record $(RECORD_RUN) --archive $(RECORD_ARCHIVE) --duration 60 \
		--label "record-demo" --tag demo -- postal -t 2 -m 4 127.0.0.1 /srv/bench/users.txt
	MTABENCH_DATA=$(RECORD_DATA) $(UV) run --frozen mtabench run $(RECORD_ARCHIVE)
