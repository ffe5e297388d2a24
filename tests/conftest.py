"""Test environment: set before anything imports `app` (PynamoDB reads table names at import)."""

from __future__ import annotations

import gc
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

REPO_ROOT = Path(__file__).resolve().parent.parent

# Under moto's in-process mock an endpoint variable would send calls past the mock.
os.environ.pop("AWS_ENDPOINT_URL", None)
os.environ["AWS_DEFAULT_REGION"] = "us-east-1"
os.environ["AWS_ACCESS_KEY_ID"] = "testing"
os.environ["AWS_SECRET_ACCESS_KEY"] = "testing"
os.environ.pop("AWS_PROFILE", None)
os.environ["AGORA_TOKEN_SECRET"] = "test-secret-that-is-long-enough-for-hs256"
os.environ["AGORA_BASE_URL"] = "https://community.example"
os.environ["AGORA_TABLE_PREFIX"] = "agora-test-"
# Mail in reads senders as they come unless a test asks for a check (AGORA_MAIL_AUTH's default
# is `verify` without an endpoint, as in a function): the suite's mail is signed by no one.
os.environ["AGORA_MAIL_AUTH"] = "off"
for _name in (
    "AGORA_MAIL_AUTHSERV_ID",
    "AGORA_GAME_LEVEL_BASE",
    "AGORA_GAME_LEVEL_EXPONENT",
    "AGORA_MAIL_SENDER",
    "AGORA_MAIL_ALLOW_PRIVATE_HOSTS",
):
    os.environ.pop(_name, None)

pytest_plugins = ["tests.fixtures"]

# Hypothesis's checks that time the machine (a 200 ms deadline per example, "input generation is
# slow") fail a correct property when the two cores are busy with the rest of `make test`: the
# properties are about answers, and speed is measured by the benchmarks.
hypothesis_settings.register_profile(
    "agora", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
hypothesis_settings.load_profile("agora")

# The suite's processes hold moto's tables, fixture copies and every module pytest collected, and
# Python's cyclic collector ran 1,665 times in 26 s of three tests/api modules: 8% of their CPU.
# Collecting after 50,000 new objects instead of 700 leaves about a quarter of that, and nothing
# in a test depends on when a cycle is freed (pytest still collects at its end). The processes
# the tests start (make run, the CLI, the functions) keep Python's defaults, as they run.
gc.set_threshold(50_000, 20, 100)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """pytest's last act in each process is five full collections in a row, to surface an
    exception raised in a finaliser: over the 600,000–900,000 objects a worker holds by then,
    3–4.5 s of CPU in each worker, all three at once at the suite's very end. One collection here
    (while pytest still catches what finalisers raise, and reports it after) frees the garbage;
    freezing what survives leaves the five only what is new since to look at."""
    gc.collect()
    gc.freeze()


# --- sharing out the tests between xdist workers (`make test`: -n 3 --dist loadgroup) ----------

# Fixtures kept for a whole module or session that are cheap to make again on another worker
# (a Dovecot starts in about two seconds): their tests are dealt out one by one like the rest.
CHEAP_SHARED_FIXTURES = frozenset({"dovecot", "password_hash"})


def shared_setup_group(item: pytest.Item) -> str | None:
    """The xdist group of a test whose expensive setup outlives it: the session fixture's name
    or the module's path (a module's own `make run`, the console's `make run` and Chromium), so
    one worker starts it once. Other tests have none and go to whichever worker is free."""
    fixture_info = getattr(item, "_fixtureinfo", None)
    if fixture_info is None:
        return None
    module_wide = None
    for name, definitions in fixture_info.name2fixturedefs.items():
        definition = definitions[-1]
        defined_in = getattr(definition.func, "__module__", "")
        # pytest's own (tmp_path_factory) and the plugins' are not ours to share out.
        if not defined_in.startswith("tests.") or name in CHEAP_SHARED_FIXTURES:
            continue
        if definition.scope == "session":
            return f"session:{defined_in}"  # a conftest's: every test that uses one of them
        if definition.scope != "function":
            module_wide = item.nodeid.split("::")[0]
    return module_wide


# First: xdist's own hook reads the xdist_group markers to name each test's group, so they must
# be there before it runs (it ran first, and every group was dealt out test by test).
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under `--dist loadgroup` each test goes to the first free worker, so all stay busy to
    the end (`loadfile` left one idle while the other ran the slowest file), except the tests
    that share an expensive setup, which stay together (`shared_setup_group`).

    The tests marked slow (servers, processes, Chromium: up to minutes each) come first, the
    longest jobs first, so that the many short tests even the workers out at the end
    instead of one worker starting the fuzzing when the others have nothing left. The order is
    otherwise the collection's (the sort is stable), the same in every worker."""
    _refuse_fast_tests_with_aws_or_servers(items)
    for item in items:
        group = shared_setup_group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


# The fixtures that bring moto, a server, Dovecot or Chromium: a test marked fast uses none.
AWS_OR_SERVER_FIXTURES = frozenset(
    {
        "aws",
        "empty_tables",
        "moto_server",
        "embedded_moto_server",
        "kms_key",
        "client",
        "community",
        "with_two_groups",
        "token",
        "auth",
        "api",
        "dynamo_counter",
        "agora",
        "browser",
        "page",
        "dovecot",
        "mailbox",
    }
)


def _refuse_fast_tests_with_aws_or_servers(items: list[pytest.Item]) -> None:
    """`pytest -m fast` is the tier without moto, servers or a browser: a test marked fast that
    asks for one of their fixtures is a collection error, not a slow fast test."""
    wrong = []
    for item in items:
        if not item.get_closest_marker("fast"):
            continue
        callspec = getattr(item, "callspec", None)
        parametrized = set(callspec.params) if callspec is not None else set()
        used = set(getattr(item, "fixturenames", ())) - parametrized
        if used & AWS_OR_SERVER_FIXTURES:
            wrong.append(f"{item.nodeid} uses {sorted(used & AWS_OR_SERVER_FIXTURES)}")
    if wrong:
        raise pytest.UsageError("tests marked fast use AWS or a server:\n" + "\n".join(wrong))
