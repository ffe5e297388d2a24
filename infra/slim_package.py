"""Drops from the Lambda zip what the Lambda Python runtime already provides.

The runtime ships boto3 and botocore (with s3transfer, jmespath, dateutil, urllib3, six), so
packaging them only makes cold starts slower; pycountry's translations are never read (Agora
answers in en_US), nor are Swagger UI's files other than the two the reference page serves. Usage: python -m infra.slim_package build/package/deployment.zip
"""

from __future__ import annotations

import os
import sys
import zipfile
from pathlib import Path

PROVIDED_BY_RUNTIME = ("boto3", "botocore", "s3transfer", "jmespath", "dateutil", "urllib3", "six")
NEVER_READ = ("pycountry/locales/",)
SWAGGER_UI_SERVED = ("swagger-ui.css", "swagger-ui-bundle.js")


def dropped(name: str) -> bool:
    top = name.split("/", 1)[0]
    package = top.split("-", 1)[0].split(".", 1)[0] if top.endswith((".dist-info", ".py")) else top
    if package in PROVIDED_BY_RUNTIME or top in ("python_dateutil", "six.py"):
        return True
    if name.startswith("swagger_ui_bundle/vendor/"):
        # The reference page serves two of Swagger UI's files (chalicelib/api/openapi.py).
        return name.rsplit("/", 1)[-1] not in SWAGGER_UI_SERVED
    return name.startswith(NEVER_READ)


def slim(path: Path) -> tuple[int, int]:
    before = path.stat().st_size
    slimmed = path.with_suffix(".slim.zip")
    with (
        zipfile.ZipFile(path) as source,
        zipfile.ZipFile(slimmed, "w", zipfile.ZIP_DEFLATED) as target,
    ):
        for info in source.infolist():
            if not dropped(info.filename):
                target.writestr(info, source.read(info.filename))
    os.replace(slimmed, path)
    return before, path.stat().st_size


if __name__ == "__main__":
    before, after = slim(Path(sys.argv[1]))
    print(f"{sys.argv[1]}: {before / 1e6:.1f} MB -> {after / 1e6:.1f} MB")
