"""The two pipelines as a picture for the manual (docs/architecture.md, docs/img/pipelines.svg),
drawn from the code: the imports of chalicelib, read with `ast` (nothing is imported), collapsed to
boxes.

- Mail in: the POP3 poll (jobs/mail_poll.py) and the push door (jobs/mail_push.py) hand a mail to
  services/mail_in/, which reads it with mail/ and stores a post or a comment and its outbox record
  with store/.
- Notify: the outbox drain (jobs/outbox.py), the fan-out queue (jobs/notify.py) and the daily
  digests (jobs/digests.py) hand their work to services/notify/, which sends through
  mail/outgoing.py (SES).

A box is a folder (or a file that stands apart, a job or mail/outgoing.py): a module belongs to
the box of the longest prefix that names it, so a module moved or split inside a folder leaves
the picture as it was; only a new import between two boxes changes it. An arrow says that a
module of one box imports a module of the other (at the top, in a function or for types only:
dashed when every such import is under `if TYPE_CHECKING:`); one arrow each way at most. The
modules every layer shares (settings, clock, logs, …) are named under the picture, not drawn.

    PYTHONPATH=. .venv/bin/python -m bench.architecture      # redraws docs/img/pipelines.svg

tests/fast/test_pipelines_picture.py holds the picture to the code and checks the rules it shows.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from xml.sax.saxutils import escape

REPO_ROOT = Path(__file__).resolve().parent.parent
PACKAGE = REPO_ROOT / "chalicelib"
PICTURE = REPO_ROOT / "docs" / "img" / "pipelines.svg"
COMMAND = "PYTHONPATH=. .venv/bin/python -m bench.architecture"

MAIL_IN, NOTIFY, SHARED = "mail in", "notify", "shared"
COLOURS = {MAIL_IN: "#1f4e79", NOTIFY: "#c55a11", SHARED: "#595959"}
FILLS = {MAIL_IN: "#e8eff7", NOTIFY: "#fbeee6", SHARED: "#f2f2f2"}


@dataclass(frozen=True)
class Box:
    key: str
    label: str
    note: str
    modules: tuple[str, ...]  # the dotted names it holds, each with everything below it
    row: int
    kind: str
    at: float = 0.5  # its centre, a share of the picture's width (rows keep corridors free)
    wide: bool = False  # as wide as the picture (the bottom row, which every box imports)


# Top to bottom, and left to right in each row: mail in on the left, notify on the right. Below
# the jobs, the boxes leave two corridors free (about a third and two thirds of the width), where
# the arrows that pass a row run down.
BOXES = (
    Box("poll", "jobs/mail_poll.py", "the POP3 poll", ("chalicelib.jobs.mail_poll",), 0, MAIL_IN, 0.09),
    Box("push", "jobs/mail_push.py", "mail pushed in", ("chalicelib.jobs.mail_push",), 0, MAIL_IN, 0.3),
    Box("outbox", "jobs/outbox.py", "the outbox drain", ("chalicelib.jobs.outbox",), 0, NOTIFY, 0.52),
    Box("notify_job", "jobs/notify.py", "the fan-out queue", ("chalicelib.jobs.notify",), 0, NOTIFY, 0.72),
    Box("digests_job", "jobs/digests.py", "the daily digests", ("chalicelib.jobs.digests",), 0, NOTIFY, 0.91),
    Box("jobs_base", "jobs/base.py", "what every job shares", ("chalicelib.jobs.base",), 1, SHARED, 0.17),
    Box("deps", "deps.py", "the composition root", ("chalicelib.deps",), 1, SHARED, 0.5),
    Box("mail_in", "services/mail_in/", "the mail-in pipeline", ("chalicelib.services.mail_in", "chalicelib.services.inbound"), 2, MAIL_IN, 0.16),
    Box("services", "services/", "the other services", ("chalicelib.services",), 2, SHARED, 0.5),
    Box("notify", "services/notify/", "the notify pipeline", ("chalicelib.services.notify",), 2, NOTIFY, 0.84),
    Box("mail", "mail/", "POP3, MIME, threads", ("chalicelib.mail",), 3, SHARED, 0.16),
    Box("store", "store/", "DynamoDB, the outbox", ("chalicelib.store",), 3, SHARED, 0.5),
    Box("outgoing", "mail/outgoing.py", "sending: SES, one rate", ("chalicelib.mail.outgoing",), 3, SHARED, 0.84),
    Box("domain", "domain/", "records, statuses, domain events, ports", ("chalicelib.domain",), 4, SHARED, wide=True),
)  # fmt: skip


# --- the imports ----------------------------------------------------------------------------------


def module_name(path: Path, root: Path = REPO_ROOT) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(tree: ast.Module) -> dict[str, bool]:
    """Every dotted name the module imports (a module, or `module.name` of a from-import) → whether
    it is imported for types only (under `if TYPE_CHECKING:`), at the top or in a function."""
    found: dict[str, bool] = {}

    def note(name: str, typing_only: bool) -> None:
        found[name] = found.get(name, True) and typing_only

    def visit(node: ast.AST, typing_only: bool) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for statement in node.body:
                visit(statement, True)
            for statement in node.orelse:
                visit(statement, typing_only)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                note(alias.name, typing_only)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            note(node.module, typing_only)
            for alias in node.names:
                note(f"{node.module}.{alias.name}", typing_only)
        for child in ast.iter_child_nodes(node):
            visit(child, typing_only)

    visit(tree, False)
    return found


def module_graph(package: Path = PACKAGE) -> dict[str, dict[str, bool]]:
    """Each module of the package → the package's modules it imports → types only or not."""
    paths = {module_name(p, package.parent): p for p in sorted(package.rglob("*.py"))}

    def own(name: str) -> str | None:
        while name and name not in paths:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, dict[str, bool]] = {}
    for name, path in paths.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        targets: dict[str, bool] = {}
        for imported, typing_only in imports_of(tree).items():
            target = own(imported) if imported.startswith(package.name) else None
            if target is not None and target not in (name, package.name):
                targets[target] = targets.get(target, True) and typing_only
        graph[name] = targets
    return graph


