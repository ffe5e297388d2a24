// Profile fields (root administrator): sections and their fields; create, edit, move and delete,
// with the `data` form of each of the 13 field types.
import { api } from "./api.js";
import { apiForm, confirmDialog, field as makeField, fill, h, nextId, report, section } from "./ui.js";

const TYPES = [
  [1, "TextBox"], [2, "Checkbox"], [3, "DropDownList"], [4, "CheckBoxList"], [5, "URLBox"], [6, "DescriptionBox"],
  [7, "RadioButtonList"], [8, "CountryDropDownList"], [9, "HTMLBox"], [10, "WorkHistory"], [11, "Education"],
  [12, "AutoCompleteTextBox"], [13, "URLList"],
];
const PARENT_TYPES = new Set([3, 4, 7]);
// Lists whose `defaultValue` is one of their options (the spec gives CheckBoxList no default).
const DEFAULT_OPTION_TYPES = new Set([3, 7, 11]);
const VISIBILITY = [["0", "Nobody"], ["1", "My Connections"], ["2", "Community"], ["3", "Everyone"]];
const TEXTBOX_KINDS = ["SingleLine", "MultiLine", "text", "email", "number", "tel", "url", "password", "search", "date", "datetime-local", "month", "week", "time", "color"];
const DIRECTIONS = [["Horizontal", "Horizontal"], ["Vertical", "Vertical"]];

// The `data` keys of each type (the spec's table), as form fields.
const D = {
  taggable: { key: "data.taggable", label: "Taggable", type: "checkbox" },
  description: { key: "data.description", label: "Description" },
  required: { key: "data.required", label: "Required", type: "checkbox" },
  requiredMessage: { key: "data.requiredMessage", label: "Message when missing" },
  maxLength: { key: "data.maxLength", label: "Maximum length", type: "number" },
  defaultText: { key: "data.defaultValue", label: "Default value" },
  regex: { key: "data.validateRegEx", label: "Validation pattern (regular expression)" },
  regexMessage: { key: "data.validateMessage", label: "Message when the pattern does not match" },
  options: { key: "data.options", label: "Options", type: "textarea", rows: 5, hint: "One option per line, in order.", lines: true },
  direction: { key: "data.direction", label: "Direction", type: "select", options: DIRECTIONS },
  columns: { key: "data.columns", label: "Columns", type: "number" },
};
const DATA_FORMS = {
  1: [D.taggable, D.description, { key: "data.type", label: "Text box kind", type: "select", options: TEXTBOX_KINDS.map((k) => [k, k]) }, { key: "data.lines", label: "Lines", type: "number" }, D.maxLength, D.required, D.requiredMessage, D.defaultText, D.regex, D.regexMessage],
  2: [D.taggable, D.description, { key: "data.defaultValue", label: "Checked by default", type: "checkbox" }, D.required, D.requiredMessage],
  3: [D.taggable, D.description, D.options, D.required, D.requiredMessage],
  4: [D.taggable, D.direction, D.columns, D.options, D.required, D.requiredMessage],
  5: [D.taggable, D.description, D.maxLength, D.defaultText, D.required, D.requiredMessage],
  6: [D.description],
  7: [D.taggable, D.direction, D.columns, D.options, D.required, D.requiredMessage],
  8: [D.taggable, D.description, D.required, D.requiredMessage],
  9: [D.description, { key: "data.defaultValue", label: "Default content (HTML)", type: "textarea" }, D.required, D.requiredMessage],
  10: [D.taggable],
  11: [D.taggable, D.description, D.options],
  12: [D.taggable, D.description, D.maxLength, D.defaultText, D.required, D.requiredMessage, D.regex, D.regexMessage,
    { key: "data.allowFreeInput", label: "Allow free input", type: "checkbox" },
    { key: "data.displayAsDropDown", label: "Display as a drop-down", type: "checkbox" },
    { key: "data.enableRemoteDataSource", label: "Use a remote data source", type: "checkbox" },
    { key: "data.remoteDataSourceUrl", label: "Remote data source URL", type: "url" }, D.options],
  13: [D.description, D.maxLength, D.required, D.requiredMessage],
};

const optionValues = (textarea) => textarea.value.split("\n").map((v) => v.trim()).filter(Boolean);

