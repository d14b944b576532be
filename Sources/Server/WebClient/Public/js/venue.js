// venue.js: what the patron and owner pages share: the queue's rows (kept by uri, moved in place
// so a focused button keeps its focus), the jukebox's errors as people read them, and the wording.
import { HubbubError, State, VenueQueue } from "./hubbub.js";
import { $, announce, el, friendly, param } from "./ui.js";

/** Text only screen readers hear (inside a button: completes its name). */
export const hidden = (text) => el("span", { class: "visually-hidden" }, text);

/** 1st, 2nd, 3rd, 4th, 11th, 21st... */
export function ordinal(n) {
  const v = n % 100;
  const s = v >= 11 && v <= 13 ? "th" : ({ 1: "st", 2: "nd", 3: "rd" })[n % 10] ?? "th";
  return `${n}${s}`;
}

/** "1 vote", "3 votes". */
export function plural(n, one, many = `${one}s`) {
  return `${n} ${n === 1 ? one : many}`;
}

/** A track as one line: "Title — Artist" (or the title alone). */
export function trackLine(track) {
  return track.artist ? `${track.title} — ${track.artist}` : track.title;
}

/** A jukebox error as a person reads it. */
export function venueError(e) {
  if (!(e instanceof HubbubError)) return String(e?.message ?? e);
  const m = e.message ?? "";
  switch (e.code) {
    case "rate_limited":
      if (/last hour/.test(m)) {
        const min = Math.max(1, Math.ceil((e.retryAfterMs ?? 60_000) / 60_000));
        return `You have used this venue's votes and requests for the hour. Try again in ${plural(min, "minute")}.`;
      }
      return `Too many taps at once. Try again in ${Math.max(1, Math.ceil((e.retryAfterMs ?? 1000) / 1000))} s.`;
    case "not_found":
      if (/no playlist is set/.test(m)) return "This venue has not set a playlist yet.";
      if (/is not in the playlist/.test(m)) return "That song is no longer in the queue.";
      if (/^no venue/.test(m)) return "This venue does not exist, or was removed.";
      if (/have not voted/.test(m)) return "You had not voted for that song.";
      break;
    case "conflict":
      if (/already voted/.test(m)) return "You already voted for that song.";
      if (/already set/.test(m)) return "This playlist is already the venue's. To start it over, use “Start the playlist over”.";
      break;
    case "forbidden":
      if (/^only an owner can /.test(m)) return `Only the venue's owners can ${m.slice("only an owner can ".length)}.`;
      break;
    case "unauthorized":
      return "Sign in first (your session ended).";
    default:
      break;
  }
  return friendly(e);
}

/**
 * Keeps `container`'s children as `nodes`, in that order, moving only what is out of place;
 * focus inside the container stays on its element when that element is moved.
 */
export function syncChildren(container, nodes) {
  const active = document.activeElement;
  const hadFocus = active && active !== document.body && container.contains(active);
  const wanted = new Set(nodes);
  for (const child of [...container.children]) if (!wanted.has(child)) child.remove();
  let cursor = container.firstElementChild;
  for (const node of nodes) {
    if (node === cursor) {
      cursor = cursor.nextElementSibling;
      continue;
    }
    container.insertBefore(node, cursor);
  }
  if (hadFocus && active.isConnected && document.activeElement !== active) active.focus({ preventScroll: true });
}

/**
 * One queue row per uri, made once and updated in place. `build(row)` adds the page's own parts
 * (buttons...) to `row`; `update(row, entry, place)` refreshes them.
 */
export class QueueRows {
  constructor(list, { build = () => {}, update = () => {} } = {}) {
    this.list = list;
    this.rows = new Map();
    this.build = build;
    this.update = update;
  }

  clear() {
    this.rows.clear();
    this.list.replaceChildren();
  }

  /** Shows `entries` (already cut to what fits), `places` giving each its place (1 = up next). */
  show(entries, placeOf) {
    const nodes = entries.map((entry) => {
      let row = this.rows.get(entry.uri);
      if (!row) {
        row = makeRow(entry.uri);
        this.build(row);
        this.rows.set(entry.uri, row);
      }
      updateRow(row, entry, placeOf(entry));
      this.update(row, entry, placeOf(entry));
      return row.li;
    });
    syncChildren(this.list, nodes);
    // Rows of tracks that left the queue are forgotten.
    const shown = new Set(entries.map((e) => e.uri));
    for (const uri of this.rows.keys()) if (!shown.has(uri)) this.rows.delete(uri);
  }
}

