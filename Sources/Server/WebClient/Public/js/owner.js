// The owner page: register a venue or open one (the user's venues are remembered on this device:
// the protocol has no op that lists them), its guest link for the QR code, the player (now playing,
// track ended), the live queue, the playlist (pasted or from a file; start over; clear votes), the
// explicit-lyrics switch and the house rules.
import { $, announce, el, fill, here, startSession } from "./ui.js";
import {
  QueueRows, buildQueue, coalesce, drawQueueList, drawVenueHeading, fadeAnnouncer, fieldError, focusHeading, hidden, joinVenueRoom,
  leaveVenueRoom, nowAndNext, offlineNotice, pageQueue, plural, submitter, takeSnapshot, trackLine, trackOf, twoTap, venueError, venueRouter, whileBusy,
} from "./venue.js";

const PAGE = 100;
const MAX_TRACKS = 5000;

const view = {
  id: null,
  room: null,
  queue: null,
  venue: null,
  checkedIn: 0,
  limit: PAGE,
  offline: false,
  rulesDirty: false, // the rules form has edits not saved: pushes do not overwrite them
  explicitBusy: false,
  file: null, // the name of the file loaded into the playlist box
};

const hub = startSession({ onUser });
fadeAnnouncer();

const rows = new QueueRows(buildQueue(), { build: buildRow, update: updateRow });
const backOnline = offlineNotice(hub, view);
const { route, go, goOnClick } = venueRouter(hub, { venue: openVenue, none: showVenues });

// ---- the venues remembered on this device, per user

function storeKey() {
  return `hubbub.owner.venues.${hub.user?.id}`;
}

function myVenues() {
  try {
    const list = JSON.parse(localStorage.getItem(storeKey()) ?? "[]");
    return Array.isArray(list) ? list.filter((v) => v && typeof v.id === "string") : [];
  } catch (_) {
    return [];
  }
}

function remember(venue) {
  const list = myVenues().filter((v) => v.id !== venue.id);
  list.unshift({ id: venue.id, name: venue.name, city: venue.city ?? "" });
  try { localStorage.setItem(storeKey(), JSON.stringify(list.slice(0, 50))); } catch (_) { /* storage refused */ }
}

function forget(id) {
  try { localStorage.setItem(storeKey(), JSON.stringify(myVenues().filter((v) => v.id !== id))); } catch (_) { /* storage refused */ }
}

// ---- where the page is

let signedOutOnce = false;

function onUser(user) {
  document.body.classList.toggle("signed-in", Boolean(user));
  if (!user) {
    signedOutOnce = true;
    leaveVenueRoom(view, rows);
    $("venues").hidden = true;
    $("manage").hidden = true;
    $("welcome").hidden = false;
    return;
  }
  $("welcome").hidden = true;
  $("pl-creator").value = $("pl-creator").value || user.username;
  route();
  if (signedOutOnce) focusHeading($("manage").hidden ? $("venues-title") : $("venue-name"));
}

$("back").addEventListener("click", goOnClick("/owner"));

// ---- the user's venues, registering one, opening one by its code

function showVenues(error = null) {
  leaveVenueRoom(view, rows);
  $("manage").hidden = true;
  $("venues").hidden = false;
  $("top-title").textContent = "Run my venue";
  document.title = "Run my venue · Hubbub";
  $("page-error").textContent = error ?? "";
  const list = myVenues();
  $("venues-empty").hidden = list.length > 0;
  fill($("venue-list"), list.map((v) => {
    const href = `/owner?venue=${encodeURIComponent(v.id)}`;
    return el("li", { class: "item" },
      el("div", { class: "body" },
        el("a", { href, class: "name", onclick: goOnClick(href) }, v.name),
        el("span", { class: "sub" }, [v.city, `code ${v.id}`].filter(Boolean).join(" · "))),
      el("button", { type: "button", class: "link", onclick: () => { forget(v.id); showVenues(); announce(`${v.name} removed from this list.`); } },
        "Forget", hidden(` ${v.name} on this device`)));
  }));
}

$("reg-here").addEventListener("click", () => whileBusy($("reg-here"), async () => {
  const line = $("register").querySelector(".error");
  line.textContent = "";
  try {
    const p = await here();
    $("reg-lat").value = p.lat.toFixed(5);
    $("reg-lon").value = p.lon.toFixed(5);
    announce("Location filled in.");
  } catch (e) {
    line.textContent = e.message.replace("type a place instead", "type the coordinates instead");
  }
}));

