"""make run's snapshot (agora_local/persistence.py): a save of the state last saved writes
nothing, neither the snapshot nor the export (which reads every table: most of a save's cost)."""

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
    assert len(exports) == 4 and snapshot.path.exists()
