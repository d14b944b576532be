// The traveller's page: choose a route, see the live reports ("intel") inside its corridor on a
// map and in a list, post, like, comment on and link reports, and see karma; choose the language
// transit operators' alerts are read in (kept in the profile: the server translates). An alert at
// several stops is drawn at each of them. Everything a user or an operator wrote is set as text
// (el(), textContent): never parsed as HTML.
import { CorridorItems, HubbubError } from "./hubbub.js";
import { $, ago, announce, clearError, clock, el, fill, onSubmit, showError, startSession, here } from "./ui.js";

const SVG = "http://www.w3.org/2000/svg";
const METERS_PER_DEGREE = 6_371_008.8 * Math.PI / 180;
const KINDS = [
  { value: "disruption", toggle: "Disruptions", one: "Disruption", name: "disruptions" },
  { value: "poi", toggle: "Places", one: "Place", name: "places" },
];
const MODES = [
  { value: "walk", toggle: "Walk", name: "walking" },
  { value: "cycle", toggle: "Cycle", name: "cycling" },
  { value: "car", toggle: "Car", name: "driving" },
  { value: "transit", toggle: "Transit", name: "transit" },
];
const LEVELS = [["newcomer", 0], ["scout", 10], ["guide", 50], ["navigator", 200], ["pathfinder", 1000]];
const VIEW_KEY = "hubbub.traveller.view";

const state = {
  user: null,
  route: null, // what was asked: {from, to, widthMeters, label}
  corridor: null, // what the server answered
  items: new CorridorItems(),
  room: null,
  cards: new Map(), // item id → card (its elements)
  shown: [], // the items drawn, in list order
  projection: null,
  pin: null, // where a new report goes, {lat, lon}
  places: new Map(), // item id → {at, near}: where its numbered marker goes, how many of its points are along the route
  language: undefined, // the profile's language: a tag, null (original texts), undefined (not read yet)
  liked: new Set(),
  ...loadView(),
};

// ---- small helpers

function load(key, fallback) {
  try { return JSON.parse(localStorage.getItem(key)) ?? fallback; } catch (_) { return fallback; }
}

function save(key, value) {
  try { localStorage.setItem(key, JSON.stringify(value)); } catch (_) { /* storage refused: not kept */ }
}

function loadView() {
  const v = load(VIEW_KEY, {});
  const pick = (list, all) => new Set(Array.isArray(list) ? list.filter((x) => all.some((a) => a.value === x)) : all.map((a) => a.value));
  return { sort: v.sort === "distance" ? "distance" : "time", kinds: pick(v.kinds, KINDS), modes: pick(v.modes, MODES) };
}

function saveView() {
  save(VIEW_KEY, { sort: state.sort, kinds: [...state.kinds], modes: [...state.modes] });
}

/** Whether this browser has settled the user's language (by the browser's, or their choice). */
const languageKey = () => `hubbub.traveller.language-set.${state.user?.id}`;
const placeKey = (p) => `${p.lat.toFixed(4)},${p.lon.toFixed(4)}`;
/** Where each of the user's routes started, by destination (kept in this browser only). */
const startsKey = () => `hubbub.traveller.starts.${state.user?.id}`;

/** The first words of a report, to name its buttons ("Like Bridge closed to cars"). */
export function firstWords(body, count = 5, max = 40) {
  const words = String(body).trim().split(/\s+/).slice(0, count).join(" ");
  return words.length > max ? words.slice(0, max).trimEnd() : words;
}

function plural(n, one, many = one + "s") { return `${n} ${n === 1 ? one : many}`; }

function distance(m) {
  if (m < 1000) return `${Math.round(m / 10) * 10} m`;
  return `${(m / 1000).toFixed(m < 10_000 ? 1 : 0)} km`;
}

/** Great-circle metres between two points. */
function meters(a, b) {
  const r = Math.PI / 180;
  const h = Math.sin((b.lat - a.lat) * r / 2) ** 2 + Math.cos(a.lat * r) * Math.cos(b.lat * r) * Math.sin((b.lon - a.lon) * r / 2) ** 2;
  return 2 * 6_371_008.8 * Math.asin(Math.min(1, Math.sqrt(h)));
}

function number(input) {
  const text = input.value.trim();
  if (text === "") return null;
  const n = Number(text);
  return Number.isFinite(n) ? n : NaN;
}

/** A form's error on one of its fields, said by the client (the server's go through showError). */
function fieldError(form, input, message) {
  clearError(form);
  form.querySelector(".error").textContent = message;
  input.setAttribute("aria-invalid", "true");
  input.focus();
}

/** Reads a lat/lon pair of fields; null (and the error shown) when they do not hold a place. */
function readPlace(form, latInput, lonInput, what) {
  const lat = number(latInput);
  const lon = number(lonInput);
  if (lat === null || Number.isNaN(lat) || lat < -90 || lat > 90) {
    fieldError(form, latInput, `Type the latitude of ${what}: a number from -90 to 90.`);
    return null;
  }
  if (lon === null || Number.isNaN(lon) || lon < -180 || lon > 180) {
    fieldError(form, lonInput, `Type the longitude of ${what}: a number from -180 to 180.`);
    return null;
  }
  return { lat, lon };
}

function setPlace(latInput, lonInput, p) {
  latInput.value = p.lat.toFixed(5).replace(/\.?0+$/, "");
  lonInput.value = p.lon.toFixed(5).replace(/\.?0+$/, "");
}

function pageError(message) {
  $("page-error").textContent = message ?? "";
}

const hub = startSession({ onUser: userChanged });

// ---- who is signed in

