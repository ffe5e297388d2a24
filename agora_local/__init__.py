"""`make run`'s code: Agora on one machine (an embedded AWS made of moto, Chalice's local server,
the scheduler, the snapshot between runs, the demo's password hashes) and every patch of moto.

It lives outside chalicelib so that `make package` never puts it in the zip Lambda runs: nothing
in chalicelib imports it (tests/fast/test_architecture.py), and the zip holds no module that
imports moto, werkzeug or playwright (tests/infra/test_package.py).
"""
