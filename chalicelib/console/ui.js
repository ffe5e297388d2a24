// Small DOM helpers: elements, messages, forms whose errors sit beside their fields.
import { failure } from "./api.js";

let uid = 0;
export const nextId = (stem) => `${stem}-${++uid}`;

// h("button", {class: "x", onclick: f}, "text", child, ...): attributes starting with "on" are listeners.
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
    else if (name === "dataset") Object.assign(el.dataset, value);
    else if (value === true) el.setAttribute(name, "");
    else el.setAttribute(name, value);
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

// Text of an HTML fragment, without running or loading anything in it.
export function textOf(html) {
  return new DOMParser().parseFromString(html || "", "text/html").body.textContent.trim();
}

export function formatDate(iso) {
  if (!iso) return "";
  const date = new Date(iso);
  return date.toLocaleString("en-GB", { dateStyle: "medium", timeStyle: "short", timeZone: "UTC" }) + " UTC";
}

// The page-wide live region: every action says whether it worked.
export function announce(message, kind = "ok") {
  const status = document.getElementById("status");
  status.replaceChildren(h("p", { class: `message ${kind}` }, message));
  clearTimeout(announce.timer);
  announce.timer = setTimeout(() => status.replaceChildren(), 8000);
}

// A page change takes the last page's message away: its error was about a form no longer shown.
export function clearAnnouncement() {
  clearTimeout(announce.timer);
  document.getElementById("status").replaceChildren();
}

// Says how an action went; a read (no success message) speaks only when it fails.
export function report(answer, success) {
  if (answer.ok) {
    if (success) announce(success, "ok");
  }
  else announce(failure(answer), "error");
  return answer.ok;
}

// A confirmation in a modal <dialog>: resolves true only for the confirming button.
export function confirmDialog(question, confirmLabel) {
  return new Promise((resolve) => {
    const titleId = nextId("confirm");
    const dialog = h(
      "dialog",
      { class: "confirm", "aria-labelledby": titleId },
      h("p", { id: titleId }, question),
      h(
        "div",
        { class: "actions" },
        h("button", { type: "button", class: "danger", onclick: () => dialog.close("yes") }, confirmLabel),
        // Cancel has the focus: Enter on an unread question must not destroy anything.
        h("button", { type: "button", autofocus: true, onclick: () => dialog.close("no") }, "Cancel"),
      ),
    );
    dialog.addEventListener("close", () => {
      dialog.remove();
      resolve(dialog.returnValue === "yes");
    });
    document.body.append(dialog);
    dialog.showModal();
  });
}

// --- forms -------------------------------------------------------------------------------------
// A field: {key, label, type: text|email|url|number|password|textarea|checkbox|select|datetime|flags,
// options: [[value, label]] for select, names for flags, hint}. `key` is the API's name for it, so an
// error's `key` finds its field.

export function field(spec) {
  const id = nextId(spec.key.replace(/\W/g, "-"));
  const errorId = `${id}-error`;
  const hintId = spec.hint ? `${id}-hint` : null;
  const describedBy = [hintId, errorId].filter(Boolean).join(" ");
  let control;
  let wrapper;
  if (spec.type === "flags") {
    control = h(
      "div",
      { class: "flags" },
      spec.options.map((name) =>
        h("label", { class: "flag" }, h("input", { type: "checkbox", name: spec.key, value: name }), name),
      ),
    );
    wrapper = h("fieldset", { class: "field", dataset: { key: spec.key }, "aria-describedby": describedBy }, h("legend", {}, spec.label), control);
  } else {
    if (spec.type === "textarea") control = h("textarea", { id, name: spec.key, rows: spec.rows || 5 });
    else if (spec.type === "select")
      control = h("select", { id, name: spec.key }, spec.options.map(([value, label]) => h("option", { value }, label)));
    else {
      const type = spec.type === "datetime" ? "datetime-local" : spec.type || "text";
      control = h("input", { id, name: spec.key, type, autocomplete: spec.autocomplete || "off" });
      if (spec.type === "number") control.setAttribute("step", "1");
    }
    control.setAttribute("aria-describedby", describedBy);
    const label = h("label", { for: id }, spec.label);
    wrapper =
      spec.type === "checkbox"
        ? h("div", { class: "field check", dataset: { key: spec.key } }, control, label)
        : h("div", { class: "field", dataset: { key: spec.key } }, label, control);
  }
  if (spec.hint) wrapper.append(h("p", { id: hintId, class: "hint" }, spec.hint));
  wrapper.append(h("p", { id: errorId, class: "field-error", hidden: true }));
  wrapper.spec = spec;
  return wrapper;
}

