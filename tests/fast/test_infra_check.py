"""`python -m infra.build --check` compares templates as documents: where PyYAML has no libyaml,
its pure-Python emitter folds long strings differently, and the committed files are still up to
date; a changed value is not."""

from __future__ import annotations

import pytest
import yaml


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


def test_chalice_reads_and_writes_templates_through_libyaml_as_through_pyyaml(monkeypatch):
    """infra.package has `chalice package` parse and emit with libyaml: the same documents, its
    `!Ref`-style tags still made intrinsic functions."""
    from chalice.package import YAMLTemplateSerializer

    from infra.package import read_and_write_templates_with_libyaml

    tagged = (
        "A: !Ref Table\nB: !GetAtt Function.Arn\nC: !Sub ['${A}', {A: 1}]\nD: !If [c, 1, 2]\n"
        "E: {Ref: Other}\nF: [1, 'é', null]\n"
    )
    written = {"Resources": {"T": {"Properties": {"Name": "é", "List": [1, None, True]}}}}
    serializer = YAMLTemplateSerializer()
    read_by_pyyaml = serializer.load_template(tagged)
    written_by_pyyaml = serializer.serialize_template(written)
    # Put chalice's own methods back after the test.
    for name in ("load_template", "serialize_template"):
        monkeypatch.setattr(YAMLTemplateSerializer, name, getattr(YAMLTemplateSerializer, name))
    read_and_write_templates_with_libyaml()

    assert serializer.load_template(tagged) == read_by_pyyaml
    assert read_by_pyyaml["A"] == {"Ref": "Table"}
    assert read_by_pyyaml["B"] == {"Fn::GetAtt": ["Function", "Arn"]}
    assert serializer.serialize_template(written) == written_by_pyyaml
    with pytest.raises(RuntimeError, match="valid YAML template"):
        serializer.load_template("a: 'unclosed", "bad.yaml")
