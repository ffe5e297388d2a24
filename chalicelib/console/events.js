// Events: a month calendar (drag an event to another day to move it), the event form, and the
// upcoming and expired lists. Every date is UTC, as the API gives it.
import { api } from "./api.js";
import { announce, apiForm, clearErrors, confirmDialog, fill, formatDate, groupChooser, h, nextId, pager, report, restartableList, section, startingGroup, textOf } from "./ui.js";

const DAY = 86400000;
const WEEKDAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
const PAGE_SIZE = 15;

const dayKey = (date) => date.toISOString().slice(0, 10);
const startOfDay = (iso) => Date.UTC(...iso.slice(0, 10).split("-").map((n, i) => Number(n) - (i === 1 ? 1 : 0)));

export async function render(main, context) {
  const groups = context.session.groups.filter((g) => g.mayModerate);
  // An event's permalink opens here (`#/events?group=ID&event=ID`, make run's redirect).
  const linked = new URLSearchParams(location.hash.split("?")[1] || "");
  if (groups.some((g) => g.id === linked.get("group"))) context.groupId = linked.get("group");
  if (!groups.some((g) => g.id === context.groupId)) context.groupId = startingGroup(groups).id;
  const now = new Date();
  context.month ??= Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1);

  const chooser = groupChooser(groups, context.groupId, (id) => {
    context.groupId = id;
    editor.reset();
    refresh();
  });
  const calendarCard = h("section", { class: "card", "aria-labelledby": "calendar-title" });
  const editor = eventEditor(context, () => refresh());
  const lists = eventLists(context);
  main.replaceChildren(h("h1", {}, "Events"), chooser, calendarCard, h("div", { class: "grid-2" }, editor.element, lists.element));

  function refresh() {
    drawCalendar();
    lists.reload();
  }

  function period() {
    const first = new Date(context.month);
    const offset = (first.getUTCDay() + 6) % 7; // days since Monday
    const start = context.month - offset * DAY;
    const next = Date.UTC(first.getUTCFullYear(), first.getUTCMonth() + 1, 1);
    const weeks = Math.ceil((next - start) / DAY / 7);
    return { start, end: start + weeks * 7 * DAY, weeks };
  }

  let generation = 0;
  async function drawCalendar(events) {
    const mine = ++generation;
    const { start, end, weeks } = period();
    const title = new Date(context.month).toLocaleString("en-GB", { month: "long", year: "numeric", timeZone: "UTC" });
    if (!events) {
      const answer = await api("GET", `event/list/calendar/${context.groupId}`, {
        query: { calendarStartDate: new Date(start).toISOString(), calendarEndDate: new Date(end).toISOString() },
      });
      if (mine !== generation) return;
      if (!report(answer)) return;
      events = answer.object.events || [];
    }
    const byDay = new Map();
    for (const event of events) {
      const first = Math.max(startOfDay(event.startDate), start);
      const lastIso = event.endDate && event.endDate > event.startDate ? event.endDate : event.startDate;
      // An event ending at midnight does not occupy the day it ends on.
      let last = startOfDay(lastIso);
      if (last > startOfDay(event.startDate) && lastIso.slice(11, 19) === "00:00:00") last -= DAY;
      for (let day = first; day <= Math.min(last, end - DAY); day += DAY) {
        const key = dayKey(new Date(day));
        if (!byDay.has(key)) byDay.set(key, []);
        byDay.get(key).push(event);
      }
    }
    const month = new Date(context.month).getUTCMonth();
    const rows = [];
    for (let w = 0; w < weeks; w++) {
      const cells = [];
      for (let d = 0; d < 7; d++) {
        const date = new Date(start + (w * 7 + d) * DAY);
        const key = dayKey(date);
        const cell = h(
          "td",
          { class: date.getUTCMonth() === month ? "" : "outside", dataset: { date: key } },
          h("span", { class: "day" }, String(date.getUTCDate())),
          (byDay.get(key) || []).map((event) =>
            h("button", {
              type: "button",
              class: "event",
              draggable: "true",
              "aria-label": `${event.title}, ${formatDate(event.startDate)}. Edit`,
              "aria-describedby": "calendar-keys",
              dataset: { eventId: event.id },
              onclick: () => editor.edit(event),
              onkeydown: (e) => keyMove(e, event, key),
              onblur: () => cancelMove(),
              ondragstart: (e) => {
                e.dataTransfer.setData("text/plain", JSON.stringify({ id: event.id, from: key }));
                e.dataTransfer.effectAllowed = "move";
              },
            }, event.title),
          ),
        );
        cell.addEventListener("dragover", (e) => {
          e.preventDefault();
          cell.classList.add("over");
        });
        cell.addEventListener("dragleave", () => cell.classList.remove("over"));
        cell.addEventListener("drop", (e) => {
          e.preventDefault();
          cell.classList.remove("over");
          let moved;
          try {
            moved = JSON.parse(e.dataTransfer.getData("text/plain"));
          } catch {
            return;
          }
          const event = events.find((ev) => ev.id === moved.id);
          if (event) move(event, startOfDay(key) - startOfDay(moved.from));
        });
        cells.push(cell);
      }
      rows.push(h("tr", {}, cells));
    }
    calendarCard.replaceChildren(
      h(
        "div",
        { class: "month-nav" },
        h("button", { type: "button", class: "secondary", onclick: () => shift(-1) }, "Previous month"),
        h("h2", { id: "calendar-title" }, title),
        h("button", { type: "button", class: "secondary", onclick: () => shift(1) }, "Next month"),
      ),
      h("p", { class: "hint" }, "Drag an event to another day to move it, or choose it to edit its dates."),
      h("p", { class: "hint", id: "calendar-keys" }, "To move an event with the keyboard: focus it, choose the day with the arrow keys (a day left or right, a week up or down), then Enter moves it and Escape cancels."),
      h("table", { class: "calendar" }, h("caption", { class: "hint" }, `Events of ${title} (UTC)`), h("thead", {}, h("tr", {}, WEEKDAYS.map((d) => h("th", { scope: "col" }, d)))), h("tbody", {}, rows)),
    );
  }

  // The keyboard move: arrow keys choose the day (the cell is marked, the day announced), Enter
  // moves the event there through the calendar update, Escape or leaving the event cancels.
  let moving = null;
  const STEPS = { ArrowLeft: -1, ArrowRight: 1, ArrowUp: -7, ArrowDown: 7 };
  const dayName = (time) => new Date(time).toLocaleDateString("en-GB", { weekday: "long", day: "numeric", month: "long", year: "numeric", timeZone: "UTC" });

  function keyMove(e, event, from) {
    if (e.key in STEPS) {
      e.preventDefault();
      if (!moving || moving.event.id !== event.id) moving = { event, from, delta: 0 };
      moving.delta += STEPS[e.key] * DAY;
      const target = startOfDay(from) + moving.delta;
      markTarget(dayKey(new Date(target)));
      announce(`Moving "${event.title}" to ${dayName(target)}: Enter moves it, Escape cancels.`);
    } else if (e.key === "Enter" && moving && moving.event.id === event.id) {
      e.preventDefault();
      const { delta } = moving;
      cancelMove();
      if (delta) move(event, delta, { focus: true });
      else announce(`"${event.title}" stays where it is.`);
    } else if (e.key === "Escape" && moving) {
      e.preventDefault();
      cancelMove();
      announce(`Move of "${event.title}" cancelled.`);
    }
  }

  function markTarget(key) {
    for (const cell of calendarCard.querySelectorAll("td.over")) cell.classList.remove("over");
    calendarCard.querySelector(`td[data-date="${key}"]`)?.classList.add("over");
  }

  function cancelMove() {
    moving = null;
    markTarget("");
  }

  function shift(months) {
    const first = new Date(context.month);
    context.month = Date.UTC(first.getUTCFullYear(), first.getUTCMonth() + months, 1);
    drawCalendar();
  }

  // The calendar update route: the new start (the end keeps the duration), and the period shown,
  // whose calendar the API answers.
  async function move(event, delta, { focus = false } = {}) {
    if (!delta) return;
    const { start, end } = period();
    const startDate = new Date(Date.parse(event.startDate) + delta).toISOString().replace(".000Z", "Z");
    const answer = await api("PUT", `event/${event.id}/calendar`, {
      body: { startDate, calendarStartDate: new Date(start).toISOString(), calendarEndDate: new Date(end).toISOString() },
    });
    if (report(answer, `"${event.title}" moved to ${formatDate(startDate)}.`)) {
      drawCalendar(answer.object.events || []);
      lists.reload();
      // The keyboard stays on the event it moved (drawn again, synchronously, in its new day).
      if (focus) calendarCard.querySelector(`button.event[data-event-id="${event.id}"]`)?.focus();
    }
  }

  if (linked.get("event")) {
    const answer = await api("GET", `event/${encodeURIComponent(linked.get("event"))}`);
    if (report(answer)) {
      const start = answer.object.startDate;
      context.month = Date.UTC(Number(start.slice(0, 4)), Number(start.slice(5, 7)) - 1, 1);
      editor.edit(answer.object);
    }
  }
  refresh();
}

