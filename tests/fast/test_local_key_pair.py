"""make run's key pair (agora_local/key_pair.py): random, made once per data folder, kept there
owner-only, and never shaped like a real AWS key."""

from __future__ import annotations

import json
import re

from agora_local.key_pair import KEY_PAIR_NAME, KeyPair, folder_key_pair


def test_a_folder_keeps_its_pair_and_another_folder_gets_another(tmp_path):
    (tmp_path / "a").mkdir()
    first = folder_key_pair(tmp_path / "a")
    again = folder_key_pair(tmp_path / "a")
    (tmp_path / "b").mkdir()
    other = folder_key_pair(tmp_path / "b")
    assert first == again and other != first
    kept = tmp_path / "a" / KEY_PAIR_NAME
    assert kept.stat().st_mode & 0o777 == 0o600
    assert json.loads(kept.read_text()) == {
        "accessKeyId": first.access_key,
        "secretAccessKey": first.secret_key,
    }


def test_a_pair_is_twenty_characters_of_key_that_is_no_aws_key_and_a_basic_auth_secret():
    pairs = {KeyPair.new() for _ in range(20)}
    assert len(pairs) == 20
    for pair in pairs:
        assert re.fullmatch(r"AGORALOCAL[A-Z0-9]{10}", pair.access_key)
        assert len(pair.secret_key) == 40 and ":" not in pair.secret_key


def test_a_damaged_or_loose_pair_file_is_replaced_by_a_private_one(tmp_path):
    for damaged in ("not json", "[]", '{"accessKeyId": "x"}'):
        path = tmp_path / KEY_PAIR_NAME
        path.write_text(damaged)
        path.chmod(0o644)
        pair = folder_key_pair(tmp_path)
        assert pair.access_key.startswith("AGORALOCAL")
        assert path.stat().st_mode & 0o777 == 0o600
        assert folder_key_pair(tmp_path) == pair
