"""The reference page (CONTRACT §10 `GET /api/v1/en_US/docs`) and the document's `servers`."""

from __future__ import annotations

import re
from types import SimpleNamespace

from chalicelib.api.openapi import server_url


def test_docs_page_loads_only_files_served_by_the_api(client):
    response = client.http.get("/api/v1/en_US/docs")
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/html")
    page = response.body.decode()
    sources = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert sources and not any(s.startswith(("http:", "https:", "//")) for s in sources)
    assert 'url: "openapi.json"' in page
    for source in sources:
        asset = client.http.get("/api/v1/en_US/" + source.split("?")[0])
        assert asset.status_code == 200, source
        assert len(asset.body) > 100_000  # Swagger UI itself, not a stub


def test_an_unknown_docs_file_is_a_404_envelope(client):
    import json

    for name in ("index.html", "..%2Fsettings.py", "swagger-ui.js.map"):
        response = client.http.get(f"/api/v1/en_US/docs/{name}")
        assert response.status_code == 404
        assert json.loads(response.body)["success"] is False


def test_servers_is_the_root_locally(api):
    status, document = api.get("/api/v1/en_US/openapi.json")
    assert status == 200 and document["servers"] == [{"url": "/"}]


def request(path: str, resource_path: str) -> SimpleNamespace:
    return SimpleNamespace(
        path=resource_path, context={"path": path, "resourcePath": resource_path}
    )


def test_servers_is_the_stage_prefix_under_api_gateway():
    # API Gateway's requestContext: `path` as the client sent it, `resourcePath` without stage.
    served = "/api/v1/en_US/openapi.json"
    assert server_url(request("/api" + served, served)) == "/api"
    assert server_url(request("/community/api" + served, served)) == "/community/api"
    assert server_url(request(served, served)) == "/"
    assert server_url(SimpleNamespace(path=served, context={})) == "/"


def test_docs_page_with_a_trailing_slash_loads_the_same_files(client):
    from urllib.parse import urljoin

    page_url = "http://agora.test/api/v1/en_US/docs/"
    response = client.http.get("/api/v1/en_US/docs/")
    assert response.status_code == 200
    page = response.body.decode()
    base = re.search(r'<base href="([^"]+)">', page)
    here = urljoin(page_url, base.group(1)) if base else page_url
    sources = re.findall(
        r'(?:src|href)="([^"]+)"', page.replace(base.group(0), "") if base else page
    )
    assert sources
    for source in [*sources, "openapi.json"]:
        path = urljoin(here, source.split("?")[0]).removeprefix("http://agora.test")
        assert client.http.get(path).status_code == 200, path
