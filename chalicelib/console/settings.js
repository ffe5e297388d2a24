// Settings of a group the user administers; for the root administrator also the system-wide ones.
import { api } from "./api.js";
import { apiForm, fill, formatDate, groupChooser, h, nextId, report, section, startingGroup } from "./ui.js";

const MAILBOX_FIELDS = [
  { key: "isEnabled", label: "Enabled", type: "checkbox" },
  { key: "serverName", label: "POP3 server" },
  { key: "serverPort", label: "Port", type: "number" },
  { key: "isSSL", label: "Use SSL", type: "checkbox" },
  { key: "serverUsername", label: "User name" },
  { key: "serverPassword", label: "Password", type: "password", autocomplete: "new-password", hint: "Write-only: leave empty to keep the stored password." },
  { key: "deleteProcessed", label: "Delete processed mail from the server", type: "checkbox" },
  { key: "emailAddress", label: "Address members write to", type: "email", hint: "Empty: none. Shown to administrators; on the email-to-comment mailbox it turns on replies by email." },
];

export async function render(main, context) {
  const groups = context.session.groups.filter((g) => g.mayAdminister);
  if (!groups.some((g) => g.id === context.groupId)) context.groupId = startingGroup(groups).id;
  const body = h("div", { class: "grid-2" });
  const chooser = groupChooser(groups, context.groupId, (id) => {
    context.groupId = id;
    show();
  });
  main.replaceChildren(h("h1", {}, "Settings"), chooser, body);

  function show() {
    const g = context.groupId;
    const cards = [
      settingsCard({
        title: "Email-to-post connector",
        get: `connector/email-to-post/${g}`,
        put: `connector/email-to-post/${g}`,
        fields: () => MAILBOX_FIELDS,
        submitLabel: "Save email-to-post connector",
        status: (object) => [...inboundAddress(object), ...mailboxStatus(object, `connector/email-to-post/${g}/poll`)],
      }),
      settingsCard({
        title: "Feed settings",
        get: `feed/settings/${g}`,
        put: `feed/settings/${g}`,
        submitLabel: "Save feed settings",
        fields: (object) => [
          { key: "imageUrl", label: "Image URL", type: "url" },
          { key: "imageLinkUrl", label: "Image link URL", type: "url" },
          { key: "imageAlt", label: "Image description" },
          { key: "ttl", label: "Time to live (minutes)", type: "number" },
          { key: "editorEmail", label: "Editor email", type: "email" },
          { key: "webmasterEmail", label: "Webmaster email", type: "email" },
          { key: "skipDays", label: "Skip days", type: "flags", options: (object.skipDays || []).map((f) => f.name) },
          { key: "skipHours", label: "Skip hours", type: "flags", options: (object.skipHours || []).map((f) => f.name) },
        ],
      }),
      settingsCard({
        title: "Group email",
        get: `group-email/${g}`,
        put: `group-email/${g}`,
        submitLabel: "Save group email",
        fields: () => [
          { key: "email", label: "Sender email", type: "email", hint: "Empty: none of the group's own; mail goes from the site's address." },
          { key: "name", label: "Sender name" },
          { key: "newsletterName", label: "Newsletter name", hint: "Empty: the sender name." },
        ],
      }),
      settingsCard({
        title: "Newsletter disclaimer",
        get: `newsletter/settings/${g}`,
        put: `newsletter/settings/${g}`,
        submitLabel: "Save newsletter disclaimer",
        fields: () => [{ key: "disclaimer", label: "Disclaimer", type: "textarea" }],
      }),
      settingsCard({
        title: "Private landing page",
        get: `system-page/private-landing-page/group/${g}`,
        put: `system-page/private-landing-page/group/${g}`,
        submitLabel: "Save private landing page",
        preview: true,
        fields: () => [{ key: "content", label: "Private landing page content (HTML)", type: "textarea", rows: 8 }],
      }),
      settingsCard({
        title: "Premium landing page",
        get: `system-page/premium-landing-page/group/${g}`,
        put: `system-page/premium-landing-page/group/${g}`,
        submitLabel: "Save premium landing page",
        preview: true,
        fields: () => [
          { key: "isEnabled", label: "Premium landing page enabled", type: "checkbox" },
          { key: "content", label: "Premium landing page content (HTML)", type: "textarea", rows: 8 },
        ],
      }),
      localConnectors(g),
    ];
    if (context.session.isRootAdmin) {
      cards.push(
        h("h2", { class: "system" }, "System-wide (root administrator)"),
        settingsCard({
          title: "Home page",
          get: "system-page/home-page",
          put: "system-page/home-page",
          submitLabel: "Save home page",
          preview: true,
          fields: () => [{ key: "content", label: "Home page content (HTML)", type: "textarea", rows: 8 }],
        }),
        settingsCard({
          title: "Email-to-comment connector",
          get: `connector/email-to-comment/${g}`,
          put: "connector/email-to-comment",
          submitLabel: "Save email-to-comment connector",
          fields: () => MAILBOX_FIELDS,
          status: (object) => mailboxStatus(object, "connector/email-to-comment/poll"),
        }),
      );
    }
    body.replaceChildren(...cards);
  }
  show();
}

