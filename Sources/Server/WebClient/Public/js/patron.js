// The patron page: find a venue (search, or near me), or land in one from its QR code
// (/patron?venue=<id>); check in; the live queue; vote, take a vote back, see who voted; request a song.
import { HubbubError } from "./hubbub.js";
import { $, announce, distanceKm, el, fill, here, onSubmit, param, startSession } from "./ui.js";
import {
  QueueRows, buildQueue, coalesce, drawQueueList, drawVenueHeading, fadeAnnouncer, focusHeading, fold, hidden, joinVenueRoom, leaveVenueRoom,
  nowAndNext, offlineNotice, ordinal, pageQueue, placesOf, plural, setBusy, takeSnapshot, trackLine, trackOf, venueError, venueRouter, whileBusy,
} from "./venue.js";

const PAGE = 100; // rows shown at first, and added by "Show more songs"

/** What the page shows of the venue it is in. */
const view = {
  id: null, // the venue's id
  room: null, // its Room
  queue: null, // a VenueQueue
  venue: null, // the Venue
  checkedIn: 0,
  checkedInMe: false,
  myVotes: new Set(), // uris the user voted for
  busy: new Set(), // uris with a vote or unvote on its way
  limit: PAGE,
  offline: false, // the connection dropped since the last state
  said: null, // {now, next}: what was last said about the top of the queue
  own: null, // {uri, verb, votes, timer}: the user's action, said once its push is in
  syncing: 0, // which syncMyVotes is current
};

const hub = startSession({ onUser });
fadeAnnouncer();

const rows = new QueueRows(buildQueue(), { build: buildRow, update: updateRow });
const backOnline = offlineNotice(hub, view);
const { route, go, goOnClick } = venueRouter(hub, { venue: enterVenue, none: showFinder });

// ---- where the page is: signed out, finding a venue, or in one

let signedOutOnce = false;

function onUser(user) {
  document.body.classList.toggle("signed-in", Boolean(user));
  if (!user) {
    signedOutOnce = true;
    leaveRoom();
    $("finder").hidden = true;
    $("venue").hidden = true;
    $("welcome").hidden = false;
    const id = param("venue");
    $("welcome-title").textContent = id ? "Vote for the music here" : "Vote for the music";
    return;
  }
  $("welcome").hidden = true;
  route();
  if (signedOutOnce) focusHeading($("venue").hidden ? $("finder-title") : $("venue-name"));
}

function showFinder(error = null) {
  leaveRoom();
  $("venue").hidden = true;
  $("finder").hidden = false;
  $("top-title").textContent = "Vote for the music";
  document.title = "Vote for the music · Hubbub";
  $("page-error").textContent = error ?? "";
}

function leaveRoom() {
  clearTimeout(view.own?.timer);
  view.own = null;
  leaveVenueRoom(view, rows);
}

$("leave").addEventListener("click", goOnClick("/patron"));

// ---- finding a venue

onSubmit($("search"), async (data) => {
  const q = String(data.get("q") ?? "").trim();
  if (!q) throw new Error("Type part of the venue's name, street or city.");
  $("results-status").textContent = "Searching…";
  try {
    const { venues } = await hub.request("venue.search", { q });
    showResults(venues, venues.length ? `${plural(venues.length, "venue")} found for “${q}”.` : `No venue found for “${q}”.`);
  } catch (e) {
    $("results-status").textContent = "";
    throw e;
  }
});

$("nearby").addEventListener("click", () => whileBusy($("nearby"), async () => {
  $("results-status").textContent = "Finding where you are…";
  try {
    const me = await here();
    let venues = [];
    let km = 2;
    for (km of [2, 20]) {
      const dLat = km / 111;
      const dLon = km / (111 * Math.max(0.05, Math.cos((me.lat * Math.PI) / 180)));
      ({ venues } = await hub.request("venue.nearby", {
        minLat: Math.max(-90, me.lat - dLat), maxLat: Math.min(90, me.lat + dLat),
        minLon: wrapLon(me.lon - dLon), maxLon: wrapLon(me.lon + dLon),
      }));
      if (venues.length) break;
    }
    for (const v of venues) v.distance = distanceKm(me, v);
    venues.sort((a, b) => a.distance - b.distance);
    showResults(venues, venues.length ? `${plural(venues.length, "venue")} near you.` : `No venue within ${km} km of you.`);
  } catch (e) {
    $("results-status").textContent = e instanceof HubbubError ? venueError(e) : e.message;
  }
}));

