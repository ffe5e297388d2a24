"""make run's snapshot (agora_local/persistence.py): a save of the state last saved writes
nothing, neither the snapshot nor the export (which reads every table: most of a save's cost),
and the timer's saves leave the export to the stop."""

from __future__ import annotations

from agora_local.persistence import LocalSnapshot
from chalicelib.aws import client


def test_a_save_of_unchanged_state_writes_nothing_and_a_change_or_a_lost_file_writes(aws, tmp_path):
    exports = []

    def export(path):
        exports.append(path)
        path.write_text("{}", encoding="utf-8")

    snapshot = LocalSnapshot(tmp_path, export=export)
    snapshot.save()
    written = snapshot.path.stat().st_mtime_ns, snapshot.path.read_bytes()
    assert len(exports) == 1 and snapshot.export_path.exists()
    snapshot.save()
    assert len(exports) == 1
    assert (snapshot.path.stat().st_mtime_ns, snapshot.path.read_bytes()) == written
    client("sqs").create_queue(QueueName="agora-test-snapshot-change")
    snapshot.save()
    assert len(exports) == 2 and snapshot.path.read_bytes() != written[1]
    snapshot.export_path.unlink()
    snapshot.save()
    assert len(exports) == 3 and snapshot.export_path.exists()
    snapshot.path.unlink()
    snapshot.save()
    # The snapshot is written again; the export beside it holds that state already.
    assert len(exports) == 3 and snapshot.path.exists()


def test_the_timers_saves_write_the_snapshot_only_and_the_stop_brings_the_export_up_to_date(
    aws, tmp_path
):
    from agora_local.persistence import PeriodicSnapshot

    exports = []

    def export(path):
        exports.append(path)
        path.write_text("{}", encoding="utf-8")

    snapshot = LocalSnapshot(tmp_path, export=export)
    timer = PeriodicSnapshot(snapshot, interval=3600)
    client("sqs").create_queue(QueueName="agora-test-timer-first")
    timer._save()  # what the timer does every 30 seconds
    first = snapshot.path.read_bytes()
    client("sqs").create_queue(QueueName="agora-test-timer-second")
    timer._save()
    # Both changes are in the snapshot, and no table was read for an export.
    assert snapshot.path.read_bytes() != first and exports == []
    assert not snapshot.export_path.exists()
    snapshot.save()  # the stop's
    assert len(exports) == 1 and snapshot.export_path.exists()
    snapshot.save()
    timer._save()
    assert len(exports) == 1  # nothing changed since: nothing read, nothing written
    # After the stop, a restart finds the export current: its stop exports nothing again.
    restarted = LocalSnapshot(tmp_path, export=export)
    assert restarted.restore()
    restarted.save()
    assert len(exports) == 1
