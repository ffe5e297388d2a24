"""Group feed settings bodies, as a PUT of /feed/settings/{groupId} takes them (every field)."""

from __future__ import annotations

from typing import Any


def feed_settings(**changes: Any) -> dict[str, Any]:
    """A whole settings body (a PUT replaces the settings: every field is required): the defaults
    a group starts with, but for `changes`."""
    return {
        "imageUrl": "",
        "imageLinkUrl": "",
        "imageAlt": "",
        "ttl": 60,
        "editorEmail": "",
        "webmasterEmail": "",
        "skipDays": [],
        "skipHours": [],
        **changes,
    }


def selected(*names: str) -> list[dict[str, Any]]:
    """Days or hours (`skipDays`, `skipHours`), each selected."""
    return [{"name": name, "selected": True} for name in names]


# Every setting given a value the feed shows.
EVERY_FEED_SETTING = feed_settings(
    imageUrl="https://cdn.example/garden.png",
    imageLinkUrl="https://community.example/garden/about",
    imageAlt="Garden logo",
    ttl=30,
    editorEmail="editor@example.org",
    webmasterEmail="web@example.org",
    skipDays=selected("Saturday", "Sunday"),
    skipHours=selected("24:00", "3:00"),
)