# --- the boxes and the arrows ---------------------------------------------------------------------


def box_of(module: str, boxes: Iterable[Box] = BOXES) -> Box | None:
    """The box whose longest prefix names the module (services/notify/ before services/)."""
    best: tuple[int, Box] | None = None
    for box in boxes:
        for prefix in box.modules:
            if (module == prefix or module.startswith(prefix + ".")) and (
                best is None or len(prefix) > best[0]
            ):
                best = (len(prefix), box)
    return best[1] if best else None


@dataclass(frozen=True)
class Arrow:
    source: Box
    target: Box
    typing_only: bool  # every import behind it is for types only


def arrows(graph: Mapping[str, Mapping[str, bool]], boxes: tuple[Box, ...] = BOXES) -> list[Arrow]:
    """One arrow per (box, box) a module of the first imports a module of the second, sorted."""
    found: dict[tuple[Box, Box], bool] = {}
    for module, targets in graph.items():
        source = box_of(module, boxes)
        for target_module, typing_only in targets.items():
            target = box_of(target_module, boxes)
            if source is None or target is None or target == source:
                continue
            found[(source, target)] = found.get((source, target), True) and typing_only
    order = {box.key: n for n, box in enumerate(boxes)}
    pairs = sorted(found, key=lambda pair: (order[pair[0].key], order[pair[1].key]))
    return [Arrow(source, target, found[(source, target)]) for source, target in pairs]


def not_drawn(graph: Mapping[str, Mapping[str, bool]], boxes: tuple[Box, ...] = BOXES) -> list[str]:
    """What the boxes import outside every box, by top-level module or folder (`schemas/`)."""
    names = set()
    for module, targets in graph.items():
        if box_of(module, boxes) is None:
            continue
        for target in targets:
            if box_of(target, boxes) is None:
                parts = target.split(".")[1:]
                names.add(parts[0] + ("/" if len(parts) > 1 or _is_folder(target) else ""))
    return sorted(names)


def _is_folder(module: str) -> bool:
    return (REPO_ROOT.joinpath(*module.split(".")) / "__init__.py").exists()


# --- the drawing ----------------------------------------------------------------------------------

MONO = "DejaVu Sans Mono, Menlo, Consolas, monospace"
LABEL_PX, NOTE_PX = 13, 11  # a monospace character is 0.6 of its size wide
BOX_H, BOX_GAP, PAD = 46, 28, 16
LANE = 7  # between two arrows running side by side
CONTENT_W = 900  # the boxes' width, the gutters at its sides apart
TITLE_H = 34


def _width(box: Box) -> float:
    return max(len(box.label) * LABEL_PX, len(box.note) * NOTE_PX) * 0.6 + 20


@dataclass
class _Place:
    x: float
    y: float = 0.0
    w: float = 0.0


