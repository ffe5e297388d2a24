# Two commands matter (CONTRACT §1): `make run` and `make test`. Both work on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
NODE_STAMP := node_modules/.installed
# Copies, not links: uv's cache (in the home folder) may be on another file system than the venv.
# The machine's certificates, as pip trusts them (a proxy's own authority among them), not the
# set uv carries.
UV_INSTALL := UV_LINK_MODE=copy UV_NATIVE_TLS=1 $(BIN)/uv pip install --quiet --python $(BIN)/python
# The suite runs on three processes, though CI has two cores: a worker often waits on a process
# it started (make run, Chromium, Schemathesis, a function) and a third keeps the cores busy then
# (pytest alone at c1222dd: 282 s on two, 259 s on three, 255 s on four). TEST_WORKERS=0 runs it
# in one.
TEST_WORKERS ?= 3

.PHONY: run test test-tools test-future faketime docs figures bench simulate cost scale load lint typecheck format dovecot spamassassin chromium clean package infra lock deploy restore

# requirements*.txt name what we depend on; requirements*.lock (make lock) pin every package,
# indirect ones included, to a version and its files' hashes: two installs are the same install.
$(STAMP): requirements.txt requirements-dev.txt requirements.lock requirements-dev.lock
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	@# uv installs the lock: 16 s where pip took 53 (it downloads side by side and compiles no
	@# bytecode ahead: a module is compiled when first imported, and kept). uv itself comes first,
	@# through pip, by its entry in the lock: its version and hashes.
	@awk '/^uv==/ { found = 1 } found { print; if ($$0 !~ /\\$$/) exit }' requirements-dev.lock \
	  >$(VENV)/uv-from-lock.txt
	$(BIN)/pip install --quiet --require-hashes -r $(VENV)/uv-from-lock.txt
	$(UV_INSTALL) --require-hashes -r requirements-dev.lock
	@# A pin added since the last `make lock` still installs (tests/infra/test_package.py asks to re-lock).
	$(UV_INSTALL) -r requirements-dev.txt
	touch $(STAMP)

## lock: re-resolve requirements*.txt into requirements.lock (Lambda's Python on x86_64),
## requirements-arm64.lock (the same versions for arm64 Lambda) and requirements-dev.lock
LAMBDA_PYTHON := $(shell sed -n 's/.*"lambda_runtime": "python\([0-9.]*\)".*/\1/p' .chalice/config.json)
lock: $(STAMP)
	$(BIN)/uv pip compile --quiet requirements.txt --generate-hashes --no-header \
	  --python-version $(LAMBDA_PYTHON) --python-platform x86_64-manylinux_2_28 -o requirements.lock
	$(BIN)/uv pip compile --quiet requirements.txt -c requirements.lock --generate-hashes --no-header \
	  --python-version $(LAMBDA_PYTHON) --python-platform aarch64-manylinux_2_28 -o requirements-arm64.lock
	$(BIN)/uv pip compile --quiet requirements-dev.txt -c requirements.lock --generate-hashes \
	  --no-header --universal --python-version 3.11 -o requirements-dev.lock

## run: embedded AWS, tables, demo data, the API on http://127.0.0.1:$${AGORA_PORT:-8000}, schedules;
## its data stays in .agora-run/ (AGORA_DATA_DIR) between runs; RESET=1 starts again from the demo
RESET ?=
run: $(STAMP)
	@# exec: the signal that stops make (kill, Ctrl-C, a closed terminal's hang-up) reaches Agora
	@# itself, which saves its data first (docs/running.md, Stopping).
	PYTHONPATH=. exec $(BIN)/python -m agora_local $(if $(filter 1 yes true,$(RESET)),--reset)