function userChanged(user) {
  state.user = user;
  state.language = undefined;
  leaveRoute();
  for (const id of ["plan", "me"]) $(id).hidden = !user;
  $("intro").hidden = !!user;
  pageError("");
  if (!user) return;
  state.liked = new Set(load(`hubbub.traveller.liked.${user.id}`, []));
  loadLanguage();
  loadDestinations();
  refreshKarma();
}

// ---- the language alerts are read in

/** The select's option for a tag (one is added for a tag it does not offer), or the "original
 * texts" one for null. */
function languageOption(tag) {
  const select = $("language");
  if (!tag) return [...select.options].find((o) => o.value === "");
  const known = [...select.options].find((o) => o.value && o.value.toLowerCase() === tag.toLowerCase());
  if (known) return known;
  let name = tag;
  try {
    // Its name in its own language, as the others are ("svenska" → "Svenska").
    const own = new Intl.DisplayNames([tag], { type: "language" }).of(tag) ?? tag;
    name = own.charAt(0).toLocaleUpperCase(tag) + own.slice(1);
  } catch (_) { /* not a tag Intl knows: its code */ }
  const option = el("option", { value: tag, lang: tag }, name);
  select.insertBefore(option, languageOption(null));
  return option;
}

function showLanguage(tag) {
  state.language = tag ?? null;
  $("language").value = languageOption(state.language).value;
}

/** The browser's first language as one the select offers (`en-GB` → `en`), else as it is; null
 * when it is not a language tag. */
function browserLanguage() {
  const tag = String(navigator.languages?.[0] ?? navigator.language ?? "").trim();
  if (!/^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$/.test(tag) || tag.length > 35) return null;
  const primary = tag.split("-")[0].toLowerCase();
  const offered = [...$("language").options].find((o) => o.value && o.value.toLowerCase() === primary);
  return offered ? offered.value : tag;
}

/** Reads the profile's language. A user who never chose one (none in the profile, and this
 * browser has not set it before) gets the browser's, stored in the profile. */
async function loadLanguage() {
  const user = state.user;
  let tag, defaulted = false;
  try {
    tag = (await hub.request("profile.get")).profile.language ?? null;
    if (tag === null && !load(languageKey(), false)) {
      const guess = browserLanguage();
      if (guess) {
        tag = (await hub.request("profile.update", { language: guess })).profile.language ?? null;
        defaulted = true;
      }
    }
  } catch (e) {
    if (state.user === user) $("language-hint").textContent = `Your language could not be read just now (${e.message}).`;
    return;
  }
  if (state.user !== user) return;
  save(languageKey(), true);
  showLanguage(tag);
  // A route opened meanwhile may have been read in the language before.
  if (defaulted) refreshRoute();
}

$("language").addEventListener("change", async (event) => {
  const select = event.currentTarget;
  const option = select.selectedOptions[0];
  const tag = select.value || null;
  const before = state.language;
  select.setAttribute("aria-busy", "true");
  try {
    const r = await hub.request("profile.update", { language: tag });
    save(languageKey(), true);
    state.language = r.profile.language ?? null;
    await refreshRoute();
    announce(tag ? `Alerts are now in ${option.textContent} when their operator gives it.` : "Alerts are now in the language their operator wrote them in.");
  } catch (e) {
    if (before !== undefined) showLanguage(before);
    pageError(`Your language could not be changed: ${e.message}`);
  } finally {
    select.removeAttribute("aria-busy");
  }
});

function leaveRoute() {
  if (state.room) state.room.close();
  state.room = null;
  state.route = null;
  state.corridor = null;
  state.items = new CorridorItems();
  state.cards.clear();
  fill($("reports"));
  $("route").hidden = true;
  $("post").hidden = true;
}

// ---- karma

let karmaTimer = null;

async function refreshKarma() {
  if (!state.user) return;
  try {
    const r = await hub.request("user.karma");
    const next = LEVELS.find(([, from]) => from > r.karma);
    fill($("my-karma"), el("strong", { class: "karma" }, plural(r.karma, "point")), " · ", el("span", { class: `level ${r.level}` }, r.level),
      next ? el("span", { class: "muted" }, ` (${next[1] - r.karma} more to become a ${next[0]})`) : null);
  } catch (e) {
    $("my-karma").textContent = "Your karma could not be read just now.";
  }
}

/** Karma again soon (likes and links of one's reports come as pushes, in bursts). */
function karmaSoon() {
  clearTimeout(karmaTimer);
  karmaTimer = setTimeout(refreshKarma, 400);
}

// ---- destinations

function destinationName(d) {
  return d.label || `${d.to.lat.toFixed(4)}, ${d.to.lon.toFixed(4)}`;
}

async function loadDestinations() {
  let list = [];
  try {
    list = (await hub.request("destinations.list")).destinations;
  } catch (e) {
    pageError(`Your recent destinations could not be read: ${e.message}`);
  }
  if (!state.user) return;
  fill($("destinations"), list.slice(0, 8).map((d) => {
    const name = destinationName(d);
    return el("li", { class: "destination" },
      el("button", { type: "button", class: "go", onclick: () => goTo(d) }, `Go to ${name}`),
      el("button", { type: "button", class: "link forget", "aria-label": `Forget ${name}`, onclick: () => forget(d, name) }, "Forget"));
  }));
  $("destinations-box").hidden = list.length === 0;
}

async function forget(d, name) {
  try {
    await hub.request("destination.forget", { destination: d.destination });
    const starts = load(startsKey(), {});
    delete starts[placeKey(d.to)];
    save(startsKey(), starts);
    announce(`${name} forgotten`);
    await loadDestinations();
    $("plan-new").focus();
  } catch (e) {
    pageError(`Could not forget ${name}: ${e.message}`);
  }
}

/** Opens the route to a known destination: from where that route started last time, else from
 * the start typed in the form. */
