// ui.js: what every page shares: building elements (text only, never HTML), the connection
// badge, announcements for screen readers, errors next to their field, and the account panel.
import { Hubbub, HubbubError, State } from "./hubbub.js";

/**
 * Makes an element. `props`: attributes (`class`, `aria-label`, `for`...), `on<event>` handlers,
 * `text` (set as text: whatever a user typed stays text). `children`: elements or strings (text).
 */
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "text") node.textContent = String(value);
    else if (key.startsWith("on") && typeof value === "function") node.addEventListener(key.slice(2), value);
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (value === true) node.setAttribute(key, "");
    else node.setAttribute(key, String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** Shorthand for `document.getElementById`. */
export const $ = (id) => document.getElementById(id);

/** Replaces a container's children. */
export function fill(container, ...children) {
  container.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));
}

/** Says `message` to screen readers (and shows it in the page's status line). */
export function announce(message) {
  const region = $("announcer");
  if (!region) return;
  region.textContent = "";
  // A fresh text node after a tick, so the same message twice is read twice.
  setTimeout(() => { region.textContent = message; }, 30);
}

/** Shows an error: next to its field when the server named one that the form has, else in the
 * form's error line (`role="alert"`). */
export function showError(form, error) {
  const message = error instanceof HubbubError ? friendly(error) : String(error?.message ?? error);
  const line = form.querySelector(".error") ?? $("page-error");
  if (line) line.textContent = message;
  const field = error instanceof HubbubError ? error.field : null;
  const input = field ? form.querySelector(`[name="${CSS.escape(field.split(/[.[]/)[0])}"]`) : null;
  if (input) {
    input.setAttribute("aria-invalid", "true");
    input.focus();
  }
}

/** Clears a form's error line and marks. */
export function clearError(form) {
  const line = form.querySelector(".error");
  if (line) line.textContent = "";
  for (const input of form.querySelectorAll("[aria-invalid]")) input.removeAttribute("aria-invalid");
}

/** A server error as a person reads it. */
export function friendly(error) {
  const sentence = (text) => text.charAt(0).toUpperCase() + text.slice(1);
  switch (error.code) {
    case "rate_limited": {
      // Some refusals say when already ("...; try again in 3598 seconds"): only the others get it added.
      if (/try again/i.test(error.message)) return sentence(error.message);
      const seconds = Math.ceil((error.retryAfterMs ?? 1000) / 1000);
      return `${sentence(error.message)}. Try again in ${seconds < 120 ? `${seconds} s` : `${Math.ceil(seconds / 60)} min`}.`;
    }
    case "timeout": return "The server did not answer in time. Check your connection and try again.";
    case "disconnected": return "The connection dropped before the server answered. It is reconnecting: try again in a moment.";
    default: return sentence(error.message);
  }
}

/** Runs `action` for a form's submit, once at a time: the buttons say they are busy meanwhile
 * (`aria-disabled`, not `disabled`, which would drop the keyboard's focus), errors shown. */
export function onSubmit(form, action) {
  let busy = false;
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (busy) return;
    busy = true;
    clearError(form);
    const buttons = [...form.querySelectorAll("button")];
    for (const b of buttons) b.setAttribute("aria-disabled", "true");
    try {
      await action(new FormData(form), form);
    } catch (e) {
      showError(form, e);
    } finally {
      busy = false;
      for (const b of buttons) b.removeAttribute("aria-disabled");
    }
  });
}

const stateText = {
  [State.idle]: "Offline",
  [State.connecting]: "Connecting…",
  [State.open]: "Live",
  [State.reconnecting]: "Reconnecting…",
};

/**
 * The page's session: one `Hubbub`, the connection badge (`#connection`) kept in step, and the
 * account panel (`#account`): sign up or log in when anonymous, the user and "Log out" when not.
 * `onUser(user)` runs each time the user changes (null: logged out), after the first connect too.
 */
export function startSession({ onUser = () => {} } = {}) {
  const hub = new Hubbub();
  const badge = $("connection");
  hub.addEventListener("state", (e) => {
    const { state, retryInMs } = e.detail;
    if (badge) {
      badge.dataset.state = state;
      badge.textContent = stateText[state] + (state === State.reconnecting && retryInMs > 1500 ? ` (in ${Math.round(retryInMs / 1000)} s)` : "");
    }
    if (state === State.reconnecting) announce("Connection lost. Reconnecting.");
  });
  let known;
  const changed = (user) => {
    if (known !== undefined && (known?.id ?? null) === (user?.id ?? null)) return;
    known = user;
    drawAccount(hub, user);
    onUser(user);
  };
  hub.addEventListener("user", (e) => {
    if (!e.detail.user && e.detail.reason) announce(`Signed out: ${e.detail.reason}`);
    changed(e.detail.user);
  });
  hub.connect().then(() => changed(hub.user));
  return hub;
}