function fieldsOf(form) {
  return [...form.querySelectorAll(".field")].filter((el) => el.spec);
}

// ISO 8601 UTC <-> the value of a datetime-local input, read as UTC (the API's dates are UTC).
export const isoToLocalInput = (iso) => (iso ? iso.replace(/Z$/, "").slice(0, 16) : "");
export const localInputToIso = (value) => (value ? `${value.length === 16 ? `${value}:00` : value}Z` : null);

export function fill(form, object) {
  for (const wrapper of fieldsOf(form)) {
    const { key, type } = wrapper.spec;
    const value = key.split(".").reduce((o, k) => (o == null ? undefined : o[k]), object);
    if (type === "flags") {
      const selected = new Set((value || []).filter((f) => f.selected).map((f) => f.name));
      for (const box of wrapper.querySelectorAll("input")) box.checked = selected.has(box.value);
      continue;
    }
    const control = wrapper.querySelector("input, textarea, select");
    // Nothing stored: a list keeps its first choice rather than a blank the API would refuse.
    if (type === "select" && (value === undefined || value === null)) continue;
    if (type === "checkbox") control.checked = Boolean(value);
    else if (type === "password") control.value = "";
    else if (type === "datetime") control.value = isoToLocalInput(value);
    else control.value = value === undefined || value === null ? "" : String(value);
  }
}

export function values(form) {
  const out = {};
  for (const wrapper of fieldsOf(form)) {
    const { key, type } = wrapper.spec;
    let value;
    if (type === "flags") {
      value = [...wrapper.querySelectorAll("input")].map((box) => ({ name: box.value, selected: box.checked }));
    } else {
      const control = wrapper.querySelector("input, textarea, select");
      if (type === "checkbox") value = control.checked;
      else if (type === "number") {
        // Empty: omitted, so the API keeps or applies its default.
        if (control.value.trim() === "") continue;
        value = Number(control.value);
      }
      else if (type === "datetime") value = localInputToIso(control.value);
      else if (type === "password") {
        // Write-only: an empty box keeps the stored password (the API keeps it when omitted).
        if (control.value === "") continue;
        value = control.value;
      } else if (type === "select" && wrapper.spec.numeric) value = Number(control.value);
      else value = control.value;
    }
    const path = key.split(".");
    let target = out;
    for (const part of path.slice(0, -1)) target = target[part] ??= {};
    target[path.at(-1)] = value;
  }
  return out;
}

export function clearErrors(form) {
  for (const el of form.querySelectorAll(".field-error")) {
    el.hidden = true;
    el.textContent = "";
  }
  for (const el of form.querySelectorAll("[aria-invalid]")) el.removeAttribute("aria-invalid");
  const summary = form.querySelector(".form-error");
  if (summary) summary.replaceChildren();
}

// The API's messages name other fields by the API's names ("must not be before startDate"); a form
// speaks of its fields by their labels ("must not be before Start"). `labels` maps API names to
// labels: a nested key (`data.maxLength`) by its whole path and by its last part.
export function labelsOf(form) {
  const labels = new Map();
  for (const wrapper of fieldsOf(form)) {
    const label = String(wrapper.spec.label || "").replace(/:$/, "");
    if (!label) continue;
    labels.set(wrapper.spec.key, label);
    const last = wrapper.spec.key.split(".").at(-1);
    if (!labels.has(last)) labels.set(last, label);
  }
  return labels;
}

