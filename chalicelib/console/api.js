// The API client: same origin, token for this browser tab only (sessionStorage, never localStorage).
const TOKEN_KEY = "agora.console.token";
const API_BASE = new URL("../api/v1/en_US/", document.baseURI);
const SESSION_URL = new URL("api/session", document.baseURI);

let expiryTimer = null;
const listeners = new Set();

export function onSignOut(listener) {
  listeners.add(listener);
}

export function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

// The token is a JWT: its `exp` tells when the API will stop accepting it.
export function tokenExpiry(value) {
  try {
    const payload = value.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    const claims = JSON.parse(atob(payload.padEnd(Math.ceil(payload.length / 4) * 4, "=")));
    return typeof claims.exp === "number" ? claims.exp * 1000 : null;
  } catch {
    return null;
  }
}

function keep(value) {
  sessionStorage.setItem(TOKEN_KEY, value);
  scheduleExpiry(value);
}

function scheduleExpiry(value) {
  clearTimeout(expiryTimer);
  const expiry = tokenExpiry(value);
  if (expiry === null) return;
  // setTimeout cannot wait longer than ~24.8 days; a token lives 8 hours.
  expiryTimer = setTimeout(() => signOut("Your session has expired. Sign in again."), Math.max(0, expiry - Date.now()));
}

export function signOut(reason = "") {
  clearTimeout(expiryTimer);
  sessionStorage.removeItem(TOKEN_KEY);
  for (const listener of listeners) listener(reason);
}

export function hasLiveToken() {
  const value = token();
  if (!value) return false;
  const expiry = tokenExpiry(value);
  if (expiry !== null && expiry <= Date.now()) {
    sessionStorage.removeItem(TOKEN_KEY);
    return false;
  }
  scheduleExpiry(value);
  return true;
}

// One answer: {status, ok, envelope}. `ok` is true only for a 2xx with `success: true`, so nothing
// the API refused can look as if it worked.
async function send(url, method, body) {
  const headers = { Accept: "application/json" };
  const value = token();
  if (value) headers["X-Auth"] = value;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch {
    return { status: 0, ok: false, envelope: { success: false, errors: [{ key: "", message: "The API cannot be reached." }] } };
  }
  let envelope;
  try {
    envelope = await response.json();
  } catch {
    envelope = { success: false, errors: [{ key: "", message: `The API answered ${response.status} without a readable body.` }] };
  }
  if (!envelope || typeof envelope !== "object") envelope = { success: false, errors: [] };
  if (!Array.isArray(envelope.errors)) envelope.errors = [];
  const ok = response.ok && envelope.success === true;
  if (response.status === 401 && value) signOut("Your session has ended. Sign in again.");
  return { status: response.status, ok, envelope, object: envelope.object };
}

export function api(method, path, { query, body } = {}) {
  const url = new URL(path, API_BASE);
  for (const [name, value] of Object.entries(query || {})) {
    if (value !== undefined && value !== null && value !== "") url.searchParams.set(name, value);
  }
  return send(url, method, body);
}

export async function signIn(email, password) {
  const answer = await api("POST", "security/login", { body: { email, password } });
  if (answer.ok && typeof answer.object === "string") keep(answer.object);
  return answer;
}

export function loadSession() {
  return send(SESSION_URL, "GET");
}

// A readable sentence for a failed answer.
export function failure(answer) {
  const messages = (answer.envelope.errors || []).map((e) => e.message).filter(Boolean);
  if (messages.length) return messages.join(" ");
  if (answer.status === 403) return "You are not allowed to do this.";
  if (answer.status === 404) return "Not found.";
  return `The API refused (${answer.status}).`;
}