def _row_places(members: list[Box], content: float) -> list[_Place]:
    """The row's boxes centred where they ask (`at`), pushed apart where they would touch; packed
    and centred if that runs off the picture."""
    places: list[_Place] = []
    right: float = -BOX_GAP
    for box in members:
        width = content if box.wide else _width(box)
        left = max(box.at * content - width / 2, right + BOX_GAP, 0.0)
        places.append(_Place(left, w=width))
        right = left + width
    if right <= content:
        return places
    left = (content - sum(p.w for p in places) - BOX_GAP * (len(places) - 1)) / 2
    for place in places:
        place.x, left = left, left + place.w + BOX_GAP
    return places


def _columns(boxes: tuple[Box, ...]) -> tuple[dict[str, _Place], float]:
    """Each box's left edge and width; the content's width, at least CONTENT_W."""
    rows: dict[int, list[Box]] = defaultdict(list)
    for box in boxes:
        rows[box.row].append(box)
    packed = [
        sum(_width(b) for b in members) + BOX_GAP * (len(members) + 1) for members in rows.values()
    ]
    content = max(CONTENT_W, *packed)
    places = {}
    for members in rows.values():
        for box, place in zip(members, _row_places(members, content), strict=True):
            places[box.key] = place
    return places, content


@dataclass
class _Route:
    """An arrow's way: out of its source's side (bottom when it goes down or sideways), along the
    channel beside that side, down a gutter at the picture's edge when the rows are not adjacent,
    along the channel beside its target and in."""

    arrow: Arrow
    out_channel: int
    in_channel: int
    out_x: float = 0.0
    in_x: float = 0.0
    down_x: float = 0.0  # where it runs down beside the rows between, when it must
    out_lane: int = 0
    in_lane: int = 0

    @property
    def enters_top(self) -> bool:
        return self.arrow.target.row > self.arrow.source.row

    @property
    def leaves_bottom(self) -> bool:
        return self.arrow.target.row >= self.arrow.source.row


def _channels(arrow: Arrow) -> tuple[int, int]:
    """Channel n runs above row n; the one below row n is n + 1."""
    source, target = arrow.source.row, arrow.target.row
    out = source + 1 if target >= source else source
    into = target if target > source else target + 1
    return out, into


def _ports(routes: list[_Route], places: dict[str, _Place]) -> None:
    """Spread the ends on each side of a box, ordered by where the other end is."""
    ends: dict[tuple[str, str], list[tuple[float, int, _Route, str]]] = defaultdict(list)
    for n, route in enumerate(routes):
        source, target = route.arrow.source.key, route.arrow.target.key
        far_target = places[target].x + places[target].w / 2
        far_source = places[source].x + places[source].w / 2
        ends[(source, "bottom" if route.leaves_bottom else "top")].append(
            (far_target, n, route, "out")
        )
        ends[(target, "top" if route.enters_top else "bottom")].append((far_source, n, route, "in"))
    for (key, _), members in sorted(ends.items()):
        place = places[key]
        members.sort(key=lambda item: (item[0], item[1]))
        for i, (_, _, route, end) in enumerate(members):
            x = place.x + place.w * (i + 1) / (len(members) + 1)
            if end == "out":
                route.out_x = x
            else:
                route.in_x = x


def _lanes(intervals: list[tuple[float, float, int]]) -> dict[int, int]:
    """The first free lane for each (low, high, id), in order of their low ends (interval
    colouring: the fewest lanes, none shared by two overlapping runs)."""
    free_from: list[float] = []
    chosen = {}
    for low, high, ident in sorted(intervals):
        lane = next((n for n, end in enumerate(free_from) if end < low), len(free_from))
        if lane == len(free_from):
            free_from.append(high)
        else:
            free_from[lane] = high
        chosen[ident] = lane
    return chosen


GAP = 8  # between a box and an arrow running down beside it


def _free(
    rows: range, boxes: tuple[Box, ...], places: dict[str, _Place]
) -> list[tuple[float, float]]:
    """Where an arrow may run down through these rows: between and beside their boxes."""
    taken = sorted(
        (places[b.key].x - GAP, places[b.key].x + places[b.key].w + GAP)
        for b in boxes
        if b.row in rows
    )
    free, low = [], -1e9
    for start, end in taken:
        if start > low:
            free.append((low, start))
        low = max(low, end)
    free.append((low, 1e9))
    return free


