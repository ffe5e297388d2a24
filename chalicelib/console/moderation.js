// Moderation: a group's unapproved comments, spam reports and deleted comments, and what to do with them.
import { api } from "./api.js";
import { announce, confirmDialog, formatDate, groupChooser, h, pager, report, startingGroup, textOf } from "./ui.js";

const TABS = [
  { id: "unapproved", name: "Unapproved", list: "unapproved", empty: "No comment waits for approval." },
  { id: "spam", name: "Spam reports", list: "spam-reports", empty: "No comment is reported as spam." },
  { id: "deleted", name: "Deleted", list: "deleted", empty: "No deleted comment." },
];
// `#/moderation?pageSize=N` asks for smaller pages (the API's `pageSize`, 1 to 100).
const pageSize = () => Math.min(100, Math.max(1, Number(new URLSearchParams(location.hash.split("?")[1] || "").get("pageSize")) || 15));

export async function render(main, context) {
  const groups = context.session.groups.filter((g) => g.mayModerate);
  if (!groups.some((g) => g.id === context.groupId)) context.groupId = startingGroup(groups).id;
  let tab = TABS[0];

  const heading = h("h1", {}, "Moderation");
  const tabButtons = TABS.map((t) =>
    h("button", { type: "button", role: "tab", id: `tab-${t.id}`, "aria-controls": "moderation-panel", onclick: () => select(t, true) }, t.name),
  );
  const tablist = h("div", { role: "tablist", "aria-label": "Comment lists", class: "tabs" }, tabButtons);
  // Arrow keys move between tabs (the ARIA tabs pattern); Tab goes into the panel.
  tablist.addEventListener("keydown", (event) => {
    const index = TABS.indexOf(tab);
    const moves = { ArrowRight: 1, ArrowLeft: -1, Home: -index, End: TABS.length - 1 - index };
    if (!(event.key in moves)) return;
    event.preventDefault();
    select(TABS[(index + moves[event.key] + TABS.length) % TABS.length], true);
  });
  const panel = h("div", { role: "tabpanel", id: "moderation-panel", tabindex: "0" });

  function select(next, focus) {
    tab = next;
    for (const [i, button] of tabButtons.entries()) {
      const on = TABS[i] === tab;
      button.setAttribute("aria-selected", String(on));
      button.tabIndex = on ? 0 : -1;
      if (on && focus) button.focus();
    }
    panel.setAttribute("aria-labelledby", `tab-${tab.id}`);
    show();
  }

  let generation = 0;
  function show() {
    const mine = ++generation;
    const groupId = context.groupId;
    const current = tab;
    const list = h("ul", { class: "comments", "aria-label": `${current.name} comments` });
    const empty = h("p", { class: "empty", hidden: true }, current.empty);
    const more = h("button", { type: "button", class: "more", hidden: true, onclick: () => load() }, "Load more");
    const sentinel = h("div", { class: "sentinel", "aria-hidden": "true" });
    const bulk =
      current.id === "unapproved"
        ? h("button", { type: "button", class: "danger", onclick: deleteAllUnapproved }, "Delete all unapproved")
        : current.id === "deleted"
          ? h("button", { type: "button", class: "danger", onclick: purgeAllDeleted }, "Purge all deleted")
          : null;
    // A bulk action shows once the list has something it would act on.
    const bulkBar = bulk && h("div", { class: "toolbar", hidden: true }, bulk);
    const settle = () => {
      empty.hidden = list.children.length > 0;
      if (bulkBar) bulkBar.hidden = list.children.length === 0;
    };
    panel.replaceChildren(...[bulkBar, list, empty, more, sentinel].filter(Boolean));

    const pages = pager({
      read: (offset, size) => api("GET", `comment/post/list/${groupId}/${current.list}`, { query: { offset, pageSize: size } }),
      itemsOf: (object) => object.comments,
      pageSize: pageSize(),
    });
    let loading = false;
    let done = false;

    async function load() {
      if (loading || done || mine !== generation) return;
      loading = true;
      const { answer, items, more: hasMore } = await pages.next();
      loading = false;
      if (mine !== generation) return;
      if (answer) {
        report(answer);
        return;
      }
      for (const comment of items) list.append(item(comment));
      // "Load more" only when another comment follows (the pager reads one page ahead).
      done = !hasMore;
      more.hidden = done;
      settle();
      // Keep filling while the end of the list is on screen (a tall window shows more than a page).
      if (!done && sentinel.getBoundingClientRect().top < window.innerHeight) load();
    }

    // More items load as one scrolls: the sentinel under the list coming into view asks for them.
    const observer = new IntersectionObserver((entries) => {
      if (mine !== generation) return observer.disconnect();
      if (entries.some((e) => e.isIntersecting)) load();
    });
    observer.observe(sentinel);
    load();

    function item(comment) {
      const li = h("li", { class: "comment", dataset: { commentId: comment.id } });
      const state = comment.deletedOn ? "Deleted" : comment.isApproved ? "Approved" : "Unapproved";
      const actions = h("div", { class: "actions" });
      const act = (label, method, path, success, leaves) =>
        h("button", {
          type: "button",
          class: label === "Purge" || label === "Delete" ? "danger" : "",
          "aria-label": `${label} comment ${comment.id}`,
          onclick: async (event) => {
            event.currentTarget.disabled = true;
            const answer = await api(method, path);
            if (report(answer, success)) {
              if (leaves(answer.object)) remove(li);
              else li.replaceWith(item(answer.object));
            } else if (li.isConnected) li.replaceWith(item(comment));
          },
        }, label);
      const base = `comment/post/${comment.id}`;
      if (comment.deletedOn) {
        actions.append(
          act("Undelete", "POST", `${base}/undelete`, `Comment ${comment.id} undeleted.`, () => current.id === "deleted"),
          act("Purge", "POST", `${base}/purge`, `Comment ${comment.id} purged for good.`, () => true),
        );
      } else {
        if (!comment.isApproved)
          actions.append(act("Approve", "POST", `${base}/approve`, `Comment ${comment.id} approved.`, () => current.id === "unapproved"));
        if (comment.spamReports > 0 || comment.type === "commentSpamReport")
          actions.append(act("Clear reports", "DELETE", `${base}/spam-reports`, `Spam reports of comment ${comment.id} cleared.`, () => current.id === "spam"));
        actions.append(act("Delete", "DELETE", base, `Comment ${comment.id} deleted.`, () => current.id !== "deleted"));
      }
      const dates = [
        ["Written", comment.createdOn],
        ["Approved", comment.approvedOn],
        ["Deleted", comment.deletedOn],
      ].filter(([, d]) => d);
      li.append(
        h("blockquote", { class: "content" }, textOf(comment.content) || "(empty)"),
        h(
          "dl",
          { class: "meta" },
          h("dt", {}, "Author"), h("dd", {}, comment.author?.alias || "Anonymous"),
          h("dt", {}, "Post"), h("dd", {}, comment.post?.url ? h("a", { href: comment.post.url }, comment.post.title || comment.post.id) : comment.post?.title || ""),
          h("dt", {}, "State"), h("dd", { class: "state" }, state),
          // Mail-in held it because no signature proved its sender: the name on it is a claim.
          comment.heldBecause && !comment.isApproved
            ? [h("dt", {}, "Sender"), h("dd", { class: "unverified" }, `Not verified: ${comment.heldBecause.replace(/^sender not verified: /i, "")}`)]
            : [],
          dates.map(([label, date]) => [h("dt", {}, label), h("dd", {}, h("time", { datetime: date }, formatDate(date)))]),
          comment.spamReports ? [h("dt", {}, "Spam reports"), h("dd", {}, String(comment.spamReports))] : [],
          comment.deletedBy ? [h("dt", {}, "Deleted by"), h("dd", {}, comment.deletedBy.alias)] : [],
        ),
        actions,
      );
      return li;
    }

    function remove(li) {
      const next = li.nextElementSibling?.querySelector("button") || li.previousElementSibling?.querySelector("button");
      li.remove();
      settle();
      (next || panel).focus();
    }

    async function deleteAllUnapproved() {
      if (!(await confirmDialog("Delete every unapproved comment of this group? They move to Deleted.", "Delete all unapproved"))) {
        announce("Nothing was deleted.", "ok");
        return;
      }
      const answer = await api("DELETE", `comment/post/list/${groupId}/unapproved`);
      if (report(answer, `${answer.object?.count ?? 0} unapproved comments deleted.`)) show();
    }

    async function purgeAllDeleted() {
      if (!(await confirmDialog("Purge for good every comment of this group deleted more than a month ago? This cannot be undone.", "Purge all deleted"))) {
        announce("Nothing was purged.", "ok");
        return;
      }
      const answer = await api("POST", `comment/post/purge-deleted/group/${groupId}`);
      if (report(answer, `${answer.object?.count ?? 0} comments deleted more than a month ago purged.`)) show();
    }
  }

  // The list is asked for first: the chooser (the group tree, sorted by name) is built while the
  // API answers.
  select(tab, false);
  const chooser = groupChooser(groups, context.groupId, (id) => {
    context.groupId = id;
    show();
  });
  main.replaceChildren(heading, chooser, tablist, panel);
}
