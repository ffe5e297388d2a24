# ruff: noqa: F811 - `world` and `recorder` are fixtures, parameters by design
"""The digests' two functions call only what their policies grant (infra/privileges.py), run
through app.py under moto with every AWS call recorded (tests/infra/test_privileges.py's recorder): the
daily schedule reads the pending index and queues; the queue's function sends."""

from __future__ import annotations

import pytest

from tests.infra.test_privileges import assert_granted, declared_tables, recorder  # noqa: F401
from tests.jobs.test_digests import digests_scheduled, queued_bodies, world  # noqa: F401 - fixture
from tests.support import notify


@pytest.fixture
def stage_queue(monkeypatch):
    """The digest queue under its deployed name, so that the recorded calls name it."""
    from agora_local.run import ensure_queue
    from chalicelib.settings import reload_settings

    monkeypatch.setenv("AGORA_DIGEST_QUEUE", "agora-dev-digest-jobs")
    ensure_queue(reload_settings().digest_queue)
    yield "agora-dev-digest-jobs"
    monkeypatch.delenv("AGORA_DIGEST_QUEUE")
    reload_settings()


def test_the_schedule_and_the_worker_stay_within_their_grants(world, recorder, client, stage_queue):
    event = digests_scheduled(world, client)
    recorder.calls.clear()
    assert client.lambda_.invoke("send-digests", event).payload["recipients"] == 2
    assert_granted("send-digests", recorder)
    # counters: the monthly purge's daily check rides on this run (jobs/comment_purge.py).
    assert recorder.tables() == declared_tables("send-digests")
    assert recorder.tables() == {"agora-dev-counters", "agora-dev-digests"}
    assert ("sqs:SendMessage", "agora-dev-digest-jobs") in recorder.queues()

    [body] = queued_bodies(stage_queue)
    batch = client.events.generate_sqs_event(message_bodies=[body], queue_name=stage_queue)
    recorder.calls.clear()
    assert client.lambda_.invoke("deliver-digests", batch).payload == {"batchItemFailures": []}
    assert len(notify.sent_mail()) == 2
    assert_granted("deliver-digests", recorder)
    assert recorder.tables() <= declared_tables("deliver-digests")
