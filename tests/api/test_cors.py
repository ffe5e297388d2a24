"""CORS (AGORA_CORS_ORIGINS): preflight and simple requests answer the CORS headers for an
allowed origin and none for another; with no origins listed, same origin only."""

from __future__ import annotations

import pytest

ALLOWED = "https://app.example.org"
OTHER = "https://evil.example.net"
HOME = "/api/v1/en_US/system-page/home-page"


@pytest.fixture
def cors_origins(monkeypatch):
    from chalicelib.settings import reload_settings

    monkeypatch.setenv("AGORA_CORS_ORIGINS", f"{ALLOWED}, http://localhost:3000")
    reload_settings()
    yield
    monkeypatch.undo()
    reload_settings()


def preflight(client, origin: str, path: str = HOME, method: str = "PUT"):
    return client.http.request(
        "OPTIONS",
        path,
        headers={
            "Origin": origin,
            "Access-Control-Request-Method": method,
            "Access-Control-Request-Headers": "content-type, x-auth",
        },
    )


def cors_headers(response) -> dict[str, str]:
    return {k.lower(): v for k, v in response.headers.items() if k.lower().startswith("access-")}


def test_preflight_from_an_allowed_origin_names_it_methods_and_headers(cors_origins, client):
    response = preflight(client, ALLOWED)
    assert response.status_code == 204
    headers = cors_headers(response)
    assert headers["access-control-allow-origin"] == ALLOWED
    assert set(headers["access-control-allow-methods"].split(", ")) >= {"GET", "PUT", "OPTIONS"}
    allowed_headers = {h.lower() for h in headers["access-control-allow-headers"].split(", ")}
    assert {"content-type", "x-auth", "authorization"} <= allowed_headers
    assert "access-control-allow-credentials" not in headers
    assert response.headers["Vary"] == "Origin"


def test_preflight_on_a_path_with_parameters(cors_origins, client, community):
    community.load()
    path = f"/api/v1/en_US/post/list/{community.root}"
    response = preflight(client, ALLOWED, path=path, method="GET")
    assert response.status_code == 204
    assert cors_headers(response)["access-control-allow-origin"] == ALLOWED


def test_preflight_from_another_origin_has_no_cors_headers(cors_origins, client):
    response = preflight(client, OTHER)
    assert response.status_code == 204
    assert cors_headers(response) == {}


def test_simple_request_from_an_allowed_origin_may_be_read(cors_origins, api, community):
    community.load()
    admin = community.users[0]["id"]
    status, _ = api.get(HOME, admin, headers={"Origin": ALLOWED})
    assert status == 200
    response = api.client.http.get(HOME, headers={"Origin": ALLOWED})
    assert response.status_code == 401  # errors are readable by the allowed origin too
    assert cors_headers(response)["access-control-allow-origin"] == ALLOWED
    assert "Retry-After" in cors_headers(response)["access-control-expose-headers"]


def test_simple_request_from_another_origin_gets_no_cors_headers(cors_origins, api, community):
    community.load()
    response = api.client.http.get(
        HOME, headers={"Origin": OTHER, "X-Auth": _token(community.users[0]["id"])}
    )
    assert response.status_code == 200
    assert cors_headers(response) == {}


def test_no_origins_listed_means_same_origin_only(client, community):
    community.load()
    assert cors_headers(preflight(client, ALLOWED)) == {}
    response = client.http.get(HOME, headers={"Origin": ALLOWED})
    assert cors_headers(response) == {}


def test_an_origin_differing_only_in_port_or_scheme_is_another_origin(cors_origins, client):
    for origin in ("http://app.example.org", "https://app.example.org:8443", "null"):
        assert cors_headers(preflight(client, origin)) == {}


def _token(user_id: str) -> str:
    from chalicelib.auth import issue_token

    return issue_token(user_id)