function wrapLon(lon) {
  return lon > 180 ? lon - 360 : lon < -180 ? lon + 360 : lon;
}

function showResults(venues, status) {
  $("results-status").textContent = status;
  fill($("results"), venues.map((v) => {
    const href = `/patron?venue=${encodeURIComponent(v.id)}`;
    const where = [v.address, v.city].filter(Boolean).join(", ");
    const away = v.distance === undefined ? null : v.distance < 1 ? `${Math.round(v.distance * 1000)} m away` : `${v.distance.toFixed(1)} km away`;
    return el("li", { class: "item venue-result" },
      el("div", { class: "body" },
        el("a", { href, class: "name", onclick: goOnClick(href) }, v.name),
        el("span", { class: "sub" }, [where, away].filter(Boolean).join(" · "))));
  }));
}

// ---- in a venue

function enterVenue(id) {
  if (view.id === id && view.room && !view.room.closed) {
    $("finder").hidden = true;
    $("venue").hidden = false;
    return;
  }
  leaveRoom();
  view.id = id;
  view.venue = null;
  view.myVotes = new Set();
  view.checkedInMe = false;
  view.limit = PAGE;
  view.said = null;
  $("page-error").textContent = "";
  $("finder").hidden = true;
  $("venue").hidden = false;
  $("venue-name").textContent = "Loading the venue…";
  $("venue-address").textContent = "";
  $("queue-error").textContent = "";
  $("find").value = "";
  drawCheckin();
  joinVenueRoom(hub, view, id, { snapshot: onSnapshot, push: onPush, recovered: backOnline, error: onRoomError });
  hub.request("user.checkins", {}).then(({ checkins }) => {
    if (view.id !== id) return;
    view.checkedInMe = view.checkedInMe || checkins.some((c) => c.venue === id);
    drawCheckin();
  }).catch(() => {});
}

function onRoomError(e) {
  view.room = null;
  if (e.code === "unauthorized") return; // signed out: onUser shows the sign-in
  showFinder(e.code === "not_found" ? "This venue does not exist, or was removed. Find yours below." : venueError(e));
}

function onSnapshot(snap) {
  const first = takeSnapshot(view, snap);
  view.myVotes = new Set();
  syncMyVotes();
  if (view.offline) backOnline();
  else if (first) view.said = top();
  draw();
}

function onPush(push) {
  const q = view.queue;
  if (!q) return;
  const d = push.data ?? {};
  const me = hub.user?.id;
  const previousPlaylist = q.playlist?.uri ?? null;
  q.apply(push);
  switch (push.event) {
    case "presence.changed":
      view.checkedIn = d.checkedIn;
      drawCheckin();
      return;
    case "venue.updated":
      if (d.venue) view.venue = d.venue;
      break;
    case "venue.removed":
      go("/patron");
      $("page-error").textContent = "This venue was just removed. Find another below.";
      return;
    case "playlist.snapshot":
      view.myVotes.clear();
      announce(previousPlaylist && previousPlaylist === d.playlist?.uri ? "The venue started the playlist over: every vote was cleared." : "The venue put on a new playlist.");
      view.said = top();
      break;
    case "votes.cleared":
      view.myVotes.clear();
      announce("The venue cleared every vote: vote again for the songs you want.");
      break;
    case "playlist.removed":
      view.myVotes.clear();
      announce("The venue took its playlist off.");
      break;
    case "track.moved":
      if (me && d.cause?.by === me) {
        if (d.cause.action === "unvote") view.myVotes.delete(d.track);
        else view.myVotes.add(d.track);
      }
      if (view.own?.uri === d.track) sayOwn();
      break;
    case "playlist.reordered": {
      const queued = new Set(q.order);
      for (const uri of view.myVotes) if (!queued.has(uri)) view.myVotes.delete(uri);
      if (me && d.cause?.by === me && d.cause.track) view.myVotes.add(d.cause.track);
      if (view.own && d.cause?.track === view.own.uri) sayOwn();
      break;
    }
    default:
      break;
  }
  refreshVoters(push.event === "track.moved" ? d.track : null);
  schedule();
}

