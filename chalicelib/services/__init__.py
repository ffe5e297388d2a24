"""Domain rules per resource: no HTTP, no Chalice, no PynamoDB.

Each service takes its repositories and collaborators in its constructor (tests pass fakes,
tests/support/fakes.py); `chalicelib/deps.py` builds it with the DynamoDB repositories of
`chalicelib.store`.
"""
