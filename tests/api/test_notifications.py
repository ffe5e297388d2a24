"""User notifications: the list, the upserts, validation keys and privileges (CONTRACT §8)."""

from __future__ import annotations

import pytest

MISSING = "00000000-0000-4000-8000-000000000000"

NONE_ALERT = {"id": 0, "name": "None", "description": "Does not send email notifications"}
INSTANT = {"id": 1, "name": "Instant", "description": "Sends notifications instantly"}
DAILY = {
    "id": 2,
    "name": "Daily digest",
    "description": "Imports into the daily digest: sends notifications once a day",
}
GROUP_NAMES = [
    "All new group posts",
    "All new group comments",
    "All new/updated wiki documents",
    "All new file documents",
    "New comments to group's wiki document",
]


@pytest.fixture
def people(community):
    c = community
    c.root_admin = c.users[0]["id"]
    c.garden = c.group("garden")
    c.vault = c.group("vault", access="private")
    c.club = c.group("club", access="premium")
    c.garden_admin = c.user("garden-admin", {c.garden: "administrator"})
    c.gardener = c.user("gardener", {c.garden: "member", c.vault: "member"})
    c.outsider = c.user("outsider")
    c.author = c.user("author", {c.garden: "member"})
    c.garden_post = c.post(c.garden, c.author, title="Tomatoes", slug="tomatoes")
    c.vault_post = c.post(c.vault, c.gardener, title="Secrets", slug="secrets")
    c.club_post = c.post(c.club, c.root_admin, title="Members only", slug="members-only")
    return c.load()


def base(user_id: str) -> str:
    return f"/api/v1/en_US/user/{user_id}/notifications"


@pytest.fixture
def save(api, people):
    """`save(path, settings)`: the root administrator saves the gardener's notification `path`
    ("group/2", "type-digest", ...)."""
    return lambda path, settings: api.post(
        f"{base(people.gardener)}/{path}", people.root_admin, settings
    )


def listing(api, people, user_id, group_id, caller=None):
    return api.get(f"{base(user_id)}?groupId={group_id}", caller or people.root_admin)


def test_user_without_subscriptions_lists_all_five_group_notifications_off(api, people):
    status, body = listing(api, people, people.gardener, people.garden)
    assert status == 200 and body["success"] is True
    listed = body["object"]
    assert listed["type"] == "userNotifications"
    assert listed["userId"] == people.gardener
    assert listed["userEmail"] == "gardener@example.org"
    assert listed["accessWarnings"] == []
    [entry] = listed["typeGroups"]
    assert entry["group"]["id"] == people.garden
    assert entry["group"]["url"] == "https://community.example/garden"
    assert [n["id"] for n in entry["notifications"]] == [1, 2, 3, 4, 5]
    assert [n["name"] for n in entry["notifications"]] == GROUP_NAMES
    for notification in entry["notifications"]:
        assert notification["emailAlert"] == NONE_ALERT
        assert notification["showScreenAlert"] is False
        assert notification["showRedLabel"] is False
    assert listed["typePosts"] == [] and listed["typeAuthors"] == []
    [personal] = listed["typePersonal"]
    assert personal["id"] == 4 and personal["name"] == "New private messages"
    assert personal["emailAlert"] == NONE_ALERT
    assert listed["digest"]["typeId"] == 1
    assert listed["digest"]["typeName"] == "Summary Daily digest"


def test_group_notification_is_added_then_updated_and_listed_once(api, people, save):
    path = "group/2"
    status, body = save(
        path, {"groupId": people.garden, "emailAlertId": 1, "showScreenAlert": True}
    )
    assert status == 200 and body["success"] is True
    assert body["object"] == {
        "id": 2,
        "name": "All new group comments",
        "emailAlert": INSTANT,
        "showScreenAlert": True,
        "showRedLabel": False,
        "accessWarnings": [],
    }
    status, body = save(
        path,
        {
            "groupId": people.garden,
            "emailAlertId": 2,
            "showScreenAlert": False,
            "showRedLabel": True,
        },
    )
    assert status == 200
    assert body["object"]["emailAlert"] == DAILY
    assert body["object"]["showScreenAlert"] is False and body["object"]["showRedLabel"] is True

    _, body = listing(api, people, people.gardener, people.garden)
    [entry] = body["object"]["typeGroups"]
    assert [n["id"] for n in entry["notifications"]] == [1, 2, 3, 4, 5]
    second = entry["notifications"][1]
    assert second["emailAlert"] == DAILY and second["showRedLabel"] is True
    assert all(n["emailAlert"]["id"] == 0 for i, n in enumerate(entry["notifications"]) if i != 1)