// ---- the user's votes: kept from the pushes and replies; after a snapshot, asked again

async function syncMyVotes() {
  const id = view.id;
  const generation = ++view.syncing;
  const me = hub.user?.id;
  if (!me || !view.queue) return;
  try {
    const { votes } = await hub.request("user.votes", {});
    const queued = new Set(view.queue.order);
    const candidates = [...new Set(votes.filter((v) => v.venue === id && queued.has(v.uri)).map((v) => v.uri))].slice(0, 100);
    for (let i = 0; i < candidates.length; i += 10) {
      const answers = await Promise.all(candidates.slice(i, i + 10).map((uri) =>
        hub.request("venue.track.voters", { venue: id, track: uri }).catch(() => null)));
      if (generation !== view.syncing || view.id !== id) return;
      for (const a of answers) if (a && a.voters.includes(me)) view.myVotes.add(a.track);
    }
    schedule();
  } catch (_) { /* the buttons then say "Vote"; a second vote is refused and corrects them */ }
}

async function toggleVote(uri) {
  if (view.busy.has(uri)) return;
  const taking = view.myVotes.has(uri);
  const title = trackOf(view.queue, uri).title;
  $("queue-error").textContent = "";
  view.busy.add(uri);
  schedule();
  try {
    const r = await hub.request(taking ? "venue.unvote" : "venue.vote", { venue: view.id, track: uri });
    if (taking) view.myVotes.delete(uri);
    else view.myVotes.add(uri);
    expectOwn(uri, taking ? "unvote" : "vote", r.votes);
  } catch (e) {
    if (e.code === "conflict" && /already voted/.test(e.message)) view.myVotes.add(uri);
    else if (e.code === "not_found" && /have not voted/.test(e.message)) view.myVotes.delete(uri);
    $("queue-error").textContent = `${title}: ${venueError(e)}`;
  } finally {
    view.busy.delete(uri);
    schedule();
  }
}

/** Says what the user's own action did once the queue shows it (its push may come after the reply). */
function expectOwn(uri, verb, votes) {
  clearTimeout(view.own?.timer);
  view.own = { uri, verb, votes, timer: null };
  if ((view.queue?.votes.get(uri) ?? -1) === votes || !view.queue?.votes.has(uri)) sayOwn();
  else view.own.timer = setTimeout(sayOwn, 1500);
}

function sayOwn() {
  const own = view.own;
  if (!own || !view.queue) return;
  clearTimeout(own.timer);
  view.own = null;
  const { title } = trackOf(view.queue, own.uri);
  const said = { vote: `You voted for ${title}.`, unvote: `You took back your vote for ${title}.`, request: `You requested ${title}.` }[own.verb];
  announce(`${said} ${placeText(own.uri)}`);
  view.said = top(); // the top's change, if any, is said here already
}

function placeText(uri) {
  const entries = view.queue.entries();
  const entry = entries.find((e) => e.uri === uri);
  if (!entry) return "";
  if (entry.playing) return `It is playing now, with ${plural(entry.votes, "vote")}.`;
  const place = placesOf(entries).get(uri);
  return place === 1 ? `It is up next, with ${plural(entry.votes, "vote")}.` : `It is ${ordinal(place)} in the queue, with ${plural(entry.votes, "vote")}.`;
}

// ---- who voted

const names = new Map(); // user id → a promise of the name shown

function nameOf(id) {
  if (id === hub.user?.id) return Promise.resolve("you");
  if (!names.has(id)) {
    names.set(id, hub.request("profile.get", { user: id }).then(({ profile }) => profile.alias || profile.username).catch(() => {
      names.delete(id);
      return "someone";
    }));
  }
  return names.get(id);
}

