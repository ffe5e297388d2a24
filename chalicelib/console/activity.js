// Activity: the audit log, who changed what, when, from what to what, newest
// first. A group's log for its administrators; "All groups" (the whole log) for the root group's.
// The filters are the API's `?action=` (an action or its resource) and `?actorId=`: they list
// every matching entry, not only those among the pages already loaded.
import { api } from "./api.js";
import { formatDate, groupChooser, h, logList, nextId } from "./ui.js";

const ALL = "";
const RESOURCES = ["emailToPost", "emailToComment", "mailbox", "connector", "event", "comment", "page", "profile", "player", "notifications", "feedKey", "admin", "user"];

const shown = (value) => (value === null || value === undefined ? "—" : typeof value === "object" ? JSON.stringify(value) : String(value));
const actorName = (actor) => (actor.type === "system" ? `${actor.name} (system)` : actor.alias || actor.id);
const actorId = (actor) => (actor.type === "system" ? actor.name : actor.id);

export async function render(main, context) {
  const groups = context.session.groups.filter((g) => g.mayAdminister);
  const root = context.session.isRootAdmin;
  let groupId = groups.some((g) => g.id === context.groupId) ? context.groupId : root ? ALL : groups[0].id;

  const chooser = groupChooser(groups, groupId, (id) => {
    groupId = id;
    if (id) context.groupId = id;
    load(true);
  });
  if (root) chooser.querySelector("select").prepend(h("option", { value: ALL, selected: groupId === ALL }, "All groups"));
  const actionId = nextId("action");
  const actorSelectId = nextId("actor");
  const action = h("select", { id: actionId }, h("option", { value: "" }, "Every action"), RESOURCES.map((r) => h("option", { value: r }, r)));
  const actor = h("select", { id: actorSelectId }, h("option", { value: "" }, "Anyone"));
  const actors = new Map();
  const { table, empty, more, load } = logList({
    className: "activity",
    headings: ["When", "Who", "Action", "Group", "Target", "Changes"],
    emptyText: "No change matches.",
    read: () => {
      const path = groupId ? `audit/${groupId}` : "audit";
      const query = { action: action.value || undefined, actorId: actor.value || undefined };
      return (offset, pageSize) => api("GET", path, { query: { offset, pageSize, ...query } });
    },
    // Whoever appears in an entry becomes a choice of the "Who" filter.
    seen: (items) => {
      for (const e of items) {
        const id = actorId(e.actor);
        if (actors.has(id)) continue;
        actors.set(id, actorName(e.actor));
        actor.append(h("option", { value: id }, actorName(e.actor)));
      }
    },
    row: (e) =>
      h(
        "tr",
        { dataset: { action: e.action } },
        h("td", {}, h("time", { datetime: e.at }, formatDate(e.at))),
        h("td", {}, actorName(e.actor), h("span", { class: "hint" }, ` via ${e.via}`)),
        h("td", {}, h("code", {}, e.action)),
        h("td", {}, e.group ? e.group.name : "—"),
        h("td", {}, `${e.target.type} ${e.target.id}`),
        h(
          "td",
          {},
          e.changes.length
            ? h("ul", { class: "changes" }, e.changes.map((c) => h("li", {}, h("strong", {}, c.field), `: ${shown(c.before)} → ${shown(c.after)}`)))
            : "",
        ),
      ),
  });
  main.replaceChildren(
    h("h1", {}, "Activity"),
    h(
      "div",
      { class: "toolbar" },
      chooser,
      h("div", { class: "field" }, h("label", { for: actionId }, "Action"), action),
      h("div", { class: "field" }, h("label", { for: actorSelectId }, "Who"), actor),
    ),
    table,
    empty,
    more,
  );
  action.addEventListener("change", () => load(true));
  actor.addEventListener("change", () => load(true));
  load(true);
}
