"""What a job hands the service it runs is made below the jobs: calls point down at run time too.

tests/fast/test_architecture.py reads imports, and an object handed over at run time is no
import: the drain and the sending functions once wrapped their service's mailer in a class of
jobs/pacing.py, so every email a service sent called from services/ up into jobs/ (the upward
pair of `python -m bench.walk`). Here the services are built as the jobs build them, and the class
of every object they hold is looked at."""

from __future__ import annotations

from typing import Any

import pytest

from chalicelib import deps
from chalicelib.jobs import digests, notify
from chalicelib.jobs.base import Deadline
from chalicelib.jobs.digests import batch_body, deliver_batch
from chalicelib.jobs.notify import deliver_from_queue
from chalicelib.jobs.outbox import AppSubscribers
from chalicelib.services.notify.delivery import BatchReads

pytestmark = pytest.mark.fast

# The layers above the services (chalicelib/deps.py, the composition root, is asked, not held).
ABOVE_SERVICES = ("chalicelib.jobs.", "chalicelib.api.")


def held_classes(obj: Any, depth: int = 4) -> set[str]:
    """`module.Class` of `obj` and of every object it holds (attributes, list and dict items),
    `depth` deep, for the classes of chalicelib."""
    found: set[str] = set()
    kind = type(obj)
    if kind.__module__.startswith("chalicelib."):
        found.add(f"{kind.__module__}.{kind.__qualname__}")
    if depth == 0:
        return found
    if isinstance(obj, dict):
        inner = list(obj.values())
    elif isinstance(obj, list | tuple | set):
        inner = list(obj)
    else:
        inner = list(getattr(obj, "__dict__", {}).values())
    for value in inner:
        found |= held_classes(value, depth - 1)
    return found


def above_services(classes: set[str]) -> list[str]:
    return sorted(c for c in classes if c.startswith(ABOVE_SERVICES))


def test_the_class_walk_sees_a_wrapper_held_inside_a_service():
    class Outer:
        def __init__(self, inner: object) -> None:
            self.mail = inner

    wrapper = AppSubscribers()  # any object of a job's module
    found = held_classes(Outer([{"x": wrapper}]))
    assert above_services(found) == ["chalicelib.jobs.outbox.AppSubscribers"]


def test_the_drains_subscribers_hold_nothing_of_the_jobs():
    parts = AppSubscribers()
    for handler in (parts.notify(BatchReads({})), parts.mailbox_failing_notice()):
        found = held_classes(handler)
        assert "chalicelib.mail.outgoing.PacedMail" in found  # its mailer, paced
        assert above_services(found) == []


def test_deliver_notifications_hands_its_service_nothing_of_the_jobs():
    service = notify.sending_service(deps.sending_rate(notify.WORKER))
    assert deliver_from_queue([], service=service) == []
    found = held_classes(service)
    assert "chalicelib.mail.outgoing.SendingRate" in found
    assert above_services(found) == []


def test_deliver_digests_hands_its_service_nothing_of_the_jobs():
    service = digests.sending_service(Deadline.unbounded())
    run = deliver_batch(batch_body(service.today(), []), Deadline.unbounded(), service=service)
    assert run.sent == 0
    found = held_classes(service)
    assert "chalicelib.mail.outgoing.SendingRate" in found
    assert above_services(found) == []
