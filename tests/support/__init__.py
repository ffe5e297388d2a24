"""Helpers shared by test packages: where the repository and the shared mail corpus are."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def mail_corpus_dir() -> Path:
    """The Discourse mail corpus, read in place from shared/ next to the repository.

    It is GPL test data, so it is never copied into this repository; tests skip without it.
    """
    return REPO_ROOT.parent / "shared" / "mail-corpus" / "discourse"


def mail_corpus_files() -> list[Path]:
    folder = mail_corpus_dir()
    return sorted(folder.glob("*.eml")) if folder.is_dir() else []