async function goTo(d) {
  const form = $("plan-form");
  clearError(form);
  const kept = load(startsKey(), {})[placeKey(d.to)];
  setPlace($("to-lat"), $("to-lon"), d.to);
  $("label").value = d.label ?? "";
  if (kept?.widthMeters) setWidth(kept.widthMeters);
  let from = kept?.from ?? null;
  if (!from) {
    const lat = number($("from-lat"));
    const lon = number($("from-lon"));
    if (lat !== null && lon !== null && !Number.isNaN(lat) && !Number.isNaN(lon)) from = { lat, lon };
  }
  if (!from) {
    fieldError(form, $("from-lat"), `Where do you start from? Type it, or use your location, then show the route to ${destinationName(d)}.`);
    return;
  }
  setPlace($("from-lat"), $("from-lon"), from);
  try {
    await openRoute({ from, to: d.to, widthMeters: kept?.widthMeters ?? Number($("width").value), label: d.label ?? null }, form);
  } catch (e) {
    showError(form, e);
  }
}

function setWidth(w) {
  const select = $("width");
  if (![...select.options].some((o) => Number(o.value) === w)) select.append(el("option", { value: w }, distance(w)));
  select.value = String(w);
}

// ---- choosing a route

const planForm = $("plan-form");
onSubmit(planForm, async (_, form) => {
  const from = readPlace(form, $("from-lat"), $("from-lon"), "where you start");
  if (!from) return;
  const to = readPlace(form, $("to-lat"), $("to-lon"), "where you are going");
  if (!to) return;
  const label = $("label").value.trim();
  await openRoute({ from, to, widthMeters: Number($("width").value), label: label || null }, form);
});

$("use-location").addEventListener("click", async (event) => {
  const button = event.currentTarget;
  const form = $("plan-form");
  clearError(form);
  button.disabled = true;
  button.textContent = "Finding where you are…";
  try {
    const p = await here();
    setPlace($("from-lat"), $("from-lon"), p);
    announce("Your location is the start.");
  } catch (e) {
    fieldError(form, $("from-lat"), e.message);
  } finally {
    button.disabled = false;
    button.textContent = "Use my location";
  }
});

function subscribeRoute(route) {
  const args = { from: route.from, to: route.to, widthMeters: route.widthMeters };
  if (route.label) args.label = route.label;
  return hub.request("route.subscribe", args);
}

/** Takes the room of route.subscribe's reply: another route's room is left; the same one is taken
 * over by adopt() (no unsubscribe). */
function takeRoom(r) {
  if (state.room && state.room.name !== r.room) state.room.close();
  state.corridor = r.corridor;
  state.items = new CorridorItems(r.items);
  state.room = hub.adopt(r, { snapshot: onSnapshot, push: onPush, recovered: (room) => { if (room === state.room) announce("Back online: caught up with your route."); }, error: onRoomError });
}

/** The open route's items again (after a change of language: their bodies come in the new one). */
async function refreshRoute() {
  const route = state.route;
  if (!route || !state.user) return;
  let r;
  try {
    r = await subscribeRoute(route);
  } catch (e) {
    pageError(`Your route could not be read again: ${e.message}`);
    return;
  }
  if (state.route !== route || !state.user) return;
  takeRoom(r);
  render();
}

async function openRoute(route, form) {
  let r;
  try {
    r = await subscribeRoute(route);
  } catch (e) {
    if (form) throw e;
    pageError(`Your route could not be opened: ${e.message}`);
    return;
  }
  if (!state.user) return;
  state.route = route;
  takeRoom(r);
  const starts = load(startsKey(), {});
  starts[placeKey(route.to)] = { from: route.from, widthMeters: route.widthMeters };
  save(startsKey(), starts);
  state.pin = { ...route.from };
  setPlace($("post-lat"), $("post-lon"), route.from);
  pageError("");
  $("route").hidden = false;
  $("post").hidden = false;
  render();
  const n = state.items.items.size;
  announce(`Route open: ${plural(n, "report")} along it.`);
  $("route-title").focus();
  loadDestinations();
}

function onSnapshot(snapshot, room) {
  if (room !== state.room) return;
  state.corridor = snapshot.corridor;
  state.items = new CorridorItems(snapshot.items);
  render();
  announce(`Back online: ${plural(state.items.items.size, "report")} along your route, brought up to date.`);
}

function onRoomError(e, room) {
  if (room !== state.room) return;
  // The room could not be joined again after a reconnect (e.g. its corridor was pruned): ask for
  // the route again, which makes it afresh.
  state.room = null;
  if (state.route) setTimeout(() => { if (state.route && !state.room) openRoute(state.route, null); }, 500);
  else pageError(`Your route's updates stopped: ${e.message}`);
}

function onPush(push, room) {
  if (room !== state.room) return;
  const id = push.event === "intel.expired" ? push.data?.item : push.data?.item?.id;
  const held = state.items.items.get(id);
  if (!state.items.apply(push)) return;
  const item = push.data?.item;
  if (push.event === "intel.added" && !held) {
    if (item.by?.user === state.user?.id) {
      announce(`Your report is on your route: ${firstWords(item.body, 8, 80)}`);
      karmaSoon();
    } else {
      const kind = KINDS.find((k) => k.value === item.kind)?.one ?? "Report";
      announce(`New ${kind.toLowerCase()} on your route${passes(item) ? "" : " (hidden by your filters)"}: ${firstWords(item.body, 12, 120)}`);
      flash(item.id);
    }
  } else if (push.event === "intel.updated" && item?.origin === "provider" && held && held.body !== item.body) {
    // An operator revised its alert (likes and comments change no body).
    announce(`Alert updated${passes(item) ? "" : " (hidden by your filters)"}: ${firstWords(item.body, 12, 120)}`);
    flash(item.id);
  } else if (push.event === "intel.updated" && item?.by?.user === state.user?.id) {
    karmaSoon();
  } else if (push.event === "intel.linked") {
    karmaSoon();
  } else if (push.event === "intel.expired" && held?.origin === "provider") {
    announce(`Alert ended: ${firstWords(held.body, 12, 120)}`);
  }
  render();
  if (push.event === "intel.updated") refreshOpenPanel(item.id);
}

