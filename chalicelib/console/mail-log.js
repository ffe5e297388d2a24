// Mail log: what became of each mail a mailbox received, newest first, filterable by outcome.
// The outcome filter is the API's `?status=`: it lists every entry of that outcome, not only
// those among the pages already loaded.
import { api } from "./api.js";
import { formatDate, h, logList, nextId, startingGroup } from "./ui.js";

const OUTCOMES = ["posted", "commented", "ignored", "rejected", "failed"];

export async function render(main, context) {
  const mailboxes = context.session.groups
    .filter((g) => g.mayAdminister)
    .map((g) => ({ id: `post:${g.id}`, name: `Email-to-post: ${g.name}`, path: `connector/email-to-post/${g.id}/log`, groupId: g.id }));
  if (context.session.isRootAdmin)
    mailboxes.push({ id: "comment", name: "Email-to-comment (system-wide)", path: "connector/email-to-comment/log" });
  const administered = context.session.groups.filter((g) => g.mayAdminister);
  const opening = administered.some((g) => g.id === context.groupId) ? context.groupId : administered.length ? startingGroup(administered).id : null;
  let mailbox = mailboxes.find((m) => m.groupId === opening) || mailboxes[0];

  const mailboxId = nextId("mailbox");
  const outcomeId = nextId("outcome");
  const mailboxSelect = h("select", { id: mailboxId }, mailboxes.map((m) => h("option", { value: m.id, selected: m === mailbox }, m.name)));
  const outcome = h("select", { id: outcomeId }, h("option", { value: "" }, "All outcomes"), OUTCOMES.map((o) => h("option", { value: o }, o)));
  const { table, empty, more, load } = logList({
    className: "mail-log",
    headings: ["Received", "From", "Subject", "Outcome", "Reason", "Result"],
    emptyText: "No mail matches.",
    read: () => {
      const path = mailbox.path;
      const status = outcome.value || undefined;
      return (offset, pageSize) => api("GET", path, { query: { offset, pageSize, status } });
    },
    row: (e) =>
      h(
        "tr",
        { dataset: { status: e.status } },
        h("td", {}, h("time", { datetime: e.receivedOn }, formatDate(e.receivedOn))),
        h("td", {}, e.from),
        h("td", {}, e.subject),
        h("td", {}, h("span", { class: `outcome ${e.status}` }, e.status)),
        h("td", {}, e.reason, e.noticeSent ? h("div", { class: "notice-sent" }, "The sender was told why by email.") : ""),
        h("td", {}, e.post ? h("a", { href: e.post.url }, e.post.title || e.post.id) : "", e.commentId ? ` (comment ${e.commentId})` : ""),
      ),
  });
  main.replaceChildren(
    h("h1", {}, "Mail log"),
    h(
      "div",
      { class: "toolbar" },
      h("div", { class: "field" }, h("label", { for: mailboxId }, "Mailbox"), mailboxSelect),
      h("div", { class: "field" }, h("label", { for: outcomeId }, "Outcome"), outcome),
    ),
    table,
    empty,
    more,
  );

  mailboxSelect.addEventListener("change", () => {
    mailbox = mailboxes.find((m) => m.id === mailboxSelect.value);
    if (mailbox.groupId) context.groupId = mailbox.groupId;
    load(true);
  });
  outcome.addEventListener("change", () => load(true));
  load(true);
}