// Only API names that are not plain words (camelCase or dotted paths) are replaced: "title" in a
// sentence is English, "startDate" is not.
export function inLabels(message, labels) {
  let text = String(message || "");
  const names = [...labels.keys()].filter((name) => /[A-Z.]/.test(name)).sort((a, b) => b.length - a.length);
  for (const name of names) {
    const pattern = new RegExp(`(?<![\\w.])${name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}(?![\\w])`, "g");
    text = text.replace(pattern, labels.get(name));
  }
  return text;
}

// A failed answer in the form's words: each message with the form's labels for the API's names.
export function failureIn(form, answer) {
  const labels = labelsOf(form);
  const messages = (answer.envelope.errors || []).map((e) => inLabels(e.message, labels)).filter(Boolean);
  return messages.length ? messages.join(" ") : failure(answer);
}

// Each error beside the field its `key` names (`skipDays.0.selected` belongs to `skipDays`); the
// rest above the form's buttons. Returns the first field shown, to move focus there.
export function showErrors(form, answer) {
  clearErrors(form);
  const wrappers = fieldsOf(form);
  const labels = labelsOf(form);
  const leftover = [];
  let first = null;
  for (const error of answer.envelope.errors || []) {
    const key = String(error.key || "");
    const parts = key.split(".");
    const message = inLabels(error.message, labels);
    let wrapper = null;
    for (let n = parts.length; n > 0 && !wrapper; n--) {
      const prefix = parts.slice(0, n).join(".");
      wrapper = wrappers.find((w) => w.spec.key === prefix);
    }
    if (!wrapper) {
      leftover.push(message || key);
      continue;
    }
    const slot = wrapper.querySelector(".field-error");
    slot.textContent = slot.textContent ? `${slot.textContent} ${message}` : message;
    slot.hidden = false;
    for (const control of wrapper.querySelectorAll("input, textarea, select")) control.setAttribute("aria-invalid", "true");
    first ??= wrapper;
  }
  const summary = form.querySelector(".form-error");
  if (summary && (leftover.length || !first)) summary.textContent = leftover.join(" ") || failure(answer);
  return first;
}

// A form of `fields` whose submit sends `values(form)` through `save`, then shows the outcome.
export function apiForm({ fields, submitLabel, save, saved, name }) {
  const form = h("form", { class: "api-form", novalidate: true, "aria-label": name },
    fields.map((spec) => (spec instanceof Node ? spec : field(spec))),
    h("p", { class: "form-error", role: "alert" }),
    h("div", { class: "actions" }, h("button", { type: "submit" }, submitLabel)),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const button = form.querySelector("button[type=submit]");
    button.disabled = true;
    try {
      const answer = await save(values(form), form);
      if (answer.ok) {
        clearErrors(form);
        announce(saved, "ok");
        if (answer.object && typeof answer.object === "object") fill(form, answer.object);
      } else {
        const first = showErrors(form, answer);
        announce(failureIn(form, answer), "error");
        first?.querySelector("input, textarea, select")?.focus();
      }
    } finally {
      button.disabled = false;
    }
  });
  return form;
}

// What the console knows of each group's place (id -> {id, name, parentId}): the session's groups
// (app.js), every group a page may offer, so that a page showing only some of them (Settings: the
// ones administered) still places each under its nearest shown ancestor.
const groupPlaces = new Map();
export function knowGroups(groups) {
  groupPlaces.clear();
  for (const g of groups) groupPlaces.set(g.id, { id: g.id, name: g.name, parentId: g.parentId ?? null });
}

// A group's name, where the console knows it (null otherwise).
export const groupName = (id) => groupPlaces.get(id)?.name ?? null;

