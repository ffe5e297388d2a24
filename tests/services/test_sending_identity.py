"""A group's letters and its settings read one document (issue 60: one input, two readers): the
identity the letters carry (services/notify/delivery.py `SendingIdentities`, which reads the
stored documents itself) is what the group email and newsletter settings answer, saved or not."""

from __future__ import annotations

from chalicelib import deps
from chalicelib.domain.letters import Identity
from chalicelib.schemas.group_email import GroupEmailUpdate
from chalicelib.schemas.newsletter import NewsletterSettingsUpdate


def test_the_identity_a_groups_letters_carry_is_what_its_settings_answer(community):
    c = community
    garden = c.group("garden")
    editor = c.user("garden-admin", {garden: "administrator"})
    c.load()
    group = deps.groups().get(garden)
    assert group is not None
    email, newsletter = deps.group_email_service(), deps.newsletter_service()

    def carried() -> Identity:
        return deps.sending_identities().of(group)  # a new one: it reads once per instance

    def answered() -> Identity:
        shown = email.get(group)
        return Identity(shown.name, shown.email, newsletter.get(group).disclaimer)

    # Never saved: the group's name, no address of its own, no disclaimer.
    assert carried() == answered() == Identity(group.name, "", "")
    saves = [
        {"email": "", "name": "Gardeners", "newsletterName": ""},
        {"email": "club@garden.example", "name": "Garden Club", "newsletterName": "News"},
    ]
    for sent in saves:
        email.update(group, GroupEmailUpdate.model_validate(sent), editor)
        assert carried() == answered()
        assert carried().name == sent["name"] and carried().address == sent["email"]
    disclaimer = NewsletterSettingsUpdate.model_validate({"disclaimer": "<p>Sent by us</p>"})
    newsletter.update(group, disclaimer, editor)
    assert carried() == answered()
    assert carried().disclaimer == "<p>Sent by us</p>"
