"""`python -m infra.build --check` compares templates as documents: where PyYAML has no libyaml,
its pure-Python emitter folds long strings differently, and the committed files are still up to
date; a changed value is not."""

from __future__ import annotations

import pytest
import yaml

pytestmark = pytest.mark.fast


def test_a_template_folded_by_the_pure_python_emitter_is_up_to_date_and_a_changed_one_is_not():
    from infra import build
    from tests.support import REPO_ROOT

    committed = (REPO_ROOT / "infra" / "dev.yaml").read_text()
    header = committed.split("\n", 1)[0] + "\n"
    # template() loads the store's models under the stage's table names: put them back after.
    with build._store_restored():
        template = build.template("dev")
    pure_python = header + yaml.dump(template, Dumper=yaml.SafeDumper, sort_keys=False, width=100)
    assert pure_python != committed  # the folding differs...
    assert not build._differs(committed, pure_python, ".yaml")  # ...the document does not
    changed = pure_python.replace("agora-dev-", "agora-other-", 1)
    assert build._differs(committed, changed, ".yaml")
    assert build._differs("{}\n", "{ }\n", ".json")  # other files: their text