def test_update_that_omits_a_setting_keeps_the_stored_one(api, people, save):
    path = "group/1"
    save(path, {"groupId": people.garden, "emailAlertId": 1, "showRedLabel": True})
    status, body = save(path, {"groupId": people.garden, "showScreenAlert": True})
    assert status == 200
    assert body["object"]["emailAlert"]["id"] == 1
    assert body["object"]["showRedLabel"] is True and body["object"]["showScreenAlert"] is True


def test_group_subscriptions_are_listed_per_group(api, people):
    api.post(
        f"{base(people.gardener)}/group/1",
        people.root_admin,
        {"groupId": people.vault, "emailAlertId": 1},
    )
    _, garden = listing(api, people, people.gardener, people.garden)
    _, vault = listing(api, people, people.gardener, people.vault)
    assert garden["object"]["typeGroups"][0]["notifications"][0]["emailAlert"]["id"] == 0
    assert vault["object"]["typeGroups"][0]["notifications"][0]["emailAlert"]["id"] == 1


def test_post_notification_is_added_then_updated_and_listed_once(api, people, save):
    path = "post/3"
    status, body = save(path, {"postId": people.garden_post, "emailAlertId": 1})
    assert status == 200
    created = body["object"]
    assert created["id"] == 3 and created["name"] == "New comments on post"
    assert created["emailAlert"] == INSTANT
    assert created["post"] == {
        "id": people.garden_post,
        "title": "Tomatoes",
        "slug": "tomatoes",
        "url": "https://community.example/garden/tomatoes",
    }
    assert created["group"]["id"] == people.garden
    status, body = save(
        path, {"postId": people.garden_post, "emailAlertId": 0, "showRedLabel": True}
    )
    assert status == 200 and body["object"]["emailAlert"] == NONE_ALERT

    _, body = listing(api, people, people.gardener, people.garden)
    [listed] = body["object"]["typePosts"]
    assert listed == {**created, "emailAlert": NONE_ALERT, "showRedLabel": True}
    # Subscriptions to posts of another group are not part of this group's list.
    _, vault = listing(api, people, people.gardener, people.vault)
    assert vault["object"]["typePosts"] == []


def test_author_notification_is_added_then_updated_and_listed_once(api, people, save):
    path = "author/8"
    status, body = save(
        path, {"authorId": people.author, "emailAlertId": 2, "showScreenAlert": True}
    )
    assert status == 200
    created = body["object"]
    assert created["id"] == 8 and created["name"] == "New posts by author"
    assert created["emailAlert"] == DAILY and created["showScreenAlert"] is True
    assert created["author"]["id"] == people.author
    assert created["author"]["alias"] == "Author"
    assert created["author"]["url"] == "https://community.example/people/author"
    status, body = save(path, {"authorId": people.author, "emailAlertId": 1})
    assert status == 200 and body["object"]["emailAlert"] == INSTANT

    # Author subscriptions are listed whatever the group.
    for group_id in (people.garden, people.vault):
        _, body = listing(api, people, people.gardener, group_id)
        [listed] = body["object"]["typeAuthors"]
        assert listed == {**created, "emailAlert": INSTANT}


def test_personal_notification_is_added_then_updated_and_listed_once(api, people, save):
    path = "personal/4"
    status, body = save(path, {"emailAlertId": 1, "showRedLabel": True})
    assert status == 200
    assert body["object"] == {
        "id": 4,
        "name": "New private messages",
        "emailAlert": INSTANT,
        "showScreenAlert": False,
        "showRedLabel": True,
        "accessWarnings": [],
    }
    status, body = save(path, {"emailAlertId": 2, "showRedLabel": False})
    assert status == 200

    _, body = listing(api, people, people.gardener, people.garden)
    [listed] = body["object"]["typePersonal"]
    assert listed["emailAlert"] == DAILY and listed["showRedLabel"] is False


