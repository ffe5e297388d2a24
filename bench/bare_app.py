"""The reference for cold start, request cost and load: a bare Chalice app with one route.

`bench.cold_start` copies this file into a project of its own (bench/work/bare-app/app.py), so that
it is imported, packaged and served exactly as Agora's `app.py` is.
"""

from chalice import Chalice

app = Chalice(app_name="bare")


@app.route("/")
def index():
    return {"hello": "world"}
