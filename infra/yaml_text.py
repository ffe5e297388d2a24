"""YAML read and written through libyaml, the C parser and emitter PyYAML's wheels ship.

A packaged template is 20,000 lines: PyYAML's pure-Python parser and emitter take seconds for it,
each time `make package`, `make deploy` or a test reads or writes one. The C ones give the same
documents in a fraction of that (the pure-Python ones stay the fallback where libyaml is absent).
"""

from __future__ import annotations

from typing import Any

import yaml

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def load(text: str | bytes) -> Any:
    """What `yaml.safe_load` answers."""
    return yaml.load(text, Loader=_LOADER)  # noqa: S506 (a safe loader, in its C build)


def dump(data: Any, **options: Any) -> str:
    """What `yaml.safe_dump` writes (`sort_keys`, `width`… as there)."""
    return str(yaml.dump(data, Dumper=_DUMPER, **options))
