"""Domain rules per resource: no HTTP, no Chalice, no PynamoDB.

Each service takes its repositories in its constructor (tests pass fakes); `Service.default()` builds
it with the DynamoDB repositories of `chalicelib.store`.
"""