// A name as the API orders groups by name (sanitize.search_key: accents dropped, case folded, runs
// of white space one space), then the id: the choosers list siblings as the group list does, and
// no tab loads a locale's collation for it (a tab's first localeCompare costs 20 to 70 ms).
// toLowerCase is not Python's casefold: ß and a word's final ς fold to ss and σ there.
const nameKey = (g) => String(g.name).normalize("NFKD").replace(/\p{M}/gu, "").toLowerCase().replace(/ß/g, "ss").replace(/ς/g, "σ").replace(/\s+/g, " ").trim();
const byName = (a, b) => {
  const [x, y] = [nameKey(a), nameKey(b)];
  if (x !== y) return x < y ? -1 : 1;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
};

// The groups in tree order, each with its depth: a group sits under its nearest ancestor among
// `groups` (a moderator of two sibling clubs sees both at the top), siblings by name.
export function groupTree(groups) {
  const ids = new Set(groups.map((g) => g.id));
  const parentOf = (g) => {
    const seen = new Set([g.id]);
    let parent = (groupPlaces.get(g.id) || g).parentId ?? null;
    while (parent && !ids.has(parent) && !seen.has(parent)) {
      seen.add(parent);
      parent = groupPlaces.get(parent)?.parentId ?? null;
    }
    return parent && ids.has(parent) && parent !== g.id ? parent : null;
  };
  const children = new Map();
  for (const g of groups) {
    const parent = parentOf(g);
    if (!children.has(parent)) children.set(parent, []);
    children.get(parent).push(g);
  }
  const out = [];
  const placed = new Set();
  const walk = (parent, depth) => {
    for (const g of (children.get(parent) || []).sort(byName)) {
      if (placed.has(g.id)) continue;
      placed.add(g.id);
      out.push({ group: g, depth });
      walk(g.id, depth + 1);
    }
  };
  walk(null, 0);
  // A parent chain that loops leaves groups unplaced: they still show, at the top.
  for (const g of groups) if (!placed.has(g.id)) out.push({ group: g, depth: 0 });
  return out;
}

// The group a page opens on when none was chosen yet: the first group under the root in the tree.
// The root group is the community itself and usually holds nothing to moderate or set (issue 56:
// the console opened on an empty "Agora Community"); a person who sees no group below the root
// opens on the first one.
export function startingGroup(groups) {
  const tree = groupTree(groups);
  const below = tree.find(({ group }) => (groupPlaces.get(group.id) || group).parentId);
  return (below || tree[0]).group;
}

// The group chooser every group page starts with, labelled "Group": the groups as a tree, each
// indented under its parent (the option's text starts with non-breaking spaces, one step a level).
export function groupChooser(groups, selected, onChange) {
  const id = nextId("group");
  const options = groupTree(groups).map(({ group, depth }) =>
    h("option", { value: group.id, selected: group.id === selected, dataset: { depth: String(depth) } }, "\u00a0\u00a0\u00a0\u00a0".repeat(depth) + group.name),
  );
  const select = h("select", { id, onchange: () => onChange(select.value) }, options);
  return h("div", { class: "field group-chooser" }, h("label", { for: id }, "Group"), select);
}

// A list the API pages by `offset` (the id of the last item shown), read one page ahead so that
// "more" is true only when there is more to show. `read(offset, pageSize)` answers the API's
// answer, `itemsOf(object)` its items. A filtered page may be short or empty while more follow:
// pages are read on until there is one item beyond the page, or the list has ended (an empty page
// whose offset is the one sent), or `maxReads` reads were made (then more may follow: say so).
export function pager({ read, itemsOf, pageSize, maxReads = 8 }) {
  const blank = (v) => v === undefined || v === null || v === "" || v === 0 || v === "0";
  let buffer = [];
  let offset = null;
  let ended = false;
  return {
    async next() {
      for (let reads = 0; buffer.length <= pageSize && !ended && reads < maxReads; reads++) {
        const answer = await read(offset, pageSize);
        if (!answer.ok) return { answer, items: [], more: true };
        const got = itemsOf(answer.object) || [];
        const next = blank(answer.object.offset) ? null : answer.object.offset;
        if (got.length === 0 && next === offset) ended = true;
        else {
          buffer = buffer.concat(got);
          offset = next;
        }
      }
      const items = buffer.splice(0, pageSize);
      return { answer: null, items, more: buffer.length > 0 || !ended };
    },
  };
}

