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

// Each error beside the field its `key` names (`skipDays.0.selected` belongs to `skipDays`); the
// rest above the form's buttons. Returns the first field shown, to move focus there.
export function showErrors(form, answer) {
  clearErrors(form);
  const wrappers = fieldsOf(form);
  const leftover = [];
  let first = null;
  for (const error of answer.envelope.errors || []) {
    const key = String(error.key || "");
    const parts = key.split(".");
    let wrapper = null;
    for (let n = parts.length; n > 0 && !wrapper; n--) {
      const prefix = parts.slice(0, n).join(".");
      wrapper = wrappers.find((w) => w.spec.key === prefix);
    }
    if (!wrapper) {
      leftover.push(error.message || key);
      continue;
    }
    const slot = wrapper.querySelector(".field-error");
    slot.textContent = slot.textContent ? `${slot.textContent} ${error.message}` : error.message;
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
        announce(failure(answer), "error");
        first?.querySelector("input, textarea, select")?.focus();
      }
    } finally {
      button.disabled = false;
    }
  });
  return form;
}

// The group chooser every group page starts with, labelled "Group".
export function groupChooser(groups, selected, onChange) {
  const id = nextId("group");
  const select = h(
    "select",
    { id, onchange: () => onChange(select.value) },
    groups.map((g) => h("option", { value: g.id, selected: g.id === selected }, g.name)),
  );
  return h("div", { class: "field group-chooser" }, h("label", { for: id }, "Group"), select);
}

export function section(title, ...content) {
  const id = nextId("section");
  return h("section", { class: "card", "aria-labelledby": id }, h("h2", { id }, title), ...content);
}

// --- people ------------------------------------------------------------------------------------
// A person picker: the ARIA 1.2 combobox pattern (an input that owns a listbox popup) on the
// API's user search. Typing searches after a pause (at least 2 characters); Down and Up move
// through the people offered, Enter chooses, Escape closes; a polite status says how many were
// found. `search(q)` answers the API's answer for one page; `onChoose(user)` gets the choice.
const SEARCH_PAUSE_MS = 250;
const MIN_SEARCH = 2;
const OFFERED = 8;

export function personPicker({ label, hint, search, onChoose, value = "" }) {
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
    const user = offered[index];
    if (!user) return;
    input.value = user.alias;
    close();
    status.textContent = `${user.alias} chosen.`;
    onChoose(user);
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
      found.push(...answer.object.users);
      const next = answer.object.offset;
      if (!next || next === offset) break;
      offset = next;
    }
    offered = found.slice(0, OFFERED);
    list.replaceChildren(
      ...offered.map((user, index) =>
        h("li", { id: `${id}-option-${index}`, role: "option", "aria-selected": "false",
          onmousedown: (event) => event.preventDefault(), onclick: () => choose(index) },
          h("span", { class: "alias" }, user.alias), " ", h("span", { class: "email" }, user.email)),
      ),
    );
    const open = offered.length > 0;
    list.hidden = !open;
    input.setAttribute("aria-expanded", String(open));
    active = -1;
    status.textContent = open ? `${offered.length} ${offered.length === 1 ? "person" : "people"} found; use the arrow keys to choose.` : "Nobody found.";
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
    else return;
    event.preventDefault();
  });
  input.addEventListener("blur", () => setTimeout(close, 150));
  return h(
    "div",
    { class: "field person-picker" },
    h("label", { for: id }, label),
    h("div", { class: "combo" }, input, list),
    h("p", { id: hintId, class: "hint" }, hint || "Type at least 2 letters of a name or an email address."),
    status,
  );
}