const fresh = new Set();

/** Marks a card as new or changed for a few seconds. */
function flash(id) {
  fresh.add(id);
  state.cards.get(id)?.li.classList.add("fresh");
  setTimeout(() => { fresh.delete(id); state.cards.get(id)?.li.classList.remove("fresh"); }, 6000);
}

// ---- the list and its filters

function passes(item) {
  if (!state.kinds.has(item.kind)) return false;
  if (item.modes.length && !item.modes.some((m) => state.modes.has(m))) return false;
  return true;
}

function toggle(label, name, pressed, onclick) {
  return el("button", { type: "button", class: "toggle", "aria-label": name, "aria-pressed": String(pressed), onclick }, label);
}

function drawControls() {
  $("sort-time").setAttribute("aria-pressed", String(state.sort === "time"));
  $("sort-distance").setAttribute("aria-pressed", String(state.sort === "distance"));
  const kinds = $("kind-filters");
  for (const b of kinds.querySelectorAll("button")) b.setAttribute("aria-pressed", String(state.kinds.has(b.dataset.value)));
  const modes = $("mode-filters");
  for (const b of modes.querySelectorAll("button")) b.setAttribute("aria-pressed", String(state.modes.has(b.dataset.value)));
}

function setUpControls() {
  const sortBy = (order) => () => {
    state.sort = order;
    saveView();
    render();
    announce(order === "time" ? "Newest reports first." : "Reports closest to your destination first.");
  };
  $("sort-time").addEventListener("click", sortBy("time"));
  $("sort-distance").addEventListener("click", sortBy("distance"));
  const flip = (set, value, name) => () => {
    if (set.has(value)) set.delete(value); else set.add(value);
    saveView();
    render();
    announce(`${set.has(value) ? "Showing" : "Hiding"} ${name}: ${plural(state.shown.length, "report")} shown.`);
  };
  for (const k of KINDS) {
    const b = toggle(k.toggle, `Show ${k.name}`, true, flip(state.kinds, k.value, k.name));
    b.dataset.value = k.value;
    b.classList.add(`kind-${k.value}`);
    $("kind-filters").append(b);
  }
  for (const m of MODES) {
    const b = toggle(m.toggle, `Show reports for ${m.name}`, true, flip(state.modes, m.value, `reports for ${m.name}`));
    b.dataset.value = m.value;
    $("mode-filters").append(b);
  }
  drawControls();
}

function render() {
  if (!state.corridor) return;
  const all = state.items.sorted(state.sort);
  state.shown = all.filter(passes);
  const plane = planeOf(state.corridor);
  state.places = new Map(state.shown.map((i) => [i.id, placeOf(i, state.corridor, plane)]));
  drawControls();
  drawSummary(all.length);
  drawList(all);
  drawMap();
}

function drawSummary(total) {
  const c = state.corridor;
  const name = state.route?.label || "your destination";
  $("route-title").textContent = `Your route to ${name}`;
  const pts = [c.from, ...c.via, c.to];
  let length = 0;
  for (let i = 1; i < pts.length; i++) length += meters(pts[i - 1], pts[i]);
  const d = state.shown.filter((i) => i.kind === "disruption").length;
  const counts = total === 0 ? "No reports yet." : `${plural(d, "disruption")}, ${plural(state.shown.length - d, "place")}${state.shown.length < total ? " shown" : ""}.`;
  fill($("route-summary"), el("strong", { class: "counts-line" }, counts), " ",
    `${distance(length)}${c.via.length ? "" : " as the crow flies"}${c.recorded ? ", following the path you recorded" : ""}; `
    + `reports within ${distance(c.widthMeters / 2)} of it count.`);
  const shown = state.shown.length;
  $("reports-count").textContent = shown === total ? `(${total})` : `(${shown} of ${total} shown)`;
  const empty = $("empty");
  empty.hidden = shown > 0;
  empty.textContent = total === 0 ? "No reports on this route right now. Seen something? Report it below." : "No report matches the kinds and ways of travelling you chose.";
}

function drawList(all) {
  const list = $("reports");
  const live = new Set(all.map((i) => i.id));
  for (const [id, card] of state.cards) {
    if (!live.has(id)) { card.li.remove(); state.cards.delete(id); }
  }
  const shownIds = new Set(state.shown.map((i) => i.id));
  for (const [id, card] of state.cards) {
    if (!shownIds.has(id)) card.li.remove();
  }
  state.shown.forEach((item, index) => {
    let card = state.cards.get(item.id);
    if (!card) { card = makeCard(item.id); state.cards.set(item.id, card); }
    updateCard(card, item, index);
    // Move only what is out of place, so a focused button stays where it is.
    const at = list.children[index];
    if (at !== card.li) list.insertBefore(card.li, at ?? null);
  });
  while (list.children.length > state.shown.length) list.lastElementChild.remove();
}

