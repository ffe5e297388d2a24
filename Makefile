# Two commands matter (CONTRACT §1): `make run` and `make test`. Both work on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint format dovecot clean

$(STAMP): requirements.txt requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements-dev.txt
	touch $(STAMP)

## run: embedded AWS, tables, demo data, the API on http://127.0.0.1:$${AGORA_PORT:-8000}, schedules
run: $(STAMP)
	PYTHONPATH=. $(BIN)/python -m chalicelib.local

## test: lint, format check, then the whole pytest suite (Dovecot installed when missing)
test: $(STAMP) dovecot lint
	PYTHONPATH=. $(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# The mail tests run a real POP3 server. Installing it needs root (CI runs as root).
dovecot:
	@command -v dovecot >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq dovecot-pop3d >/dev/null; }

clean:
	rm -rf $(VENV) build .pytest_cache .ruff_cache
