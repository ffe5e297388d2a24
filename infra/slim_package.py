"""Drops from the Lambda zip what Agora never reads.

boto3 and botocore ship in the zip, at the versions in requirements.lock: the code runs with the
SDK it was tested with, not whichever older one the Lambda runtime bundles (whose DynamoDB, SES
or Secrets Manager behaviour the tests never saw). What makes that SDK large is botocore's
description of every AWS service (28 MB); only the services Agora calls are kept
(`SERVICES_CALLED`; tests/infra/test_package.py checks it against the code). Also dropped:
pycountry's translations (Agora answers in en_US), Swagger UI's files other than the two
the reference page serves, the parts of lxml that nothing Agora runs loads (its objectify and
sax extensions, its Schematron validator, and the Cython sources and C headers it ships for
building against it: 1.9 MB of the zip; inscriptis, feedgen and quotequail load lxml.etree and
lxml.html only, which tests/infra/test_package.py checks), and bytecode the build machine left beside Agora's code (`chalice
package` copies chalicelib's `__pycache__` as it finds it; Lambda's Python reads none of it).
It then refuses a zip with a module that imports what only `make run` and the tests use (moto,
werkzeug, playwright: their code lives in agora_local, outside the zip).

Usage: python -m infra.slim_package build/package/deployment.zip
"""

from __future__ import annotations

import os
import re
import sys
import zipfile
from pathlib import Path

# botocore service models kept: PynamoDB's DynamoDB, and every `client("…")` in chalicelib.
SERVICES_CALLED = (
    "codedeploy",  # the PreTraffic hook (chalicelib/jobs/pre_traffic.py), and its
    "lambda",  # call of the API's new version
    "dynamodb",
    "dynamodbstreams",
    "events",
    "kms",
    "s3",  # the inbound mail SES receiving stores (chalicelib/jobs/mail_push.py)
    "secretsmanager",
    "ses",
    "sqs",
    "sts",
)
NEVER_READ = (
    "pycountry/locales/",
    "lxml/includes/",
    "lxml/isoschematron/",
    "lxml/objectify.",
    "lxml/sax.",
)
LXML_BUILD_SOURCES = (".pyx", ".pxi", ".pxd", ".h")
SWAGGER_UI_SERVED = ("swagger-ui.css", "swagger-ui-bundle.js")


def dropped(name: str) -> bool:
    if name.startswith("__pycache__/") or "/__pycache__/" in name:
        return True
    if name.startswith("botocore/data/"):
        # Top-level files (endpoints, partitions, retry rules) stay; service folders only if used.
        rest = name.removeprefix("botocore/data/")
        return "/" in rest and rest.split("/", 1)[0] not in SERVICES_CALLED
    if name.startswith("swagger_ui_bundle/vendor/"):
        # The reference page serves two of Swagger UI's files (chalicelib/api/openapi.py).
        return name.rsplit("/", 1)[-1] not in SWAGGER_UI_SERVED
    if name.startswith("lxml/") and name.endswith(LXML_BUILD_SOURCES):
        return True
    return name.startswith(NEVER_READ)


# Libraries only make run (agora_local) and the tests use: Lambda has none of them installed.
LOCAL_ONLY = ("moto", "werkzeug", "playwright")
_LOCAL_ONLY_IMPORT = re.compile(
    rb"^[ \t]*(?:from|import)[ \t]+(?:" + b"|".join(n.encode() for n in LOCAL_ONLY) + rb")\b",
    re.MULTILINE,
)


def local_only_importers(path: Path) -> list[str]:
    """The modules in the zip that import moto, werkzeug or playwright (at the top or in a
    function)."""
    with zipfile.ZipFile(path) as archive:
        return [
            name
            for name in archive.namelist()
            if name.endswith(".py") and _LOCAL_ONLY_IMPORT.search(archive.read(name))
        ]


def slim(path: Path) -> tuple[int, int]:
    before = path.stat().st_size
    with zipfile.ZipFile(path) as source:
        if not any(dropped(name) for name in source.namelist()):
            return before, before  # infra.package built it without them: nothing to rewrite
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
    importers = local_only_importers(Path(sys.argv[1]))
    if importers:
        sys.exit(f"{sys.argv[1]}: modules import {', '.join(LOCAL_ONLY)}: {', '.join(importers)}")
