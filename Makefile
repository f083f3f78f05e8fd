# The two commands of the README. Everything else is a helper for them.
.PHONY: demo test lint crash-tests batteries bench-portal bench-eval bench-docker bench-screen bench-slow-clients bench-leaderboard bench-mixed bench-aggregation bench-cold clean

demo:  ## set up, migrate, load demo data, serve http://127.0.0.1:8000/ with one worker and a fake LLM (Ctrl-C stops)
	scripts/demo.sh

test:  ## set up with dev tools and run the whole suite
	scripts/test.sh

crash-tests:  ## the crash tests (workers, broker, database and web process killed mid-run) five times in a row
	scripts/test.sh -m crash --count 5

batteries:  ## every sandbox attack, tampering and forging program, honest idiom and length rewrite in every lane (warm, cold, containers), every blank body warm and cold, and every example in containers: the suite samples them
	RCB_FULL_BATTERY=1 scripts/test.sh tests/researchcodebench/test_security.py tests/researchcodebench/test_tampering.py \
	  tests/researchcodebench/test_forging.py tests/researchcodebench/test_honesty.py \
	  tests/researchcodebench/test_length_invariance.py tests/researchcodebench/test_warm_vs_cold.py \
	  tests/researchcodebench/test_docker_lane.py

lint:
	scripts/bootstrap.sh --dev
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .

bench-portal:  ## the published import's and a two-worker generated run's times against their goals (tests assert behaviour, not speed)
	scripts/bootstrap.sh --dev
	.venv/bin/python bench/portal_timings.py

bench-eval:
	scripts/bootstrap.sh
	.venv/bin/python bench/eval_speed.py

bench-slow-clients:  ## p50/p95 of a plain page under 100 slow connections: gunicorn alone vs nginx (docker/nginx.conf) in front
	scripts/bootstrap.sh
	command -v nginx >/dev/null || (apt-get install -y -q nginx-light || apt-get install -y -q nginx)
	.venv/bin/python bench/slow_clients.py

bench-docker:  ## the docker and local sandboxes side by side: verdicts on every example snippet, per-run overhead
	scripts/bootstrap.sh --docker
	eval "export $$(scripts/docker-engine.sh start)" && scripts/docker-engine.sh base-image \
	  && RCB_BASE_IMAGE=$${RCB_BASE_IMAGE:-researchcodebench-base:bookworm-py3.11} .venv/bin/python -m researchcodebench images \
	  && .venv/bin/python bench/docker_lane.py

bench-screen:  ## the screen's false-positive corpus: real ML code (pinned wheels, fetched once with pip) screened and run
	scripts/bootstrap.sh
	.venv/bin/python bench/screen_corpus.py --runtime

bench-leaderboard:  ## installs wrk (apt-get) when missing, then measures the pages under load
	scripts/bootstrap.sh --dev --bench
	.venv/bin/python bench/leaderboard_load.py

bench-mixed:  ## 60 s of mixed load (pages, API, uploads, a run in progress) on gunicorn, PostgreSQL, RabbitMQ and Redis: per URL against /healthz, issue 21's acceptance (BENCH_ARGS: more options)
	scripts/bootstrap.sh --redis
	.venv/bin/python bench/mixed_load.py $(BENCH_ARGS)

bench-aggregation:  ## database time per recorded verdict: a whole-run refresh vs one verdict as a delta (issue 21's size)
	scripts/bootstrap.sh
	.venv/bin/python bench/aggregation.py --models 100 --papers 100 --snippets-per-paper 20

bench-cold:  ## the first request after a change of every board page, htmx part and read API table (issue 21's size; target 150 ms)
	scripts/bootstrap.sh
	.venv/bin/python bench/cold_pages.py

clean:
	rm -rf var staticfiles .pytest_cache