export async function render(main, context) {
  const list = h("div", {});
  const editorCard = h("div", {});
  main.replaceChildren(h("h1", {}, "Profile fields"), h("div", { class: "grid-2" }, list, editorCard));
  let structure = null;

  async function load() {
    const answer = await api("GET", "profile");
    if (!report(answer)) {
      list.replaceChildren(h("p", { class: "form-error" }, "Cannot read the profile structure."));
      return;
    }
    structure = answer.object;
    draw();
  }

  function draw() {
    const sections = structure.sections || [];
    list.replaceChildren(
      ...sections.map((s, index) => sectionCard(s, index, sections.length)),
      section("New section", sectionForm(null)),
    );
    // A field being edited stays; the new-field form is rebuilt so it offers the current sections.
    if (editorCard.dataset.mode !== "edit") editorCard.replaceChildren(fieldEditor(null));
  }

  function sectionCard(s, index, count) {
    const items = (s.fields || []).map((f, i) =>
      h(
        "li",
        { class: "profile-field", dataset: { fieldId: f.id } },
        h("strong", {}, f.name), ` (${f.typeName})`, f.parentName ? ` — shown when ${f.parentName} is ${f.parentSelectedValueName}` : "",
        h(
          "div",
          { class: "actions" },
          h("button", { type: "button", class: "secondary", "aria-label": `Edit field ${f.name}`, onclick: () => editorCard.replaceChildren(fieldEditor(f)) }, "Edit"),
          h("button", { type: "button", class: "secondary", disabled: i === 0, "aria-label": `Move up: field ${f.name}`, onclick: () => moveField(f, i - 1) }, "Move up"),
          h("button", { type: "button", class: "secondary", disabled: i === s.fields.length - 1, "aria-label": `Move down: field ${f.name}`, onclick: () => moveField(f, i + 1) }, "Move down"),
          h("button", { type: "button", class: "danger", "aria-label": `Delete field ${f.name}`, onclick: () => deleteField(f) }, "Delete"),
        ),
      ),
    );
    return section(
      `Section: ${s.name}`,
      h("p", { class: "hint" }, `Visible to: ${s.defaultVisibilityName}`),
      items.length ? h("ul", { class: "event-list" }, items) : h("p", { class: "empty" }, "No field yet."),
      h("details", {}, h("summary", {}, `Edit section ${s.name}`), sectionForm(s)),
      h(
        "div",
        { class: "actions" },
        h("button", { type: "button", class: "secondary", disabled: index === 0, "aria-label": `Move up: section ${s.name}`, onclick: () => moveSection(s, index - 1) }, "Move up"),
        h("button", { type: "button", class: "secondary", disabled: index === count - 1, "aria-label": `Move down: section ${s.name}`, onclick: () => moveSection(s, index + 1) }, "Move down"),
        h("button", { type: "button", class: "danger", "aria-label": `Delete section: ${s.name}`, onclick: () => deleteSection(s) }, "Delete section"),
      ),
    );
  }

  function sectionForm(s) {
    const form = apiForm({
      name: s ? `Section ${s.name}` : "New section",
      submitLabel: s ? "Save section" : "Create section",
      saved: s ? "Section saved." : "Section created.",
      fields: [
        { key: "name", label: "Section name" },
        { key: "defaultVisibilityId", label: "Default visibility", type: "select", numeric: true, options: VISIBILITY },
      ],
      save: async (body) => {
        const answer = s ? await api("PUT", `profile/section/${s.id}`, { body }) : await api("POST", "profile/section", { body });
        if (answer.ok) setTimeout(load);
        return answer;
      },
    });
    fill(form, s || { defaultVisibilityId: 2 });
    return form;
  }

  async function moveSection(s, position) {
    const answer = await api("PUT", `profile/section/${s.id}`, { body: { position } });
    if (report(answer, `Section ${s.name} moved.`)) load();
  }

  async function deleteSection(s) {
    if (!(await confirmDialog(`Delete the section "${s.name}"?`, "Delete section"))) return;
    const answer = await api("DELETE", `profile/section/${s.id}`);
    if (report(answer, `Section ${s.name} deleted.`)) load();
  }

  async function moveField(f, position) {
    const answer = await api("PUT", `profile/field/${f.id}`, { body: { position } });
    if (report(answer, `Field ${f.name} moved.`)) load();
  }

  async function deleteField(f) {
    if (!(await confirmDialog(`Delete the field "${f.name}"?`, "Delete field"))) return;
    const answer = await api("DELETE", `profile/field/${f.id}`);
    if (report(answer, `Field ${f.name} deleted.`)) {
      editorCard.replaceChildren(fieldEditor(null));
      load();
    }
  }

  // The field form: its `data` part follows the chosen type.
  function fieldEditor(f) {
    editorCard.dataset.mode = f ? "edit" : "new";
    const sections = structure.sections || [];
    const parents = sections.flatMap((s) => s.fields || []).filter((p) => PARENT_TYPES.has(p.typeId) && p.id !== f?.id);
    const dataBox = h("fieldset", { class: "data" }, h("legend", {}, "Data"));
    const form = apiForm({
      name: f ? `Field ${f.name}` : "New field",
      submitLabel: f ? "Save field" : "Create field",
      saved: f ? "Field saved." : "Field created.",
      fields: [
        { key: "sectionId", label: "Section", type: "select", numeric: true, options: sections.map((s) => [String(s.id), s.name]) },
        { key: "name", label: "Field name" },
        { key: "typeId", label: "Field type", type: "select", numeric: true, options: TYPES.map(([id, name]) => [String(id), name]) },
        { key: "parentId", label: "Shown only under", type: "select", options: [["", "(always shown)"], ...parents.map((p) => [p.id, p.name])] },
        { key: "parentSelectedValueId", label: "when that field's option is", type: "select", options: [["", "(choose the field first)"]] },
        dataBox,
      ],
      save: async (body) => {
        body.parentId = body.parentId || null;
        body.parentSelectedValueId = body.parentSelectedValueId || null;
        const lines = dataBox.querySelector('[data-key="data.options"] textarea');
        if (lines) {
          const keys = new Map(((f?.data?.options) || []).map((o) => [o.value, o.key]));
          body.data.options = optionValues(lines).map((value) => (keys.has(value) ? { key: keys.get(value), value } : { value }));
        }
        // The default names its option by value: a new option has no key yet.
        if ("defaultValue" in (body.data || {}) && DEFAULT_OPTION_TYPES.has(body.typeId)) body.data.defaultValue = body.data.defaultValue || null;
        const answer = f ? await api("PUT", `profile/field/${f.id}`, { body }) : await api("POST", "profile/field", { body });
        if (answer.ok) {
          const saved = answer.object;
          setTimeout(async () => {
            await load();
            editorCard.replaceChildren(fieldEditor(saved));
          });
        }
        return answer;
      },
    });
    // The option chooser lists the options of the parent field chosen above it.
    const parentSelect = form.querySelector('[data-key="parentId"] select');
    const optionSelect = form.querySelector('[data-key="parentSelectedValueId"] select');
    const drawOptions = (selected) => {
      const parent = parents.find((p) => p.id === parentSelect.value);
      const options = parent ? (parent.data?.options || []).map((o) => [o.key, o.value]) : [["", "(choose the field first)"]];
      optionSelect.replaceChildren(...options.map(([key, value]) => h("option", { value: key, selected: key === selected }, value)));
    };
    parentSelect.addEventListener("change", () => drawOptions(""));
    const typeSelect = form.querySelector('[data-key="typeId"] select');
    const drawData = (data) => {
      const specs = DATA_FORMS[Number(typeSelect.value)] || [];
      dataBox.replaceChildren(h("legend", {}, `Data of a ${TYPES.find(([id]) => id === Number(typeSelect.value))[1]}`), ...specs.map((spec) => makeField(spec)));
      const options = dataBox.querySelector('[data-key="data.options"] textarea');
      fill(dataBox, { data: data || {} });
      if (options) options.value = ((data && data.options) || []).map((o) => o.value).join("\n");
      if (options && DEFAULT_OPTION_TYPES.has(Number(typeSelect.value))) addDefaultChooser(options, data?.defaultValue?.value ?? "");
    };
    // "Default option": the options typed above it, kept in step as they are edited.
    const addDefaultChooser = (options, selected) => {
      const chooser = makeField({ key: "data.defaultValue", label: "Default option", type: "select", options: [], hint: "Chosen for a member who has not chosen yet." });
      options.closest(".field").after(chooser);
      const select = chooser.querySelector("select");
      const redraw = () => {
        const current = select.value || selected;
        const values = optionValues(options);
        select.replaceChildren(h("option", { value: "" }, "(none)"), ...values.map((v) => h("option", { value: v, selected: v === current }, v)));
        selected = "";
      };
      options.addEventListener("input", redraw);
      redraw();
    };
    typeSelect.addEventListener("change", () => drawData({}));
    const heading = h("h2", { id: nextId("field-editor") }, f ? `Edit field ${f.name}` : "New field");
    fill(form, f ? { ...f } : { sectionId: sections[0]?.id, typeId: 1 });
    drawOptions(f?.parentSelectedValueId || "");
    drawData(f?.data);
    if (!sections.length) return h("section", { class: "card" }, heading, h("p", { class: "empty" }, "Create a section first."));
    const extra = f ? h("button", { type: "button", class: "secondary", onclick: () => editorCard.replaceChildren(fieldEditor(null)) }, "New field") : null;
    if (extra) form.querySelector(".actions").append(extra);
    return h("section", { class: "card", "aria-labelledby": heading.id }, heading, form);
  }

  load();
}
