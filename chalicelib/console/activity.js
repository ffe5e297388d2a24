// Activity: the audit log, who changed what, when, from what to what, newest first, each entry
// said in words that name the person and the group: "Ann Admin changed Gardening
// Club's feed settings", then "time to live: 60 → 30 minutes". A group's log for its
// administrators; "All groups" (the whole log) for the root group's. The filters are the API's
// `?action=` (an action or its resource) and `?actorId=`: they list every matching entry, not
// only those among the pages already loaded.
import { api } from "./api.js";
import { formatDate, groupChooser, groupName, h, nextId, pager, restartableList, startingGroup } from "./ui.js";

const ALL = "";
const PAGE_SIZE = 50;

// The resources the action filter offers (the API's names, schemas/audit.py ACTIONS), in words.
const RESOURCES = [
  ["feedSettings", "Feed settings"],
  ["groupEmail", "Group email"],
  ["newsletterSettings", "Newsletter settings"],
  ["homePage", "Home page"],
  ["privateLandingPage", "Private landing page"],
  ["premiumLandingPage", "Premium landing page"],
  ["emailToPost", "Email-to-post mailbox"],
  ["emailToComment", "Email-to-comment mailbox"],
  ["mailbox", "Mailbox polls and alerts"],
  ["connector", "Connectors"],
  ["event", "Events"],
  ["comment", "Comments"],
  ["notification", "Notifications"],
  ["feedKey", "Feed keys"],
  ["player", "Players"],
  ["profileSection", "Profile sections"],
  ["profileField", "Profile fields"],
  ["user", "Accounts"],
  ["admin", "Administrators"],
  ["fixture", "Community file loads"],
  ["migration", "Migrations"],
];

// What each settings document is called, after the group's name ("Gardening Club's feed settings").
const DOCUMENTS = {
  feedSettings: "feed settings",
  groupEmail: "group email",
  newsletterSettings: "newsletter settings",
  privateLandingPage: "private landing page",
  premiumLandingPage: "premium landing page",
  emailToPost: "email-to-post mailbox",
};

// A field's words, by the API's name; a resource's own words first (`groupEmail.name`).
const FIELDS = {
  "groupEmail.email": "sender email",
  "groupEmail.name": "sender name",
  "groupEmail.newsletterName": "newsletter sender name",
  imageUrl: "image URL",
  imageLinkUrl: "image link",
  imageAlt: "image description",
  ttl: "time to live",
  editorEmail: "editor's email",
  webmasterEmail: "webmaster's email",
  skipDays: "days without updates",
  skipHours: "hours without updates",
  disclaimer: "disclaimer",
  content: "content",
  isEnabled: "enabled",
  serverName: "server",
  serverPort: "port",
  serverUsername: "username",
  serverPassword: "password",
  isSSL: "SSL",
  deleteProcessed: "delete processed mail",
  emailAddress: "address members write to",
  lastError: "last error",
  inheritSettings: "inherits its parent's settings",
  "settings.applicationId": "application id",
  "settings.applicationSecret": "application secret",
  "settings.allowGuest": "guests allowed",
  startDate: "start",
  endDate: "end",
  allDay: "all day",
  isApproved: "approved",
  approvedOn: "approved on",
  deletedOn: "deleted on",
  deletedById: "deleted by",
  groupId: "group",
  spamReports: "spam reports",
  emailAlertId: "email alert",
  showScreenAlert: "screen alert",
  showRedLabel: "red label",
  digest: "digest",
  key: "feed key",
  emailSuppressed: "email suppressed",
  typeId: "type",
  sectionId: "section",
  parentSelectedValueId: "shown for the parent's value",
};
const UNITS = { ttl: " minutes" };
// Values that are codes, as the Notifications page names them.
const CODES = {
  emailAlertId: { 0: "none", 1: "instant", 2: "daily digest" },
  digest: { 1: "summary daily digest", 2: "full daily digest" },
};

// "imageLinkUrl" → "image link url": a field the console has no words for yet still reads.
const spaced = (name) => name.replace(/^settings\./, "").replace(/([a-z0-9])([A-Z])/g, "$1 $2").toLowerCase();
const fieldName = (resource, field) => FIELDS[`${resource}.${field}`] || FIELDS[field] || spaced(field);

const isDate = (value) => typeof value === "string" && /^\d{4}-\d\d-\d\dT\d\d:\d\d/.test(value);
const isFlag = (value) => value && typeof value === "object" && "name" in value && "selected" in value;

// A value in words: nothing is "none", a flag list its selected names, a date in the reader's
// time; secrets arrive as "(set)", "(changed)", "(removed)" and show so.
function valueText(value) {
  if (value === null || value === undefined || value === "") return "none";
  if (typeof value === "boolean") return value ? "yes" : "no";
  if (Array.isArray(value)) {
    const names = value.every(isFlag) ? value.filter((f) => f.selected).map((f) => f.name) : value.map((v) => valueText(v));
    return names.length ? names.join(", ") : "none";
  }
  if (typeof value === "object") return JSON.stringify(value);
  if (isDate(value)) return formatDate(value);
  return String(value);
}

// Ids by name where the console knows them: a group's, and the person who acted (who "deleted
// by" names, most often).
function changeText(value, field, entry) {
  if (field === "groupId") return groupName(value) || valueText(value);
  if (CODES[field] && value in CODES[field]) return CODES[field][value];
  if (field.endsWith("ById") && value && value === entry.actor.id) return actorName(entry.actor);
  return valueText(value);
}

const actorName = (actor) => (actor.type === "system" ? (actor.name === "agora" ? "Agora" : `Agora (${actor.name})`) : actor.alias || "A user no longer here");
const actorId = (actor) => (actor.type === "system" ? actor.name : actor.id);
const possessive = (name) => `${name}'${name.endsWith("s") ? "" : "s"}`;
const quoted = (text) => (text ? `“${text}”` : "");