// A paged list that a filter starts over: `load(true)` starts over with the pager `start()` makes
// (it reads the filters as they are now), `load(false)` shows the next page. While a page is read
// its "more" button is disabled; a page that arrives after a newer start is dropped; a failure is
// reported; `show(items, restart)` draws a page, and "more" shows only when another item follows.
export function restartableList({ start, more, show }) {
  let pages = null;
  let generation = 0;
  return async function load(restart) {
    const mine = restart ? ++generation : generation;
    if (restart || !pages) pages = start();
    more.disabled = true;
    const { answer, items, more: hasMore } = await pages.next();
    if (mine !== generation) return;
    more.disabled = false;
    if (answer) return report(answer);
    show(items, restart);
    more.hidden = !hasMore;
  };
}

export function section(title, ...content) {
  const id = nextId("section");
  return h("section", { class: "card", "aria-labelledby": id }, h("h2", { id }, title), ...content);
}

// --- people and posts ----------------------------------------------------------------------------
// A picker: the ARIA 1.2 combobox pattern (an input that owns a listbox popup) on a search of the
// API. Typing searches after a pause (at least 2 characters); Down and Up move through what is
// offered, Enter chooses, Escape closes; a polite status says how many were found. `search(q,
// offset, pageSize)` answers the API's answer for one page, `itemsOf(object)` its items, `nameOf`
// and `detailOf` an item's words; `onChoose(item)` gets the choice. `personPicker` finds people.
const SEARCH_PAUSE_MS = 250;
const MIN_SEARCH = 2;
const OFFERED = 8;

export function personPicker(options) {
  return picker({
    itemsOf: (object) => object.users,
    nameOf: (user) => user.alias,
    detailOf: (user) => user.email,
    found: ["person", "people"],
    hint: "Type at least 2 letters of a name or an email address.",
    ...options,
  });
}