def test_digest_round_trip(api, people, save):
    path = "type-digest"
    status, body = save(path, {"typeId": 2})
    assert status == 200 and body["success"] is True
    assert body["object"] == {"typeId": 2, "typeName": "Full Daily digest", "accessWarnings": []}
    _, listed = listing(api, people, people.gardener, people.garden)
    assert listed["object"]["digest"]["typeId"] == 2
    assert listed["object"]["digest"]["typeName"] == "Full Daily digest"
    status, body = save(path, {"typeId": 1})
    assert body["object"]["typeName"] == "Summary Daily digest"
    _, listed = listing(api, people, people.gardener, people.garden)
    assert listed["object"]["digest"] == {
        "typeId": 1,
        "typeName": "Summary Daily digest",
        "accessWarnings": [],
    }


@pytest.mark.parametrize(
    ("kind", "notification_id", "body"),
    [
        ("group", 6, {"groupId": "garden"}),
        ("group", 0, {"groupId": "garden"}),
        ("post", 1, {"postId": "garden_post"}),
        ("author", 3, {"authorId": "author"}),
        ("personal", 8, {}),
    ],
)
def test_notification_id_not_of_its_kind_is_400_notification_id(
    api, people, kind, notification_id, body
):
    body = {key: getattr(people, value) for key, value in body.items()}
    status, answer = api.post(
        f"{base(people.gardener)}/{kind}/{notification_id}", people.root_admin, body
    )
    assert status == 400 and answer["success"] is False
    assert [e["key"] for e in answer["errors"]] == ["notificationId"]
    assert answer["errors"][0]["value"] == str(notification_id)


@pytest.mark.parametrize("alert", [-1, 3, "instant"])
def test_email_alert_outside_0_to_2_is_400_email_alert_id(api, people, alert):
    status, body = api.post(
        f"{base(people.gardener)}/group/1",
        people.root_admin,
        {"groupId": people.garden, "emailAlertId": alert},
    )
    assert status == 400
    assert [e["key"] for e in body["errors"]] == ["emailAlertId"]
    assert body["object"]["emailAlertId"] == alert


@pytest.mark.parametrize("type_id", [0, 3, None])
def test_digest_type_outside_1_or_2_is_400_type_id(api, people, type_id):
    payload = {} if type_id is None else {"typeId": type_id}
    status, body = api.post(f"{base(people.gardener)}/type-digest", people.root_admin, payload)
    assert status == 400
    assert [e["key"] for e in body["errors"]] == ["typeId"]


@pytest.mark.parametrize(
    ("kind", "notification_id", "body"),
    [
        ("group", 1, {"groupId": "club"}),
        ("post", 3, {"postId": "vault_post"}),
        ("post", 3, {"postId": "club_post"}),
    ],
)
def test_subscribing_an_outsider_to_a_private_or_premium_group_is_400_user_role_id(
    api, people, kind, notification_id, body
):
    body = {key: getattr(people, value) for key, value in body.items()}
    status, answer = api.post(
        f"{base(people.outsider)}/{kind}/{notification_id}", people.root_admin, body
    )
    assert status == 400
    assert [e["key"] for e in answer["errors"]] == ["userRoleId"]
    assert answer["errors"][0]["value"] == "2"  # regular
    _, listed = listing(api, people, people.outsider, people.vault)
    assert listed["object"]["typePosts"] == []


def test_members_may_be_subscribed_to_their_private_group(api, people):
    status, _ = api.post(
        f"{base(people.gardener)}/post/3", people.root_admin, {"postId": people.vault_post}
    )
    assert status == 200
    status, _ = api.post(
        f"{base(people.outsider)}/group/1", people.root_admin, {"groupId": people.garden}
    )
    assert status == 200  # a public group needs no membership


@pytest.mark.parametrize(
    ("kind", "notification_id", "body", "key"),
    [
        ("group", 1, {"groupId": MISSING}, "groupId"),
        ("post", 3, {"postId": MISSING}, "postId"),
        ("author", 8, {"authorId": MISSING}, "authorId"),
    ],
)
def test_unknown_target_is_404_with_its_key(api, people, kind, notification_id, body, key):
    status, answer = api.post(
        f"{base(people.gardener)}/{kind}/{notification_id}", people.root_admin, body
    )
    assert status == 404 and answer["success"] is False
    assert answer["errors"][0]["key"] == key and answer["errors"][0]["value"] == MISSING


@pytest.mark.parametrize(
    "call",
    [
        lambda api, p: api.get(f"{base(MISSING)}?groupId={p.garden}", p.root_admin),
        lambda api, p: api.post(f"{base(MISSING)}/personal/4", p.root_admin, {}),
        lambda api, p: api.post(f"{base(MISSING)}/type-digest", p.root_admin, {"typeId": 1}),
    ],
)
def test_unknown_user_is_404_user_id(api, people, call):
    status, body = call(api, people)
    assert status == 404
    assert body["errors"][0]["key"] == "userId"


