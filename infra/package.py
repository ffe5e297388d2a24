"""`make package`: `chalice package` for the Lambda runtime pinned in .chalice/config.json, with
exactly the locked dependencies.

Chalice takes the runtime from the Python that runs it (3.11 here would deploy python3.11) and
resolves requirements.txt itself (top-level pins only; for another Python it falls back to
building sdists with the local compiler). Instead, this installs requirements.lock (every package,
every hash) for the pinned runtime's interpreter and Linux platform with uv, checks that every
compiled module is built for that Python, runs Chalice with that runtime and no requirements of
its own, and adds the installed packages to the zip.

    python -m infra.package [--arch arm64] [--template-only] --stage dev \
        --merge-template infra/dev.yaml build/package

`--arch` (x86_64 or arm64, `make package ARCH=…`) picks the functions' architecture and the lock
built for it: requirements.lock for x86_64, requirements-arm64.lock for arm64 (Graviton, about
20% cheaper per GB-second), each installed from its platform's wheels only. The default stays
x86_64 until an arm64 deploy has run in a real account: the tests, moto and every machine here
are x86_64, so the arm64 zip is checked for its wheels' platform but never executed here.

The packaged template then calls the API's alias, not the function (infra.rollout).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
ARCHITECTURES = ("x86_64", "arm64")
LOCKS = {"x86_64": ROOT / "requirements.lock", "arm64": ROOT / "requirements-arm64.lock"}
# The machine name in wheel tags and in compiled modules' file names.
MACHINES = {"x86_64": "x86_64", "arm64": "aarch64"}
BUILD = ROOT / "build"
# Lambda's Amazon Linux 2023 has glibc 2.34: uv takes every manylinux wheel up to that.
GLIBC = "manylinux_2_34"
# uv's own bookkeeping in the folder it installs into, never shipped.
INSTALL_RECORDS = (".installed-from", ".lock")


NOT_SHIPPED = ("bin/", "__pycache__/")


def pinned_runtime() -> str:
    config = json.loads((ROOT / ".chalice" / "config.json").read_text())
    runtime = config.get("lambda_runtime", "")
    if not runtime.startswith("python3."):
        raise SystemExit(".chalice/config.json: lambda_runtime must name a python3.x runtime")
    return str(runtime)


def install_dependencies(runtime: str, arch: str = "x86_64") -> Path:
    import hashlib

    lock = LOCKS[arch]
    if not lock.exists():
        raise SystemExit(f"{lock.name} is missing: run `make lock`")
    version = runtime.removeprefix("python")
    # One folder per architecture, so that switching does not reinstall the other.
    dependencies = BUILD / ("lambda-dependencies" + ("" if arch == "x86_64" else f"-{arch}"))
    # Installed already for this lock and runtime: the same bytes, by the lock's hashes.
    stamp = dependencies / ".installed-from"
    wanted = f"{runtime} {arch} " + hashlib.sha256(lock.read_bytes()).hexdigest()
    if stamp.exists() and stamp.read_text() == wanted:
        return dependencies
    # The venv's uv (requirements-dev.lock), not pip: the same files in under half the time.
    uv = Path(sys.executable).with_name("uv")
    if not uv.exists():
        raise SystemExit(f"{uv} is missing: `make` installs it in the venv")
    shutil.rmtree(dependencies, ignore_errors=True)
    command = [str(uv), "pip", "install", "--quiet", "--target", str(dependencies)]
    command += ["--python", sys.executable, "--no-deps", "--require-hashes", "-r", str(lock)]
    command += ["--python-version", version, "--python-platform", f"{MACHINES[arch]}-{GLIBC}"]
    # Binary wheels for the platform; a pure-Python sdist (dkimpy, feedgen and quotequail publish
    # no wheel) is built here, and anything compiled is checked below. Copies, not links: uv's
    # cache (in the home folder) may be on another file system than build/.
    # The machine's certificates, as pip trusts them, not the set uv carries (Makefile UV_INSTALL).
    uv_settings = {"UV_LINK_MODE": "copy", "UV_NATIVE_TLS": "1"}
    subprocess.run(command, check=True, env={**os.environ, **uv_settings})
    tag = "cpython-" + version.replace(".", "") + f"-{MACHINES[arch]}-linux-gnu.so"
    wrong = [
        str(path.relative_to(dependencies))
        for path in dependencies.rglob("*.so")
        if not path.name.endswith((tag, ".abi3.so"))
    ]
    if wrong:
        raise SystemExit(f"built for another Python or machine than {runtime} on {arch}: "
                         + ", ".join(wrong))  # fmt: skip
    stamp.write_text(wanted)
    return dependencies


def add_to_zip(zip_path: Path, directory: Path) -> None:
    """chalice's zip (Agora's code) with the dependencies added, written once into a new zip
    without what `make package`'s next step (infra.slim_package) drops: compressing botocore's
    descriptions of the services Agora never calls, only for the next step to uncompress and
    compress everything again without them, took 5 of the package's 17 s."""
    from infra.slim_package import dropped

    building = zip_path.with_suffix(".building.zip")
    with (
        zipfile.ZipFile(zip_path) as code,
        zipfile.ZipFile(building, "w", zipfile.ZIP_DEFLATED) as archive,
    ):
        present = set(code.namelist())
        for info in code.infolist():
            if not dropped(info.filename):
                archive.writestr(info, code.read(info.filename))
        for path in sorted(directory.rglob("*")):
            name = path.relative_to(directory).as_posix()
            if path.is_dir() or name in present or name.startswith(NOT_SHIPPED):
                continue
            if "/__pycache__/" in name or name in INSTALL_RECORDS or dropped(name):
                continue
            archive.write(path, name)
    os.replace(building, zip_path)


