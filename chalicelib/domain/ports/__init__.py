"""What the services need of the store and of outgoing mail: one Protocol per repository, and the
records it answers, by domain (people, content, mail, notify); no Protocol is defined twice.

The services are written against these, never against a PynamoDB class: `deps.py` passes the
DynamoDB repositories (chalicelib/store), the fast tests pass the in-memory ones
(tests/support/fakes.py, tests/support/mail_fakes.py), and the contract tests
(tests/store/test_repository_contract.py, tests/mail/test_mail_log_contract.py) hold both to the
same answers. A record Protocol names the attributes the rules read and write; the store's nullable
attributes are typed as such (`store.base.nullable`), so a record is checked against its Protocol.
A service that only reads a repository takes its narrower reader (`UserReader`, `PostReader`…).
"""