def _down_x(
    route: _Route, free: list[tuple[float, float]], placed: list[tuple[float, int, int]]
) -> float:
    """The x of the arrow's run down its gutter: no farther than it must go, clear of the boxes it
    passes and a lane away from every other run down beside the same rows."""
    low_channel, high_channel = sorted((route.out_channel, route.in_channel))
    ideal = min(max(route.out_x, min(route.out_x, route.in_x)), max(route.out_x, route.in_x))
    candidates: set[float] = set()
    for a, b in free:
        centre = min(max(ideal, a), b)
        candidates.update(centre + k * LANE for k in range(-60, 61))
    clashes = [x for x, low, high in placed if low <= high_channel and low_channel <= high]

    def fits(x: float) -> bool:
        return any(a <= x <= b for a, b in free) and all(abs(x - c) >= LANE for c in clashes)

    def cost(x: float) -> tuple[float, float, float]:
        return (abs(route.out_x - x) + abs(x - route.in_x), abs(x - route.out_x), x)

    return min((x for x in candidates if fits(x)), key=cost)


def _gutters(routes: list[_Route], boxes: tuple[Box, ...], places: dict[str, _Place]) -> None:
    placed: list[tuple[float, int, int]] = []
    for route in routes:
        if route.out_channel == route.in_channel:
            continue
        low, high = sorted((route.out_channel, route.in_channel))
        route.down_x = _down_x(route, _free(range(low, high), boxes, places), placed)
        placed.append((route.down_x, low, high))


def _plan(
    boxes: tuple[Box, ...], drawn: list[Arrow]
) -> tuple[dict[str, _Place], list[_Route], float]:
    """The boxes' places and the arrows' ways, x only; the picture's width."""
    places, content = _columns(boxes)
    routes = [_Route(arrow, *_channels(arrow)) for arrow in drawn]
    _ports(routes, places)
    _gutters(routes, boxes, places)
    xs = [0.0, content, *(r.down_x for r in routes if r.out_channel != r.in_channel)]
    shift = PAD - min(xs)
    for place in places.values():
        place.x += shift
    for route in routes:
        route.out_x += shift
        route.in_x += shift
        route.down_x += shift
    return places, routes, max(xs) + shift + PAD


@dataclass(frozen=True)
class _Run:
    """An arrow's stretch along one channel, and where it meets the channel's sides: an end
    whose stub goes up (to a box above, or a gutter coming from above) or down."""

    low: float
    high: float
    ident: int
    ends: tuple[tuple[float, bool], ...]  # (x, up)

    def spans(self, x: float) -> bool:
        return self.low < x < self.high

    def overlaps(self, other: _Run) -> bool:
        return self.low <= other.high and other.low <= self.high


def _crossings(above: _Run, below: _Run) -> int:
    """The stubs that cross a run when `above` runs nearer the upper row than `below`."""
    return sum(below.spans(x) for x, up in above.ends if not up) + sum(
        above.spans(x) for x, up in below.ends if up
    )


def _ordered(runs: list[_Run]) -> list[_Run]:
    """Top to bottom with few crossings: by how many runs each would rather be above, then
    neighbours swapped while that crosses less."""
    pairs = [(a, b) for a in runs for b in runs if a is not b and a.overlaps(b)]
    wins = {r.ident: 0 for r in runs}
    for a, b in pairs:
        wins[a.ident] += _crossings(a, b) < _crossings(b, a)
    order = sorted(runs, key=lambda r: (-wins[r.ident], r.low, r.ident))
    for _ in range(len(order)):
        swapped = False
        for n in range(len(order) - 1):
            a, b = order[n], order[n + 1]
            if a.overlaps(b) and _crossings(b, a) < _crossings(a, b):
                order[n], order[n + 1] = b, a
                swapped = True
        if not swapped:
            break
    return order


def _stacked(runs: list[_Run]) -> dict[int, int]:
    """Each run's lane: below every run before it in the order that it overlaps."""
    lanes: dict[int, int] = {}
    placed: list[_Run] = []
    for run in _ordered(runs):
        lanes[run.ident] = 1 + max((lanes[p.ident] for p in placed if p.overlaps(run)), default=-1)
        placed.append(run)
    return lanes