function makeCard(id) {
  const c = { id, open: false, panel: null };
  c.num = el("span", { class: "num", "aria-hidden": "true" });
  c.kind = el("span", { class: "kind" });
  c.line = el("p", { class: "line" });
  c.body = el("p", { class: "text" });
  c.where = el("p", { class: "sub" });
  c.meta = el("p", { class: "sub" });
  c.tags = el("p", { class: "tags" });
  c.links = el("div", { class: "linked" });
  c.likeBtn = el("button", { type: "button", class: "secondary small like", onclick: () => like(id) }, "Like");
  c.counts = el("span", { class: "counts" });
  c.moreBtn = el("button", { type: "button", class: "secondary small", "aria-expanded": "false", "aria-controls": `details-${id}`, onclick: () => toggleDetails(id) }, "Comments and links");
  c.error = el("p", { class: "error", role: "alert" });
  c.details = el("div", { id: `details-${id}`, class: "details stack", hidden: true });
  c.li = el("li", { class: "report", id: `report-${id}`, tabindex: "-1" },
    c.num,
    el("div", { class: "report-main" },
      el("p", { class: "head" }, c.kind, c.counts),
      c.line, c.body, c.where, c.meta, c.tags, c.links,
      el("div", { class: "actions" }, c.likeBtn, c.moreBtn),
      c.error, c.details));
  return c;
}

function byLine(item) {
  if (item.by?.source) return `from ${item.by.source}`;
  if (item.by?.user && item.by.user === state.user?.id) return "by you";
  return `by ${item.by?.alias ?? "someone"}`;
}

function updateCard(c, item, index) {
  c.item = item;
  const words = firstWords(item.body);
  const kind = KINDS.find((k) => k.value === item.kind) ?? KINDS[0];
  c.li.className = `report ${item.kind}${fresh.has(item.id) ? " fresh" : ""}`;
  c.num.textContent = String(index + 1);
  c.kind.textContent = kind.one + (item.origin === "provider" ? " · official" : "");
  c.counts.textContent = `${plural(item.likes, "like")} · ${plural(item.comments, "comment")}`;
  c.body.textContent = item.body;
  // A provider's item: who says it and which lines (its tags: tram, bus...), in place of hashtags.
  const source = item.by?.source ?? null;
  c.line.textContent = source ? [source, ...item.tags].join(" · ") : "";
  c.line.hidden = !source;
  const points = item.points?.length ?? 0;
  const near = state.places.get(item.id)?.near ?? 1;
  c.where.textContent = points > 1 ? `At ${points} ${source ? "stops" : "places"}, ${near === 1 ? "1 of them" : `${near} of them`} along your route.` : "";
  c.where.hidden = points <= 1;
  const modes = item.modes.length ? `for ${item.modes.map((m) => MODES.find((x) => x.value === m)?.name ?? m).join(", ")}` : "for everyone";
  const away = item.distanceToDestinationMeters !== undefined ? ` · ${distance(item.distanceToDestinationMeters)} from your destination` : "";
  c.meta.textContent = `${source ? "" : `${byLine(item)} · `}${ago(item.at)} (${clock(item.at)}) · ${modes}${away}`;
  fill(c.tags, source ? [] : item.tags.map((t) => el("span", { class: "badge" }, `#${t}`)));
  c.tags.hidden = !!source || item.tags.length === 0;
  fill(c.links, item.links.length ? [el("span", { class: "muted" }, "Linked to: "), ...item.links.map((other, i) => {
    const o = state.items.items.get(other);
    const sep = i < item.links.length - 1 ? ", " : "";
    if (!o) return el("span", {}, `a report off this route or gone${sep}`);
    return el("span", {}, el("a", { href: `#report-${other}`, onclick: (e) => { e.preventDefault(); focusCard(other); } }, firstWords(o.body)), sep);
  })] : []);
  c.links.hidden = item.links.length === 0;
  const own = item.by?.user && item.by.user === state.user?.id;
  const liked = state.liked.has(item.id);
  c.likeBtn.hidden = !!own || item.origin === "provider";
  c.likeBtn.textContent = liked ? "Liked" : "Like";
  c.likeBtn.setAttribute("aria-label", liked ? `You liked ${words}` : `Like ${words}`);
  c.likeBtn.setAttribute("aria-pressed", String(liked));
  c.moreBtn.setAttribute("aria-label", `Comments and links for ${words}`);
  if (c.open) refillLinkChoices(c);
}

function focusCard(id) {
  const card = state.cards.get(id);
  if (!card) return;
  card.li.scrollIntoView({ block: "center", behavior: "smooth" });
  card.li.focus({ preventScroll: true });
}

// ---- like, comment, link, karma of a poster

async function like(id) {
  const c = state.cards.get(id);
  if (!c) return;
  if (state.liked.has(id)) return announce("You liked this report already.");
  c.error.textContent = "";
  const words = firstWords(c.item.body);
  try {
    await hub.request("intel.like", { item: id });
    announce(`You liked ${words}.`);
  } catch (e) {
    if (!(e instanceof HubbubError && e.code === "conflict")) {
      c.error.textContent = e instanceof HubbubError && e.code === "forbidden" ? "You cannot like your own report." : `Could not like it: ${e.message}`;
      return;
    }
  }
  state.liked.add(id);
  save(`hubbub.traveller.liked.${state.user.id}`, [...state.liked].slice(-500));
  render();
}

function toggleDetails(id) {
  const c = state.cards.get(id);
  if (!c) return;
  c.open = !c.open;
  c.moreBtn.setAttribute("aria-expanded", String(c.open));
  c.details.hidden = !c.open;
  if (c.open) {
    if (!c.panel) buildPanel(c);
    refillLinkChoices(c);
    loadComments(c);
  }
}

