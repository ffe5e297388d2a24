"""The rehearsal tier: every function of the packaged stack run as AWS runs it, each from the
built zip in a process of its own, with exactly its template's environment and only its role's
permissions (tests/rehearsal/stage.py). Every test of this folder is marked `rehearsal` (and
`slow`: it starts processes) as it is collected, as tests/fast marks its own; they share one
stage, one moto server and one warm process per function, so they run on one worker."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest

from tests.mail.conftest import dovecot  # noqa: F401 - the fixture
from tests.rehearsal.stage import Stage, build, package_ready


def pytest_itemcollected(item: pytest.Item) -> None:
    item.add_marker(pytest.mark.rehearsal)
    item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def stage(dovecot, tmp_path_factory) -> Iterator[Stage]:  # noqa: F811
    import secrets

    from tests.support.dovecot import DovecotMailbox

    not_ready = package_ready()
    if not_ready is not None:
        if os.environ.get("CI"):
            pytest.fail(not_ready)
        pytest.skip(not_ready)
    user, password = f"box{secrets.token_hex(4)}", secrets.token_urlsafe(12)
    dovecot.add_user(user, password)
    mailbox = DovecotMailbox(server=dovecot, user=user, password=password)
    started = time.monotonic()
    built, server = build(tmp_path_factory.mktemp("rehearsal"), mailbox)
    print(f"rehearsal stage built in {time.monotonic() - started:.1f} s")
    try:
        yield built
    finally:
        built.stop()
        server.terminate()
        server.wait(timeout=10)
