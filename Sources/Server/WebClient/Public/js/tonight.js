// The Tonight page (event-goers): tonight's shows near the user, favourite artists, plans, live
// notifications from the user's own room and an event's live room. Text only: every name from a
// feed or a user is set with el()/textContent.
import { $, el, fill, announce, showError, clearError, onSubmit, startSession, here, ago, param, friendly, distanceKm } from "./ui.js";

const NOTES_MAX = 50;
const SEARCH_LIMIT = 8;

const statusText = {
  onsale: "On sale", offsale: "Not on sale", soldout: "Sold out",
  cancelled: "Cancelled", postponed: "Postponed", rescheduled: "Rescheduled",
};

const state = {
  user: null,
  prefs: { favoriteArtists: [], favoriteCategories: [] },
  plans: [],
  tonight: [],
  explore: [],
  nearby: [],
  categories: [],
  names: new Map(), // artist id → name
  artists: new Map(), // artist id → artist.get's result
  userRoom: null,
  notes: { epoch: null, floor: 0, list: [] },
  open: null, // the event shown in the panel: {id, room, event, plan, live, changes, opener}
  formDirty: false,
};

const hub = startSession({ onUser });
hub.addEventListener("push", (e) => notePush(e.detail));
hub.addEventListener("user", (e) => {
  if (!e.detail.user && e.detail.reason === "logged out" && state.notesKey) localStorage.removeItem(state.notesKey);
});

// ---------------------------------------------------------------- session

function onUser(user) {
  closeEvent({ restoreFocus: false });
  state.userRoom?.close();
  state.userRoom = null;
  state.user = user;
  state.prefs = { favoriteArtists: [], favoriteCategories: [] };
  state.plans = [];
  state.tonight = [];
  state.explore = [];
  state.nearby = [];
  state.artists = new Map();
  state.formDirty = false;
  state.arranged = false;
  drawn = new WeakMap();
  $("app").hidden = !user;
  $("intro").textContent = user
    ? "Shows near you tonight, picked from the artists you like."
    : "Shows near you tonight, picked from the artists you like. Sign in to see yours.";
  pageError(null);
  if (!user) return;
  state.notesKey = `hubbub.tonight.notes.${user.id}`;
  state.notes = loadNotes();
  for (const node of noteNodes.values()) node.remove();
  noteNodes.clear();
  renderNotes();
  renderAll();
  state.userRoom = hub.subscribe(`user:${user.id}`, {
    snapshot: onSnapshot,
    push: onUserPush,
    recovered: () => refreshSoon(),
    error: (e) => pageError(`Live notifications stopped: ${friendly(e)}. Reload the page to try again.`),
  });
  state.userRoom.ready.catch((e) => pageError(`Could not load your evening: ${friendly(e)}`));
  loadCategories();
  const deep = param("event");
  if (deep) openEvent(deep, null);
}

function onSnapshot(snapshot, room) {
  state.prefs = snapshot.prefs ?? state.prefs;
  state.plans = snapshot.plans ?? [];
  state.tonight = snapshot.tonight ?? [];
  learnNames([...state.plans, ...state.tonight].map((x) => x.event));
  notesAfterSnapshot(room);
  if (!state.arranged) arrange();
  fillPrefsForm();
  renderAll();
  loadFavouriteArtists();
  refresh({ only: ["explore", "nearby"] });
}

/** A push of the user's room, in order (notifications are made by notePush). */
function onUserPush(push) {
  const d = push.data ?? {};
  switch (push.event) {
    case "tonight.suggested":
      learnNames([d.event]);
      if (!state.tonight.some((s) => s.event.id === d.event.id)) state.tonight.push(d);
      break;
    case "event.changed":
      replaceEvent(d.event);
      break;
    default:
      break;
  }
  renderLists();
  refreshSoon();
}

/** Once per sign-in: someone who has not set a place yet sees the settings first. */
function arrange() {
  const app = $("app");
  const setup = [$("prefs"), $("artists")];
  if (setup.some((section) => section.contains(document.activeElement))) return;
  state.arranged = true;
  if (state.prefs.location) app.append(...setup.reverse());
  else for (const section of setup) app.insertBefore(section, $("tonight"));
}

function replaceEvent(event) {
  learnNames([event]);
  for (const list of [state.plans, state.tonight, state.explore]) {
    for (const entry of list) if (entry.event.id === event.id) entry.event = event;
  }
  state.nearby = state.nearby.map((e) => (e.id === event.id ? event : e));
}

// ---------------------------------------------------------------- loading

let refreshTimer = null;
let refreshGeneration = 0;

function refreshSoon() {
  clearTimeout(refreshTimer);
  refreshTimer = setTimeout(() => refresh(), 250);
}

/** Loads the lists again from the server (`only`: some of tonight, plans, explore, nearby). */
async function refresh({ only = ["tonight", "plans", "explore", "nearby"] } = {}) {
  const user = state.user;
  if (!user) return;
  const generation = ++refreshGeneration;
  const placed = Boolean(state.prefs.location);
  const jobs = {
    tonight: () => placed ? hub.request("events.tonight").then((r) => { state.tonight = r.events; }) : null,
    plans: () => hub.request("plans.list").then((r) => { state.plans = r.plans; }),
    explore: () => hub.request("events.explore", { limit: 20 }).then((r) => { state.explore = r.events; }),
    nearby: () => placed ? hub.request("events.nearby", { limit: 30 }).then((r) => { state.nearby = r.events; }) : null,
  };
  if (only.includes("plans")) loadFavouriteArtists({ all: true }); // their next shows may have changed
  const results = await Promise.allSettled(only.map((k) => jobs[k]()).filter(Boolean));
  if (state.user !== user) return;
  const failed = results.find((r) => r.status === "rejected");
  if (generation === refreshGeneration) {
    const said = $("page-error").textContent;
    if (failed) pageError(`Could not load your shows: ${friendly(failed.reason)}`);
    else if (said.startsWith("Could not load your shows")) pageError(null); // loaded now
  }
  learnNames([...state.plans, ...state.tonight, ...state.explore].map((x) => x.event).concat(state.nearby));
  renderLists();
}

