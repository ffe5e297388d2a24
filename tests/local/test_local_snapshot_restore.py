"""make run's snapshot restored (agora_local/persistence.py): the embedded AWS comes back as it
was saved, its KMS keys' private keys included, and a save of what was restored writes nothing
unless the export beside the snapshot may be older than it."""

from __future__ import annotations

import os

from agora_local.persistence import LocalSnapshot
from chalicelib.aws import client

MESSAGE = b"signed before the restart"


def test_asymmetric_keys_sign_and_verify_as_before_after_a_restore(aws, tmp_path):
    kms = client("kms")
    keys = {
        spec: kms.create_key(KeySpec=spec, KeyUsage="SIGN_VERIFY")["KeyMetadata"]["KeyId"]
        for spec in ("RSA_2048", "ECC_NIST_P256")
    }
    algorithm = {"RSA_2048": "RSASSA_PKCS1_V1_5_SHA_256", "ECC_NIST_P256": "ECDSA_SHA_256"}
    before = {
        spec: (
            kms.get_public_key(KeyId=key)["PublicKey"],
            kms.sign(KeyId=key, Message=MESSAGE, SigningAlgorithm=algorithm[spec])["Signature"],
        )
        for spec, key in keys.items()
    }
    snapshot = LocalSnapshot(tmp_path, export=None)
    snapshot.save()
    for key in keys.values():
        kms.schedule_key_deletion(KeyId=key, PendingWindowInDays=7)

    assert LocalSnapshot(tmp_path, export=None).restore()

    for spec, key in keys.items():
        public_key, signature = before[spec]
        assert kms.describe_key(KeyId=key)["KeyMetadata"]["KeyState"] == "Enabled"
        assert kms.get_public_key(KeyId=key)["PublicKey"] == public_key
        verified = kms.verify(
            KeyId=key, Message=MESSAGE, Signature=signature, SigningAlgorithm=algorithm[spec]
        )
        assert verified["SignatureValid"] is True
        # What the restored private key signs, the public key from before verifies.
        again = kms.sign(KeyId=key, Message=b"after", SigningAlgorithm=algorithm[spec])
        _assert_public_key_verifies(public_key, b"after", again["Signature"], spec)


def _assert_public_key_verifies(public_der: bytes, message: bytes, signature: bytes, spec: str):
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec, padding
    from cryptography.hazmat.primitives.serialization import load_der_public_key

    public_key = load_der_public_key(public_der)
    if spec.startswith("RSA"):
        public_key.verify(signature, message, padding.PKCS1v15(), hashes.SHA256())  # type: ignore[union-attr,call-arg]
    else:
        public_key.verify(signature, message, ec.ECDSA(hashes.SHA256()))  # type: ignore[union-attr,call-arg]


def test_the_token_secret_keeps_its_version_when_a_restart_brings_the_same_value(aws, monkeypatch):
    from agora_local.run import share_token_secret
    from chalicelib.settings import reload_settings

    manager = client("secretsmanager")
    monkeypatch.setenv("AGORA_TOKEN_SECRET", "kept-between-runs-" + "k" * 24)
    settings = reload_settings()
    secret_id = share_token_secret(settings)
    first = manager.get_secret_value(SecretId=secret_id)
    assert first["SecretString"] == "kept-between-runs-" + "k" * 24

    # A restart: the same value, already stored.
    assert share_token_secret(reload_settings()) == secret_id
    again = manager.get_secret_value(SecretId=secret_id)
    assert (again["SecretString"], again["VersionId"]) == (
        first["SecretString"],
        first["VersionId"],
    )
    assert len(manager.list_secret_version_ids(SecretId=secret_id)["Versions"]) == 1

    # A value the user changed is stored as the new current version.
    monkeypatch.setenv("AGORA_TOKEN_SECRET", "changed-by-the-user-" + "c" * 24)
    share_token_secret(reload_settings())
    changed = manager.get_secret_value(SecretId=secret_id)
    assert changed["SecretString"] == "changed-by-the-user-" + "c" * 24
    assert changed["VersionId"] != first["VersionId"]


def _counting_export(exports: list):
    def export(path):
        exports.append(path)
        path.write_text("{}", encoding="utf-8")

    return export


def test_a_restored_state_saved_unchanged_writes_nothing_and_a_change_writes_both(aws, tmp_path):
    exports: list = []
    LocalSnapshot(tmp_path, export=_counting_export(exports)).save()
    assert len(exports) == 1
    written = tmp_path.joinpath("embedded-aws.pickle").read_bytes()
    stamps = {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()}

    # The next start: restored, then saved (the timer's, the stop's) with nothing changed.
    restarted = LocalSnapshot(tmp_path, export=_counting_export(exports))
    assert restarted.restore()
    restarted.save()
    restarted.save()
    assert len(exports) == 1
    assert {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()} == stamps
    assert restarted.path.read_bytes() == written

    client("sqs").create_queue(QueueName="agora-test-changed-after-restore")
    restarted.save()
    assert len(exports) == 2 and restarted.path.read_bytes() != written
    # Saved again, and the queue comes back with a restore.
    assert LocalSnapshot(tmp_path, export=None).restore()
    assert any(
        url.endswith("/agora-test-changed-after-restore")
        for url in client("sqs").list_queues().get("QueueUrls", [])
    )


def test_a_restored_snapshot_whose_export_is_older_or_missing_gets_its_export_written(
    aws, tmp_path
):
    exports: list = []
    LocalSnapshot(tmp_path, export=_counting_export(exports)).save()
    snapshot_file = tmp_path / "embedded-aws.pickle"
    export_file = tmp_path / "community.json"
    # A save cut short after the snapshot: the export beside it is the previous save's.
    older = snapshot_file.stat().st_mtime_ns - 1_000_000_000
    os.utime(export_file, ns=(older, older))
    restarted = LocalSnapshot(tmp_path, export=_counting_export(exports))
    assert restarted.restore()
    restarted.save()
    assert len(exports) == 2
    assert export_file.stat().st_mtime_ns >= snapshot_file.stat().st_mtime_ns

    # No export at all (a folder of an older release): the first save writes it.
    export_file.unlink()
    again = LocalSnapshot(tmp_path, export=_counting_export(exports))
    assert again.restore()
    again.save()
    assert len(exports) == 3 and export_file.exists()