const PREVIEW_POLICY =
  '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; img-src data:; style-src \'unsafe-inline\'">';

// The group's own address on the inbound domain (mail to it arrives by push while the connector is
// enabled), with a button that copies it; nothing when Agora receives no mail by push.
function inboundAddress(object) {
  if (!object.inboundAddress) return [];
  const address = object.inboundAddress;
  const shown = h("code", {}, address);
  const said = h("span", { class: "copied", role: "status" });
  const copy = h(
    "button",
    {
      type: "button",
      class: "copy-address",
      "aria-label": `Copy ${address}`,
      onclick: async () => {
        try {
          await navigator.clipboard.writeText(address);
          said.textContent = "Copied.";
        } catch {
          // No clipboard (an insecure origin, a refused permission): select it for Ctrl-C.
          getSelection().selectAllChildren(shown);
          said.textContent = "Selected: press Ctrl-C to copy.";
        }
      },
    },
    "Copy",
  );
  const state = object.isEnabled ? "" : " (once the connector is enabled)";
  return [h("p", { class: "mailbox-inbound" }, "Mail to ", shown, ` becomes a post${state}. `, copy, " ", said)];
}

// When the mailbox was last read, why the last poll failed if it did (lastError; the next good
// poll clears it), when the schedule polls it next (nextPollOn), and "Poll now".
function mailboxStatus(object, pollPath) {
  const when = (iso) => h("time", { datetime: iso }, formatDate(iso));
  const polled = object.lastProcessed
    ? h("p", { class: "mailbox-polled" }, "Last read: ", when(object.lastProcessed))
    : h("p", { class: "mailbox-polled" }, "Not read yet.");
  // A mailbox due already (Poll now, or a time the schedule has not reached yet) is polled at the
  // schedule's next look: never shown as a time gone by.
  const nextText = (next) => {
    if (!next && object.isEnabled && !object.serverName) return ["Not polled: this connector takes its mail by push only."];
    if (!next) return ["Not polled while the connector is disabled."];
    if (Date.parse(next) <= Date.now()) return ["Next poll: due now, at the schedule's next look."];
    return ["Next poll: ", when(next)];
  };
  let nextPollOn = object.nextPollOn;
  const next = h("p", { class: "mailbox-next-poll" }, ...nextText(nextPollOn));
  // The page may stay open past the time shown: it then says "due now", until the card is gone.
  const watch = setInterval(() => {
    if (!next.isConnected) clearInterval(watch);
    else if (nextPollOn && Date.parse(nextPollOn) <= Date.now() && next.querySelector("time")) {
      next.replaceChildren(...nextText(nextPollOn));
    }
  }, 5000);
  const pollNow = h(
    "button",
    {
      type: "button",
      class: "poll-now",
      disabled: !object.isEnabled || !object.serverName,
      onclick: async () => {
        pollNow.disabled = true;
        const answer = await api("POST", pollPath);
        if (report(answer, "The mailbox will be polled at the next run of the schedule.")) {
          nextPollOn = answer.object.nextPollOn;
          next.replaceChildren(...nextText(nextPollOn));
        }
        pollNow.disabled = false;
      },
    },
    "Poll now",
  );
  const shown = [polled, next, pollNow];
  if (!object.lastError) return shown;
  const failed = h(
    "p",
    { class: "form-error mailbox-last-error" },
    "Last poll failed (", when(object.lastError.on), "): ", object.lastError.message,
  );
  return [failed, ...shown];
}