/** A coordinate typed by hand: "60.1", "60,1" or "-19.94". */
function coordinate(value, name, label) {
  const text = String(value ?? "").trim().replace(",", ".");
  if (!text) throw fieldError(name, `Give the venue's ${label}, or use your location.`);
  const n = Number(text);
  if (!Number.isFinite(n)) throw fieldError(name, `${label[0].toUpperCase()}${label.slice(1)} must be a number, such as 60.1 or -0.12.`);
  return n;
}

submitter($("register"), async (data, form) => {
  const args = {};
  for (const key of ["name", "address", "postcode", "city", "country"]) {
    args[key] = String(data.get(key) ?? "").trim();
    if (!args[key]) throw fieldError(key, `Fill in “${form.elements[key].labels[0].textContent}”: every field is needed.`);
  }
  args.lat = coordinate(data.get("lat"), "lat", "latitude");
  args.lon = coordinate(data.get("lon"), "lon", "longitude");
  const { venue } = await hub.request("venue.register", args);
  remember(venue);
  form.reset();
  go(`/owner?venue=${encodeURIComponent(venue.id)}`);
  announce(`${venue.name} is registered. Now put on its playlist.`);
});

submitter($("open"), async (data, form) => {
  const text = String(data.get("venue") ?? "").trim();
  const id = /[?&]venue=([^&#\s]+)/.exec(text)?.[1] ?? text;
  if (!id) throw fieldError("venue", "Paste the venue's code or its guest link.");
  const { venue } = await hub.request("venue.get", { venue: decodeURIComponent(id) });
  remember(venue);
  form.reset();
  go(`/owner?venue=${encodeURIComponent(venue.id)}`);
});

// ---- one venue

function openVenue(id) {
  if (view.id === id && view.room && !view.room.closed) return;
  leaveVenueRoom(view, rows);
  view.id = id;
  view.venue = null;
  view.limit = PAGE;
  view.rulesDirty = false;
  for (const line of ["page-error", "player-error", "queue-error", "danger-error", "explicit-error"]) $(line).textContent = "";
  $("venues").hidden = true;
  $("manage").hidden = false;
  $("venue-name").textContent = "Loading the venue…";
  $("venue-address").textContent = "";
  $("checked-in").textContent = "";
  const link = `${location.origin}/patron?venue=${encodeURIComponent(id)}`;
  $("patron-link").href = link;
  $("patron-link").textContent = link;
  joinVenueRoom(hub, view, id, { snapshot: onSnapshot, push: onPush, recovered: backOnline, error: onRoomError });
}

function onRoomError(e) {
  view.room = null;
  if (e.code === "unauthorized") return;
  if (e.code === "not_found") forget(view.id);
  history.replaceState(null, "", "/owner");
  showVenues(e.code === "not_found" ? "There is no venue with that code (or it was removed)." : venueError(e));
}

function onSnapshot(snap) {
  const first = takeSnapshot(view, snap);
  if (snap.venue.owner === hub.user?.id || myVenues().some((v) => v.id === snap.venue.id)) remember(snap.venue);
  if (view.offline) backOnline();
  drawRules(first); // after a reconnect, edits not saved yet stay
  draw();
}

function onPush(push) {
  const q = view.queue;
  if (!q) return;
  const d = push.data ?? {};
  q.apply(push);
  switch (push.event) {
    case "presence.changed":
      view.checkedIn = d.checkedIn;
      break;
    case "track.requested":
      sayRequest(d.track);
      break;
    case "venue.updated":
      if (d.venue) view.venue = d.venue;
      if (d.settings) drawRules(false);
      break;
    case "venue.removed":
      forget(view.id);
      history.replaceState(null, "", "/owner");
      showVenues("This venue was removed.");
      return;
    default:
      break;
  }
  schedule();
}

/** Says the guests' new requests, a few at a time. */
const requested = [];
let requestTimer = null;

function sayRequest(track) {
  requested.push(track);
  clearTimeout(requestTimer);
  requestTimer = setTimeout(() => {
    const tracks = requested.splice(0);
    announce(tracks.length === 1 ? `New request: ${trackLine(tracks[0])}.` : `${tracks.length} new requests, the last: ${trackLine(tracks[tracks.length - 1])}.`);
  }, 1500);
}

// ---- drawing

const { now: draw, soon: schedule } = coalesce(() => {
  if (!view.queue) return;
  const v = view.venue;
  if (v) drawVenueHeading(v, [v.address, v.postcode, v.city, v.country], `${v.name} · Run my venue · Hubbub`);
  $("checked-in").textContent = `${plural(view.checkedIn, "guest")} checked in so far`;
  drawPlayer();
  drawQueue();
  drawPlaylistInfo();
});

function drawPlayer() {
  const { now, next } = nowAndNext(view.queue);
  $("player").hidden = !view.queue.playlist;
  $("now-title").textContent = now ? trackLine(now.track) : "Nothing is playing";
  $("player").classList.toggle("idle", !now);
  $("up-next").textContent = next ? `Up next: ${trackLine(next.track)} (${plural(next.votes, "vote")})` : view.queue.playlist ? "Nothing else in the queue." : "";
  $("play-next").disabled = !next;
  $("ended").disabled = !now;
}

function drawQueue() {
  drawQueueList(rows, view.queue, view.limit, (all, filter) => {
    if (!view.queue.playlist) return "No playlist yet: put one on below, and your guests can start voting.";
    return all.length ? `No song in the queue matches “${filter.trim()}”.` : "The queue is empty.";
  });
}

pageQueue(view, PAGE, draw);

function buildRow(row) {
  row.playTitle = hidden("");
  row.playButton = el("button", { type: "button", class: "secondary small", onclick: () => play(row.uri, row.playButton) }, "Play", row.playTitle, " now");
  row.actions.append(row.playButton);
}

function updateRow(row, entry) {
  const name = ` ${entry.track.title}`;
  if (row.playTitle.textContent !== name) row.playTitle.textContent = name;
  row.playButton.hidden = entry.playing;
}

// ---- the player

function play(uri, button) {
  return whileBusy(button, async () => {
    $("player-error").textContent = "";
    try {
      await hub.request("venue.nowPlaying", { venue: view.id, track: uri });
      announce(`Now playing: ${trackLine(trackOf(view.queue, uri))}.`);
      keepFocus($("ended"));
    } catch (e) {
      $("player-error").textContent = venueError(e);
    }
  });
}

/** After a player action the focused button may be gone (a row's "Play now" hides once it plays,
 * "Track ended" is disabled once nothing plays): the focus goes on to `next`, the likely next step. */
function keepFocus(next) {
  draw();
  const active = document.activeElement;
  if (active && active !== document.body && active.isConnected && !active.disabled && active.offsetParent !== null) return;
  const target = [next, $("play-next"), $("ended")].find((b) => b && !b.disabled && b.offsetParent !== null) ?? $("player-title");
  if (target.id === "player-title") target.setAttribute("tabindex", "-1");
  target.focus({ preventScroll: true });
}

$("play-next").addEventListener("click", () => {
  const { next } = nowAndNext(view.queue);
  if (next) play(next.uri, $("play-next"));
});

$("ended").addEventListener("click", () => whileBusy($("ended"), async () => {
  const { now } = nowAndNext(view.queue);
  if (!now) return;
  $("player-error").textContent = "";
  try {
    await hub.request("venue.track.ended", { venue: view.id, track: now.uri });
    const { next } = nowAndNext(view.queue);
    announce(`${now.track.title} ended.${next ? ` Up next: ${trackLine(next.track)}.` : ""}`);
    keepFocus($("play-next"));
  } catch (e) {
    $("player-error").textContent = venueError(e);
  }
}));

$("copy-link").addEventListener("click", async () => {
  const link = $("patron-link").href;
  try {
    await navigator.clipboard.writeText(link);
    announce("Guest link copied.");
  } catch (_) {
    getSelection()?.selectAllChildren($("patron-link"));
    announce("Could not copy: the link is selected, copy it from there.");
  }
});

// ---- the playlist

/**
 * Reads a pasted list or a file: "Title — Artist" / "Title - Artist" lines, or CSV lines
 * "uri,title,artist[,explicit]" (a header line "uri,title,artist" is skipped). Lines that are
 * empty or start with # are skipped. Returns {tracks, skipped, duplicates}.
 */
export function parsePlaylist(text, { csv = false } = {}) {
  const tracks = [];
  const skipped = [];
  const seen = new Set();
  let duplicates = 0;
  const lines = String(text ?? "").split(/\r\n|\r|\n/);
  lines.forEach((raw, i) => {
    const line = raw.trim();
    if (!line || line.startsWith("#")) return;
    let track;
    const fields = csvFields(line);
    if ((csv || /^[A-Za-z][\w+.-]*:[^\s,]*\s*,/.test(line)) && fields.length >= 2) {
      if (i === 0 && /^uri$/i.test(fields[0]) && /^title$/i.test(fields[1] ?? "")) return;
      const [uri, title, artist = "", explicit = ""] = fields;
      if (!uri || !title) {
        skipped.push({ line: i + 1, text: line, why: !uri ? "no uri" : "no title" });
        return;
      }
      track = { uri, title, artist, explicit: /^(1|true|yes|y|explicit|e)$/i.test(explicit) };
    } else {
      let rest = line;
      let explicit = false;
      const mark = /\s*[([](explicit|e)[)\]]\s*$/i.exec(rest);
      if (mark) {
        explicit = true;
        rest = rest.slice(0, mark.index);
      }
      // The last " — ", " – " or " - " splits title from artist (titles may hold dashes too).
      const m = /^(.*\S)\s+[—–-]\s+(.*)$/.exec(rest) ?? /^(.*\S)\s*—\s*(\S.*)$/.exec(rest);
      const title = (m ? m[1] : rest).trim().replace(/\s+/g, " ");
      const artist = (m ? m[2] : "").trim().replace(/\s+/g, " ");
      if (!title) {
        skipped.push({ line: i + 1, text: line, why: "no title" });
        return;
      }
      track = { uri: `track:${fold(title)}-${fold(artist)}`, title, artist, explicit };
    }
    const tooLong = ["uri", "title", "artist"].find((k) => [...track[k]].length > 500 || new TextEncoder().encode(track[k]).length > 1024);
    if (tooLong) {
      skipped.push({ line: i + 1, text: line, why: `${tooLong} too long` });
      return;
    }
    if (seen.has(track.uri)) {
      duplicates++;
      return;
    }
    seen.add(track.uri);
    tracks.push(track);
  });
  return { tracks, skipped, duplicates };
}

function fold(text) {
  return text.toLowerCase().replace(/\s+/g, " ").trim();
}

/** One CSV line's fields ("quoted, fields" and "" for a quote inside). */
function csvFields(line) {
  const fields = [];
  let field = "";
  let quoted = false;
  let wasQuoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quoted) {
      if (c === '"' && line[i + 1] === '"') { field += '"'; i++; }
      else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"' && !field.trim()) {
      quoted = true;
      wasQuoted = true;
      field = "";
    } else if (c === ",") {
      fields.push(wasQuoted ? field : field.trim());
      field = "";
      wasQuoted = false;
    } else {
      field += c;
    }
  }
  fields.push(wasQuoted ? field : field.trim());
  return fields;
}