## test: lint, format check, infra up to date, package + cfn-lint, and the whole pytest suite
## (the first two beside the suite; the package again only when what it is made of changed)
# `loadgroup`: each test goes to the first free worker, so both stay busy to the end; tests that
# share a module's or the session's expensive setup (a `make run`, Chromium) stay on one worker
# (tests/conftest.py `shared_setup_group`).
test:
	@# What the suite needs, made side by side: the venv, Debian's packages, the npm packages.
	@$(MAKE) --no-print-directory -j3 $(STAMP) test-tools $(NODE_STAMP)
	@mkdir -p build
	@# lint and the package check mostly wait on files and processes: they run beside the suite,
	@# their output kept in build/ and shown when they end. Every part runs to its end; make
	@# fails when any part failed, and says which.
	@# A run where every part passed records the suite's size and its time in build/figures.json
	@# (bench/figures.py); `make figures` puts them in the manual. A test run changes no tracked file.
	@# Bytecode is written (a machine may say PYTHONDONTWRITEBYTECODE): each pytest process would
	@# otherwise rewrite every test module's assertions anew (about 10 s of CPU a process), and
	@# each `make run` or CLI process the suite starts compile what it imports of chalicelib.
	@unset PYTHONDONTWRITEBYTECODE; started=$$(date +%s); \
	$(MAKE) --no-print-directory lint >build/lint.log 2>&1 & lint=$$!; \
	$(MAKE) --no-print-directory $(PACKAGE_CHECKED) >build/package.log 2>&1 & package=$$!; \
	PYTHONPATH=. $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup --junitxml=build/junit.xml; tests=$$?; \
	wait $$lint; linted=$$?; wait $$package; packaged=$$?; \
	echo "--- make lint (build/lint.log)"; cat build/lint.log; \
	echo "--- make package + cfn-lint (build/package.log)"; tail -n 20 build/package.log; \
	failed=""; [ $$tests = 0 ] || failed="$$failed pytest"; [ $$linted = 0 ] || failed="$$failed lint"; \
	[ $$packaged = 0 ] || failed="$$failed package"; \
	if [ -n "$$failed" ]; then echo "make test: failed:$$failed"; exit 1; fi; \
	PYTHONPATH=. $(BIN)/python -m bench.figures tests build/junit.xml $$(( $$(date +%s) - started )) \
	  --workers $(TEST_WORKERS)

## test-future: the pytest suite with the clock a year ahead, then five years ahead (Debian's
## faketime, which shifts the clock of every process the suite starts): no test may depend on the day;
## the package is built first, so its tiers (rehearsal, infra) run under the shifted clock too
# FUTURE: the shifts, as faketime takes them. libfaketime 0.9.10 does not intercept sem_clockwait
# (its issue 390), with which Python times every wait of a thread (Event.wait(t), Timer, a lock's
# timeout): such a wait lasted the whole shift. tests/support/faketime/clockwait.c, preloaded
# before it, turns the faked deadline into the same wait on the real clock. And libfaketime reads
# FAKETIME again every 10 s: Dovecot clears its environment, so its master fell back to the real
# clock, saw time go back a year and launched no POP3 process for 180 s (logins timed out);
# FAKETIME_CACHE_DURATION keeps the first reading.
FUTURE ?= +365d +1825d
FAKETIME_SHIM := build/faketime-clockwait.so
$(FAKETIME_SHIM): tests/support/faketime/clockwait.c
	@mkdir -p build
	cc -shared -fPIC -O2 -o $@ $< -ldl

# The package is built in the recipe: PACKAGE_CHECKED is defined further down, and a prerequisite
# is expanded where the rule is read (there it was empty). The faketime command names its semaphore
# and shared memory after its own process id, and refuses to start ("sem_open: File exists") when
# a process of that id left them behind (libfaketime's processes killed: a suite's leave hundreds):
# those of processes no longer running are removed first.
test-future: $(STAMP) test-tools faketime $(FAKETIME_SHIM) $(NODE_STAMP)
	@$(MAKE) --no-print-directory $(PACKAGE_CHECKED)
	@for left in /dev/shm/sem.faketime_sem_* /dev/shm/faketime_shm_*; do \
	  [ -e "$$left" ] && [ ! -d "/proc/$${left##*_}" ] && rm -f "$$left"; \
	done; true
	@unset PYTHONDONTWRITEBYTECODE; failed=""; \
	for shift in $(FUTURE); do \
	  echo "--- make test-future: the suite under faketime -f $$shift"; \
	  LD_PRELOAD=$(CURDIR)/$(FAKETIME_SHIM) FAKETIME_CACHE_DURATION=2000000000 PYTHONPATH=. \
	    faketime -f "$$shift" \
	    $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup -q || failed="$$failed $$shift"; \
	done; \
	if [ -n "$$failed" ]; then echo "make test-future: failed at$$failed"; exit 1; fi

## docs: the manual (docs/, mkdocs.yml) as a static site in build/docs/, strict: a broken link or
## anchor fails the build
# Not --quiet: mkdocs 1.6 counts strict mode's warnings only as it logs them, and --quiet let a
# missing image or page build (exit 0).
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

## figures: what the last `make test` and `make package` measured (build/figures.json) into
## bench/figures.json and the manual's pages (the suite's size and time, the package's size)
figures: $(STAMP)
	PYTHONPATH=. $(BIN)/python -m bench.figures publish

## bench: bench/results.json and docs/benchmarks.md's Benchmarks table, in under 10 minutes (wrk installed when missing)
bench: $(STAMP) dovecot
	@command -v wrk >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq wrk >/dev/null; }
	PYTHONPATH=. $(BIN)/python -m bench.run

## simulate: a day of 10,000 mailboxes and of 100,000 digests through the real scheduling, pacing and
## sending code (a fake clock, fake POP3 and SES), into bench/results.json, in under 10 minutes; its
## series into bench/simulated-day.json, drawn into docs/img/ and docs/benchmarks.md (bench/pictures.py)
simulate: $(STAMP)
	PYTHONPATH=. $(BIN)/python -m bench.simulate

