"""Scheduled work. `app.py` declares the schedules; the CLI, `make run` and tests call these same
functions."""