function drawAccount(hub, user) {
  const panel = $("account");
  if (!panel) return;
  if (user) {
    fill(panel, el("p", { class: "who" }, "Signed in as ", el("strong", { text: user.username })),
      el("button", { type: "button", class: "link", onclick: () => hub.logout().catch(() => {}) }, "Log out"));
    return;
  }
  const login = el("form", { class: "card stack", "aria-labelledby": "login-title" },
    el("h2", { id: "login-title" }, "Log in"),
    el("label", { for: "login-name" }, "Username or email"),
    el("input", { id: "login-name", name: "login", autocomplete: "username", required: true, maxlength: 254 }),
    el("label", { for: "login-password" }, "Password"),
    el("input", { id: "login-password", name: "password", type: "password", autocomplete: "current-password", required: true }),
    el("p", { class: "error", role: "alert" }),
    el("button", { type: "submit" }, "Log in"));
  onSubmit(login, async (data) => {
    await hub.login(String(data.get("login")).trim(), String(data.get("password")));
    announce(`Signed in as ${hub.user.username}`);
  });
  const signup = el("form", { class: "card stack", "aria-labelledby": "signup-title" },
    el("h2", { id: "signup-title" }, "New here? Sign up"),
    el("label", { for: "signup-username" }, "Username"),
    el("input", { id: "signup-username", name: "username", autocomplete: "username", required: true, minlength: 3, maxlength: 32,
                  pattern: "[A-Za-z0-9._\\-]+", "aria-describedby": "signup-username-hint" }),
    el("p", { id: "signup-username-hint", class: "hint" }, "3 to 32 letters, digits, dots, dashes or underscores."),
    el("label", { for: "signup-email" }, "Email"),
    el("input", { id: "signup-email", name: "email", type: "email", autocomplete: "email", required: true, maxlength: 254 }),
    el("label", { for: "signup-password" }, "Password"),
    el("input", { id: "signup-password", name: "password", type: "password", autocomplete: "new-password", required: true, minlength: 8,
                  "aria-describedby": "signup-password-hint" }),
    el("p", { id: "signup-password-hint", class: "hint" }, "At least 8 characters, with a letter and a digit."),
    el("p", { class: "error", role: "alert" }),
    el("button", { type: "submit", class: "secondary" }, "Sign up"));
  onSubmit(signup, async (data) => {
    await hub.signup({ username: String(data.get("username")).trim(), email: String(data.get("email")).trim(), password: String(data.get("password")) });
    announce(`Welcome, ${hub.user.username}`);
  });
  fill(panel, login, signup);
}

/** The browser's location, as `{lat, lon}` (rejects with a message a person can read). */
export function here({ timeoutMs = 10_000 } = {}) {
  return new Promise((resolve, reject) => {
    if (!navigator.geolocation) return reject(new Error("This browser cannot tell where you are: type a place instead."));
    navigator.geolocation.getCurrentPosition(
      (p) => resolve({ lat: p.coords.latitude, lon: p.coords.longitude }),
      (e) => reject(new Error(e.code === 1 ? "Location is turned off for this page: type a place instead." : "Your location is not available right now.")),
      { timeout: timeoutMs, maximumAge: 60_000 });
  });
}

/** A time as the reader's clock shows it (`21:30`), from seconds since 1970. */
export function clock(seconds) {
  return new Date(seconds * 1000).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
}

/** "3 min ago", "2 h ago". */
export function ago(seconds, now = Date.now() / 1000) {
  const d = Math.max(0, now - seconds);
  if (d < 60) return "just now";
  if (d < 3600) return `${Math.round(d / 60)} min ago`;
  if (d < 86400) return `${Math.round(d / 3600)} h ago`;
  return `${Math.round(d / 86400)} d ago`;
}

/** A query parameter of the page's address. */
export function param(name) {
  return new URLSearchParams(location.search).get(name);
}

/** The distance in km between two `{lat, lon}` along the Earth's surface (haversine). */
export function distanceKm(a, b) {
  const rad = Math.PI / 180;
  const dLat = (b.lat - a.lat) * rad;
  const dLon = (b.lon - a.lon) * rad;
  const h = Math.sin(dLat / 2) ** 2 + Math.cos(a.lat * rad) * Math.cos(b.lat * rad) * Math.sin(dLon / 2) ** 2;
  return 2 * 6371 * Math.asin(Math.min(1, Math.sqrt(h)));
}