function preview() {
  const box = $("pl-preview");
  const text = $("pl-tracks").value;
  if (!text.trim()) {
    box.replaceChildren();
    return;
  }
  const { tracks, skipped, duplicates } = parsePlaylist(text, { csv: Boolean(view.file?.endsWith(".csv")) });
  const notes = [];
  if (duplicates) notes.push(`${plural(duplicates, "repeated line")} left out`);
  if (skipped.length) notes.push(`${plural(skipped.length, "line")} not understood (line ${skipped.slice(0, 5).map((s) => s.line).join(", ")}${skipped.length > 5 ? "…" : ""})`);
  box.replaceChildren(
    el("p", { class: "preview" }, `${plural(tracks.length, "song")} ready${notes.length ? `; ${notes.join("; ")}` : ""}.`),
    tracks.length ? el("ol", {}, tracks.slice(0, 3).map((t) => el("li", {}, trackLine(t) + (t.explicit ? " (explicit)" : "")))) : null,
    tracks.length > 3 ? el("p", { class: "preview" }, `…and ${plural(tracks.length - 3, "more song")}.`) : null,
  );
}

let previewTimer = null;
$("pl-tracks").addEventListener("input", () => {
  clearTimeout(previewTimer);
  previewTimer = setTimeout(preview, 250);
});

