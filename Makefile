# memoryadmin: `make demo` runs the console on the embedded default; `make test` runs the whole suite.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install demo lint test test-sqlite test-postgres bench bench-api bench-mcp bench-lifecycle bench-release bench-forget-receipt bench-learning bench-replay bench-replay-rules bench-harm-oracle bench-ingest bench-checks bench-forget bench-tombstones bench-injection load clean

$(STAMP): pyproject.toml clients/python/pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "memoryadmin needs Python 3.11 or newer")'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	$(BIN)/python -m pip install --quiet -e ./clients/python   # the Python client and memoryadmin-mcp; /mcp uses it
	@touch $@

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/python scripts/demo.py

# ruff: the lint rules and the format in pyproject.toml (CI runs it before the tests)
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

test: $(STAMP)
	bash scripts/test.sh

test-sqlite: $(STAMP)
	bash scripts/test.sh sqlite

test-postgres: $(STAMP)
	bash scripts/test.sh postgres

bench: $(STAMP)
	$(BIN)/python benchmarks/queue_bench.py

bench-api: $(STAMP)
	$(BIN)/python benchmarks/api_bench.py

bench-mcp: $(STAMP)
	$(BIN)/python benchmarks/mcp_bench.py

bench-lifecycle: $(STAMP)
	$(BIN)/python benchmarks/lifecycle_bench.py

bench-release: $(STAMP)
	$(BIN)/python benchmarks/release_bench.py

bench-forget-receipt: $(STAMP)
	$(BIN)/python benchmarks/forget_receipt_bench.py

bench-learning: $(STAMP)
	$(BIN)/python benchmarks/learning_bench.py

bench-replay: $(STAMP)
	$(BIN)/python benchmarks/replay_bench.py

# a held submission (it repeats a forgotten lesson) against a fresh one: the same answer in the same time
bench-forget: $(STAMP)
	$(BIN)/python benchmarks/forget_bench.py --db sqlite; sqlite=$$?; \
	$(BIN)/python benchmarks/forget_bench.py --db postgres; postgres=$$?; \
	exit $$(( sqlite || postgres ))

# the three rule sets side by side on the rows the paper's claims need: 1,500 steps, 3 seeds, 36 runs
bench-replay-rules: $(STAMP)
	$(BIN)/python benchmarks/replay_bench.py --steps 1500 --paper-seeds 3 --seed-seeds 3 --product-seeds 3 \
		--policies fixed,addall,strict,strict+periodic,strict+history --seed-policies addall,strict --jobs 3

# can outcomes tell a wrong lesson? each served lesson's true effect in the replay world, against the lift rule's cards
bench-harm-oracle: $(STAMP)
	$(BIN)/python benchmarks/harm_oracle_bench.py --steps 1500 --seeds 3

# locust against gunicorn + PostgreSQL + Redis + a Celery worker and beat, on loopback; LOAD_MINUTES=1 to shorten
load: $(STAMP)
	$(BIN)/python benchmarks/load/run.py

# both databases measured whatever the first gives; non-zero when either misses its target
bench-tombstones: $(STAMP)
	$(BIN)/python benchmarks/tombstone_bench.py --db sqlite

# the varied corpus (lessons of many domains), then the first bench's one template beside it
bench-ingest: $(STAMP)
	$(BIN)/python benchmarks/ingest_bench.py --db sqlite; sqlite=$$?; \
	$(BIN)/python benchmarks/ingest_bench.py --db postgres --clients 2; postgres=$$?; \
	$(BIN)/python benchmarks/ingest_bench.py --db sqlite --corpus template; sqlite_template=$$?; \
	$(BIN)/python benchmarks/ingest_bench.py --db postgres --corpus template --clients 2; postgres_template=$$?; \
	exit $$(( sqlite || postgres || sqlite_template || postgres_template ))

# the CPU of each check a candidate passes, beside the straightforward checks (no database)
bench-checks: $(STAMP)
	$(BIN)/python benchmarks/checks_bench.py

# recall and false positives of the injection detector over its corpus, and its cost per lesson (no database)
bench-injection: $(STAMP)
	$(BIN)/python benchmarks/injection_bench.py

clean:
	rm -rf $(VENV) data

# 10,000 lessons imported from a JSONL file (lessons/s, CPU a lesson) beside the agent-API path's CPU a lesson
.PHONY: bench-import
bench-import: $(STAMP)
	$(BIN)/python benchmarks/import_bench.py --db sqlite; sqlite=$$?; \
	$(BIN)/python benchmarks/import_bench.py --db postgres; postgres=$$?; \
	exit $$(( sqlite || postgres ))

# a hot standby of the local PostgreSQL on port 5439, streaming from it (scripts/replica.sh); `make replica-up`
# prints the DATABASE_REPLICA_URL to export, `make replica-down` stops and drops it
replica-up:
	@bash scripts/replica.sh up
.PHONY: replica-up

replica-down:
	@bash scripts/replica.sh down
.PHONY: replica-down

# retrieval on a real hot standby: its time against the primary's, the fallback after a publish and while stopped
bench-replica: $(STAMP)
	$(BIN)/python benchmarks/replica_bench.py
.PHONY: bench-replica

# a candidate's impact (20 retrievals replayed with it, the scope's memory tests twice) and one memory test run
.PHONY: bench-impact
bench-impact: $(STAMP)
	$(BIN)/python benchmarks/impact_bench.py

.PHONY: bench-event-bytes
bench-event-bytes: $(STAMP)
	$(BIN)/python benchmarks/event_bytes_bench.py

.PHONY: bench-history
bench-history: $(STAMP)
	BENCH_DATABASE_URL=$${BENCH_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/ma_partitions_bench} $(BIN)/python benchmarks/history_bench.py