function eventEditor(context, changed) {
  let current = null;
  const heading = h("h2", { id: nextId("editor") }, "New event");
  const form = apiForm({
    name: "Event",
    submitLabel: "Save event",
    saved: "Event saved.",
    fields: [
      { key: "title", label: "Title" },
      { key: "startDate", label: "Start", type: "datetime", hint: "UTC" },
      { key: "endDate", label: "End", type: "datetime", hint: "UTC; may be empty for an all-day event" },
      { key: "allDay", label: "All day", type: "checkbox" },
      { key: "location", label: "Location" },
      { key: "organizer", label: "Organizer" },
      { key: "content", label: "Content", type: "textarea" },
    ],
    save: async (body) => {
      const answer = current
        ? await api("PUT", `event/${current.id}`, { body })
        : await api("POST", "event", { body: { ...body, groupId: context.groupId } });
      if (answer.ok) {
        edit(answer.object);
        changed();
      }
      return answer;
    },
  });
  const remove = h("button", { type: "button", class: "danger", hidden: true, onclick: async () => {
    if (!current || !(await confirmDialog(`Delete the event "${current.title}"?`, "Delete event"))) return;
    const answer = await api("DELETE", `event/${current.id}`);
    if (report(answer, "Event deleted.")) {
      reset();
      changed();
    }
  } }, "Delete event");
  const fresh = h("button", { type: "button", class: "secondary", onclick: () => reset() }, "New event");
  form.querySelector(".actions").append(fresh, remove);
  const element = h("section", { class: "card", "aria-labelledby": heading.id }, heading, form);

  function edit(event) {
    current = event;
    heading.textContent = `Edit event ${event.id}`;
    fill(form, { ...event, content: event.content });
    remove.hidden = false;
    form.querySelector("input").focus();
  }
  function reset() {
    current = null;
    heading.textContent = "New event";
    form.reset();
    clearErrors(form);
    remove.hidden = true;
  }
  return { element, edit, reset };
}