async function showVoters(row) {
  const uri = row.uri;
  row.voters.textContent = row.voters.textContent || "Looking…";
  try {
    const r = await hub.request("venue.track.voters", { venue: view.id, track: uri });
    const voters = await Promise.all(r.voters.map(nameOf));
    const requester = r.requester ? await nameOf(r.requester) : null;
    if (row.whoButton.getAttribute("aria-expanded") !== "true") return;
    const parts = [];
    if (voters.length) parts.push(`Voted by ${listOf(voters)}`);
    if (r.hiddenVoters) parts.push(`${voters.length ? "and " : "Voted by "}${plural(r.hiddenVoters, "person", "people")} who keep${r.hiddenVoters === 1 ? "s" : ""} their votes private`);
    let text = parts.length ? `${parts.join(" ")}.` : "No votes yet.";
    if (requester) text += ` Requested by ${requester}.`;
    row.voters.textContent = text;
  } catch (e) {
    row.voters.textContent = venueError(e);
  }
}

function listOf(items) {
  return items.length <= 1 ? items.join("") : `${items.slice(0, -1).join(", ")} and ${items[items.length - 1]}`;
}

/** Open "who voted" panels follow the votes. */
function refreshVoters(uri) {
  for (const row of rows.rows.values()) {
    if (row.whoButton.getAttribute("aria-expanded") !== "true") continue;
    if (uri !== null && row.uri !== uri) continue;
    clearTimeout(row.votersTimer);
    row.votersTimer = setTimeout(() => showVoters(row), 300);
  }
}

// ---- the queue's rows

function buildRow(row) {
  row.voteLabel = el("span", { class: "label" }, "Vote");
  row.voteTitle = hidden("");
  row.voteButton = el("button", { type: "button", class: "vote", onclick: () => toggleVote(row.uri) }, row.voteLabel, row.voteTitle);
  row.whoTitle = hidden("");
  row.voters = el("p", { class: "voters", id: `track-${row.n}-voters`, "aria-live": "polite", hidden: true });
  row.whoButton = el("button", { type: "button", class: "link who", "aria-expanded": "false", "aria-controls": row.voters.id,
    onclick: () => {
      const open = row.whoButton.getAttribute("aria-expanded") !== "true";
      row.whoButton.setAttribute("aria-expanded", String(open));
      row.voters.hidden = !open;
      if (open) showVoters(row);
    } }, "Who voted", row.whoTitle);
  row.actions.append(row.whoButton, row.voteButton);
  row.li.append(row.voters);
  row.extraBadges = (badges, entry) => {
    if (view.myVotes.has(entry.uri)) badges.unshift(el("span", { class: "badge mine" }, "✓ Your vote"));
  };
}

function updateRow(row, entry) {
  const voted = view.myVotes.has(entry.uri);
  const title = entry.track.title;
  const label = voted ? "Remove my vote" : "Vote";
  if (row.voteLabel.textContent !== label) row.voteLabel.textContent = label;
  if (row.voteTitle.textContent !== ` for ${title}`) row.voteTitle.textContent = ` for ${title}`;
  if (row.whoTitle.textContent !== ` for ${title}`) row.whoTitle.textContent = ` for ${title}`;
  row.voteButton.classList.toggle("voted", voted);
  row.li.classList.toggle("mine", voted);
  setBusy(row.voteButton, view.busy.has(entry.uri)); // not disabled: the focus stays on it
}

// ---- drawing

const { now: draw, soon: schedule } = coalesce(() => {
  if (!view.queue) return;
  const v = view.venue;
  if (v) drawVenueHeading(v, [v.address, v.postcode, v.city], `${v.name} · Hubbub`);
  drawCheckin();
  drawNow();
  drawQueue();
  $("explicit-hint").hidden = view.queue.settings?.explicitAllowed !== false;
  $("request").hidden = !view.queue.playlist;
  sayTop();
});

function drawCheckin() {
  $("checkin").hidden = view.checkedInMe;
  $("checked-in-me").hidden = !view.checkedInMe;
  $("checked-in").textContent = view.queue || view.checkedIn ? `${plural(view.checkedIn, "person", "people")} checked in` : "";
}

function top() {
  const { now, next } = nowAndNext(view.queue);
  return { now: now?.uri ?? null, next: next?.uri ?? null, nowEntry: now, nextEntry: next };
}