$("pl-file").addEventListener("change", async () => {
  const file = $("pl-file").files?.[0];
  if (!file) return;
  const line = $("playlist").querySelector(".error");
  line.textContent = "";
  if (file.size > 5_000_000) {
    line.textContent = `${file.name} is too big for a playlist (at most 5 MB).`;
    return;
  }
  view.file = file.name.toLowerCase();
  $("pl-tracks").value = await file.text();
  if (!$("pl-name").value.trim()) $("pl-name").value = file.name.replace(/\.(txt|csv)$/i, "");
  preview();
  const { tracks } = parsePlaylist($("pl-tracks").value, { csv: view.file.endsWith(".csv") });
  announce(`${plural(tracks.length, "song")} loaded from ${file.name}.`);
});

/** A short fingerprint of the songs (FNV-1a): the same list under the same name is the same playlist. */
function fingerprint(tracks) {
  let h = 0x811c9dc5;
  for (const t of tracks) {
    for (const ch of `${t.uri}\u0000${t.title}\u0000${t.artist}\u0000${t.explicit ? 1 : 0}\n`) {
      h ^= ch.codePointAt(0);
      h = Math.imul(h, 0x01000193) >>> 0;
    }
  }
  return h.toString(36);
}

/** The name a playlist uri made here carries ("playlist:<name>#<fingerprint>"), else the uri. */
function playlistName(uri) {
  const m = /^playlist:(.*)#[0-9a-z]+$/s.exec(uri ?? "");
  return m ? m[1] : uri;
}