async function loadCategories() {
  try {
    const r = await hub.request("categories.list");
    state.categories = r.categories;
    renderCategories();
    renderLists();
  } catch (e) {
    pageError(`Could not load the categories: ${friendly(e)}`);
  }
}

/** The favourite artists' names and next shows (artist.get), for the list and the reasons. */
async function loadFavouriteArtists({ all = false } = {}) {
  const user = state.user;
  const missing = state.prefs.favoriteArtists.filter((id) => all || !state.artists.has(id));
  await Promise.all(missing.map(async (id) => {
    try {
      const r = await hub.request("artist.get", { artist: id });
      if (state.user !== user) return;
      state.artists.set(id, r);
      state.names.set(id, r.artist.name);
    } catch (_) { /* shown by id */ }
  }));
  if (state.user !== user) return;
  renderFavourites();
  renderLists();
}

function learnNames(events) {
  for (const e of events) for (const p of e?.performers ?? []) if (p.name) state.names.set(p.id, p.name);
}

// ---------------------------------------------------------------- formatting

function title(e) {
  if (e?.name) return e.name;
  const names = (e?.performers ?? []).map((p) => p.name).filter(Boolean);
  return names.length ? names.join(", ") : `Event ${e?.id ?? ""}`.trim();
}

function performers(e) {
  const names = (e.performers ?? []).map((p) => p.name).filter(Boolean);
  const joined = names.join(", ");
  return joined && joined !== title(e) ? joined : null;
}

const pad = (n) => String(n).padStart(2, "0");

/** "YYYY-MM-DDTHH:MM" of `date` on the clock of `timeZone`. */
function wallClock(date, timeZone) {
  try {
    const parts = Object.fromEntries(new Intl.DateTimeFormat("en-GB", {
      timeZone, year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", hourCycle: "h23",
    }).formatToParts(date).map((p) => [p.type, p.value]));
    return `${parts.year}-${parts.month}-${parts.day}T${parts.hour}:${parts.minute}`;
  } catch (_) {
    return date.toISOString().slice(0, 16);
  }
}

function addDays(day, n) {
  const [y, m, d] = day.split("-").map(Number);
  const t = new Date(Date.UTC(y, m - 1, d + n));
  return `${t.getUTCFullYear()}-${pad(t.getUTCMonth() + 1)}-${pad(t.getUTCDate())}`;
}

function longDay(day) {
  const [y, m, d] = day.split("-").map(Number);
  return new Date(Date.UTC(y, m - 1, d)).toLocaleDateString("en-GB", { timeZone: "UTC", weekday: "short", day: "numeric", month: "short" });
}

/** When an event starts, on its venue's clock: {day: "Tonight" | "Tomorrow" | "Sat 28 Nov", time: "21:00"}. */
function when(e) {
  const start = e?.start ?? "";
  const [day, time = ""] = start.split("T");
  if (!day) return { day: "", time: "" };
  const now = wallClock(new Date(), e.venue?.timeZone || "UTC");
  const today = now.slice(0, 10);
  const nightEnds = `${now.slice(11, 13) < "04" ? today : addDays(today, 1)}T04:00`;
  let label;
  if (start < nightEnds) label = time >= "17:00" || time < "04:00" ? "Tonight" : "Today";
  else if (day === addDays(today, 1)) label = "Tomorrow";
  else label = longDay(day);
  return { day: label, time };
}

/** "in 40 min", "in 2 h 10 min" for a start within 12 hours; "started" once it has; else null. */
function soon(e) {
  if (typeof e?.startsAt !== "number") return null;
  const minutes = Math.round((e.startsAt - Date.now() / 1000) / 60);
  if (minutes < 0) return minutes > -240 ? "started" : null;
  if (minutes > 12 * 60) return null;
  if (minutes < 60) return `in ${minutes} min`;
  return `in ${Math.floor(minutes / 60)} h${minutes % 60 ? ` ${minutes % 60} min` : ""}`;
}

/** A start as words, the day left out when `sameDayAs` is on the same day. */
function startWords(start, sameDayAs = null) {
  if (!start) return "an unknown time";
  const [day, time] = start.split("T");
  if (sameDayAs && sameDayAs.split("T")[0] === day) return time;
  return `${longDay(day)} ${time}`;
}

function money(amount, currency) {
  if (amount === null || amount === undefined) return null;
  if (currency) {
    const digits = amount % 1 ? 2 : 0;
    try {
      return new Intl.NumberFormat("en-GB", { style: "currency", currency, minimumFractionDigits: digits, maximumFractionDigits: digits }).format(amount);
    } catch (_) { /* an unknown currency code: the number and the code */ }
  }
  return `${amount}${currency ? " " + currency : ""}`;
}

function price(e) {
  const lo = money(e.minPrice, e.currency);
  const hi = money(e.maxPrice, e.currency);
  if (!lo && !hi) return "Price not given";
  if (lo && hi && e.minPrice !== e.maxPrice) return `${lo}–${hi}`;
  return lo ?? `up to ${hi}`;
}

function where(e) {
  const v = e.venue;
  if (!v) return "Venue not given";
  const place = [v.name, v.city].filter(Boolean).join(", ") || "Venue not given";
  const here = state.prefs.location;
  if (here && typeof v.lat === "number" && typeof v.lon === "number") {
    const d = distanceKm(here, v);
    return `${place} · ${d < 10 ? d.toFixed(1) : Math.round(d)} km away`;
  }
  return place;
}

function categoryName(id) {
  return state.categories.find((c) => c.category === id)?.name ?? `category ${id}`;
}

function artistName(id) {
  return state.names.get(id) ?? "one of your favourites";
}

/** A suggestion's reason in words. */
function reasonText(reason) {
  if (!reason) return null;
  if (reason.favorite) return `Your favourite: ${artistName(reason.favorite)}`;
  if (reason.category) return `Favourite category: ${categoryName(reason.category)}`;
  if (reason.similarTo) {
    const score = typeof reason.score === "number" ? ` · ${Math.round(reason.score * 100)}% match` : "";
    return `Similar to ${artistName(reason.similarTo)}${score}`;
  }
  return null;
}