function buildPanel(c) {
  const id = c.id;
  const words = firstWords(c.item.body);
  const p = {};
  p.comments = el("ol", { class: "plain comments", "aria-label": `Comments on ${words}` });
  p.note = el("p", { class: "muted" });
  const commentForm = el("form", { class: "stack" },
    el("label", { for: `comment-${id}` }, "Your comment"),
    el("textarea", { id: `comment-${id}`, name: "text", maxlength: 500, required: true, rows: 2 }),
    el("p", { class: "error", role: "alert" }),
    el("button", { type: "submit", "aria-label": `Send comment on ${words}` }, "Send comment"));
  onSubmit(commentForm, async (data, form) => {
    const text = String(data.get("text")).trim();
    if (!text) return fieldError(form, form.elements.text, "Type a comment first.");
    await hub.request("intel.comment", { item: id, text });
    form.reset();
    announce("Comment sent.");
    await loadComments(c);
  });
  p.select = el("select", { id: `link-${id}`, name: "to" });
  const linkForm = el("form", { class: "stack" },
    el("label", { for: `link-${id}` }, "Link to…"),
    el("p", { class: "hint", id: `link-hint-${id}` }, "Another report about the same thing, or that helps with it (a way around, a place to wait)."),
    p.select,
    el("p", { class: "error", role: "alert" }),
    el("button", { type: "submit", class: "secondary", "aria-label": `Link ${words} to the chosen report` }, "Link them"));
  p.select.setAttribute("aria-describedby", `link-hint-${id}`);
  onSubmit(linkForm, async (data, form) => {
    const to = String(data.get("to") ?? "");
    if (!to) return fieldError(form, p.select, "Choose the report to link it to.");
    try {
      await hub.request("intel.link", { item: id, to });
    } catch (e) {
      if (e instanceof HubbubError && e.code === "conflict") throw new Error("These two reports are linked already.");
      throw e;
    }
    announce("Reports linked.");
  });
  p.karma = el("p", { class: "karma-line", "aria-live": "polite" });
  const who = c.item.by;
  let poster = null;
  if (who?.user && who.user !== state.user?.id) {
    poster = el("div", { class: "row" }, el("span", {}, `Posted by ${who.alias}.`),
      el("button", { type: "button", class: "link", onclick: () => posterKarma(c, who) }, `Karma of ${who.alias}`));
  } else if (who?.user) {
    poster = el("p", { class: "muted" }, "You posted this report.");
  } else if (who?.source) {
    poster = el("p", { class: "muted" }, `Posted by ${who.source}.`);
  }
  fill(c.details, el("h4", {}, "Comments"), p.comments, p.note, commentForm, linkForm, poster, p.karma);
  c.panel = p;
}

function refillLinkChoices(c) {
  const select = c.panel?.select;
  if (!select) return;
  const chosen = select.value;
  const others = state.items.sorted(state.sort).filter((i) => i.id !== c.id && !c.item.links.includes(i.id));
  fill(select, el("option", { value: "" }, others.length ? "Choose a report…" : "No other report to link to"),
    others.map((o) => el("option", { value: o.id }, `${KINDS.find((k) => k.value === o.kind)?.one ?? "Report"}: ${firstWords(o.body, 8, 60)}`)));
  if (others.some((o) => o.id === chosen)) select.value = chosen;
}

async function loadComments(c) {
  const p = c.panel;
  try {
    const r = await hub.request("intel.get", { item: c.id });
    fill(p.comments, r.comments.map((m) => el("li", { class: "comment" },
      el("strong", {}, m.by?.user === state.user?.id ? "You" : (m.by?.alias ?? "someone")), " ",
      el("span", { class: "muted" }, `· ${ago(m.at)}`), el("br"), m.text)));
    p.note.textContent = r.comments.length === 0 ? "No comments yet." : r.commentsTruncated ? "Only the newest 200 comments are shown." : "";
  } catch (e) {
    p.note.textContent = e instanceof HubbubError && e.code === "not_found" ? "This report has expired." : `Comments could not be read: ${e.message}`;
  }
}

function refreshOpenPanel(id) {
  const c = state.cards.get(id);
  if (c?.open && c.panel) loadComments(c);
}

async function posterKarma(c, who) {
  try {
    const r = await hub.request("user.karma", { user: who.user });
    c.panel.karma.textContent = `${who.alias} has ${plural(r.karma, "karma point")}: ${r.level}.`;
  } catch (e) {
    c.panel.karma.textContent = `The karma of ${who.alias} could not be read: ${e.message}`;
  }
}

// ---- the map

function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== null && v !== undefined) node.setAttribute(k, String(v));
  for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return node;
}

/** Metres east and south on a plane around the corridor: equirectangular, scaled by cos(latitude)
 * at the corridor's middle. */
function planeOf(c) {
  const pts = [c.from, ...c.via, c.to];
  const lat0 = (Math.min(...pts.map((p) => p.lat)) + Math.max(...pts.map((p) => p.lat))) / 2;
  const cos = Math.max(Math.cos(lat0 * Math.PI / 180), 0.01);
  const lonOf = (lon) => ((lon - c.from.lon + 540) % 360) - 180; // across the antimeridian too
  const toM = (p) => ({ x: lonOf(p.lon) * cos * METERS_PER_DEGREE, y: -(p.lat - lat0) * METERS_PER_DEGREE });
  return { lat0, cos, toM, path: pts.map(toM) };
}

/** Metres from a point of the plane to a path (a polyline) on it. */
function toPath(m, path) {
  let best = Infinity;
  for (let i = 0; i < path.length; i++) {
    const a = path[i], b = path[Math.min(i + 1, path.length - 1)];
    const dx = b.x - a.x, dy = b.y - a.y;
    const t = Math.max(0, Math.min(1, ((m.x - a.x) * dx + (m.y - a.y) * dy) / (dx * dx + dy * dy || 1)));
    best = Math.min(best, Math.hypot(m.x - a.x - t * dx, m.y - a.y - t * dy));
  }
  return best;
}

/** Where an item's numbered marker goes: its place, or, for an item at several places (a transit
 * alert at each stop of a line), the one nearest the route; `near` counts its places in the
 * corridor (at least 1: the server listed it because one is). */