export function picker({ label, hint, search, onChoose, value = "", itemsOf, nameOf, detailOf, found: [one, many] = ["match", "matches"], clearOnChoose = false }) {
  const id = nextId("person");
  const listId = `${id}-list`;
  const hintId = `${id}-hint`;
  const input = h("input", {
    id, type: "text", role: "combobox", value, autocomplete: "off", spellcheck: "false",
    "aria-autocomplete": "list", "aria-expanded": "false", "aria-controls": listId, "aria-describedby": hintId,
  });
  const list = h("ul", { id: listId, role: "listbox", class: "people", "aria-label": label, hidden: true });
  // Polite, and not a second `status` role: the page has one (ui.js announce).
  const status = h("p", { class: "hint", "aria-live": "polite" });
  let offered = [];
  let active = -1;
  let timer = null;
  let generation = 0;

  function close() {
    list.hidden = true;
    input.setAttribute("aria-expanded", "false");
    input.removeAttribute("aria-activedescendant");
    active = -1;
  }
  function highlight(index) {
    active = index;
    for (const [i, item] of [...list.children].entries()) item.setAttribute("aria-selected", String(i === index));
    if (index < 0) input.removeAttribute("aria-activedescendant");
    else {
      input.setAttribute("aria-activedescendant", list.children[index].id);
      list.children[index].scrollIntoView({ block: "nearest" });
    }
  }
  function choose(index) {
    const item = offered[index];
    if (!item) return;
    input.value = clearOnChoose ? "" : nameOf(item);
    close();
    status.textContent = `${nameOf(item)} chosen.`;
    onChoose(item);
  }
  async function run(q) {
    const mine = ++generation;
    const found = [];
    let offset = "";
    // A search longer than 4 characters reads a bounded part of the list per page: a short page
    // may be followed by more, so a few pages are read until there is enough to offer.
    for (let pages = 0; pages < 4 && found.length < OFFERED; pages++) {
      const answer = await search(q, offset, OFFERED);
      if (mine !== generation) return;
      if (!answer.ok) {
        status.textContent = failure(answer);
        close();
        return;
      }
      found.push(...(itemsOf(answer.object) || []));
      const next = answer.object.offset;
      if (!next || next === offset) break;
      offset = next;
    }
    offered = found.slice(0, OFFERED);
    list.replaceChildren(
      ...offered.map((item, index) =>
        h("li", { id: `${id}-option-${index}`, role: "option", "aria-selected": "false",
          onmousedown: (event) => event.preventDefault(), onclick: () => choose(index) },
          h("span", { class: "alias" }, nameOf(item)), " ", h("span", { class: "email" }, detailOf(item))),
      ),
    );
    const open = offered.length > 0;
    list.hidden = !open;
    input.setAttribute("aria-expanded", String(open));
    active = -1;
    status.textContent = open ? `${offered.length} ${offered.length === 1 ? one : many} found; use the arrow keys to choose.` : one === "person" ? "Nobody found." : `No ${one} found.`;
  }
  input.addEventListener("input", () => {
    clearTimeout(timer);
    const q = input.value.trim();
    if (q.length < MIN_SEARCH) {
      ++generation;
      close();
      status.textContent = "";
      return;
    }
    timer = setTimeout(() => run(q), SEARCH_PAUSE_MS);
  });
  input.addEventListener("keydown", (event) => {
    const open = !list.hidden && offered.length > 0;
    if (event.key === "ArrowDown" && open) highlight((active + 1) % offered.length);
    else if (event.key === "ArrowUp" && open) highlight(active <= 0 ? offered.length - 1 : active - 1);
    else if (event.key === "Enter" && open && active >= 0) choose(active);
    else if (event.key === "Escape" && open) close();
    // Enter in a search box chooses or does nothing: it never submits the form around it.
    else if (event.key !== "Enter") return;
    event.preventDefault();
  });
  input.addEventListener("blur", () => setTimeout(close, 150));
  return h(
    "div",
    { class: "field person-picker" },
    h("label", { for: id }, label),
    h("div", { class: "combo" }, input, list),
    h("p", { id: hintId, class: "hint" }, hint || "Type at least 2 letters."),
    status,
  );
}

// A log page's table (newest first), its "nothing matches" line and its "Load more" button, and
// `load(restart)` (restartableList) that fills it: `read()` answers the API call for a page with
// the filters as they are at that (re)start, `row(entry)` draws an entry, `seen(items)` is told
// each page's entries before they are drawn.
const LOG_PAGE_SIZE = 50;
export function logList({ className, headings, emptyText, read, row, seen = () => {} }) {
  const rows = h("tbody", {});
  const table = h(
    "table",
    { class: className },
    h("caption", { class: "hint" }, "Newest first"),
    h("thead", {}, h("tr", {}, headings.map((t) => h("th", { scope: "col" }, t)))),
    rows,
  );
  const empty = h("p", { class: "empty", hidden: true }, emptyText);
  const more = h("button", { type: "button", class: "more", hidden: true, onclick: () => load(false) }, "Load more");
  let entries = [];
  const load = restartableList({
    start: () => pager({ read: read(), itemsOf: (object) => object.entries, pageSize: LOG_PAGE_SIZE }),
    more,
    show: (items, restart) => {
      entries = restart ? items : entries.concat(items);
      seen(items);
      rows.replaceChildren(...entries.map(row));
      empty.hidden = entries.length > 0;
    },
  });
  return { table, empty, more, load };
}