function drawNow() {
  const t = top();
  $("now-title").textContent = t.nowEntry ? trackLine(t.nowEntry.track) : "Nothing is playing right now";
  $("up-next").textContent = t.nextEntry ? `Up next: ${trackLine(t.nextEntry.track)} (${plural(t.nextEntry.votes, "vote")})` : "";
  $("now").classList.toggle("idle", !t.nowEntry);
}

let topTimer = null;

/** Says when the playing song or the one up next changed (not for each vote: at most once a second or so). */
function sayTop() {
  clearTimeout(topTimer);
  topTimer = setTimeout(() => {
    if (!view.queue || view.own) return;
    const t = top();
    const said = view.said ?? { now: null, next: null };
    const parts = [];
    if (t.now !== said.now && t.nowEntry) parts.push(`Now playing: ${trackLine(t.nowEntry.track)}.`);
    if (t.next !== said.next && t.nextEntry) parts.push(`Up next: ${trackLine(t.nextEntry.track)}.`);
    view.said = t;
    if (parts.length) announce(parts.join(" "));
  }, 1200);
}

function drawQueue() {
  drawQueueList(rows, view.queue, view.limit, (all, filter) => {
    if (!view.queue.playlist && !all.length) return "The venue has not put on a playlist yet: its songs show up here as soon as it does.";
    return fold(filter) ? `No song in the queue matches “${filter.trim()}”. Request it below.` : "The queue is empty: request a song below.";
  });
}

pageQueue(view, PAGE, draw);

// ---- check in

$("checkin").addEventListener("click", () => whileBusy($("checkin"), async () => {
  $("queue-error").textContent = "";
  try {
    const { checkedIn } = await hub.request("venue.checkin", { venue: view.id });
    view.checkedIn = Math.max(view.checkedIn, checkedIn);
    view.checkedInMe = true;
    drawCheckin();
    $("checked-in-me").setAttribute("tabindex", "-1");
    $("checked-in-me").focus();
    announce(`You're checked in at ${view.venue?.name ?? "the venue"}.`);
  } catch (e) {
    $("queue-error").textContent = venueError(e);
  }
}));

// ---- requests

onSubmit($("request"), async (data, form) => {
  const title = String(data.get("title") ?? "").trim().replace(/\s+/g, " ");
  const artist = String(data.get("artist") ?? "").trim().replace(/\s+/g, " ");
  if (!title) {
    form.elements.title.setAttribute("aria-invalid", "true");
    form.elements.title.focus();
    throw new Error("Give the song's title.");
  }
  const track = { uri: requestUri(String(data.get("uri") ?? ""), title, artist), title, artist, explicit: data.get("explicit") === "on" };
  let result;
  try {
    result = await hub.request("venue.request", { venue: view.id, track });
  } catch (e) {
    if (e.code === "conflict" && /already voted/.test(e.message)) throw new Error(`${title} is in the queue already, with your vote.`);
    throw new Error(venueError(e));
  }
  view.myVotes.add(track.uri);
  form.reset();
  expectOwn(track.uri, "request", result.votes);
  schedule();
});

/** The uri a request goes by: the one given (a Spotify link becomes spotify:track:<id>), the
 * queue's own when that song is there already, else one made of the title and artist. */
function requestUri(given, title, artist) {
  const link = given.trim();
  const spotify = /^https?:\/\/open\.spotify\.com\/(?:intl-[\w-]+\/)?track\/([A-Za-z0-9]+)/.exec(link);
  if (spotify) return `spotify:track:${spotify[1]}`;
  if (link) return clip(link);
  const t = fold(title);
  const a = fold(artist);
  for (const e of view.queue?.entries() ?? []) {
    if (fold(e.track.title) === t && (!a || fold(e.track.artist) === a)) return e.uri;
  }
  return clip(`request:${t}-${a}`);
}

/** At most 500 characters and 1,024 bytes (the server's limit on a uri). */
function clip(uri) {
  let s = [...uri].slice(0, 500).join("");
  while (new TextEncoder().encode(s).length > 1024) s = [...s].slice(0, -1).join("");
  return s;
}
