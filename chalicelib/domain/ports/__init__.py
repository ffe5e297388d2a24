"""What the services need of the store and of outgoing mail: one Protocol per repository, by domain
(people, content, mail, notify, bus); no Protocol is defined twice. What a repository answers is
a frozen record of chalicelib/domain (groups.py, users.py, posts.py, events.py, comments.py,
subscriptions.py, …), never a Protocol that restates a stored item's attributes.

The services are written against these, never against a PynamoDB class: `deps.py` passes the
DynamoDB repositories (chalicelib/store), the fast tests pass the in-memory ones
(tests/support/fakes.py, tests/support/mail_fakes.py), and the contract tests
(tests/store/test_repository_contract.py, tests/mail/test_mail_log_contract.py) hold both to the
same answers. The store maps its items to those records where it hands them out, and a write
takes a record (or the record as read and as changed), so no rule holds an item it could change.
A service that only reads a repository takes its narrower reader (`UserReader`, `PostReader`…).
"""