// What an entry did, after the person's name: "changed Gardening Club's feed settings".
function deed(entry) {
  const [resource, verb] = entry.action.split(".");
  const group = entry.group?.name;
  const inGroup = group ? ` in ${group}` : "";
  const target = entry.target;
  const named = target.name || "";
  const user = named || "a user";
  if (DOCUMENTS[resource]) return `changed ${possessive(named || group || "a group")} ${DOCUMENTS[resource]}`;
  const verbs = { create: "created", update: "changed", delete: "deleted", move: "moved", approve: "approved", undelete: "restored", purge: "purged for good", revoke: "revoked" };
  const done = verbs[verb] || spaced(verb);
  switch (resource) {
    case "homePage":
      return "changed the home page";
    case "emailToComment":
      return "changed the email-to-comment mailbox";
    case "mailbox": {
      const which = target.type === "emailToComment" ? "the email-to-comment mailbox" : `${possessive(group || named || "a group")} email-to-post mailbox`;
      return verb === "poll" ? `asked ${which} to be polled now` : `emailed the administrators that ${which} keeps failing`;
    }
    case "connector":
      return `changed the connector ${named ? quoted(named) : target.id}${inGroup}`;
    case "event":
      return `${done} the event ${quoted(named) || target.id}${inGroup}`;
    case "comment":
      if (verb === "deleteSpamReports") return `cleared the spam reports of comment ${target.id}${inGroup}`;
      return `${done} comment ${target.id}${inGroup}`;
    case "notification":
      return target.type === "user" ? `changed ${possessive(user)} digest` : `changed ${possessive(user)} notifications${group ? ` for ${group}` : ""}`;
    case "feedKey":
      return verb === "create" ? `made ${possessive(user)} feed key` : `revoked ${possessive(user)} feed key`;
    case "player":
      return `${done} the player ${quoted(named) || target.id}`;
    case "profileSection":
      return `${done} the profile section ${quoted(named) || target.id}`;
    case "profileField":
      return `${done} the profile field ${quoted(named) || target.id}`;
    case "user":
      if (verb === "unlock") return `lifted the sign-in throttle of ${user}`;
      return verb === "create" ? `created the account of ${user}` : `changed the account of ${user}`;
    case "admin":
      return `made ${user} an administrator${group ? ` of ${group}` : ""}`;
    case "fixture":
      return `loaded a community file (${target.id})`;
    case "migration":
      return `ran the migration ${quoted(named || target.id)}`;
    default:
      return `${done} ${spaced(resource)} ${named || target.id}${inGroup}`;
  }
}

const VIA = { api: "in the console or the API", cli: "with the command line", job: "on its schedule" };

function said(entry) {
  const resource = entry.action.split(".")[0];
  return h(
    "li",
    { class: "entry", dataset: { action: entry.action } },
    h("p", { class: "deed" }, h("strong", {}, actorName(entry.actor)), ` ${deed(entry)}`),
    entry.changes.length
      ? h(
          "ul",
          { class: "changes" },
          entry.changes.map((c) => h("li", {}, `${fieldName(resource, c.field)}: ${changeText(c.before, c.field, entry)} → ${changeText(c.after, c.field, entry)}${UNITS[c.field] || ""}`)),
        )
      : "",
    h("p", { class: "hint" }, h("time", { datetime: entry.at }, formatDate(entry.at)), ` · ${VIA[entry.via] || entry.via} · `, h("code", {}, entry.action)),
  );
}

export async function render(main, context) {
  const groups = context.session.groups.filter((g) => g.mayAdminister);
  const root = context.session.isRootAdmin;
  let groupId = groups.some((g) => g.id === context.groupId) ? context.groupId : root ? ALL : startingGroup(groups).id;

  const chooser = groupChooser(groups, groupId, (id) => {
    groupId = id;
    if (id) context.groupId = id;
    load(true);
  });
  if (root) chooser.querySelector("select").prepend(h("option", { value: ALL, selected: groupId === ALL }, "All groups"));
  const actionId = nextId("action");
  const actorSelectId = nextId("actor");
  const action = h("select", { id: actionId }, h("option", { value: "" }, "Every change"), RESOURCES.map(([value, words]) => h("option", { value }, words)));
  const actor = h("select", { id: actorSelectId }, h("option", { value: "" }, "Anyone"));
  const actors = new Map();
  const list = h("ol", { class: "activity", "aria-label": "Changes, newest first" });
  const empty = h("p", { class: "empty", hidden: true }, "No change matches.");
  const more = h("button", { type: "button", class: "more", hidden: true, onclick: () => load(false) }, "Load more");
  const load = restartableList({
    start: () => {
      const path = groupId ? `audit/${groupId}` : "audit";
      const query = { action: action.value || undefined, actorId: actor.value || undefined };
      return pager({ read: (offset, pageSize) => api("GET", path, { query: { offset, pageSize, ...query } }), itemsOf: (object) => object.entries, pageSize: PAGE_SIZE });
    },
    more,
    show: (items, restart) => {
      // Whoever appears in an entry becomes a choice of the "Who" filter.
      for (const e of items) {
        const id = actorId(e.actor);
        if (actors.has(id)) continue;
        actors.set(id, actorName(e.actor));
        actor.append(h("option", { value: id }, actorName(e.actor)));
      }
      if (restart) list.replaceChildren();
      list.append(...items.map(said));
      empty.hidden = list.children.length > 0;
    },
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
    list,
    empty,
    more,
  );
  action.addEventListener("change", () => load(true));
  actor.addEventListener("change", () => load(true));
  load(true);
}