function drawPlaylistInfo() {
  const p = view.queue?.playlist;
  $("playlist-now").textContent = p ? `On now: “${playlistName(p.uri)}”, made by ${p.creator}.` : "No playlist is on yet.";
  if (p && !$("pl-name").value.trim()) $("pl-name").value = playlistName(p.uri);
  $("reset").disabled = !p;
  $("clear-votes").disabled = !p;
}

submitter($("playlist"), async (data) => {
  const name = String(data.get("name") ?? "").trim();
  const creator = String(data.get("creator") ?? "").trim();
  if (!name) throw fieldError("name", "Give the playlist a name.");
  if (!creator) throw fieldError("creator", "Say who made the playlist.");
  const { tracks, skipped } = parsePlaylist(String(data.get("tracks") ?? ""), { csv: Boolean(view.file?.endsWith(".csv")) });
  if (!tracks.length) throw fieldError("tracks", skipped.length ? `No line could be read as a song (line ${skipped[0].line}: ${skipped[0].why}).` : "Paste at least one song, or load a file.");
  if (tracks.length > MAX_TRACKS) throw fieldError("tracks", `At most ${MAX_TRACKS} songs per playlist: this one has ${tracks.length}.`);
  const playlistUri = [...`playlist:${name}`].slice(0, 480).join("") + `#${fingerprint(tracks)}`;
  await hub.request("venue.playlist.set", { venue: view.id, playlistUri, creator, tracks }, { timeoutMs: 30_000 });
  announce(`The playlist “${name}” is on: ${plural(tracks.length, "song")}.`);
});

/** A danger-zone button: on a second tap, `op` on the venue, then `done` said; a refusal shows under the buttons. */
function dangerButton(button, confirmText, op, done) {
  twoTap(button, confirmText, async () => {
    $("danger-error").textContent = "";
    try {
      await hub.request(op, { venue: view.id });
      announce(done);
    } catch (e) {
      $("danger-error").textContent = venueError(e);
    }
  });
}

dangerButton($("reset"), "Tap again to start the playlist over", "venue.playlist.reset", "The playlist started over: no votes, no requests, nothing playing.");
dangerButton($("clear-votes"), "Tap again to clear all votes", "venue.playlist.clearVotes", "Every vote was cleared.");

// ---- the rules

const RULES = ["votesPerUserPerHour", "requestsPerUserPerHour", "noRepeatHours", "fairModeMaxPendingPerUser"];

/** Shows the venue's settings; edits not saved yet are kept unless `force`. */
function drawRules(force) {
  const s = view.queue?.settings;
  if (!s) return;
  if (!view.explicitBusy) $("explicit").checked = s.explicitAllowed;
  if (view.rulesDirty && !force) return;
  view.rulesDirty = false;
  const form = $("rules");
  for (const key of RULES) form.elements[key].value = String(s[key]);
  form.elements.fairMode.checked = s.fairMode;
}

$("rules").addEventListener("input", () => {
  view.rulesDirty = true;
  $("rules-ok").textContent = "";
});

submitter($("rules"), async (data, form) => {
  const args = { venue: view.id, fairMode: form.elements.fairMode.checked };
  for (const key of RULES) {
    const text = String(data.get(key) ?? "").trim();
    if (!/^\d+$/.test(text)) throw fieldError(key, `“${form.elements[key].labels[0].textContent}” must be a whole number.`);
    args[key] = Number(text);
  }
  $("rules-ok").textContent = "";
  const { settings } = await hub.request("venue.settings.set", args);
  if (view.queue) view.queue.settings = settings;
  view.rulesDirty = false;
  drawRules(true);
  $("rules-ok").textContent = "Saved.";
  announce("The house rules are saved.");
});

$("explicit").addEventListener("change", async () => {
  const box = $("explicit");
  const allowed = box.checked;
  $("explicit-error").textContent = "";
  view.explicitBusy = true;
  box.disabled = true;
  try {
    await hub.request("venue.explicit.set", { venue: view.id, allowed });
    announce(allowed ? "Requests of songs with explicit lyrics are allowed." : "Requests of songs with explicit lyrics are turned off.");
  } catch (e) {
    box.checked = !allowed;
    $("explicit-error").textContent = venueError(e);
  } finally {
    view.explicitBusy = false;
    box.disabled = false;
    box.focus();
  }
});