## cost: docs/benchmarks.md's monthly AWS cost table for three community sizes, from bench/prices.json and the
## measured figures of bench/results.json (no network; `make bench` refreshes it too)
cost: $(STAMP)
	PYTHONPATH=. $(BIN)/python -m bench.cost

## scale: every counted read in a large community (SCALE=large: 100,000 members, 1,000,000 posts;
## medium, small: a tenth, a hundredth) against the same club alone; the table goes to docs/benchmarks.md
SCALE ?= large
scale: $(STAMP)
	PYTHONPATH=. nice -n 19 $(BIN)/python -m bench.scale --size $(SCALE)

## load: 8 administrators share 3,000 operations against make run, then every acknowledged write is checked
## (WORKERS=… OPERATIONS=… to change them); the full run's table (the defaults only) goes to
## docs/benchmarks.md's Load section
WORKERS ?= 8
OPERATIONS ?= 3000
load: $(STAMP)
	PYTHONPATH=. $(BIN)/python -m bench.admin_load --workers $(WORKERS) --operations $(OPERATIONS) --write-page

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	PYTHONPATH=. $(BIN)/python -m infra.build --check
	$(BIN)/mypy

## typecheck: mypy alone on what ships (pyproject.toml [tool.mypy]: strict on services and api);
## `lint` runs it too
typecheck: $(STAMP)
	$(BIN)/mypy

## infra: regenerate infra/<stage>.yaml and .chalice/policy-<stage>-<function>.json from the models
infra: $(STAMP)
	PYTHONPATH=. $(BIN)/python -m infra.build

## package: one deployable template (build/package/sam.yaml) beside its zip, checked by cfn-lint
## and its serverless rules (exceptions, each with its reason: infra/lint-exceptions.json)
## (ARCH=arm64 for Graviton functions, built from requirements-arm64.lock; x86_64 by default)
STAGE ?= dev
ARCH ?= x86_64
package: $(STAMP)
	rm -rf build/package
	rm -f $(PACKAGE_CHECKED)
	AWS_DEFAULT_REGION=$${AWS_DEFAULT_REGION:-us-east-1} PYTHONPATH=. $(BIN)/python -m infra.package \
	  --arch $(ARCH) --stage $(STAGE) --merge-template infra/$(STAGE).yaml build/package
	PYTHONPATH=. $(BIN)/python -m infra.slim_package build/package/deployment.zip
	@# cfn-lint with its serverless rules; what fails on purpose is infra/lint-exceptions.json
	PYTHONPATH=. $(BIN)/python -m infra.lint build/package/sam.yaml
	@# The manual's package size is this zip's (recorded in build/, `make figures` publishes it).
	[ "$(ARCH)" != x86_64 ] || PYTHONPATH=. $(BIN)/python -m bench.figures package \
	  build/package/deployment.zip --arch $(ARCH)