def _runs(route: _Route, n: int) -> list[tuple[int, _Run]]:
    """(channel, run) of the arrow's stretches: one when it stays in one channel, else two,
    joined by its gutter."""
    source_up = route.leaves_bottom  # the source sits above the channel it leaves by
    target_up = not route.enters_top
    if route.out_channel == route.in_channel:
        ends = ((route.out_x, source_up), (route.in_x, target_up))
        low, high = sorted((route.out_x, route.in_x))
        return [(route.out_channel, _Run(low - 1, high + 1, 2 * n, ends))]
    going_down = route.in_channel > route.out_channel
    out_ends = ((route.out_x, source_up), (route.down_x, not going_down))
    in_ends = ((route.down_x, going_down), (route.in_x, target_up))
    found = []
    for channel, ends, ident in (
        (route.out_channel, out_ends, 2 * n),
        (route.in_channel, in_ends, 2 * n + 1),
    ):
        low, high = sorted(x for x, _ in ends)
        found.append((channel, _Run(low - 1, high + 1, ident, ends)))
    return found


def _channel_lanes(routes: list[_Route]) -> dict[int, int]:
    """Give each horizontal run a lane of its channel; the number of lanes in each channel."""
    runs: dict[int, list[_Run]] = defaultdict(list)
    for n, route in enumerate(routes):
        for channel, run in _runs(route, n):
            runs[channel].append(run)
    counts = {}
    for channel, members in sorted(runs.items()):
        chosen = _stacked(members)
        for ident, lane in chosen.items():
            route = routes[ident // 2]
            if ident % 2 == 0:
                route.out_lane = lane
            else:
                route.in_lane = lane
        counts[channel] = max(chosen.values()) + 1
    return counts


def _rows_y(
    boxes: tuple[Box, ...], places: dict[str, _Place], counts: dict[int, int]
) -> dict[int, float]:
    """The top of each channel; boxes placed between them."""
    last = max(box.row for box in boxes)
    tops = {}
    y = float(TITLE_H)
    for row in range(last + 2):
        tops[row] = y
        y += (counts.get(row, 0) + 1) * LANE
        if row <= last:
            for box in boxes:
                if box.row == row:
                    places[box.key].y = y
            y += BOX_H
    return tops


def _points(
    route: _Route, places: dict[str, _Place], tops: dict[int, float]
) -> list[tuple[float, float]]:
    source, target = places[route.arrow.source.key], places[route.arrow.target.key]
    start_y = source.y + BOX_H if route.leaves_bottom else source.y
    end_y = target.y if route.enters_top else target.y + BOX_H
    out_y = tops[route.out_channel] + LANE * (route.out_lane + 1)
    if route.out_channel == route.in_channel:
        return [
            (route.out_x, start_y),
            (route.out_x, out_y),
            (route.in_x, out_y),
            (route.in_x, end_y),
        ]
    gutter = route.down_x
    in_y = tops[route.in_channel] + LANE * (route.in_lane + 1)
    return [
        (route.out_x, start_y),
        (route.out_x, out_y),
        (gutter, out_y),
        (gutter, in_y),
        (route.in_x, in_y),
        (route.in_x, end_y),
    ]


def _number(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def _box_svg(box: Box, place: _Place) -> list[str]:
    centre = place.x + place.w / 2
    return [
        f'  <g id="box-{box.key}">',
        f'    <rect x="{_number(place.x)}" y="{_number(place.y)}" width="{_number(place.w)}" height="{BOX_H}" rx="6" '
        f'fill="{FILLS[box.kind]}" stroke="{COLOURS[box.kind]}" stroke-width="1.5"/>',
        f'    <text x="{_number(centre)}" y="{_number(place.y + 20)}" font-size="{LABEL_PX}" font-weight="bold" '
        f'fill="{COLOURS[box.kind]}">{escape(box.label)}</text>',
        f'    <text x="{_number(centre)}" y="{_number(place.y + 36)}" font-size="{NOTE_PX}" fill="#333">{escape(box.note)}</text>',
        "  </g>",
    ]


def _arrow_svg(route: _Route, points: list[tuple[float, float]]) -> str:
    kind = route.arrow.source.kind
    path = " ".join(f"{_number(x)},{_number(y)}" for x, y in points)
    dash = ' stroke-dasharray="5 3"' if route.arrow.typing_only else ""
    name = f"{route.arrow.source.key}-to-{route.arrow.target.key}"
    return (
        f'  <polyline id="{name}" points="{path}" fill="none" stroke="{COLOURS[kind]}" stroke-width="1.3"'
        f'{dash} marker-end="url(#head-{kind.replace(" ", "-")})"><title>{escape(route.arrow.source.label)} imports '
        f"{escape(route.arrow.target.label)}{' (for types only)' if route.arrow.typing_only else ''}</title></polyline>"
    )


LINE_H = 16  # a line of the legend


def _wrapped(words: list[str], width: float) -> list[str]:
    """The words in lines of the legend that fit the picture's width."""
    lines = [""]
    for word in words:
        joined = f"{lines[-1]} {word}".strip()
        if len(joined) * NOTE_PX * 0.6 > width - 2 * PAD and lines[-1]:
            lines.append(word)
        else:
            lines[-1] = joined
    return lines


def _notes(width: float, shared: list[str]) -> list[str]:
    """The legend's sentences, under its swatches."""
    return [
        *_wrapped(
            "an arrow: a module of the box it leaves imports a module of the box it enters "
            "(dashed: for types only)".split(),
            width,
        ),
        *_wrapped(f"not drawn (every layer uses them): {', '.join(shared)}".split(), width),
        "drawn from the imports (ast) by python -m bench.architecture",
    ]


def _legend(y: float, notes: list[str]) -> list[str]:
    x: float = PAD
    lines = [f'  <g font-size="{NOTE_PX}" fill="#333" text-anchor="start">']
    for kind in (MAIL_IN, NOTIFY, SHARED):
        lines.append(
            f'    <rect x="{_number(x)}" y="{_number(y)}" width="12" height="12" rx="2" '
            f'fill="{FILLS[kind]}" stroke="{COLOURS[kind]}"/>'
        )
        lines.append(f'    <text x="{_number(x + 18)}" y="{_number(y + 10)}">{kind}</text>')
        x += 18 + len(kind) * NOTE_PX * 0.6 + 18
    for n, note in enumerate(notes, start=1):
        lines.append(
            f'    <text x="{PAD}" y="{_number(y + 10 + n * LINE_H)}">{escape(note)}</text>'
        )
    lines.append("  </g>")
    return lines


def _noted(box: Box, graph: Mapping[str, object]) -> Box:
    """The box, its note naming what it holds beside its folder (`+ inbound.py`) while that is
    there."""
    extras = []
    for prefix in box.modules[1:]:
        inside = [m for m in graph if m == prefix or m.startswith(prefix + ".")]
        if inside:
            name = prefix.rpartition(".")[2]
            extras.append(name + ("/" if len(inside) > 1 else ".py"))
    return replace(box, note=" + ".join([box.note, *extras])) if extras else box


def render(
    graph: Mapping[str, Mapping[str, bool]] | None = None, boxes: tuple[Box, ...] = BOXES
) -> str:
    """The picture of the module graph (chalicelib's, read now, by default), as SVG text."""
    graph = module_graph() if graph is None else graph
    present = tuple(
        _noted(box, graph) for box in boxes if any(box_of(m, boxes) == box for m in graph)
    )
    drawn = arrows(graph, present)
    places, routes, width = _plan(present, drawn)
    counts = _channel_lanes(routes)
    tops = _rows_y(present, places, counts)
    notes = _notes(width, not_drawn(graph, present))
    foot = tops[max(tops)] + (counts.get(max(tops), 0) + 1) * LANE
    height = foot + 14 + (len(notes) + 1) * LINE_H
    markers = [
        f'    <marker id="head-{kind.replace(" ", "-")}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
        f'markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="{colour}"/></marker>'
        for kind, colour in COLOURS.items()
    ]
    lines = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_number(width)}" height="{_number(height)}" '
        f'viewBox="0 0 {_number(width)} {_number(height)}" font-family="{MONO}" text-anchor="middle">',
        f"  <!-- drawn from chalicelib's imports by {COMMAND}; not edited by hand -->",
        "  <defs>",
        *markers,
        "  </defs>",
        f'  <rect width="{_number(width)}" height="{_number(height)}" fill="white"/>',
        f'  <text x="{_number(width / 2)}" y="22" font-size="15" font-weight="bold">The two pipelines: '
        "mail in (left) and notify (right), what imports what</text>",
    ]
    for route in routes:
        lines.append(_arrow_svg(route, _points(route, places, tops)))
    for box in present:
        lines.extend(_box_svg(box, places[box.key]))
    lines.extend(_legend(foot + 6, notes))
    lines.append("</svg>")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.architecture", description=__doc__)
    parser.add_argument("--out", type=Path, default=PICTURE, help="where the SVG goes")
    arguments = parser.parse_args(argv)
    arguments.out.parent.mkdir(parents=True, exist_ok=True)
    arguments.out.write_text(render(), encoding="utf-8")
    print(f"wrote {arguments.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