let rowIds = 0;

function makeRow(uri) {
  const n = ++rowIds;
  const row = { uri, n, votes: null };
  row.rank = el("span", { class: "rank", "aria-hidden": "true" });
  row.title = el("span", { class: "name", id: `track-${n}-title` });
  row.artist = el("span", { class: "artist" });
  row.badges = el("span", { class: "badges" });
  row.count = el("span", { class: "count" });
  row.word = el("small");
  row.votesBox = el("span", { class: "votes", id: `track-${n}-votes` }, row.count, row.word);
  row.body = el("div", { class: "body" }, row.title, row.artist, row.badges);
  row.actions = el("div", { class: "actions" });
  row.li = el("li", { class: "item track", dataset: { uri } }, row.rank, row.body, row.votesBox, row.actions);
  return row;
}

function setText(node, text) {
  if (node.textContent !== text) node.textContent = text;
}

function updateRow(row, entry, place) {
  const { track } = entry;
  setText(row.rank, entry.playing ? "▶" : String(place));
  setText(row.title, track.title);
  setText(row.artist, track.artist ?? "");
  row.artist.hidden = !track.artist;
  setText(row.count, String(entry.votes));
  setText(row.word, entry.votes === 1 ? " vote" : " votes");
  if (row.votes !== null && row.votes !== entry.votes) {
    // A short highlight where the count changed (not on the first draw).
    row.li.classList.remove("bumped");
    void row.li.offsetWidth;
    row.li.classList.add("bumped");
  }
  row.votes = entry.votes;
  row.li.classList.toggle("playing", entry.playing);
  const badges = [];
  if (entry.playing) badges.push(el("span", { class: "badge live" }, "Now playing"));
  if (track.explicit) badges.push(el("span", { class: "badge warn" }, "Explicit"));
  if (entry.requester) badges.push(el("span", { class: "badge" }, "Requested"));
  row.extraBadges?.(badges, entry);
  const key = badges.map((b) => b.textContent).join("|");
  if (row.badgeKey !== key) {
    row.badgeKey = key;
    row.badges.replaceChildren(...badges);
    row.badges.hidden = badges.length === 0;
  }
}

/** Each entry's place in the line: the playing track has none, the next is 1. */
export function placesOf(entries) {
  const places = new Map();
  let n = 0;
  for (const e of entries) places.set(e.uri, e.playing ? 0 : ++n);
  return places;
}

/** Entries whose title or artist holds `filter` (ignoring case and accents). */
export function matching(entries, filter) {
  const f = fold(filter);
  if (!f) return entries;
  return entries.filter((e) => fold(`${e.track.title} ${e.track.artist ?? ""}`).includes(f));
}

/** Lower case without accents, runs of spaces as one. */
export function fold(text) {
  return String(text ?? "").normalize("NFD").replace(/[\u0300-\u036f]/g, "").toLowerCase().replace(/\s+/g, " ").trim();
}

/** Clears `#announcer` a few seconds after each message (it is also shown on screen). */
export function fadeAnnouncer(ms = 6000) {
  const region = $("announcer");
  if (!region) return;
  let timer = null;
  new MutationObserver(() => {
    clearTimeout(timer);
    if (region.textContent) timer = setTimeout(() => { region.textContent = ""; }, ms);
  }).observe(region, { childList: true, characterData: true, subtree: true });
}

/** Shows a form's error in its `.error` line; when it names a field the form has, that field is
 * marked and focused and the message calls it by its label. */
export function showFormError(form, e) {
  let message = e instanceof HubbubError ? venueError(e) : String(e?.message ?? e);
  const field = e?.field ?? null;
  const input = field ? form.querySelector(`[name="${CSS.escape(field.split(/[.[]/)[0])}"]`) : null;
  if (input) {
    const label = input.labels?.[0]?.textContent.trim();
    if (label) message = message.replace(new RegExp(`^(?:Field |field )?${field.replace(/[.[\]]/g, "\\$&")}\\b`, "i"), `“${label}”`);
    input.setAttribute("aria-invalid", "true");
    input.focus();
  }
  const line = form.querySelector(".error") ?? $("page-error");
  if (line) line.textContent = message;
}

