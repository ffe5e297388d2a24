"""make run's snapshot keeps where the outbox drain got to (agora_local/persistence.py): restarted,
`make run` tells each outbox record once, as Lambda's event source mapping does across deploys.
Before, a restart read the restored stream from its start: the bus got every domain event again
and a member who subscribed after a post was mailed about it. The embedded AWS is moto in this
process; a restart is a restore into it with the drain's readers forgotten (a new process)."""

from __future__ import annotations

import pickle

import pytest

from agora_local.lifecycle import OutboxDrain
from agora_local.persistence import LocalSnapshot, _BackendPickler, _SnapshotUnpickler
from chalicelib import deps
from chalicelib.domain.announcements import PostCreated
from chalicelib.jobs.outbox import drain_in_process
from chalicelib.store.outbox import forget_readers
from tests.services.test_event_bus import bus  # noqa: F401 - the bus and a reader of it
from tests.support.notify import (
    INSTANT,
    email_of,
    garden_with_fans,
    load_with_fans_told_at_once,
    recipients,
    sent_mail,
    subscribe,
)


@pytest.fixture
def world(community):
    c = garden_with_fans(community, ann="moderator", fans=1)
    [c.fan] = c.fans
    c.late = c.user("late", {c.garden: "member"})  # subscribes after a restart
    c.hello = c.post(c.garden, c.ann, title="Hello", slug="hello")
    c.later = c.post(c.garden, c.ann, title="Later", slug="later")
    return load_with_fans_told_at_once(c)


def restart(snapshot: LocalSnapshot) -> None:
    """What a stop and a start do to the drain: its readers die with the process, the snapshot
    puts the saved state back."""
    forget_readers()
    assert snapshot.restore()


def as_the_last_release_wrote_it(snapshot: LocalSnapshot) -> None:
    """The snapshot rewritten as the last release wrote it: (format, moto version, state), no
    checkpoint of the drain."""
    with snapshot.path.open("rb") as file:
        header = _SnapshotUnpickler(file).load()
    with snapshot.path.open("wb") as file:
        _BackendPickler(file, protocol=pickle.HIGHEST_PROTOCOL).dump(tuple(header[:3]))


def test_a_restart_tells_no_record_again_and_none_is_lost(world, bus, tmp_path):  # noqa: F811
    c = world
    snapshot = LocalSnapshot(tmp_path, export=None)
    deps.outbox().save([PostCreated(c.hello, c.garden, c.ann)])
    assert drain_in_process() == 1
    assert recipients(sent_mail()) == [email_of(c, c.fan)]
    assert [e["detail-type"] for e in bus()] == ["Post Created"]
    # Written before the stop, not yet told: the restart must tell it, once.
    deps.outbox().save([PostCreated(c.later, c.garden, c.ann)])
    snapshot.save()

    restart(snapshot)
    subscribe(c.late, "group", c.garden, 1, email=INSTANT)  # after Hello was told
    drain = OutboxDrain(drain_in_process)
    assert drain() == 1  # Later only
    assert drain() == 0
    mail = sent_mail()
    assert recipients([m for m in mail if "Hello" in str(m["Subject"])]) == [email_of(c, c.fan)]
    assert recipients([m for m in mail if "Later" in str(m["Subject"])]) == sorted(
        [email_of(c, c.fan), email_of(c, c.late)]
    )
    [told] = bus()
    assert (told["detail-type"], told["detail"]["postId"]) == ("Post Created", c.later)

    # And again: the checkpoint the restarted drain saves is its own.
    snapshot.save()
    restart(snapshot)
    assert OutboxDrain(drain_in_process)() == 0
    assert bus() == []


def test_a_reader_of_another_stream_counts_nothing_toward_this_ones_records(
    world,
    bus,  # noqa: F811
    tmp_path,
):
    """The drain's readers outlive a stream (a table made again in the same process; the suite
    keeps one process for many tests, each with its own outbox stream): what another stream's
    reader told is not this stream's. Before, the records told by every reader were added up, so
    a reader of a gone stream that had told one record made the restarted drain believe Later
    told, and it stayed untold until the next write."""
    from chalicelib.store.outbox import ReaderPosition, StreamReader, _readers, stream_arn

    c = world
    snapshot = LocalSnapshot(tmp_path, export=None)
    deps.outbox().save([PostCreated(c.hello, c.garden, c.ann)])
    assert drain_in_process() == 1
    gone = stream_arn().replace("/stream/", "/stream/gone-")
    _readers[gone] = StreamReader(gone, position=ReaderPosition((), told=1))
    deps.outbox().save([PostCreated(c.later, c.garden, c.ann)])
    snapshot.save()

    restart(snapshot)
    drain = OutboxDrain(drain_in_process)
    assert drain() == 1  # Later
    assert drain() == 0
    assert [(e["detail-type"], e["detail"]["postId"]) for e in bus()] == [
        ("Post Created", c.hello),
        ("Post Created", c.later),
    ]


def test_a_snapshot_of_the_last_release_starts_the_drain_at_the_streams_end(
    world,
    bus,  # noqa: F811
    tmp_path,
):
    c = world
    snapshot = LocalSnapshot(tmp_path, export=None)
    deps.outbox().save([PostCreated(c.hello, c.garden, c.ann)])
    assert drain_in_process() == 1
    assert [e["detail-type"] for e in bus()] == ["Post Created"]
    snapshot.save()
    as_the_last_release_wrote_it(snapshot)

    restart(snapshot)
    subscribe(c.late, "group", c.garden, 1, email=INSTANT)
    drain = OutboxDrain(drain_in_process)
    assert drain() == 0
    assert bus() == []
    assert recipients(sent_mail()) == [email_of(c, c.fan)]
    deps.outbox().save([PostCreated(c.later, c.garden, c.ann)])
    assert drain() == 1
    [told] = bus()
    assert (told["detail-type"], told["detail"]["postId"]) == ("Post Created", c.later)


def test_a_snapshot_from_before_the_outbox_restores_and_its_drain_starts_at_the_beginning(
    world,
    bus,  # noqa: F811
    tmp_path,
):
    """Data older than the outbox table: no stream to pass over at the restore (create-tables
    makes the table after it), and every record written afterwards is told."""
    from chalicelib.aws import client
    from chalicelib.store.outbox import OutboxRecord, drain_position
    from chalicelib.store.tables import create_tables

    c = world
    snapshot = LocalSnapshot(tmp_path, export=None)
    client("dynamodb").delete_table(TableName=OutboxRecord.Meta.table_name)
    snapshot.save()
    as_the_last_release_wrote_it(snapshot)

    restart(snapshot)
    assert drain_position() == {}  # no reader: no stream to have read
    create_tables()
    deps.outbox().save([PostCreated(c.hello, c.garden, c.ann)])
    assert OutboxDrain(drain_in_process)() == 1
    [told] = bus()
    assert (told["detail-type"], told["detail"]["postId"]) == ("Post Created", c.hello)