def test_list_of_unknown_or_missing_group_names_group_id(api, people):
    status, body = api.get(f"{base(people.gardener)}?groupId={MISSING}", people.root_admin)
    assert status == 404 and body["errors"][0]["key"] == "groupId"
    status, body = api.get(base(people.gardener), people.root_admin)
    assert status == 400 and [e["key"] for e in body["errors"]] == ["groupId"]


@pytest.mark.parametrize(
    ("who", "subject", "group", "expected"),
    [
        ("root_admin", "outsider", "garden", 200),
        ("garden_admin", "gardener", "garden", 200),
        # The garden administrator, but the user is not a member of the garden.
        ("garden_admin", "outsider", "garden", 403),
        # A member of the garden asking about the vault, which the caller does not administer.
        ("garden_admin", "gardener", "vault", 403),
        ("gardener", "gardener", "garden", 403),
        (None, "gardener", "garden", 401),
    ],
)
def test_list_needs_an_administrator_of_the_users_group(api, people, who, subject, group, expected):
    caller = getattr(people, who) if who else None
    status, body = api.get(
        f"{base(getattr(people, subject))}?groupId={getattr(people, group)}", caller
    )
    assert status == expected
    assert body["success"] is (expected == 200)


@pytest.mark.parametrize(
    ("who", "subject", "expected"),
    [
        ("root_admin", "outsider", 200),
        ("garden_admin", "gardener", 200),
        ("garden_admin", "outsider", 403),
        ("gardener", "gardener", 403),
        (None, "gardener", 401),
    ],
)
def test_digest_update_needs_an_administrator_of_a_users_group(api, people, who, subject, expected):
    caller = getattr(people, who) if who else None
    status, _ = api.post(f"{base(getattr(people, subject))}/type-digest", caller, {"typeId": 2})
    assert status == expected


@pytest.mark.parametrize(
    ("who", "expected"),
    [("root_admin", 200), ("garden_admin", 403), ("gardener", 403), (None, 401)],
)
def test_upserts_need_the_root_group_administrator(api, people, who, expected):
    caller = getattr(people, who) if who else None
    requests = [
        ("group/1", {"groupId": people.garden}),
        ("post/3", {"postId": people.garden_post}),
        ("author/8", {"authorId": people.author}),
        ("personal/4", {}),
    ]
    for tail, payload in requests:
        status, _ = api.post(f"{base(people.gardener)}/{tail}", caller, payload)
        assert status == expected, tail


def test_subscribers_of_a_group_post_and_author_are_found_by_index(api, people):
    from chalicelib.store.notifications import NotificationRepository

    api.post(
        f"{base(people.gardener)}/group/1",
        people.root_admin,
        {"groupId": people.garden, "emailAlertId": 1},
    )
    api.post(f"{base(people.author)}/group/1", people.root_admin, {"groupId": people.garden})
    api.post(f"{base(people.gardener)}/group/2", people.root_admin, {"groupId": people.garden})
    api.post(f"{base(people.gardener)}/post/3", people.root_admin, {"postId": people.garden_post})
    api.post(f"{base(people.outsider)}/author/8", people.root_admin, {"authorId": people.author})

    repository = NotificationRepository()
    new_posts = repository.subscribers("group", people.garden, 1)
    assert sorted(r.user_id for r in new_posts) == sorted([people.gardener, people.author])
    assert {r.user_id: int(r.email_alert_id) for r in new_posts}[people.gardener] == 1
    assert [r.user_id for r in repository.subscribers("group", people.garden, 2)] == [
        people.gardener
    ]
    assert [r.user_id for r in repository.subscribers("post", people.garden_post, 3)] == [
        people.gardener
    ]
    assert [r.user_id for r in repository.subscribers("author", people.author, 8)] == [
        people.outsider
    ]


def test_list_uses_no_scan(api, people, dynamo_counter):
    api.post(f"{base(people.gardener)}/post/3", people.root_admin, {"postId": people.garden_post})
    dynamo_counter.reset()
    status, _ = listing(api, people, people.gardener, people.garden)
    assert status == 200
    assert "Scan" not in dynamo_counter.requests
