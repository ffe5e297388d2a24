"""Per-request cost in-process, and DynamoDB work per request at 100 and 10,000 records.

Both go through chalice's test client against moto, as the tests do. Request times are medians
(after a warm-up: a warm Lambda container); DynamoDB work is counted on a warm request too, since
the group cache makes the first request of a container differ from the rest.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from bench.report import BENCH_DIR, REPO_ROOT, Figure, skipped
from bench.world import Club, build_club, features, in_process_aws, median_ms
from tests.fixtures import counting_dynamodb

REQUEST_SAMPLES = 100
SMALL, LARGE = 100, 10_000

# (figure, feature it needs, the club's path property, who asks)
REQUESTS = [
    ("request_home_page", "home_page", "home_page", "root_admin"),
    ("request_event_get", "events", "event", "moderator"),
    ("request_events_page", "events", "events_page", "moderator"),
    ("request_comments_page", "comments", "comments_page", "moderator"),
]


@contextmanager
def agora_client() -> Iterator[Any]:
    from chalice.test import Client

    from app import app

    with Client(app, stage_name="dev", project_dir=str(REPO_ROOT)) as client:
        yield client


@contextmanager
def bare_client() -> Iterator[Any]:
    from chalice.test import Client

    from bench.bare_app import app

    with Client(app, project_dir=str(BENCH_DIR)) as client:
        yield client


def get(client: Any, club: Club, path_name: str, user_name: str) -> Any:
    path = getattr(club, path_name)
    return client.http.get(path, headers=club.headers(getattr(club, user_name)))


def request_figures(samples: int = REQUEST_SAMPLES) -> list[Figure]:
    available = features()
    figures = []
    with ExitStack() as stack:
        stack.enter_context(in_process_aws())
        club = build_club(SMALL, available)
        client = stack.enter_context(agora_client())
        bare = stack.enter_context(bare_client())
        assert bare.http.get("/").status_code == 200
        reference = median_ms(lambda: bare.http.get("/"), samples)
        for name, feature, path_name, user_name in REQUESTS:
            if feature not in available:
                figures.append(Figure(name, None, None, "ms", f"no {feature} route in the tree"))
                continue
            response = get(client, club, path_name, user_name)
            if response.status_code != 200:
                note = f"answered {response.status_code}: {response.body[:200]!r}"
                figures.append(Figure(name, None, reference, "ms", note))
                continue
            value = median_ms(functools.partial(get, client, club, path_name, user_name), samples)
            figures.append(Figure(name, value, reference, "ms"))
    return figures


# (figure stem, feature, path property): each list, and one single-item GET.
COUNTED = [
    ("events_page", "events", "events_page"),
    ("comments_page", "comments", "comments_page"),
    ("single_get", "events", "event"),
]


# Issue 17's table: (call, the club's path property, the floor of DynamoDB requests per warm call).
# A group administrator's view (the root administrator), so that every call is allowed.
CALLS = [
    ("event_get", "event", 1),
    ("post_get", "post", 1),
    ("email_to_post_settings", "email_to_post", 1),
    ("posts_page", "posts_page", 2),
    ("events_page", "events_page", 2),
    ("mail_log_page", "mail_log_page", 2),
    ("unapproved_page", "unapproved_page", 2),
    ("deleted_page", "comments_page", 2),
    ("spam_reports_page", "spam_reports_page", 2),
    ("calendar_month", "calendar_month", 2),
]
MAILBOX = {
    "serverName": "pop.example.org",
    "serverPort": 995,
    "serverUsername": "club",
    "serverPassword": "bench secret",
    "isEnabled": True,
    "isSSL": True,
    "deleteProcessed": False,
}


def count_work(
    size: int, available: set[str], surroundings: Callable[[Club], object] | None = None
) -> dict[str, tuple[int, int, list[str]]]:
    """(requests, items read, operations) of one warm request of each counted kind; issue 17's
    calls under `call:<name>`. `surroundings` adds records around the club before the counting
    (bench/scale.py: a large community)."""
    work = {}
    with in_process_aws():
        club = build_club(size, available)
        if surroundings is not None:
            surroundings(club)
        with agora_client() as client, counting_dynamodb() as counter:
            for stem, feature, path_name in COUNTED:
                if feature not in available:
                    continue
                work[stem] = warm_work(client, club, counter, path_name, "moderator", stem, size)
            if "calls" in available:
                put = client.http.put(
                    club.email_to_post,
                    headers=club.headers(club.root_admin),
                    body=json.dumps(MAILBOX),
                )
                if put.status_code != 200:
                    raise RuntimeError(f"email-to-post settings answered {put.status_code}")
                for name, path_name, _ in CALLS:
                    work[f"call:{name}"] = warm_work(
                        client, club, counter, path_name, "root_admin", name, size
                    )
    return work


def warm_work(
    client: Any, club: Club, counter: Any, path_name: str, user_name: str, stem: str, size: int
) -> tuple[int, int, list[str]]:
    """The DynamoDB work of the second of two identical calls (a warm container)."""
    get(client, club, path_name, user_name)
    counter.reset()
    response = get(client, club, path_name, user_name)
    if response.status_code != 200:
        raise RuntimeError(f"{stem} at {size} answered {response.status_code}")
    # Each request's operation, repeated as often as it was made.
    operations = sorted(op for op, times in counter.requests.items() for _ in range(times))
    return counter.total, counter.items_read, operations


def dynamo_figures() -> list[Figure]:
    available = features()
    small = count_work(SMALL, available)
    large = count_work(LARGE, available)
    return page_figures(available, small, large) + call_figures(available, large)


def call_figures(available: set[str], large: dict[str, tuple[int, int, list[str]]]) -> list[Figure]:
    """`ddb_requests_per_call_<call>`: requests of a warm call at 10,000 records, over its floor."""
    figures = []
    for name, _, floor in CALLS:
        figure = f"ddb_requests_per_call_{name}"
        if "calls" not in available:
            figures += skipped([(figure, "requests")], "a route of the call is not in the tree")
            continue
        requests, _, operations = large[f"call:{name}"]
        note = "made a Scan" if "Scan" in operations else None
        figures.append(Figure(figure, requests, floor, "requests", note))
    return figures


def page_figures(
    available: set[str],
    small: dict[str, tuple[int, int, list[str]]],
    large: dict[str, tuple[int, int, list[str]]],
) -> list[Figure]:
    figures = []
    for stem, feature, _ in COUNTED:
        names = (
            [(f"ddb_requests_{stem}", "requests")]
            if stem == "single_get"
            else [
                (f"ddb_items_{stem}_10k_over_100", "items read"),
                (f"ddb_requests_{stem}_10k_over_100", "requests"),
            ]
        )
        if stem not in small or stem not in large:
            figures += skipped(names, f"no {feature} route in the tree")
            continue
        scans = "Scan" in small[stem][2] or "Scan" in large[stem][2]
        for name, unit in names:
            # (requests, items read) at each size
            at_large, at_small = (
                (large[stem][1], small[stem][1])
                if unit == "items read"
                else (large[stem][0], small[stem][0])
            )
            notes = ["made a Scan"] if scans else []
            if at_large > at_small:
                notes.append("grows with the record count")
            figures.append(Figure(name, at_large, at_small, unit, "; ".join(notes) or None))
    return figures