/** An error about one field of a form (`field` is the input's name). */
export function fieldError(field, message) {
  const e = new Error(message);
  e.field = field;
  return e;
}

/** Marks `button` busy or not: aria-disabled, not disabled, so that a focused button keeps its
 * focus (a keyboard user goes on from there); `isBusy` tells the click handlers to wait. */
export function setBusy(button, on) {
  if (on) button.setAttribute("aria-disabled", "true");
  else button.removeAttribute("aria-disabled");
}

export const isBusy = (button) => button.getAttribute("aria-disabled") === "true";

/** Runs `action` with `button` busy; a tap meanwhile does nothing. */
export async function whileBusy(button, action) {
  if (isBusy(button)) return undefined;
  setBusy(button, true);
  try {
    return await action();
  } finally {
    setBusy(button, false);
  }
}

/** Runs `action` for a form's submit: its submit button busy meanwhile, errors shown by showFormError. */
export function submitter(form, action) {
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const submit = form.querySelector("button[type=submit]");
    if (submit && isBusy(submit)) return;
    const line = form.querySelector(".error");
    if (line) line.textContent = "";
    for (const input of form.querySelectorAll("[aria-invalid]")) input.removeAttribute("aria-invalid");
    if (submit) setBusy(submit, true);
    try {
      await action(new FormData(form), form);
    } catch (e) {
      showFormError(form, e);
    } finally {
      if (submit) setBusy(submit, false);
    }
  });
}

/** A button that asks for a second tap (within a few seconds) before `action`. */
export function twoTap(button, confirmText, action) {
  const first = button.textContent;
  let armed = null;
  const disarm = () => {
    clearTimeout(armed);
    armed = null;
    button.textContent = first;
    button.classList.remove("armed");
  };
  button.addEventListener("click", async () => {
    if (isBusy(button)) return;
    if (!armed) {
      button.textContent = confirmText;
      button.classList.add("armed");
      announce(`${confirmText}.`);
      armed = setTimeout(disarm, 5000);
      return;
    }
    disarm();
    await whileBusy(button, action);
  });
}

// ---- the page around the queue, the same on both pages

/** The queue's heading and count, its filter, error line, empty line, list and "Show more songs",
 * put around the page's own hint in `.queue-wrap`; returns the list. */
export function buildQueue(wrap = document.querySelector(".queue-wrap")) {
  const list = el("ol", { id: "queue", class: "plain queue", "aria-label": "Queue" });
  wrap.prepend(el("div", { class: "queue-head" }, el("h2", { id: "queue-title" }, "Queue"), el("span", { id: "queue-count", class: "muted" })));
  wrap.append(
    el("div", { id: "queue-find", class: "find", hidden: true },
      el("label", { for: "find" }, "Find a song in the queue"),
      el("input", { id: "find", type: "search", autocomplete: "off", maxlength: 200 })),
    el("p", { id: "queue-error", class: "error", role: "alert" }),
    el("p", { id: "queue-empty", class: "card muted", hidden: true }),
    list,
    el("button", { id: "more", type: "button", class: "secondary", hidden: true }, "Show more songs"));
  return list;
}

/** Draws the queue: the entries the "Find a song" box lets through, `limit` at most (the rest behind
 * "Show more songs"), its count, and `emptyText(all, filter)` in place of an empty list. */
export function drawQueueList(rows, queue, limit, emptyText) {
  const all = queue.entries();
  const filter = $("find").value;
  const shown = matching(all, filter);
  const places = placesOf(all);
  $("queue-find").hidden = all.length < 8;
  $("queue-count").textContent = all.length ? plural(all.length, "song") : "";
  const empty = $("queue-empty");
  empty.hidden = shown.length > 0;
  if (!shown.length) empty.textContent = emptyText(all, filter);
  rows.show(shown.slice(0, limit), (e) => places.get(e.uri));
  $("more").hidden = shown.length <= limit;
  $("more").textContent = `Show more songs (${Math.max(0, shown.length - limit)} more)`;
}