def packaged_template(out_dir: Path) -> Path:
    for name in ("sam.yaml", "sam.json"):
        if (out_dir / name).exists():
            return out_dir / name
    raise SystemExit(f"chalice package wrote no template in {out_dir}")


def call_the_alias(out_dir: Path) -> None:
    """The API's integrations and permission name the function's alias (infra.rollout)."""
    from infra import yaml_text
    from infra.rollout import point_api_at_alias

    path = packaged_template(out_dir)
    template = yaml_text.load(path.read_text())
    point_api_at_alias(template)
    if path.suffix == ".json":
        path.write_text(json.dumps(template, indent=2) + "\n")
    else:
        path.write_text(yaml_text.dump(template, sort_keys=False, width=100))


def split_arch(argv: list[str]) -> tuple[str, list[str]]:
    """`--arch X` (ours) out of the arguments handed to `chalice package`."""
    if "--arch" not in argv:
        return "x86_64", argv
    at = argv.index("--arch")
    arch = argv[at + 1] if at + 1 < len(argv) else ""
    if arch not in ARCHITECTURES:
        raise SystemExit(f"--arch must be one of {', '.join(ARCHITECTURES)} (got {arch!r})")
    return arch, argv[:at] + argv[at + 2 :]


def read_and_write_templates_with_libyaml() -> None:
    """`chalice package` reads the merged template and writes the packaged one with PyYAML's
    pure-Python parser and emitter (2 of its 3 s); the C ones give the same documents
    (infra/yaml_text.py). Its `!Ref`-style tags still become intrinsic functions."""
    import yaml
    from chalice.package import YAMLTemplateSerializer

    from infra import yaml_text

    if not hasattr(yaml, "CSafeLoader"):
        return  # no libyaml: chalice's own pure-Python reading and writing

    def load_template(self: YAMLTemplateSerializer, file_contents: str, filename: str = "") -> Any:
        class TemplateLoader(yaml.CSafeLoader):  # chalice's tags, for this loader alone
            pass

        TemplateLoader.add_multi_constructor("!", self._custom_sam_instrinsics)
        try:
            return yaml.load(file_contents, Loader=TemplateLoader)  # noqa: S506 (a safe loader)
        except yaml.scanner.ScannerError:
            raise RuntimeError(f"Expected {filename} to be valid YAML template.") from None

    def serialize_template(_self: YAMLTemplateSerializer, contents: dict[str, Any]) -> str:
        return yaml_text.dump(contents, allow_unicode=True)

    YAMLTemplateSerializer.load_template = load_template  # type: ignore[method-assign]
    YAMLTemplateSerializer.serialize_template = serialize_template  # type: ignore[method-assign,assignment]


def main(argv: list[str]) -> int:
    from chalice.cli import main as chalice_main
    from chalice.config import Config
    from chalice.deploy.packager import BaseLambdaDeploymentPackager

    arch, argv = split_arch(argv)
    # --template-only: the packaged template as make package writes it, beside a zip of Agora's
    # code alone (2 s instead of installing and adding the dependencies): what the rehearsals of
    # a deploy read (tests/infra/test_restore.py).
    template_only = "--template-only" in argv
    argv = [arg for arg in argv if arg != "--template-only"]
    runtime = pinned_runtime()
    dependencies = None if template_only else install_dependencies(runtime, arch)
    # Chalice has no option for these; each is read through these methods only.
    Config.lambda_python_version = property(lambda _self: runtime)  # type: ignore[assignment,method-assign]
    Config.lambda_architecture = property(lambda _self: arch)  # type: ignore[assignment,method-assign]
    BaseLambdaDeploymentPackager._get_requirements_filename = (  # type: ignore[method-assign]
        lambda self, project_dir: self._osutils.joinpath(project_dir, "no-such-requirements.txt")
    )
    read_and_write_templates_with_libyaml()
    sys.argv = ["chalice", "package", *argv]
    try:
        chalice_main()
    except SystemExit as done:
        if done.code not in (0, None):
            raise
    if dependencies is not None:
        add_to_zip(Path(argv[-1]) / "deployment.zip", dependencies)
    call_the_alias(Path(argv[-1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
