"""PynamoDB models, table creation and the access patterns each list needs.

Every module in this package is imported by `chalicelib.store.tables.all_models()`, so a new model
only has to be decorated with `@register`.
"""
