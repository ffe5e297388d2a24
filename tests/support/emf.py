"""Reading the CloudWatch embedded-metric-format lines a job printed (chalicelib/metrics.py)."""

from __future__ import annotations

import json


def json_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def emf(lines: list[dict], metric: str) -> list[dict]:
    """The EMF lines among `lines` that carry `metric`."""
    return [line for line in lines if "_aws" in line and metric in line]


def value(line: dict, metric: str) -> float:
    """An EMF metric's value: Powertools writes the list of values of the flush, here one."""
    found = line[metric]
    if isinstance(found, list):
        [found] = found
    return float(found)
