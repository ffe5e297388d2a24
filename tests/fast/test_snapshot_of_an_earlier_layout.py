"""A snapshot saved while make run's code lived in chalicelib (chalicelib.local_persistence and
friends) names its helpers there: it still restores now that the code lives in agora_local."""

from __future__ import annotations

import io
import pickle
import threading

import pytest

from agora_local.persistence import _SnapshotUnpickler


def test_a_lock_pickled_under_the_old_module_name_comes_back_a_lock():
    # Protocol 0 spelled out: the global `_rebuild_lock` of chalicelib.local_persistence, called
    # with (True,), as a snapshot written before the move holds it.
    old = b"cchalicelib.local_persistence\n_rebuild_lock\n(I01\ntR."
    with pytest.raises(ModuleNotFoundError):
        pickle.loads(old)

    restored = _SnapshotUnpickler(io.BytesIO(old)).load()

    assert isinstance(restored, type(threading.RLock()))


def test_other_modules_are_read_as_named():
    data = pickle.dumps({"when": threading.Timer.__name__, "kinds": [1, 2]})
    assert _SnapshotUnpickler(io.BytesIO(data)).load() == {"when": "Timer", "kinds": [1, 2]}