function placeOf(item, c, plane) {
  if (!Array.isArray(item.points) || item.points.length < 2) return { at: { lat: item.lat, lon: item.lon }, near: 1 };
  let at = item.points[0], best = Infinity, near = 0;
  for (const p of item.points) {
    const d = toPath(plane.toM(p), plane.path);
    if (d < best) { best = d; at = p; }
    if (d <= c.widthMeters / 2) near++;
  }
  return { at, near: Math.max(near, 1) };
}

/** Fitted to the corridor's box and the places of the items' markers. */
function makeProjection(c, places) {
  const { lat0, cos, toM, path } = planeOf(c);
  const ms = [...path, ...places.map(toM)];
  const half = c.widthMeters / 2;
  const minX = Math.min(...ms.map((m) => m.x)) - half, maxX = Math.max(...ms.map((m) => m.x)) + half;
  const minY = Math.min(...ms.map((m) => m.y)) - half, maxY = Math.max(...ms.map((m) => m.y)) + half;
  const W = 400, pad = 26, maxH = 340, minH = 200;
  const dx = Math.max(maxX - minX, 1), dy = Math.max(maxY - minY, 1);
  const scale = Math.min((W - 2 * pad) / dx, (maxH - 2 * pad) / dy);
  const H = Math.max(minH, Math.min(maxH, dy * scale + 2 * pad));
  const ox = (W - dx * scale) / 2 - minX * scale;
  const oy = (H - dy * scale) / 2 - minY * scale;
  return {
    W, H, scale,
    xy: (p) => { const m = toM(p); return { x: ox + m.x * scale, y: oy + m.y * scale }; },
    place: (x, y) => {
      const mx = (x - ox) / scale, my = (y - oy) / scale;
      let lon = c.from.lon + mx / (cos * METERS_PER_DEGREE);
      if (lon > 180) lon -= 360; else if (lon < -180) lon += 360;
      return { lat: Math.max(-90, Math.min(90, lat0 - my / METERS_PER_DEGREE)), lon };
    },
  };
}

/** A round length for the scale bar, about a quarter of the map's width. */
function scaleBar(proj) {
  const target = (proj.W / 4) / proj.scale;
  const p = 10 ** Math.floor(Math.log10(target));
  const m = [1, 2, 5, 10].map((f) => f * p).filter((v) => v <= target).pop() ?? p;
  return { meters: m, px: m * proj.scale };
}

function label(x, y, text, cls, W) {
  if (text.length > 24) text = text.slice(0, 23).trimEnd() + "…";
  const anchor = x < 60 ? "start" : x > W - 60 ? "end" : "middle";
  return svg("text", { x: anchor === "start" ? x - 6 : anchor === "end" ? x + 6 : x, y, class: `map-label ${cls}`, "text-anchor": anchor }, text);
}

function drawMap() {
  const map = $("map");
  const c = state.corridor;
  const placeOfItem = (item) => state.places.get(item.id)?.at ?? item;
  const proj = makeProjection(c, state.shown.map(placeOfItem));
  state.projection = proj;
  map.setAttribute("viewBox", `0 0 ${proj.W} ${proj.H.toFixed(1)}`);
  const path = [c.from, ...c.via, c.to].map((p) => proj.xy(p));
  const points = path.map((p) => `${p.x.toFixed(1)},${p.y.toFixed(1)}`).join(" ");
  const parts = [];
  parts.push(svg("polyline", { class: "band", points, "stroke-width": Math.max(c.widthMeters * proj.scale, 6).toFixed(1) },
    svg("title", {}, `The corridor: ${distance(c.widthMeters)} wide`)));
  parts.push(svg("polyline", { class: "route", points }));
  const bar = scaleBar(proj);
  parts.push(svg("g", { class: "scale" },
    svg("line", { x1: 12, y1: proj.H - 12, x2: 12 + bar.px, y2: proj.H - 12 }),
    svg("text", { x: 12, y: proj.H - 18 }, distance(bar.meters))));
  parts.push(svg("text", { class: "north", x: proj.W - 14, y: 20, "text-anchor": "middle" }, "N ↑"));
  const a = path[0], b = path[path.length - 1];
  parts.push(svg("circle", { class: "start", cx: a.x, cy: a.y, r: 7 }, svg("title", {}, "Start")));
  parts.push(svg("rect", { class: "end", x: b.x - 7, y: b.y - 7, width: 14, height: 14, rx: 2 }, svg("title", {}, state.route?.label || "Destination")));
  const above = (p, q) => p.y <= q.y;
  parts.push(label(a.x, above(a, b) ? a.y - 13 : a.y + 22, "Start", "start", proj.W));
  parts.push(label(b.x, above(b, a) ? b.y - 13 : b.y + 22, state.route?.label || "Destination", "end", proj.W));
  if (state.pin && !$("post").hidden) {
    const p = proj.xy(state.pin);
    if (p.x >= 0 && p.x <= proj.W && p.y >= 0 && p.y <= proj.H) {
      parts.push(svg("g", { class: "pin" }, svg("title", {}, "Where your report will be"),
        svg("circle", { cx: p.x, cy: p.y, r: 8 }),
        svg("line", { x1: p.x - 12, y1: p.y, x2: p.x + 12, y2: p.y }),
        svg("line", { x1: p.x, y1: p.y - 12, x2: p.x, y2: p.y + 12 })));
    }
  }
  // An item's other places (an alert's other stops): small dots of its colour, under every
  // numbered marker; only those on the map (a line may have a hundred stops).
  let anyStops = false;
  for (let i = state.shown.length - 1; i >= 0; i--) {
    const item = state.shown[i];
    if (!Array.isArray(item.points) || item.points.length < 2) continue;
    const at = placeOfItem(item);
    const dots = [];
    for (const q of item.points) {
      if (q === at) continue;
      const p = proj.xy(q);
      if (p.x < -5 || p.x > proj.W + 5 || p.y < -5 || p.y > proj.H + 5) continue;
      dots.push(svg("circle", { cx: p.x.toFixed(1), cy: p.y.toFixed(1), r: 4.5 }));
    }
    if (!dots.length) continue;
    anyStops = true;
    const g = svg("g", { class: `stops ${item.kind}`, "data-id": item.id },
      svg("title", {}, `${i + 1}. Also at ${item.points.length - 1} other ${item.by?.source ? "stops" : "places"}: ${item.body}`), ...dots);
    g.addEventListener("click", (e) => { e.stopPropagation(); focusCard(item.id); });
    parts.push(g);
  }
  $("stops-key").hidden = !anyStops;
  // The first of the list drawn last, on top.
  for (let i = state.shown.length - 1; i >= 0; i--) {
    const item = state.shown[i];
    const p = proj.xy(placeOfItem(item));
    const kind = KINDS.find((k) => k.value === item.kind) ?? KINDS[0];
    const shape = item.kind === "disruption"
      ? svg("rect", { x: p.x - 9, y: p.y - 9, width: 18, height: 18, rx: 3, transform: `rotate(45 ${p.x.toFixed(1)} ${p.y.toFixed(1)})` })
      : svg("circle", { cx: p.x, cy: p.y, r: 10 });
    const g = svg("g", { class: `marker ${item.kind}`, "data-id": item.id },
      svg("title", {}, `${i + 1}. ${kind.one}: ${item.body} (${byLine(item)}${item.points?.length > 1 ? `, at ${item.points.length} ${item.by?.source ? "stops" : "places"}` : ""}, ${ago(item.at)})`),
      shape,
      svg("text", { x: p.x, y: p.y + 4, "text-anchor": "middle" }, String(i + 1)));
    g.addEventListener("click", (e) => { e.stopPropagation(); focusCard(item.id); });
    parts.push(g);
  }
  map.replaceChildren(...parts);
  const n = state.shown.length;
  const hidden = state.items.items.size - n;
  map.setAttribute("aria-label", `Map of your route with ${plural(n, "report")}${hidden ? ` (${hidden} hidden by filters)` : ""}`
    + `: ${plural(state.shown.filter((i) => i.kind === "disruption").length, "disruption")}, ${plural(state.shown.filter((i) => i.kind === "poi").length, "place")}`);
}

