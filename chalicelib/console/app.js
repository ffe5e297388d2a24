// The console's shell: sign-in, the navigation, and one page at a time (hash routes).
import { failure, hasLiveToken, loadSession, onSignOut, signIn, signOut, token } from "./api.js";
import { announce, clearAnnouncement, h, knowGroups, nextId } from "./ui.js";

// Each page: its link text, its module, and who may see it (the session says what the user may do).
const PAGES = [
  { path: "moderation", name: "Moderation", module: "./moderation.js", visible: (s) => s.groups.some((g) => g.mayModerate) },
  { path: "events", name: "Events", module: "./events.js", visible: (s) => s.groups.some((g) => g.mayModerate) },
  { path: "settings", name: "Settings", module: "./settings.js", visible: (s) => s.groups.some((g) => g.mayAdminister) },
  { path: "mail-log", name: "Mail log", module: "./mail-log.js", visible: (s) => s.groups.some((g) => g.mayAdminister) },
  { path: "profile-fields", name: "Profile fields", module: "./profile-fields.js", visible: (s) => s.isRootAdmin },
  { path: "notifications", name: "Notifications", module: "./notifications.js", visible: (s) => s.groups.some((g) => g.mayAdminister) },
  { path: "activity", name: "Activity", module: "./activity.js", visible: (s) => s.groups.some((g) => g.mayAdminister) },
  // Not in the navigation: what a post's permalink opens (make run redirects it here).
  { path: "post", name: "Post", module: "./post.js", visible: (s) => s.groups.some((g) => g.mayModerate), linkedOnly: true },
];

const main = document.getElementById("main");
const nav = document.getElementById("nav");
const who = document.getElementById("who");
// Shared between pages: the session, and the group last chosen (so switching pages keeps it).
const context = { session: null, groupId: null };

onSignOut((reason) => {
  context.session = null;
  showSignIn(reason);
});

function showSignIn(reason = "") {
  nav.hidden = true;
  who.hidden = true;
  document.title = "Sign in · Agora console";
  const emailId = nextId("email");
  const passwordId = nextId("password");
  const error = h("p", { class: "form-error", role: "alert" }, reason);
  const form = h(
    "form",
    { class: "sign-in card", "aria-labelledby": "sign-in-title" },
    h("h1", { id: "sign-in-title" }, "Sign in"),
    h("div", { class: "field" }, h("label", { for: emailId }, "Email"), h("input", { id: emailId, type: "email", name: "email", autocomplete: "username", required: true })),
    h("div", { class: "field" }, h("label", { for: passwordId }, "Password"), h("input", { id: passwordId, type: "password", name: "password", autocomplete: "current-password", required: true })),
    error,
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Sign in")),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const button = form.querySelector("button");
    button.disabled = true;
    const answer = await signIn(form.email.value.trim(), form.password.value);
    button.disabled = false;
    if (!answer.ok) {
      error.textContent = failure(answer);
      form.password.focus();
      return;
    }
    await start();
  });
  main.replaceChildren(form);
  form.querySelector("input").focus();
  warmFirstPage();
}

// Each page's module, imported once: a page opened again (or warmed below) is drawn without
// waiting a task for import() to answer.
const modules = new Map();
function pageModule(page) {
  if (!modules.has(page.module)) {
    const loading = import(page.module);
    modules.set(page.module, loading);
    loading.catch(() => modules.delete(page.module)); // asked again on the next visit
  }
  return modules.get(page.module);
}

// While the person types, the page that opens after sign-in is made ready: its module run
// (index.html preloads it: fetched, not yet run), so that the page asks for its list as soon as
// the session is here. A failure shows when route() imports it again.
function warmFirstPage() {
  requestIdleCallback(() => {
    const wanted = location.hash.replace(/^#\/?/, "").split("?")[0];
    pageModule(PAGES.find((p) => p.path === wanted) || PAGES[0]).catch(() => {});
  });
}

async function start() {
  // The session is all the first page waits for: it names every group the console shows, with
  // its parent (the choosers' tree), so nothing else is asked before the page's own list.
  const answer = await loadSession();
  if (!answer.ok) {
    if (answer.status !== 401) signOut(failure(answer));
    return;
  }
  context.session = answer.object;
  knowGroups(context.session.groups);
  who.replaceChildren(
    h("span", {}, `Signed in as ${context.session.alias || context.session.email}`),
    h("button", { type: "button", class: "link", onclick: () => signOut("You have signed out.") }, "Sign out"),
  );
  who.hidden = false;
  const visible = PAGES.filter((page) => page.visible(context.session) && !page.linkedOnly);
  nav.replaceChildren(h("ul", {}, visible.map((page) => h("li", {}, h("a", { href: `#/${page.path}`, dataset: { page: page.path } }, page.name)))));
  nav.hidden = false;
  if (!visible.length) {
    main.replaceChildren(h("h1", {}, "Nothing to administer"), h("p", {}, "Your account moderates or administers no group."));
    return;
  }
  await route();
}

// Each route() is numbered: a page whose module arrives after the person has moved on to
// another page is not drawn over it. (Every page's render replaces #main's children before it
// first waits, so only the wait for the module can let an older page land on a newer one.)
let routing = 0;

async function route() {
  if (!context.session) return;
  const mine = ++routing;
  const visible = PAGES.filter((page) => page.visible(context.session));
  const wanted = location.hash.replace(/^#\/?/, "").split("?")[0];
  const page = PAGES.find((p) => p.path === wanted);
  if (!page) {
    // Named in place rather than by location.replace, whose hashchange would come a task or a
    // frame later: the first page asks for its list at once. Focus moves as after a hashchange.
    history.replaceState(history.state, "", `#/${visible[0]?.path || "moderation"}`);
    await route();
    main.focus({ preventScroll: true });
    return;
  }
  for (const link of nav.querySelectorAll("a")) {
    if (link.dataset.page === page.path) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  document.title = `${page.name} · Agora console`;
  clearAnnouncement();
  if (!page.visible(context.session)) {
    main.replaceChildren(h("h1", {}, page.name), h("p", {}, "Your account may not use this page."));
    return;
  }
  main.replaceChildren(h("p", { class: "loading" }, "Loading…"));
  try {
    const module = await pageModule(page);
    if (mine !== routing) return;
    await module.render(main, context);
  } catch (error) {
    console.error(error);
    announce(`This page failed to load: ${error.message}`, "error");
  }
}

window.addEventListener("hashchange", () => {
  route().then(() => main.focus({ preventScroll: true }));
});

const hadToken = Boolean(token());
if (hasLiveToken()) start();
else showSignIn(hadToken ? "Your session has expired. Sign in again." : "");
