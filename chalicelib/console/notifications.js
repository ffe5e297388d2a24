// Notifications: a user's subscriptions as seen from one group, and their digest type, saved
// together by one button. Changing a subscription is the root administrator's (the spec's
// upserts), who may also add one to a post (found by its title) or to an author (found by name);
// a group administrator reads them and may change the digest type.
import { api } from "./api.js";
import { announce, field, fill, groupChooser, h, personPicker, picker, section, showErrors, clearErrors, startingGroup, values } from "./ui.js";

const EMAIL_ALERTS = [["0", "None"], ["1", "Instant"], ["2", "Daily digest"]];
const DIGESTS = [["1", "Summary Daily digest"], ["2", "Full Daily digest"]];
// The spec's notification ids of the two kinds one adds with a target.
const POST_COMMENTS = 3;
const AUTHOR_POSTS = 8;

export async function render(main, context) {
  const groups = context.session.groups.filter((g) => g.mayAdminister);
  if (!groups.some((g) => g.id === context.groupId)) context.groupId = startingGroup(groups).id;
  const root = context.session.isRootAdmin;
  context.notificationsUser ??= context.session.userId;

  const results = h("div", {});
  // Root administrators find anyone; a group administrator, the members of the group chosen.
  const person = personPicker({
    label: "Person",
    hint: "Type at least 2 letters of their name or email address; your own notifications show until you choose.",
    value: context.notificationsAlias || "",
    search: (q, offset, pageSize) =>
      api("GET", "user/search", { query: { q, offset, pageSize, groupId: root ? undefined : context.groupId } }),
    onChoose: (user) => {
      context.notificationsUser = user.id;
      context.notificationsAlias = user.alias;
      load();
    },
  });
  const lookup = h("div", { class: "toolbar lookup" }, person);
  const chooser = groupChooser(groups, context.groupId, (id) => {
    context.groupId = id;
    load();
  });
  main.replaceChildren(h("h1", {}, "Notifications"), chooser, lookup, results);

  // Only the latest request draws: an answer for a group chosen before must not replace it.
  let generation = 0;
  async function load(announced = "") {
    const mine = ++generation;
    const who = context.notificationsUser;
    results.replaceChildren(h("p", { class: "loading" }, "Loading…"));
    const answer = await api("GET", `user/${encodeURIComponent(who)}/notifications`, { query: { groupId: context.groupId } });
    if (mine !== generation) return;
    if (!answer.ok) {
      announce(answer.envelope.errors?.[0]?.message || "Cannot read these notifications.", "error");
      results.replaceChildren(h("p", { class: "form-error" }, answer.envelope.errors?.[0]?.message || "Cannot read these notifications."));
      return;
    }
    results.replaceChildren(...editor(answer.object));
    if (announced) announce(announced, "ok");
  }

  // The whole page is one form: each subscription a row, the digest, one Save button.
  function editor(data) {
    const base = `user/${encodeURIComponent(data.userId)}/notifications`;
    const rows = [];
    const groupRows = (data.typeGroups || []).map((entry) =>
      section(`Group: ${entry.group.name}`, ...entry.notifications.map((n) => row(rows, n, `${base}/group/${n.id}`, { groupId: entry.group.id }, n.name))),
    );
    const postList = h("div", { class: "subscriptions" });
    const postEmpty = h("p", { class: "empty" }, "No post subscription.");
    for (const n of data.typePosts || []) postList.append(row(rows, n, `${base}/post/${n.id}`, { postId: n.post.id }, `${n.name}: ${n.post.title || n.post.id}`, n.post.id));
    const authorList = h("div", { class: "subscriptions" });
    const authorEmpty = h("p", { class: "empty" }, "No author subscription.");
    for (const n of data.typeAuthors || []) authorList.append(row(rows, n, `${base}/author/${n.id}`, { authorId: n.author.id }, `${n.name}: ${n.author.alias}`, n.author.id));
    const showEmpty = () => {
      postEmpty.hidden = postList.children.length > 0;
      authorEmpty.hidden = authorList.children.length > 0;
    };
    showEmpty();

    // Adding: a new row, saved with the rest; a target already listed gets the focus instead.
    const add = (list, kind, number, target, targetId, title) => {
      const known = rows.find((r) => r.targetId === targetId && r.kind === kind);
      if (known) {
        known.element.querySelector("select").focus();
        announce(`${title} is already listed.`, "ok");
        return;
      }
      const fresh = { id: number, name: title, emailAlert: { id: 1 }, showScreenAlert: true, showRedLabel: false };
      const element = row(rows, fresh, `${base}/${kind}/${number}`, target, title, targetId, true);
      list.append(element);
      showEmpty();
      element.querySelector("select").focus();
      announce(`${title} added; save to keep it.`, "ok");
    };
    const postAdder = root
      ? picker({
          label: "Add a post",
          hint: "Type at least 2 letters of the post's title (posts of the group chosen).",
          found: ["post", "posts"],
          clearOnChoose: true,
          search: (q, offset, pageSize) => api("GET", `post/list/${context.groupId}`, { query: { filter: q, offset, pageSize } }),
          itemsOf: (object) => object.posts,
          nameOf: (post) => post.title,
          detailOf: (post) => (post.author?.alias ? `by ${post.author.alias}` : ""),
          onChoose: (post) => add(postList, "post", POST_COMMENTS, { postId: post.id }, post.id, `New comments on post: ${post.title}`),
        })
      : null;
    const authorAdder = root
      ? personPicker({
          label: "Add an author",
          hint: "Type at least 2 letters of the author's name or email address.",
          clearOnChoose: true,
          search: (q, offset, pageSize) => api("GET", "user/search", { query: { q, offset, pageSize } }),
          onChoose: (user) => add(authorList, "author", AUTHOR_POSTS, { authorId: user.id }, user.id, `New posts by author: ${user.alias}`),
        })
      : null;

    const digest = h("div", { class: "subscription digest" }, field({ key: "typeId", label: "Digest", type: "select", numeric: true, options: DIGESTS }), h("p", { class: "form-error", role: "alert" }));
    const digestNow = { typeId: data.digest?.typeId ?? 1 };
    fill(digest, digestNow);

    const error = h("p", { class: "form-error", role: "alert" });
    const save = h("button", { type: "submit" }, "Save notifications");
    const form = h(
      "form",
      { class: "api-form notifications", novalidate: true, "aria-label": "Notifications" },
      h("p", {}, `Notifications of ${data.userEmail || data.userId}`),
      groupRows,
      section("Posts", postList, postEmpty, postAdder),
      section("Authors", authorList, authorEmpty, authorAdder),
      section("Personal", ...(data.typePersonal || []).map((n) => row(rows, n, `${base}/personal/${n.id}`, {}, n.name))),
      section("Daily digest", digest),
      error,
      h("div", { class: "actions" }, save),
    );
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      save.disabled = true;
      try {
        await saveAll();
      } finally {
        save.disabled = false;
      }
    });

    // Every change in one go: the rows that differ from what was read (and every new row), then
    // the digest. Each refusal shows beside its row; what the API took is kept.
    async function saveAll() {
      error.textContent = "";
      const changes = rows.filter((r) => r.changed()).map((r) => ({ element: r.element, send: () => api("POST", r.path, { body: { ...r.target, ...values(r.element) } }), done: r.saved }));
      const digestValue = values(digest);
      if (digestValue.typeId !== digestNow.typeId)
        changes.push({ element: digest, send: () => api("POST", `${base}/type-digest`, { body: digestValue }), done: () => (digestNow.typeId = digestValue.typeId) });
      if (!changes.length) {
        announce("Nothing has changed.", "ok");
        return;
      }
      const answers = await Promise.all(changes.map((c) => c.send()));
      let refused = 0;
      let first = null;
      for (const [i, answer] of answers.entries()) {
        if (answer.ok) {
          clearErrors(changes[i].element);
          changes[i].done();
        } else {
          refused++;
          first ??= showErrors(changes[i].element, answer) || changes[i].element;
        }
      }
      if (!refused) {
        await load(`Notifications saved: ${changes.length} ${changes.length === 1 ? "change" : "changes"}.`);
        return;
      }
      const kept = changes.length - refused;
      error.textContent = `${refused} of ${changes.length} changes were refused (shown beside them)${kept ? `; the other ${kept} are saved` : ""}.`;
      announce(error.textContent, "error");
      first.querySelector("select, input")?.focus();
    }
    return [form];
  }

  // One subscription: editable by the root administrator, read-only for everyone else.
  function row(rows, notification, path, target, title, targetId = null, fresh = false) {
    const current = { emailAlertId: notification.emailAlert?.id ?? 0, showScreenAlert: Boolean(notification.showScreenAlert), showRedLabel: Boolean(notification.showRedLabel) };
    if (!root) {
      return h(
        "p",
        { class: "subscription" },
        h("strong", {}, title),
        ` — email: ${notification.emailAlert?.name || "None"}; screen alert: ${current.showScreenAlert ? "yes" : "no"}; red label: ${current.showRedLabel ? "yes" : "no"}`,
      );
    }
    const element = h(
      "div",
      { class: "subscription", role: "group", "aria-label": title, dataset: { kind: path.split("/").at(-2) } },
      field({ key: "emailAlertId", label: `${title}: email alert`, type: "select", numeric: true, options: EMAIL_ALERTS }),
      field({ key: "showScreenAlert", label: `${title}: screen alert`, type: "checkbox" }),
      field({ key: "showRedLabel", label: `${title}: red label`, type: "checkbox" }),
      h("p", { class: "form-error", role: "alert" }),
    );
    fill(element, current);
    let baseline = fresh ? null : JSON.stringify(current);
    rows.push({
      element,
      path,
      target,
      targetId,
      kind: path.split("/").at(-2),
      changed: () => baseline === null || JSON.stringify(values(element)) !== baseline,
      saved: () => (baseline = JSON.stringify(values(element))),
    });
    return element;
  }

  load();
}