function eventLists(context) {
  const filterId = nextId("filter");
  const filter = h("input", { id: filterId, type: "search" });
  const upcoming = listOf("upcoming", "Upcoming", "No upcoming event.");
  const expired = listOf("expired", "Expired", "No expired event.");
  let timer;
  filter.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(reload, 250);
  });
  const element = section(
    "Upcoming and expired",
    h("div", { class: "field", role: "search" }, h("label", { for: filterId }, "Filter"), filter),
    upcoming.element,
    expired.element,
  );
  function reload() {
    upcoming.load(true);
    expired.load(true);
  }

  function listOf(kind, title, emptyText) {
    const headingId = nextId(kind);
    const list = h("ul", { class: "event-list", "aria-labelledby": headingId });
    const empty = h("p", { class: "empty", hidden: true }, emptyText);
    const more = h("button", { type: "button", class: "more", hidden: true, onclick: () => load(false) }, `More ${kind} events`);
    const load = restartableList({
      start: () => {
        const groupId = context.groupId;
        const text = filter.value.trim();
        return pager({
          read: (offset, pageSize) => api("GET", `event/list/${kind}/${groupId}`, { query: { offset, pageSize, filter: text } }),
          itemsOf: (object) => object.events,
          pageSize: PAGE_SIZE,
        });
      },
      more,
      show: (items, restart) => {
        if (restart) list.replaceChildren();
        for (const event of items)
          list.append(h("li", {}, h("strong", {}, event.title), " — ", h("time", { datetime: event.startDate }, formatDate(event.startDate)), event.location ? ` · ${event.location}` : "", textOf(event.content) ? h("p", { class: "hint" }, textOf(event.content)) : null));
        empty.hidden = list.children.length > 0;
      },
    });
    return { element: h("div", {}, h("h3", { id: headingId }, title), list, empty, more), load };
  }
  return { element, reload };
}