/** "Show more songs" adds `page` rows to `view.limit`; a new filter starts again from `page`. */
export function pageQueue(view, page, draw) {
  $("more").addEventListener("click", () => {
    view.limit += page;
    draw();
  });
  $("find").addEventListener("input", () => {
    view.limit = page;
    draw();
  });
}

/** The playing entry and the one up next (null where there is none). */
export function nowAndNext(queue) {
  const entries = queue?.entries() ?? [];
  return { now: entries.find((e) => e.playing) ?? null, next: entries.find((e) => !e.playing) ?? null };
}

/** The queue's track `uri`; one that left the queue meanwhile goes by its uri. */
export function trackOf(queue, uri) {
  return queue?.tracks.get(uri) ?? { uri, title: uri, artist: "" };
}

/** The venue's name in its heading and the top bar, `address` (its parts) under it, `title` on the tab. */
export function drawVenueHeading(venue, address, title) {
  $("venue-name").textContent = venue.name;
  $("venue-address").textContent = address.filter(Boolean).join(", ");
  $("top-title").textContent = venue.name;
  document.title = title;
}

/** `fn` run soon, once for a burst of `soon()` calls (a recovery delivers many pushes at once);
 * `now()` runs it at once, and the pending run is dropped. */
export function coalesce(fn, ms = 16) {
  let timer = null;
  const now = () => {
    clearTimeout(timer);
    timer = null;
    fn();
  };
  const soon = () => {
    if (timer === null) timer = setTimeout(now, ms);
  };
  return { now, soon };
}

/**
 * The page's place is in its address: `?venue=<id>` shows that venue (`venue(id)`), no venue the
 * page's other view (`none()`). `go(href)` moves without a reload and `goOnClick(href)` is a link's
 * click handler that does; back and forward move too, while someone is signed in (else the sign-in shows).
 */
export function venueRouter(hub, { venue, none }) {
  const route = () => {
    const id = param("venue");
    if (id) venue(id);
    else none();
  };
  const go = (href) => {
    history.pushState(null, "", href);
    route();
  };
  window.addEventListener("popstate", () => { if (hub.user) route(); });
  return { route, go, goOnClick: (href) => (e) => { e.preventDefault(); go(href); } };
}

/** After signing in on the page (the sign-in forms it was reading are gone): back to the top, the
 * focus on `heading`, where a screen reader starts again. */
export function focusHeading(heading) {
  window.scrollTo(0, 0);
  heading.setAttribute("tabindex", "-1");
  heading.focus({ preventScroll: true });
}

/**
 * Subscribes to venue `id`'s room as `view.room`. A room left since (another venue opened, signed
 * out) may still deliver: only `view.room`'s events reach the handlers.
 */
export function joinVenueRoom(hub, view, id, { snapshot, push, recovered, error }) {
  const room = hub.subscribe(`venue:${id}`, {
    snapshot: (snap) => { if (room === view.room) snapshot(snap); },
    push: (p) => { if (room === view.room) push(p); },
    recovered: () => { if (room === view.room) recovered(); },
    error: (e) => { if (room === view.room) error(e); },
  });
  view.room = room;
  room.ready.catch((e) => { if (room === view.room) error(e); });
}

/** Takes a room's snapshot into `view`: the venue, the checked-in count, a fresh queue; true for the
 * venue's first snapshot (not one after a reconnect). */
export function takeSnapshot(view, snap) {
  const first = view.queue === null;
  view.venue = snap.venue;
  view.checkedIn = snap.checkedIn;
  view.queue = new VenueQueue(snap.playlist);
  return first;
}

/** Leaves the venue's room; its queue and rows go. */
export function leaveVenueRoom(view, rows) {
  view.room?.close();
  view.room = null;
  view.id = null;
  view.queue = null;
  rows.clear();
}

/** Sets `view.offline` when the connection drops; the returned `backOnline()` says, once, that the
 * queue is up to date again (after the recovery or a fresh snapshot). */
export function offlineNotice(hub, view) {
  hub.addEventListener("state", (e) => {
    if (e.detail.state === State.reconnecting) view.offline = true;
  });
  return () => {
    if (!view.offline) return;
    view.offline = false;
    announce("Back online: the queue is up to date.");
  };
}