// A card that reads its settings, then offers them as a form that saves with PUT.
function settingsCard({ title, get, put, fields, submitLabel, preview, status }) {
  const loading = h("p", { class: "loading" }, "Loading…");
  const card = section(title, loading);
  api("GET", get).then((answer) => {
    if (!answer.ok) {
      loading.replaceWith(h("p", { class: "form-error" }, `Cannot read the ${title.toLowerCase()}: ${answer.envelope.errors?.[0]?.message || answer.status}`));
      return;
    }
    const frame = preview
      ? h("iframe", { class: "preview", sandbox: "", title: `Preview of the ${title.toLowerCase()} as stored (sanitised, remote images not shown)` })
      : null;
    // The preview shows no remote image: the frame's own policy (on top of the console's, which it
    // inherits) loads nothing from elsewhere, so a tracking beacon in stored HTML never fires.
    const showPreview = (object) => {
      if (frame) frame.srcdoc = PREVIEW_POLICY + (object?.content || "<p><em>(empty)</em></p>");
    };
    const form = apiForm({
      name: title,
      fields: fields(answer.object),
      submitLabel,
      saved: `${title} saved.`,
      save: async (body) => {
        const result = await api("PUT", put, { body });
        if (result.ok) showPreview(result.object);
        return result;
      },
    });
    fill(form, answer.object);
    showPreview(answer.object);
    loading.replaceWith(
      ...(status ? status(answer.object) : []),
      form,
      ...(frame
        ? [h("h3", {}, "Preview (as stored, sanitised; remote images are not shown)"), frame]
        : []),
    );
  });
  return card;
}

function localConnectors(groupId) {
  const loading = h("p", { class: "loading" }, "Loading…");
  const card = section("Local connectors", loading);
  api("GET", `connector/local/list/group/${groupId}`).then((answer) => {
    if (!report(answer)) {
      loading.replaceWith(h("p", { class: "form-error" }, "Cannot read the local connectors."));
      return;
    }
    const connectors = answer.object.connectors || [];
    if (!connectors.length) {
      loading.replaceWith(h("p", { class: "empty" }, "No local connector."));
      return;
    }
    loading.replaceWith(
      ...connectors.map((connector) => {
        const chat = "applicationId" in (connector.settings || {});
        const fields = [
          { key: "isEnabled", label: `${connector.name} enabled`, type: "checkbox" },
          { key: "inheritSettings", label: `${connector.name}: inherit the parent group's settings`, type: "checkbox" },
        ];
        if (chat)
          fields.push(
            { key: "settings.applicationId", label: `${connector.name} application ID` },
            { key: "settings.applicationSecret", label: `${connector.name} application secret`, type: "password", autocomplete: "new-password", hint: "Write-only: leave empty to keep the stored secret." },
            { key: "settings.allowGuest", label: `${connector.name}: allow guests`, type: "checkbox" },
          );
        const inherited = connector.settings?.inheritedFrom;
        const headingId = nextId("connector");
        const form = apiForm({
          name: connector.name,
          fields,
          submitLabel: `Save ${connector.name}`,
          saved: `${connector.name} saved.`,
          save: async (body) => {
            const result = await api("PUT", `connector/local/${connector.id}/group/${groupId}`, { body: chat ? body : { ...body, settings: {} } });
            // The answer carries inheritSettings inside settings (the spec's shape); the form has it on top.
            if (result.ok) result.object = { ...result.object, inheritSettings: result.object.settings?.inheritSettings };
            return result;
          },
        });
        fill(form, { ...connector, inheritSettings: connector.settings?.inheritSettings });
        return h(
          "article",
          { class: "connector", "aria-labelledby": headingId },
          h("h3", { id: headingId }, connector.name),
          h("p", { class: "hint" }, connector.description, inherited ? ` · Settings inherited from ${inherited.name}.` : ""),
          form,
        );
      }),
    );
  });
  return card;
}
