// Notifications: a user's subscriptions as seen from one group, and their digest type.
// Changing a subscription is the root administrator's (the spec's upserts); a group administrator
// reads them and may change the digest type.
import { api } from "./api.js";
import { apiForm, fill, groupChooser, h, personPicker, report, section } from "./ui.js";

const EMAIL_ALERTS = [["0", "None"], ["1", "Instant"], ["2", "Daily digest"]];
const DIGESTS = [["1", "Summary Daily digest"], ["2", "Full Daily digest"]];

export async function render(main, context) {
  const groups = context.session.groups.filter((g) => g.mayAdminister);
  if (!groups.some((g) => g.id === context.groupId)) context.groupId = groups[0].id;
  const root = context.session.isRootAdmin;
  context.notificationsUser ??= context.session.userId;

  const results = h("div", {});
  // Root administrators find anyone; a group administrator, the members of the group chosen.
  const picker = personPicker({
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
  const lookup = h("div", { class: "toolbar lookup" }, picker);
  const chooser = groupChooser(groups, context.groupId, (id) => {
    context.groupId = id;
    load();
  });
  main.replaceChildren(h("h1", {}, "Notifications"), chooser, lookup, results);

  // Only the latest request draws: an answer for a group chosen before must not replace it.
  let generation = 0;
  async function load() {
    const mine = ++generation;
    const who = context.notificationsUser;
    results.replaceChildren(h("p", { class: "loading" }, "Loading…"));
    const answer = await api("GET", `user/${encodeURIComponent(who)}/notifications`, { query: { groupId: context.groupId } });
    if (mine !== generation) return;
    if (!report(answer)) {
      results.replaceChildren(h("p", { class: "form-error" }, answer.envelope.errors?.[0]?.message || "Cannot read these notifications."));
      return;
    }
    const data = answer.object;
    const base = `user/${encodeURIComponent(data.userId)}/notifications`;
    const cards = [h("p", {}, `Notifications of ${data.userEmail || data.userId}`)];
    for (const entry of data.typeGroups || [])
      cards.push(section(`Group: ${entry.group.name}`, ...entry.notifications.map((n) => row(n, `${base}/group/${n.id}`, { groupId: entry.group.id }))));
    cards.push(section("Posts", ...listOr(data.typePosts, (n) => row(n, `${base}/post/${n.id}`, { postId: n.post.id }, `${n.name}: ${n.post.title || n.post.id}`), "No post subscription.")));
    cards.push(section("Authors", ...listOr(data.typeAuthors, (n) => row(n, `${base}/author/${n.id}`, { authorId: n.author.id }, `${n.name}: ${n.author.alias}`), "No author subscription.")));
    cards.push(section("Personal", ...listOr(data.typePersonal, (n) => row(n, `${base}/personal/${n.id}`, {}), "No personal notification.")));
    const digest = apiForm({
      name: "Digest",
      submitLabel: "Save digest",
      saved: "Digest type saved.",
      fields: [{ key: "typeId", label: "Digest", type: "select", numeric: true, options: DIGESTS }],
      save: (body) => api("POST", `${base}/type-digest`, { body }),
    });
    fill(digest, { typeId: data.digest?.typeId ?? 1 });
    cards.push(section("Daily digest", digest));
    results.replaceChildren(...cards);
  }

  function listOr(items, make, emptyText) {
    return items && items.length ? items.map(make) : [h("p", { class: "empty" }, emptyText)];
  }

  // One subscription: editable by the root administrator, read-only for everyone else.
  function row(notification, path, target, title = notification.name) {
    const current = { emailAlertId: notification.emailAlert?.id ?? 0, showScreenAlert: notification.showScreenAlert, showRedLabel: notification.showRedLabel };
    if (!root) {
      return h(
        "p",
        { class: "subscription" },
        h("strong", {}, title),
        ` — email: ${notification.emailAlert?.name || "None"}; screen alert: ${current.showScreenAlert ? "yes" : "no"}; red label: ${current.showRedLabel ? "yes" : "no"}`,
      );
    }
    const form = apiForm({
      name: title,
      submitLabel: `Save ${title}`,
      saved: `${title} saved.`,
      fields: [
        { key: "emailAlertId", label: `${title}: email alert`, type: "select", numeric: true, options: EMAIL_ALERTS },
        { key: "showScreenAlert", label: `${title}: screen alert`, type: "checkbox" },
        { key: "showRedLabel", label: `${title}: red label`, type: "checkbox" },
      ],
      save: async (body) => {
        const result = await api("POST", path, { body: { ...target, ...body } });
        if (result.ok) result.object = { ...result.object, emailAlertId: result.object.emailAlert?.id };
        return result;
      },
    });
    form.classList.add("subscription");
    fill(form, current);
    return form;
  }

  load();
}