# What the package is made of: `make test` packages and runs cfn-lint again only when one of
# these is newer than its last successful check (a fresh clone has no build/: it always does).
PACKAGE_INPUTS := Makefile app.py requirements.txt $(wildcard requirements*.lock .chalice/*.json) \
  $(shell find chalicelib infra -type f -not -path '*/__pycache__/*' 2>/dev/null)
PACKAGE_CHECKED := build/.package-checked-$(STAGE)-$(ARCH)
$(PACKAGE_CHECKED): $(STAMP) $(PACKAGE_INPUTS)
	$(MAKE) --no-print-directory package STAGE=$(STAGE) ARCH=$(ARCH)
	touch $@

## deploy: make deploy STAGE=prod BASE_URL=https://… ALARM_EMAIL=ops@… [MAIL_SENDER_DOMAIN=…] [ARCH=arm64]
## [PAGE_EMAIL=…: paged for data loss, an API members cannot use, mail stopped (default ALARM_EMAIL)]
## [SES_DAILY_QUOTA=…: the account's SES 24-hour quota; MONTHLY_BUDGET_USD=…: the month's budget]
## [MAIL_INBOUND_DOMAIN=…: mail in by push, SES receiving for <group slug>@<domain>;
##  MAIL_INBOUND_RULE_SET=…: the account's active SES receipt rule set to add Agora's rule to]
## (each optional setting, API_GATEWAY_ACCOUNT too, keeps its deployed value when not given; given
##  empty, as PAGE_EMAIL=, it is set empty)
## [BACKUP_REGION=…: prod: AWS Backup copies every table there daily (docs/deploy.md, Region outage)]
## [REPLACE_SENDER_IDENTITY=1: a changed sending domain replaces the SES identity (refused without)]
## [ALLOW_REPLACE=1: a change may replace or delete a table or the token secret]
## [API_GATEWAY_ACCOUNT=1: the stack sets the account's API Gateway logging role (0: stops)]
## [ROLLBACK_ALARMS=0: a prod canary ignores the new version's alarms, to land a fix]
## [ALL_AT_ONCE=1: the emergency switch: a prod deploy moves the API to the new version at once,
##  no canary, no rollback alarm (the jobs always move at once); nor PreTraffic hook]
ALLOW_REPLACE ?=
REPLACE_SENDER_IDENTITY ?=
ROLLBACK_ALARMS ?= 1
ALL_AT_ONCE ?=
# An optional setting is passed only when given (on the command line or in the environment).
given = $(filter-out undefined default,$(origin $(1)))
DEPLOY_FLAGS = $(if $(filter 1 yes true,$(ALLOW_REPLACE)),--allow-replace) \
  $(if $(filter 1 yes true,$(REPLACE_SENDER_IDENTITY)),--replace-sender-identity) \
  $(if $(filter 1 yes true,$(API_GATEWAY_ACCOUNT)),--api-gateway-account) \
  $(if $(filter 0 no false,$(API_GATEWAY_ACCOUNT)),--no-api-gateway-account) \
  $(if $(filter 0 no false,$(ROLLBACK_ALARMS)),--no-rollback-alarms) \
  $(if $(filter 1 yes true,$(ALL_AT_ONCE)),--all-at-once)
DEPLOY_SETTINGS = --stage "$(STAGE)" --base-url "$(BASE_URL)" --alarm-email "$(ALARM_EMAIL)" \
  $(if $(call given,MAIL_SENDER_DOMAIN),--mail-sender-domain "$(MAIL_SENDER_DOMAIN)") \
  $(if $(call given,PAGE_EMAIL),--page-email "$(PAGE_EMAIL)") \
  $(if $(call given,SES_DAILY_QUOTA),--ses-daily-quota "$(SES_DAILY_QUOTA)") \
  $(if $(call given,MONTHLY_BUDGET_USD),--monthly-budget-usd "$(MONTHLY_BUDGET_USD)") \
  $(if $(call given,BACKUP_REGION),--backup-region "$(BACKUP_REGION)") \
  $(if $(call given,MAIL_INBOUND_DOMAIN),--mail-inbound-domain "$(MAIL_INBOUND_DOMAIN)") \
  $(if $(call given,MAIL_INBOUND_RULE_SET),--mail-inbound-rule-set "$(MAIL_INBOUND_RULE_SET)")
deploy: $(STAMP)
	PYTHONPATH=. $(BIN)/python -m infra.deploy --check $(DEPLOY_SETTINGS)
	$(MAKE) package STAGE=$(STAGE) ARCH=$(ARCH)
	PYTHONPATH=. $(BIN)/python -m infra.deploy $(DEPLOY_SETTINGS) $(DEPLOY_FLAGS)

## restore: make restore STAGE=prod TABLE=posts TIME=2026-11-26T08:00:00Z: the table as it was
## then, restored into a new table, and the stack switched onto it (TIME=original: back)
TABLE ?=
TIME ?=
restore: $(STAMP)
	PYTHONPATH=. $(BIN)/python -m infra.restore --stage "$(STAGE)" --table "$(TABLE)" --time "$(TIME)"

format: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# The suite's programs from Debian (CI runs as root): Dovecot, SpamAssassin and Chromium, the
# missing ones in one apt-get (each its own cost one `apt-get update` more). Each target below
# installs its own alone.
TEST_TOOLS := dovecot:dovecot-pop3d spamassassin:spamassassin chromium:chromium
test-tools:
	@missing=""; for tool in $(TEST_TOOLS); do \
	  command -v $${tool%%:*} >/dev/null 2>&1 || missing="$$missing $${tool#*:}"; \
	done; \
	[ -z "$$missing" ] || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; }

# The mail tests run a real POP3 server. Installing it needs root (CI runs as root).
dovecot:
	@command -v dovecot >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq dovecot-pop3d >/dev/null; }

# make test-future runs the suite under Debian's faketime (libfaketime), and compiles a small
# library beside it (a C compiler). Installing them needs root.
faketime:
	@command -v faketime >/dev/null 2>&1 && command -v cc >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq faketime gcc >/dev/null; }

# The mail Agora sends is scored by SpamAssassin's local rules (tests/mail/test_outgoing.py).
# Installing it needs root (CI runs as root).
spamassassin:
	@command -v spamassassin >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq spamassassin >/dev/null; }

# The console's browser tests drive Debian's Chromium (Playwright launches it by path: no download)
# and inject axe-core from the locked npm package. Installing Chromium needs root (CI runs as root).
$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --silent
	touch $(NODE_STAMP)

chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; }

clean:
	rm -rf $(VENV) build .pytest_cache .ruff_cache node_modules
