// A post as the API stores it, with its comments: what a post's permalink opens (make run
// redirects `{AGORA_BASE_URL}/{group slug}/{post slug}` to `#/post?id=…`). Not in the navigation.
import { api } from "./api.js";
import { formatDate, h, report, section, textOf } from "./ui.js";

// The stored HTML (sanitised by the API) is shown in a frame that loads nothing from elsewhere.
// The frame is a document of its own: without a style it shows the post in the browser's serif
// defaults, so it takes frame.css (the console's type) from the console; an inline style would
// not do, the frame inheriting the console's policy (no inline style).
const FRAME_CSS = new URL("frame.css", import.meta.url).href;
const FRAME_POLICY = `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline' ${location.origin}">`;
const FRAME_HEAD = `${FRAME_POLICY}<link rel="stylesheet" href="${FRAME_CSS}">`;

export async function render(main, context) {
  const id = new URLSearchParams(location.hash.split("?")[1] || "").get("id") || "";
  main.replaceChildren(h("h1", {}, "Post"), h("p", { class: "loading" }, "Loading…"));
  const answer = await api("GET", `post/${encodeURIComponent(id)}`);
  if (!report(answer)) {
    main.replaceChildren(h("h1", {}, "Post"), h("p", {}, "This post cannot be shown: it does not exist, or your account may not see it."));
    return;
  }
  const post = answer.object;
  context.groupId = post.group.id;
  const body = h("iframe", { class: "preview", sandbox: "", title: `The post "${post.title}" as stored (sanitised)` });
  body.srcdoc = FRAME_HEAD + post.content;
  const comments = h("ol", { class: "comments" }, h("li", { class: "loading" }, "Loading…"));
  main.replaceChildren(
    h("h1", {}, post.title),
    h(
      "p",
      { class: "hint" },
      `${post.author.alias} in ${post.group.name}, `,
      h("time", { datetime: post.createdOn }, formatDate(post.createdOn)),
      post.source === "email" ? " (by email)" : "",
    ),
    body,
    section(`Comments (${post.commentsCount})`, comments, h("p", {}, h("a", { href: "#/moderation" }, `Moderate the comments of ${post.group.name}`))),
  );
  const listed = await api("GET", `post/${encodeURIComponent(post.id)}/comments`, { query: { pageSize: 100 } });
  if (!report(listed)) return;
  const items = listed.object.comments || [];
  comments.replaceChildren(
    ...(items.length
      ? items.map((c) => h("li", { dataset: { commentId: c.id } }, h("strong", {}, c.author?.alias || "Anonymous"), ` (${formatDate(c.createdOn)}): `, textOf(c.content)))
      : [h("li", {}, "No comments yet.")]),
  );
}