function reasonKind(reason) {
  if (reason?.favorite) return "favourite";
  if (reason?.category) return "category";
  return "similar";
}

/** A link to the seller's page, only for http(s) addresses. */
function ticketLink(e) {
  if (!e.url) return null;
  let url;
  try {
    url = new URL(e.url);
  } catch (_) {
    return null;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return null;
  return el("a", { href: url.href, rel: "noopener noreferrer external", class: "tickets",
                   "aria-label": `Tickets for ${title(e)} (the seller’s site)` }, "Tickets");
}

// ---------------------------------------------------------------- rendering

let drawn = new WeakMap(); // container → what it was last drawn from

/** Re-renders `container` and puts the focus back on the control that had it (same data-key).
 * With `data`, nothing is redrawn when it and what the cards show besides are as last time. */
function keepFocus(container, draw, data = undefined) {
  if (data !== undefined) {
    const signature = JSON.stringify([data, state.prefs, [...state.names], state.categories.length,
      state.plans.map((p) => p.event.id), Math.floor(Date.now() / 60_000)]);
    if (drawn.get(container) === signature) return;
    drawn.set(container, signature);
  }
  const active = document.activeElement;
  const key = container.contains(active) ? active?.dataset?.key : null;
  draw();
  if (key) container.querySelector(`[data-key="${CSS.escape(key)}"]`)?.focus();
}

function renderAll() {
  renderLists();
  renderFavourites();
  renderCategories();
}

function renderLists() {
  if (!state.user) return;
  renderWhere();
  renderTonight();
  renderPlans();
  renderExplore();
  renderNearby();
  if (state.open) renderEvent();
}

function isFollowed(id) {
  return state.plans.some((p) => p.event.id === id);
}

function actionButton(action, e, text, { cls = null } = {}) {
  const name = title(e);
  const labels = {
    follow: `Follow ${name}`,
    unfollow: `Unfollow ${name}`,
    dismiss: `Not interested in ${name}`,
    open: `Open ${name}`,
  };
  const handlers = { follow, unfollow, dismiss, open: (ev, b) => openEvent(ev.id, b) };
  return el("button", {
    type: "button", class: cls, "aria-label": labels[action], dataset: { key: `${action}:${e.id}` },
    onclick: (event) => handlers[action](e, event.currentTarget),
  }, text);
}

/** An event as a card: when, what, where, price, why, and its actions. */
function eventCard(e, { reason = null, actions = [], tag = "li", cls = "", going = true } = {}) {
  const w = when(e);
  const status = e.status && e.status !== "onsale" ? el("span", { class: `badge status-${e.status}` }, statusText[e.status] ?? e.status) : null;
  const why = reasonText(reason);
  const starts = soon(e);
  return el(tag, { class: `event ${cls}`.trim(), dataset: { event: e.id } },
    el("p", { class: "when" }, el("span", { class: "time" }, w.time), el("span", { class: "day" }, w.day)),
    el("div", { class: "body" },
      el("h3", { class: "name" }, title(e)),
      performers(e) ? el("p", { class: "sub" }, performers(e)) : null,
      el("p", { class: "sub where" }, where(e)),
      starts ? el("p", { class: "sub soon" }, starts === "started" ? "Has started" : `Starts ${starts}`) : null,
      el("p", { class: "meta" },
        why ? el("span", { class: `reason reason-${reasonKind(reason)}` }, why) : null,
        status,
        going && isFollowed(e.id) ? el("span", { class: "badge going" }, "In your plans") : null,
        el("span", { class: "price" }, price(e))),
      actions.length ? el("div", { class: "actions" }, actions) : null));
}

function renderWhere() {
  const p = state.prefs;
  const line = $("tonight-where");
  if (!p.location) {
    line.textContent = "";
    return;
  }
  const n = state.tonight.length;
  const parts = [n ? `${n} picked for you` : null, `within ${p.radiusKm} km`].filter(Boolean);
  if (p.maxPrice !== null && p.maxPrice !== undefined) parts.push(`up to ${p.maxPrice} a ticket`);
  if (p.categories?.length) parts.push(p.categories.map(categoryName).join(", "));
  line.textContent = parts.join(" · ");
}

/** A suggested show's card (tonight's and the explored alike): why it is suggested, and its buttons. */
function suggestionCard(s) {
  return eventCard(s.event, {
    reason: s.reason,
    cls: "card",
    actions: [
      actionButton("follow", s.event, "Follow"),
      actionButton("open", s.event, "Open", { cls: "secondary" }),
      actionButton("dismiss", s.event, "Not interested", { cls: "link" }),
    ],
  });
}

function renderTonight() {
  const list = $("tonight-list");
  keepFocus(list, () => fill(list, state.tonight.map(suggestionCard)), state.tonight);
  const empty = $("tonight-empty");
  empty.hidden = state.tonight.length > 0;
  if (!state.prefs.location) {
    fill(empty, el("p", { class: "strong" }, "Where are you tonight?"),
      el("p", {}, "Set your place and how far you’ll go, then pick a few favourite artists: their shows tonight appear here."),
      el("button", { type: "button", onclick: () => focusSection("prefs-title", "pref-lat") }, "Set my place"));
  } else if (!state.prefs.favoriteArtists.length && !state.prefs.favoriteCategories.length) {
    fill(empty, el("p", { class: "strong" }, "Nothing picked for you yet."),
      el("p", {}, "Add a favourite artist or category: their shows near you tonight appear here."),
      el("button", { type: "button", onclick: () => focusSection("artists-title", "artist-search") }, "Add a favourite artist"));
  } else {
    const going = state.plans.filter((p) => p.event.start && ["Tonight", "Today"].includes(when(p.event).day));
    fill(empty,
      going.length
        ? el("p", { class: "strong" }, `You’re going to ${going.map((p) => `${title(p.event)} at ${when(p.event).time}`).join(" and ")}.`)
        : null,
      el("p", { class: going.length ? null : "strong" }, going.length ? "Nothing else picked for you tonight so far." : "No shows picked for you tonight so far."),
      el("p", {}, "New ones appear here as soon as they are announced. Everything else on near you is below."));
  }
}

function renderPlans() {
  const list = $("plans-list");
  keepFocus(list, () => fill(list, state.plans.map((p) => p.event.start === undefined
    ? el("li", { class: "event card gone" }, el("div", { class: "body" },
        el("p", { class: "name" }, `Event ${p.event.id}`), el("p", { class: "sub" }, "No longer listed by the ticket seller."),
        el("div", { class: "actions" }, actionButton("unfollow", p.event, "Unfollow", { cls: "secondary" }))))
    : eventCard(p.event, {
      cls: "card plan",
      going: false,
      actions: [
        actionButton("open", p.event, "Open"),
        actionButton("unfollow", p.event, "Unfollow", { cls: "secondary" }),
      ],
    }))), state.plans);
  $("plans-empty").hidden = state.plans.length > 0;
}

function renderExplore() {
  const tonightIds = new Set(state.tonight.map((s) => s.event.id));
  const cards = state.explore.filter((s) => !tonightIds.has(s.event.id));
  const list = $("explore-list");
  keepFocus(list, () => fill(list, cards.map(suggestionCard)), cards);
  const empty = $("explore-empty");
  empty.hidden = cards.length > 0;
  empty.textContent = state.prefs.favoriteArtists.length
    ? "No more suggestions right now. Try “Refresh suggestions” later."
    : "Add a favourite artist to discover similar ones.";
}

function renderNearby() {
  const skip = new Set([...state.tonight.map((s) => s.event.id), ...state.explore.map((s) => s.event.id)]);
  const events = state.nearby.filter((e) => !skip.has(e.id));
  const list = $("nearby-list");
  keepFocus(list, () => fill(list, events.map((e) => eventCard(e, {
    cls: "row-card",
    actions: [
      isFollowed(e.id) ? actionButton("unfollow", e, "Unfollow", { cls: "secondary" }) : actionButton("follow", e, "Follow", { cls: "secondary" }),
      actionButton("open", e, "Open", { cls: "secondary" }),
    ],
  }))), events);
  const empty = $("nearby-empty");
  empty.hidden = events.length > 0;
  empty.textContent = state.prefs.location ? "Nothing else on within your distance." : "Set your place to see what is on near you.";
}

function renderFavourites() {
  const list = $("favourites-list");
  const ids = state.prefs.favoriteArtists;
  keepFocus(list, () => fill(list, ids.map((id) => {
    const name = state.names.get(id) ?? `Artist ${id}`;
    const info = state.artists.get(id);
    const next = info?.events?.find((e) => e.status !== "cancelled");
    const line = info ? (next ? `Next: ${when(next).day} ${when(next).time}, ${where(next)}` : "No shows coming up") : "";
    return el("li", { class: "item" },
      el("div", { class: "body" }, el("p", { class: "name" }, name), line ? el("p", { class: "sub" }, line) : null),
      el("button", { type: "button", class: "secondary", "aria-label": `Remove ${name} from favourites`, dataset: { key: `unfav:${id}` },
                     onclick: (event) => unfavouriteArtist(id, name, event.currentTarget) }, "Remove"));
  })), [ids, [...state.artists.entries()]]);
  $("favourites-empty").hidden = ids.length > 0;
}

function renderCategories() {
  const list = $("categories-list");
  const all = state.categories;
  const ids = new Set(all.map((c) => c.category));
  const chosen = state.formDirty
    ? new Set([...list.querySelectorAll('input[name="categories"]:checked')].map((i) => i.value))
    : new Set(state.prefs.categories ?? []);
  const favourites = new Set(state.prefs.favoriteCategories ?? []);
  const children = new Map();
  for (const c of all) {
    const parent = c.parent && ids.has(c.parent) ? c.parent : null;
    if (!children.has(parent)) children.set(parent, []);
    children.get(parent).push(c);
  }
  const branch = (parent, depth) => (children.get(parent) ?? []).map((c) => el("li", {},
    el("div", { class: "cat" },
      el("label", { class: "check" },
        el("input", { type: "checkbox", name: "categories", value: c.category, checked: chosen.has(c.category), dataset: { key: `box:${c.category}` } }), c.name),
      el("button", { type: "button", class: "star", "aria-label": `Favourite ${c.name}`, "aria-pressed": String(favourites.has(c.category)),
                     dataset: { key: `cat:${c.category}` }, onclick: (event) => toggleFavouriteCategory(c, event.currentTarget) }, "★")),
    depth < 8 && children.has(c.category) ? el("ul", { class: "plain tree" }, branch(c.category, depth + 1)) : null));
  keepFocus(list, () => fill(list, branch(null, 0)));
  summariseCategories();
}

function summariseCategories() {
  const ticked = [...document.querySelectorAll('#categories-list input[name="categories"]:checked')];
  const favs = state.prefs.favoriteCategories ?? [];
  let text = ticked.length ? `Categories: ${ticked.map((i) => categoryName(i.value)).join(", ")}` : "Categories: all";
  if (favs.length) text += ` · ★ ${favs.map(categoryName).join(", ")}`;
  $("categories-summary").textContent = text;
}

function focusSection(headingId, fieldId) {
  const field = $(fieldId);
  if (field) {
    field.focus();
    field.scrollIntoView({ block: "center" });
  } else {
    $(headingId)?.focus();
  }
}

function pageError(message) {
  $("page-error").textContent = message ?? "";
}

// ---------------------------------------------------------------- plans: follow, unfollow, dismiss

/** After a card leaves `listId`, the focus goes to the card now at its place, else the list's heading. */
function focusAfterRemoval(listId, index, headingId) {
  const cards = $(listId)?.children ?? [];
  const next = cards[Math.min(index, cards.length - 1)];
  const target = (next?.matches("button") ? next : next?.querySelector("button")) ?? $(headingId) ?? $("tonight-title");
  target?.focus();
}

/** Where a control is: its list and card, or the box (with an id) that holds it. */
function placeOf(button) {
  const item = button?.closest("li");
  const list = item?.parentElement;
  if (list?.id) return { listId: list.id, index: [...list.children].indexOf(item) };
  const box = button?.closest("[id]");
  return box ? { listId: box.id, index: 0 } : null;
}

const headings = { "tonight-list": "tonight-title", "plans-list": "plans-title", "explore-list": "explore-title", "nearby-list": "nearby-title",
                   "event-actions": "event-title", "favourites-list": "artists-title" };

async function planAction(op, e, button, { apply, message }) {
  const place = placeOf(button);
  const hadFocus = button && document.activeElement === button;
  if (button) button.disabled = true;
  try {
    await hub.request(op, { event: e.id });
    pageError(null);
    apply();
    renderLists();
    announce(message);
    if (hadFocus && place && !document.body.contains(button)) {
      const moved = $(place.listId).querySelector(`[data-key$=":${CSS.escape(e.id)}"]`);
      if (moved) moved.focus();
      else focusAfterRemoval(place.listId, place.index, headings[place.listId]);
    }
    refreshSoon();
  } catch (err) {
    pageError(`${friendly(err)}`);
    announce(friendly(err));
  } finally {
    if (button) button.disabled = false;
  }
}

function follow(e, button) {
  return planAction("event.follow", e, button, {
    message: `Following ${title(e)}. It is in your plans; we remind you an hour before it starts.`,
    apply: () => {
      state.tonight = state.tonight.filter((s) => s.event.id !== e.id);
      state.explore = state.explore.filter((s) => s.event.id !== e.id);
      if (!isFollowed(e.id)) state.plans = [...state.plans, { event: e, followedAt: Date.now() / 1000 }].sort((a, b) => (a.event.startsAt ?? Infinity) - (b.event.startsAt ?? Infinity));
      if (state.open?.id === e.id) state.open.plan = "following";
    },
  });
}

function unfollow(e, button) {
  return planAction("event.unfollow", e, button, {
    message: `${title(e)} is no longer in your plans.`,
    apply: () => {
      state.plans = state.plans.filter((p) => p.event.id !== e.id);
      if (state.open?.id === e.id) state.open.plan = null;
    },
  });
}

function dismiss(e, button) {
  return planAction("event.dismiss", e, button, {
    message: `${title(e)} hidden: we won’t suggest it again.`,
    apply: () => {
      state.tonight = state.tonight.filter((s) => s.event.id !== e.id);
      state.explore = state.explore.filter((s) => s.event.id !== e.id);
      state.plans = state.plans.filter((p) => p.event.id !== e.id);
      if (state.open?.id === e.id) state.open.plan = "dismissed";
    },
  });
}

$("explore-refresh").addEventListener("click", async (event) => {
  const button = event.currentTarget;
  button.disabled = true;
  try {
    await refresh();
    const tonightIds = new Set(state.tonight.map((s) => s.event.id));
    const n = state.explore.filter((s) => !tonightIds.has(s.event.id)).length;
    announce(`Suggestions refreshed: ${n} to discover, ${state.tonight.length} tonight.`);
  } finally {
    button.disabled = false;
    button.focus();
  }
});

// ---------------------------------------------------------------- notifications

function loadNotes() {
  try {
    const saved = JSON.parse(localStorage.getItem(state.notesKey) ?? "null");
    if (saved && Array.isArray(saved.list)) return { epoch: saved.epoch ?? null, floor: saved.floor ?? 0, list: saved.list };
  } catch (_) { /* none kept */ }
  return { epoch: null, floor: 0, list: [] };
}

function saveNotes() {
  try {
    localStorage.setItem(state.notesKey, JSON.stringify(state.notes));
  } catch (_) { /* storage full or refused: the notes live until the page closes */ }
}

/** After the user room's snapshot: pushes made since the last one this browser noted (a reload, a
 * long absence) are asked for again, so they show as notifications; a new epoch starts afresh. */
function notesAfterSnapshot(room) {
  const notes = state.notes;
  if (notes.epoch !== room.epoch) {
    state.notes = { epoch: room.epoch, floor: room.seq, list: [] };
    saveNotes();
    renderNotes();
    return;
  }
  const last = Math.max(notes.floor, ...notes.list.map((n) => n.seq));
  if (last >= room.seq) return;
  hub.request("subscribe", { room: room.name, since: { seq: last, epoch: room.epoch } }).then((r) => {
    if (!r.recovered && state.notes === notes) {
      notes.floor = Math.max(notes.floor, r.seq);
      saveNotes();
    }
  }).catch(() => {});
}

/** Every push of the user's room (live, recovered after a reconnect, or asked for again) becomes a
 * notification once. */
function notePush(push) {
  if (!state.userRoom || push.room !== state.userRoom.name) return;
  const notes = state.notes;
  if (push.epoch !== notes.epoch || push.seq <= notes.floor || notes.list.some((n) => n.seq === push.seq)) return;
  if (!["tonight.suggested", "event.announced", "event.changed", "event.reminder"].includes(push.event)) return;
  learnNames([push.data?.event]);
  notes.list.push({ seq: push.seq, event: push.event, data: push.data, at: Date.now() / 1000 });
  notes.list.sort((a, b) => b.seq - a.seq);
  while (notes.list.length > NOTES_MAX) notes.floor = Math.max(notes.floor, notes.list.pop().seq);
  saveNotes();
  renderNotes();
}

function changeWords(d) {
  const e = d.event;
  const prev = d.previous ?? {};
  const parts = [];
  for (const field of d.changed ?? []) {
    if (field === "start") parts.push(`start moved from ${startWords(prev.start, e.start)} to ${startWords(e.start, prev.start)}`);
    else if (field === "status") parts.push(`now ${(statusText[e.status] ?? e.status).toLowerCase()} (was ${(statusText[prev.status] ?? prev.status ?? "?").toLowerCase()})`);
    else if (field === "price") parts.push(`price now ${price(e)} (was ${price({ minPrice: prev.minPrice, maxPrice: prev.maxPrice, currency: prev.currency })})`);
    else if (field === "venue") parts.push(`moved to ${e.venue?.name ?? "another venue"} (was ${prev.venue?.name ?? "another venue"})`);
  }
  return parts.length ? parts.join("; ") : "details changed";
}

function noteParts(note) {
  const d = note.data ?? {};
  const e = d.event ?? {};
  const w = when(e);
  const at = `${w.day} ${w.time}`.trim();
  const venue = e.venue?.name ? ` at ${e.venue.name}` : "";
  switch (note.event) {
    case "tonight.suggested":
      return { kind: "suggested", badge: "Suggested", text: `${title(e)}${venue}, ${at}. ${reasonText(d.reason) ?? ""}`.trim() };
    case "event.announced":
      return { kind: "announced", badge: "New show", text: `${artistName(d.reason?.favorite)} announced a show near you: ${title(e)}${venue}, ${at}.` };
    case "event.changed":
      return { kind: "changed", badge: "Changed", text: `${title(e)}: ${changeWords(d)}.` };
    case "event.reminder":
      return { kind: "reminder", badge: "Reminder", text: `${title(e)} starts in ${d.minutes} min${venue} (${w.time}).` };
    default:
      return { kind: "other", badge: "News", text: title(e) };
  }
}

const noteNodes = new Map(); // seq → its <li>

function noteNode(note) {
  const p = noteParts(note);
  const e = note.data?.event;
  return el("li", { class: `note note-${p.kind}` },
    el("p", { class: "note-text" }, el("span", { class: `badge kind-${p.kind}` }, p.badge), " ", p.text),
    el("p", { class: "note-foot" },
      el("span", { class: "muted ago" }, ago(note.at)),
      e?.id ? el("button", { type: "button", class: "link", "aria-label": `Open ${title(e)}`,
                             onclick: (event) => openEvent(e.id, event.currentTarget) }, "Open") : null));
}

/** The notifications, newest first. Only new ones are added to the list (it is a live region:
 * what is already there is not read again). */
function renderNotes() {
  const list = $("notification-list");
  const want = new Set(state.notes.list.map((n) => n.seq));
  for (const [seq, node] of noteNodes) {
    if (!want.has(seq) || node.parentElement !== list) {
      node.remove();
      noteNodes.delete(seq);
    }
  }
  let previous = null;
  for (const note of state.notes.list) {
    let node = noteNodes.get(note.seq);
    if (node) {
      const age = node.querySelector(".ago");
      if (age) age.textContent = ago(note.at);
    } else {
      node = noteNode(note);
      noteNodes.set(note.seq, node);
      list.insertBefore(node, previous ? previous.nextSibling : list.firstChild);
    }
    previous = node;
  }
  $("notes-empty").hidden = state.notes.list.length > 0;
  $("notes-clear").hidden = state.notes.list.length === 0;
}

$("notes-clear").addEventListener("click", () => {
  const notes = state.notes;
  notes.floor = Math.max(notes.floor, ...notes.list.map((n) => n.seq));
  notes.list = [];
  saveNotes();
  renderNotes();
  announce("Notifications cleared.");
  $("notifications-title").setAttribute("tabindex", "-1");
  $("notifications-title").focus();
});

// Times like "3 min ago" move on.
setInterval(() => {
  if (!state.user) return;
  renderNotes();
  renderLists();
}, 60_000);

// ---------------------------------------------------------------- an event and its live room

async function openEvent(id, opener) {
  if (state.open?.id === id) {
    $("event-title").focus();
    return;
  }
  closeEvent({ restoreFocus: false });
  const open = { id, room: null, event: null, plan: null, live: null, changes: [], opener, error: null };
  state.open = open;
  const panel = $("event");
  panel.hidden = false;
  $("event-title").textContent = "Loading…";
  fill($("event-body"));
  fill($("live"));
  drawn.delete($("event-body"));
  drawn.delete($("event-actions"));
  liveDrawn = null;
  $("live-at").textContent = "";
  fill($("event-actions"));
  panel.scrollIntoView({ block: "start" });
  $("event-title").focus();
  try {
    const r = await hub.request("event.get", { event: id });
    if (state.open !== open) return;
    open.event = r.event;
    open.plan = r.plan;
    learnNames([r.event]);
    renderEvent();
  } catch (e) {
    if (state.open !== open) return;
    $("event-title").textContent = "Event not found";
    fill($("event-body"), el("p", { class: "error" }, friendly(e)));
    fill($("event-actions"));
    return;
  }
  open.room = hub.subscribe(`event:${id}`, {
    snapshot: (snap) => {
      if (state.open !== open) return;
      open.event = snap.event ?? open.event;
      open.live = snap.live ?? null;
      open.error = null;
      renderEvent();
    },
    push: (push) => {
      if (state.open !== open) return;
      if (push.event === "event.live") {
        open.live = push.data;
        renderLive();
      } else if (push.event === "event.changed") {
        open.event = push.data.event;
        open.changes.unshift(changeWords(push.data));
        replaceEvent(push.data.event);
        renderLists();
      }
    },
    error: (e) => {
      if (state.open !== open) return;
      open.error = `Live updates stopped: ${friendly(e)}`;
      renderLive();
    },
  });
  open.room.ready.catch((e) => {
    if (state.open !== open) return;
    open.error = `No live updates: ${friendly(e)}`;
    renderLive();
  });
}

function renderEvent() {
  const open = state.open;
  if (!open?.event) return;
  const e = open.event;
  const v = e.venue ?? {};
  const w = when(e);
  const plan = isFollowed(e.id) ? "following" : open.plan === "following" ? null : open.plan;
  if ($("event-title").textContent !== title(e)) $("event-title").textContent = title(e);
  $("event-close").setAttribute("aria-label", `Close ${title(e)}`);
  const address = [v.street, v.city, v.state].filter(Boolean).join(", ");
  const starts = soon(e);
  keepFocus($("event-body"), () => fill($("event-body"),
    el("p", { class: "big-when" }, el("strong", {}, `${w.day} ${w.time}`),
      el("span", { class: "muted" }, ` venue time${starts && starts !== "started" ? ` · ${starts}` : ""}`)),
    performers(e) ? el("p", {}, el("span", { class: "muted" }, "With "), performers(e)) : null,
    el("p", {}, el("strong", {}, v.name ?? "Venue not given"), address ? el("span", { class: "sub" }, ` · ${address}`) : null),
    el("p", { class: "meta" },
      el("span", { class: `badge status-${e.status}` }, statusText[e.status] ?? e.status),
      el("span", { class: "price" }, price(e)),
      plan === "following" ? el("span", { class: "badge going" }, "In your plans") : null,
      plan === "dismissed" ? el("span", { class: "badge" }, "Hidden from suggestions") : null),
    open.changes.length ? el("ul", { class: "changes", "aria-label": "Changes since you opened it" }, open.changes.map((c) => el("li", {}, c))) : null),
  [e, plan, open.changes]);
  const actions = [
    plan === "following" ? actionButton("unfollow", e, "Unfollow", { cls: "secondary" }) : actionButton("follow", e, "Follow"),
    plan === "dismissed" ? null : actionButton("dismiss", e, "Not interested", { cls: "link" }),
    ticketLink(e),
  ];
  keepFocus($("event-actions"), () => fill($("event-actions"), actions), [e, plan]);
  renderLive();
}

let liveDrawn = null;

/** The live box (a live region: redrawn only when the update changes) and when it came. */
function renderLive() {
  const open = state.open;
  if (!open) return;
  const live = open.live;
  $("live-at").textContent = live?.at && !open.error ? `Updated ${ago(live.at)}` : "";
  const signature = JSON.stringify([open.id, live, open.error]);
  if (signature === liveDrawn) return;
  liveDrawn = signature;
  const box = $("live");
  if (open.error) {
    fill(box, el("p", { class: "error" }, open.error));
    return;
  }
  if (!live) {
    fill(box, el("p", { class: "muted" }, "No live updates yet. Scores, doors and delays appear here as the venue posts them."));
    return;
  }
  const sides = live.score ? Object.entries(live.score) : [];
  fill(box,
    live.status ? el("p", { class: "live-status" }, live.status) : null,
    sides.length ? el("div", { class: "score" },
      el("p", { class: "visually-hidden" }, `Score: ${sides.map(([k, n]) => `${k} ${n}`).join(", ")}`),
      el("div", { class: "board", "aria-hidden": "true" },
        sides.flatMap(([side, n], i) => [i ? el("span", { class: "vs" }, "–") : null,
          el("span", { class: "side" }, el("span", { class: "n" }, String(n)), el("span", { class: "who" }, side))]))) : null,
    live.text ? el("p", { class: "live-text" }, live.text) : null);
}

function closeEvent({ restoreFocus = true } = {}) {
  const open = state.open;
  if (!open) return;
  state.open = null;
  open.room?.close();
  $("event").hidden = true;
  if (restoreFocus) {
    // The control that opened it, or the one that replaced it when its list was redrawn.
    const key = open.opener?.dataset?.key;
    const back = open.opener && document.body.contains(open.opener) ? open.opener
      : (key && document.querySelector(`#app [data-key="${CSS.escape(key)}"]`)) || $("tonight-title");
    back.focus();
  }
  announce("Event closed.");
}

$("event-close").addEventListener("click", () => closeEvent());
$("event").addEventListener("keydown", (event) => {
  if (event.key === "Escape") closeEvent();
});

// ---------------------------------------------------------------- favourite artists: the type-ahead

const search = $("artist-search");
const options = $("artist-options");
const searchStatus = $("artist-status");
const combo = { results: [], active: -1, asked: 0 };

function setExpanded(open) {
  options.hidden = !open;
  search.setAttribute("aria-expanded", String(open));
  if (!open) {
    combo.active = -1;
    search.removeAttribute("aria-activedescendant");
  }
}

function renderOptions() {
  const favourites = new Set(state.prefs.favoriteArtists);
  fill(options, combo.results.map((a, i) => el("li", {
    id: `artist-option-${i}`, role: "option", "aria-selected": "false",
    onmousedown: (event) => event.preventDefault(), // keep the focus in the input
    onclick: () => choose(i),
  }, a.name, favourites.has(a.id) ? el("span", { class: "muted" }, " · already a favourite") : null)));
  markActive();
}

/** Marks the active option (the one Enter chooses). */
function markActive() {
  for (const [i, option] of [...options.children].entries()) {
    option.setAttribute("aria-selected", String(i === combo.active));
    option.classList.toggle("active", i === combo.active);
  }
  if (combo.active >= 0) {
    search.setAttribute("aria-activedescendant", `artist-option-${combo.active}`);
    $(`artist-option-${combo.active}`)?.scrollIntoView({ block: "nearest" });
  } else {
    search.removeAttribute("aria-activedescendant");
  }
}

async function searchArtists() {
  const q = search.value.trim();
  const asked = ++combo.asked;
  if (!q) {
    combo.results = [];
    setExpanded(false);
    searchStatus.textContent = "Type a name, then choose with the arrow keys and Enter.";
    return;
  }
  try {
    const r = await hub.request("artist.search", { q, limit: SEARCH_LIMIT });
    if (asked !== combo.asked) return; // a later key stroke asked again: this answer is stale
    combo.results = r.artists;
    combo.active = -1;
    for (const a of r.artists) state.names.set(a.id, a.name);
    renderOptions();
    setExpanded(r.artists.length > 0);
    searchStatus.textContent = r.artists.length
      ? `${r.artists.length} artist${r.artists.length === 1 ? "" : "s"} found. Use the up and down arrows, then Enter to add one.`
      : `No artist matches “${q}”.`;
  } catch (e) {
    if (asked !== combo.asked) return;
    setExpanded(false);
    searchStatus.textContent = `Search failed: ${friendly(e)}`;
  }
}

function move(by) {
  if (!combo.results.length) return;
  if (options.hidden) setExpanded(true);
  const n = combo.results.length;
  combo.active = combo.active < 0 ? (by > 0 ? 0 : n - 1) : (combo.active + by + n) % n;
  markActive();
}

async function choose(i) {
  const artist = combo.results[i];
  if (!artist) return;
  setExpanded(false);
  try {
    const r = await hub.request("artist.favorite", { artist: artist.id });
    state.prefs.favoriteArtists = r.artists;
    state.prefs.favoriteCategories = r.categories;
    state.names.set(artist.id, artist.name);
    search.value = "";
    combo.results = [];
    combo.asked++;
    searchStatus.textContent = `${artist.name} added to your favourites.`;
    announce(`${artist.name} added to your favourite artists.`);
    renderFavourites();
    renderLists();
    loadFavouriteArtists();
    refreshSoon();
  } catch (e) {
    searchStatus.textContent = `Could not add ${artist.name}: ${friendly(e)}`;
  }
}

search.addEventListener("input", searchArtists);
search.addEventListener("keydown", (event) => {
  switch (event.key) {
    case "ArrowDown":
      event.preventDefault();
      move(1);
      break;
    case "ArrowUp":
      event.preventDefault();
      move(-1);
      break;
    case "Enter":
      event.preventDefault();
      if (!options.hidden && combo.active >= 0) choose(combo.active);
      else if (combo.results.length === 1) choose(0);
      break;
    case "Escape":
      if (!options.hidden) {
        event.preventDefault();
        setExpanded(false);
      } else if (search.value) {
        search.value = "";
        searchArtists();
      }
      break;
    default:
      break;
  }
});
$("artist-combo").addEventListener("focusout", (event) => {
  if (!$("artist-combo").contains(event.relatedTarget)) setExpanded(false);
});
search.addEventListener("focus", () => { if (combo.results.length) setExpanded(true); });

async function unfavouriteArtist(id, name, button) {
  const place = placeOf(button);
  button.disabled = true;
  try {
    const r = await hub.request("artist.unfavorite", { artist: id });
    state.prefs.favoriteArtists = r.artists;
    state.prefs.favoriteCategories = r.categories;
    renderFavourites();
    announce(`${name} removed from your favourites.`);
    if (place) focusAfterRemoval(place.listId, place.index, "artists-title");
    if (document.activeElement === document.body) search.focus();
    refreshSoon();
  } catch (e) {
    button.disabled = false;
    pageError(`Could not remove ${name}: ${friendly(e)}`);
  }
}

// ---------------------------------------------------------------- preferences

const form = $("prefs-form");

function fillPrefsForm() {
  if (state.formDirty) return;
  const p = state.prefs;
  form.elements.lat.value = p.location ? String(p.location.lat) : "";
  form.elements.lon.value = p.location ? String(p.location.lon) : "";
  form.elements.radiusKm.value = p.radiusKm ?? 10;
  form.elements.maxPrice.value = p.maxPrice ?? "";
  renderCategories();
}

form.addEventListener("input", () => { state.formDirty = true; });
form.addEventListener("change", (event) => { if (event.target.name === "categories") summariseCategories(); });

/** A number field's value, or an error that names it. */
function numberField(name, label, { required = true, min = -Infinity, max = Infinity } = {}) {
  const input = form.elements[name];
  const raw = input.value.trim();
  if (!raw && !required) return null;
  const value = Number(raw);
  if (!raw || !Number.isFinite(value) || value < min || value > max || input.validity.badInput) {
    const err = new Error(!raw ? `${label} is missing.` : `${label} must be a number from ${min} to ${max}.`);
    err.input = input;
    throw err;
  }
  return value;
}

onSubmit(form, async (data) => {
  let args;
  try {
    args = {
      location: { lat: numberField("lat", "Latitude", { min: -90, max: 90 }), lon: numberField("lon", "Longitude", { min: -180, max: 180 }) },
      radiusKm: numberField("radiusKm", "Distance", { min: 0.1, max: 300 }),
      categories: data.getAll("categories").map(String),
    };
    const budget = numberField("maxPrice", "Most I’ll pay", { required: false, min: 0 });
    if (budget !== null) args.maxPrice = budget;
  } catch (e) {
    if (e.input) {
      e.input.setAttribute("aria-invalid", "true");
      e.input.focus();
    }
    throw e;
  }
  const r = await hub.request("prefs.set", args);
  state.prefs = r;
  state.formDirty = false;
  fillPrefsForm();
  renderWhere();
  announce(`Saved. Showing shows within ${r.radiusKm} km of you.`);
  await refresh();
});

$("use-location").addEventListener("click", async (event) => {
  const button = event.currentTarget;
  clearError(form);
  button.disabled = true;
  const was = button.textContent;
  button.textContent = "Finding you…";
  try {
    const p = await here();
    form.elements.lat.value = p.lat.toFixed(5);
    form.elements.lon.value = p.lon.toFixed(5);
    state.formDirty = true;
    announce("Location found. Saving.");
    form.requestSubmit();
  } catch (e) {
    showError(form, e);
  } finally {
    button.disabled = false;
    button.textContent = was;
  }
});

async function toggleFavouriteCategory(c, button) {
  const on = button.getAttribute("aria-pressed") !== "true";
  button.disabled = true;
  try {
    const r = await hub.request(on ? "category.favorite" : "category.unfavorite", { category: c.category });
    state.prefs.favoriteArtists = r.artists;
    state.prefs.favoriteCategories = r.categories;
    button.setAttribute("aria-pressed", String(r.categories.includes(c.category)));
    summariseCategories();
    announce(on ? `${c.name} is a favourite category: its shows are suggested.` : `${c.name} is no longer a favourite category.`);
    refreshSoon();
  } catch (e) {
    showError(form, e);
  } finally {
    button.disabled = false;
  }
}