$("map").addEventListener("click", (event) => {
  const proj = state.projection;
  const map = $("map");
  if (!proj || $("post").hidden) return;
  const ctm = map.getScreenCTM();
  if (!ctm) return;
  const pt = new DOMPoint(event.clientX, event.clientY).matrixTransform(ctm.inverse());
  const place = proj.place(pt.x, pt.y);
  setPlace($("post-lat"), $("post-lon"), place);
  state.pin = place;
  drawMap();
  announce("The report's place is set where you tapped the map.");
});

// ---- posting

for (const id of ["post-lat", "post-lon"]) {
  $(id).addEventListener("input", () => {
    const lat = number($("post-lat")), lon = number($("post-lon"));
    if (lat === null || lon === null || Number.isNaN(lat) || Number.isNaN(lon)) return;
    state.pin = { lat, lon };
    if (state.corridor) drawMap();
  });
}

$("post-start").addEventListener("click", () => {
  if (!state.route) return;
  setPlace($("post-lat"), $("post-lon"), state.route.from);
  state.pin = { ...state.route.from };
  drawMap();
  announce("The report's place is the start of your route.");
});

$("post-here").addEventListener("click", async (event) => {
  const button = event.currentTarget;
  const form = $("post-form");
  clearError(form);
  button.disabled = true;
  try {
    const p = await here();
    setPlace($("post-lat"), $("post-lon"), p);
    state.pin = p;
    drawMap();
    announce("The report's place is where you are.");
  } catch (e) {
    fieldError(form, $("post-lat"), e.message);
  } finally {
    button.disabled = false;
  }
});

onSubmit($("post-form"), async (data, form) => {
  const body = String(data.get("body") ?? "");
  if (!body.trim()) return fieldError(form, $("post-body"), "Say what is happening first.");
  const place = readPlace(form, $("post-lat"), $("post-lon"), "the report");
  if (!place) return;
  const tags = String(data.get("tags") ?? "").split(/[\s,]+/).map((t) => t.replace(/^#+/, "")).filter(Boolean);
  const args = { ...place, kind: String(data.get("kind") ?? "disruption"), body, modes: data.getAll("modes").map(String) };
  if (tags.length) args.tags = tags;
  const r = await hub.request("intel.post", args);
  $("post-body").value = "";
  $("post-tags").value = "";
  for (const box of form.querySelectorAll('input[name="modes"]')) box.checked = false;
  karmaSoon();
  // The room pushes the report (usually before this reply) when it lies inside the corridor.
  setTimeout(() => {
    if (state.items.items.has(r.item.id)) {
      const shown = state.shown.some((i) => i.id === r.item.id);
      announce(shown ? "Report posted: it is on the map and in the list." : "Report posted; your filters hide it.");
    } else {
      form.querySelector(".error").textContent = "Posted, but it lies outside your route's corridor, so it is not shown here.";
    }
  }, 700);
});

// ---- start

setUpControls();
setInterval(() => { if (state.corridor) render(); }, 60_000);
$("change-route").addEventListener("click", () => {
  const plan = $("plan");
  plan.scrollIntoView({ block: "start" });
  $("plan-title").focus();
});
