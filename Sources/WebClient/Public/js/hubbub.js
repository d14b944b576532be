// hubbub.js: a client for Hubbub's protocol v1 (docs/protocol.md), for browsers and any runtime
// with a WebSocket. An ES module with no dependencies. See docs/client.md for a guide.
//
//   import { Hubbub } from "/js/hubbub.js";
//   const hub = new Hubbub();                      // ws(s)://<this page's host>/ws
//   await hub.login("alice", "secret123");         // the token is kept across reloads
//   const room = hub.subscribe("venue:vk3j9mxq2pa", {
//     snapshot: (snap) => draw(snap),              // a fresh state (first time, or not recoverable)
//     push: (push) => apply(push),                 // each push in seq order, none twice, none missed
//   });
//   await hub.request("venue.vote", { venue: "vk3j9mxq2pa", track: "spotify:track:3" });

/** An error reply of the server (`{code, message, retryAfterMs?}`), or a failure of the client. */
export class HubbubError extends Error {
  /**
   * @param {string} code the server's error code (`bad_request`, `unauthorized`, `forbidden`,
   *   `not_found`, `conflict`, `rate_limited`, `too_large`, `unavailable`, `internal`) or one of the
   *   client's: `timeout` (no reply in time), `disconnected` (the connection dropped first: the
   *   request may or may not have run).
   */
  constructor(code, message, { op = null, retryAfterMs = null } = {}) {
    super(message);
    this.name = "HubbubError";
    this.code = code;
    this.op = op;
    this.retryAfterMs = retryAfterMs;
  }

  /** The argument the message names (`missing field venue`, `field lat must be a number`,
   * `track.uri is empty`), if it names one: where a form shows the error. */
  get field() {
    const m = /^(?:missing field |field )([\w.[\]]+)/.exec(this.message) || /^([\w]+(?:[.[][\w\]]+)*) (?:is|must|has)\b/.exec(this.message);
    return m ? m[1] : null;
  }
}

/** The connection states, as `hub.state` and the `state` event give them. */
export const State = Object.freeze({
  /** Not started, or closed with `close()`. */
  idle: "idle",
  /** Opening the WebSocket (and logging in again with the kept token). */
  connecting: "connecting",
  /** Open: requests go out at once. */
  open: "open",
  /** The connection dropped; the next try is scheduled (`retryInMs` in the event). */
  reconnecting: "reconnecting",
});

/** The default endpoint: `/ws` on the page's own host, `wss:` when the page came over https. */
export function defaultURL(location = globalThis.location) {
  if (!location) throw new HubbubError("bad_request", "no page location: give Hubbub a url");
  return `${location.protocol === "https:" ? "wss:" : "ws:"}//${location.host}/ws`;
}

/** Where the token is kept: localStorage when the runtime has it, else memory. */
function defaultStorage() {
  try {
    if (globalThis.localStorage) return globalThis.localStorage;
  } catch (_) { /* storage refused (privacy settings): keep it in memory */ }
  const memory = new Map();
  return { getItem: (k) => memory.get(k) ?? null, setItem: (k, v) => memory.set(k, String(v)), removeItem: (k) => memory.delete(k) };
}

/**
 * One session with a Hubbub server: requests as promises, rooms that stay subscribed across
 * reconnects, and the log-in kept across reloads.
 *
 * Events (an EventTarget): `state` (`detail: {state, retryInMs?, code?, reason?}`), `user`
 * (`detail: {user}`: logged in, out, or the kept token no longer works: then `user` is null and
 * `detail.reason` says why), `push` (`detail`: every push, before its room's handler).
 */
export class Hubbub extends EventTarget {
  /**
   * @param {object} [options]
   * @param {string} [options.url] the `/ws` endpoint (default: the page's host)
   * @param {number} [options.timeoutMs=10000] how long a request waits for its reply
   * @param {number} [options.minBackoffMs=250] the first reconnect delay's cap
   * @param {number} [options.maxBackoffMs=15000] the largest reconnect delay
   * @param {object} [options.storage] where the token is kept (`getItem`/`setItem`/`removeItem`)
   * @param {string} [options.storageKey="hubbub.token"]
   * @param {Function} [options.WebSocket] the WebSocket constructor (tests, other runtimes)
   */
  constructor(options = {}) {
    super();
    this.url = options.url ?? defaultURL();
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.minBackoffMs = options.minBackoffMs ?? 250;
    this.maxBackoffMs = options.maxBackoffMs ?? 15_000;
    this.storage = options.storage ?? defaultStorage();
    this.storageKey = options.storageKey ?? "hubbub.token";
    this.WebSocket = options.WebSocket ?? globalThis.WebSocket;
    /** The logged-in user (`{id, username}`), or null. */
    this.user = null;
    this.state = State.idle;
    this._socket = null;
    this._nextId = 1;
    this._pending = new Map(); // id → {resolve, reject, timer, op}
    this._queue = []; // requests made while not open: sent once open
    this._rooms = new Map(); // room name → Room
    this._attempt = 0;
    this._retryTimer = null;
    this._opened = null; // resolves when the state next becomes open
  }

  /** The kept token (null when none). */
  get token() { return this.storage.getItem(this.storageKey); }

  /** Opens the connection (once; it then reconnects by itself until `close()`). Resolves when
   * open and, if a token was kept, logged in again with it. */
  connect() {
    if (this.state === State.idle) this._open();
    return this._whenOpen();
  }

  /** Closes the connection for good (no reconnect); pending requests fail as `disconnected`. */
  close() {
    clearTimeout(this._retryTimer);
    this._setState(State.idle);
    const socket = this._socket;
    this._socket = null;
    if (socket) socket.close(1000, "bye");
    this._failPending("closed by the client");
  }

  /**
   * Sends one request; resolves with its `result`, rejects with a `HubbubError`. Made while the
   * connection is down, it waits for the next connection (its timeout running).
   * @param {string} op
   * @param {object} [args]
   * @param {{timeoutMs?: number}} [options]
   */
  request(op, args = {}, { timeoutMs = this.timeoutMs } = {}) {
    if (this.state === State.idle) this.connect();
    return new Promise((resolve, reject) => {
      const id = this._nextId++;
      const entry = { id, op, args, resolve, reject, sent: false };
      entry.timer = setTimeout(() => {
        this._pending.delete(id);
        this._queue = this._queue.filter((e) => e !== entry);
        reject(new HubbubError("timeout", `no reply to ${op} within ${timeoutMs} ms`, { op }));
      }, timeoutMs);
      this._pending.set(id, entry);
      if (this.state === State.open) this._send(entry);
      else this._queue.push(entry);
    });
  }

  // ---- accounts

  /** Creates an account and logs in as it (the token is kept). */
  async signup({ username, password, email }) {
    const args = { username, password };
    if (email) args.email = email;
    return this._loggedIn(await this.request("account.signup", args));
  }

  /** Logs in with a username or email and a password (the token is kept). */
  async login(login, password) {
    return this._loggedIn(await this.request("account.login", { login, password }));
  }

  /** Logs out: the token is revoked on the server and forgotten here. */
  async logout() {
    try {
      if (this.user) await this.request("account.logout");
    } finally {
      this._forgetToken("logged out");
    }
  }

  _loggedIn(result) {
    this.storage.setItem(this.storageKey, result.token);
    this._setUser(result.user);
    return result;
  }

  _forgetToken(reason) {
    this.storage.removeItem(this.storageKey);
    if (this.user) this._setUser(null, reason);
  }

  _setUser(user, reason = null) {
    this.user = user;
    this.dispatchEvent(new CustomEvent("user", { detail: { user, reason } }));
  }

  // ---- rooms

  /**
   * Joins a room and keeps it joined across reconnects: after each reconnect the room is
   * subscribed again with `since`, so the pushes missed meanwhile arrive (or, when they cannot,
   * a fresh snapshot). Returns a `Room` at once; `room.ready` resolves with it once the first
   * reply came, or rejects with the refusal.
   * @param {string} name `venue:<id>`, `route:<id>`, `user:<id>`, `event:<id>`
   * @param {{snapshot?: Function, push?: Function, recovered?: Function, error?: Function}} handlers
   *   `snapshot(snapshot, room)`: the room's state, fresh; `push(push, room)`: each push, in seq
   *   order, none twice, none missed; `recovered(room)`: a reconnect recovered every missed push;
   *   `error(err, room)`: a re-subscribe after a reconnect was refused (the room is left).
   */
  subscribe(name, handlers = {}) {
    const existing = this._rooms.get(name);
    if (existing) existing.close();
    const room = new Room(this, name, handlers);
    this._rooms.set(name, room);
    room.ready = this._join(room).then(() => room);
    room.ready.catch(() => {}); // a caller that never awaits it is told through `error`
    return room;
  }

  /**
   * Joins a room whose first reply is another op's (`route.subscribe`: a corridor's room with a
   * filtered list): `result` must hold `room`, `seq` and `epoch`. Later reconnects subscribe with
   * `since` as for any room.
   */
  adopt(result, handlers = {}) {
    const existing = this._rooms.get(result.room);
    if (existing) existing.close();
    const room = new Room(this, result.room, handlers);
    this._rooms.set(result.room, room);
    room.seq = result.seq;
    room.epoch = result.epoch;
    room.ready = Promise.resolve(room);
    return room;
  }

  /** Subscribes `room` (with `since` once it has a state); a subscribe cut off by a dropped
   * connection is sent again on the next one. */
  async _join(room) {
    room._joining = true;
    let result;
    try {
      for (;;) {
        const args = { room: room.name };
        if (room.epoch !== null) args.since = { seq: room.seq, epoch: room.epoch };
        try {
          result = await this.request("subscribe", args);
          break;
        } catch (e) {
          if (e.code !== "disconnected" || room.closed || this.state === State.idle) throw e;
          await this._whenOpen();
        }
      }
    } finally {
      room._joining = false;
    }
    if (room.closed) return;
    room.epoch = result.epoch;
    room.seq = result.seq;
    if (result.snapshot !== undefined) {
      room.snapshot = result.snapshot;
      room.handlers.snapshot?.(result.snapshot, room);
    } else if (result.recovered) {
      room.handlers.recovered?.(room);
    }
  }

  // ---- the connection

  _whenOpen() {
    if (this.state === State.open) return Promise.resolve();
    if (!this._opened) {
      let resolve;
      const promise = new Promise((r) => { resolve = r; });
      this._opened = { promise, resolve };
    }
    return this._opened.promise;
  }

  _setState(state, extra = {}) {
    this.state = state;
    this.dispatchEvent(new CustomEvent("state", { detail: { state, ...extra } }));
  }

  _open() {
    clearTimeout(this._retryTimer);
    this._setState(State.connecting);
    let socket;
    try {
      socket = new this.WebSocket(this.url, "hubbub.v1");
    } catch (e) {
      this._scheduleReconnect(1006, String(e));
      return;
    }
    this._socket = socket;
    socket.onopen = () => this._onOpen(socket);
    socket.onmessage = (event) => { if (socket === this._socket) this._onMessage(event.data); };
    socket.onclose = (event) => { if (socket === this._socket) this._onClose(event.code, event.reason); };
    socket.onerror = () => {}; // a close follows, with its code
  }

  async _onOpen(socket) {
    if (socket !== this._socket) return;
    // Log in again with the kept token before anything else goes out.
    const token = this.token;
    if (token) {
      const entry = this._entry("auth", { token });
      this._send(entry);
      try {
        const result = await entry.promise;
        if (!this.user || this.user.id !== result.user.id) this._setUser(result.user);
      } catch (e) {
        if (socket !== this._socket) return;
        if (e.code === "unauthorized") {
          this._forgetToken(e.message); // go on, anonymous
        } else {
          socket.close(4000, "could not log in again"); // rate limited, or unavailable: try later
          return;
        }
      }
    }
    if (socket !== this._socket) return;
    this._attempt = 0;
    this._setState(State.open);
    if (this._opened) { this._opened.resolve(); this._opened = null; }
    const queued = this._queue;
    this._queue = [];
    for (const entry of queued) this._send(entry);
    for (const room of this._rooms.values()) {
      if (room._joining) continue; // its subscribe is queued above, or waits to be sent again
      this._join(room).catch((e) => {
        if (room.closed) return;
        this._rooms.delete(room.name);
        room.closed = true;
        room.handlers.error?.(e, room);
      });
    }
  }

  /** A request made internally at open time, ahead of the queue. */
  _entry(op, args) {
    const entry = { id: this._nextId++, op, args, sent: false };
    entry.promise = new Promise((resolve, reject) => { entry.resolve = resolve; entry.reject = reject; });
    entry.timer = setTimeout(() => {
      this._pending.delete(entry.id);
      entry.reject(new HubbubError("timeout", `no reply to ${op} within ${this.timeoutMs} ms`, { op }));
    }, this.timeoutMs);
    this._pending.set(entry.id, entry);
    return entry;
  }

  _send(entry) {
    entry.sent = true;
    this._socket.send(JSON.stringify({ id: entry.id, op: entry.op, args: entry.args }));
  }

  _onMessage(text) {
    let message;
    try {
      message = JSON.parse(text);
    } catch (_) {
      return; // the server sends JSON only
    }
    if (message.room !== undefined && message.id === undefined) {
      this.dispatchEvent(new CustomEvent("push", { detail: message }));
      this._rooms.get(message.room)?._push(message);
      return;
    }
    const entry = this._pending.get(message.id);
    if (!entry) return;
    this._pending.delete(message.id);
    clearTimeout(entry.timer);
    if (message.ok) {
      entry.resolve(message.result);
    } else {
      const err = message.error ?? {};
      entry.reject(new HubbubError(err.code ?? "internal", err.message ?? "request refused", { op: entry.op, retryAfterMs: err.retryAfterMs ?? null }));
    }
  }

  _onClose(code, reason) {
    this._socket = null;
    // Requests sent on the dropped connection may or may not have run: they fail. Those not sent
    // yet wait for the next connection.
    for (const [id, entry] of this._pending) {
      if (!entry.sent) continue;
      this._pending.delete(id);
      clearTimeout(entry.timer);
      entry.reject(new HubbubError("disconnected", `the connection closed (${code}${reason ? " " + reason : ""}) before ${entry.op} was answered`, { op: entry.op }));
    }
    if (code === 1008 || code === 4002) this._forgetToken(reason || "signed out by the server");
    if (this.state === State.idle) return;
    this._scheduleReconnect(code, reason);
  }

  /** The next try: soon after a graceful restart (1001 `restart`: the server asks for jitter),
   * else exponential backoff with full jitter; longer after a 4003 (too many requests). */
  _scheduleReconnect(code, reason) {
    let delay;
    if (code === 1001 && reason === "restart") {
      delay = 200 + Math.random() * 1_300;
    } else {
      const cap = Math.min(this.maxBackoffMs, this.minBackoffMs * 2 ** this._attempt);
      delay = Math.random() * cap;
      if (code === 4003) delay = Math.max(delay, 5_000);
      this._attempt++;
    }
    this._setState(State.reconnecting, { code, reason, retryInMs: Math.round(delay) });
    this._retryTimer = setTimeout(() => this._open(), delay);
  }

  _failPending(why) {
    for (const entry of this._pending.values()) {
      clearTimeout(entry.timer);
      entry.reject(new HubbubError("disconnected", `${why} before ${entry.op} was answered`, { op: entry.op }));
    }
    this._pending.clear();
    this._queue = [];
  }
}

/** A room joined with `Hubbub.subscribe`: its name, the last push applied (`seq`, `epoch`) and
 * its last snapshot. */
export class Room {
  constructor(hub, name, handlers) {
    this.hub = hub;
    this.name = name;
    this.handlers = handlers;
    this.seq = 0;
    this.epoch = null;
    this.snapshot = null;
    this.closed = false;
    this._joining = false;
  }

  _push(push) {
    if (this.closed || push.epoch !== this.epoch || push.seq <= this.seq) return; // old or already applied
    if (push.seq > this.seq + 1) {
      // A gap (never expected: the server sends every push in order): ask again from what we have.
      this.hub._join(this).catch((e) => this.handlers.error?.(e, this));
      return;
    }
    this.seq = push.seq;
    this.handlers.push?.(push, this);
  }

  /** Leaves the room (pushes stop; it is not joined again after a reconnect). */
  close() {
    if (this.closed) return;
    this.closed = true;
    if (this.hub._rooms.get(this.name) === this) this.hub._rooms.delete(this.name);
    if (this.hub.state === State.open) this.hub.request("unsubscribe", { room: this.name }).catch(() => {});
  }
}

/**
 * A venue's queue, kept from a PlaylistState and the room's pushes as protocol.md's "Applying
 * pushes to a snapshot" says: after each push, `order` equals the server's.
 */
export class VenueQueue {
  /** @param {object} playlist a PlaylistState (`snapshot.playlist`, `playlist.snapshot`'s data) */
  constructor(playlist) {
    /** Uris in queue order (the pinned, now-playing track first). */
    this.order = [];
    /** uri → votes. */
    this.votes = new Map();
    /** uri → Track (title, artist...), as the snapshot and `track.requested` gave them. */
    this.tracks = new Map();
    /** uri → requester's user id (null: the owner's, or a private requester). */
    this.requesters = new Map();
    this.nowPlaying = null;
    this.playlist = null;
    this.settings = null;
    this.replace(playlist);
  }

  replace(state) {
    this.order = [];
    this.votes = new Map();
    this.requesters = new Map();
    this.playlist = state?.playlist ?? null;
    this.nowPlaying = state?.nowPlaying ?? null;
    if (state?.settings) this.settings = state.settings;
    for (const t of state?.tracks ?? []) {
      this.order.push(t.track.uri);
      this.votes.set(t.track.uri, t.votes ?? 0);
      this.tracks.set(t.track.uri, t.track);
      this.requesters.set(t.track.uri, t.requester ?? null);
    }
  }

  /** Applies one push of the venue's room; returns whether the queue changed. */
  apply(push) {
    const d = push.data ?? {};
    switch (push.event) {
      case "playlist.snapshot":
        this.replace(d);
        return true;
      case "track.moved": {
        const i = this.order.indexOf(d.track);
        if (i >= 0) this.order.splice(i, 1);
        this.order.splice(Math.min(Math.max(d.index, 0), this.order.length), 0, d.track);
        this.votes.set(d.track, d.votes);
        return true;
      }
      case "track.requested":
        this.tracks.set(d.track.uri, d.track);
        if (!this.votes.has(d.track.uri)) {
          this.order.push(d.track.uri);
          this.votes.set(d.track.uri, 0);
          this.requesters.set(d.track.uri, d.by ?? null);
        }
        return true;
      case "playlist.reordered":
        this.order = [...d.order];
        this.votes = new Map(this.order.map((uri) => [uri, d.votes?.[uri] ?? 0]));
        return true;
      case "playlist.removed":
        this.order = [];
        this.votes = new Map();
        this.playlist = null;
        return true;
      case "nowplaying.changed":
        this.nowPlaying = d.track ?? null;
        return true;
      case "venue.updated":
        if (d.settings) this.settings = d.settings;
        return false;
      default:
        return false;
    }
  }

  /** The queue as `{uri, track, votes, requester, playing}`, in order. */
  entries() {
    return this.order.map((uri) => ({
      uri,
      track: this.tracks.get(uri) ?? { uri, title: uri, artist: "" },
      votes: this.votes.get(uri) ?? 0,
      requester: this.requesters.get(uri) ?? null,
      playing: uri === this.nowPlaying,
    }));
  }
}

/**
 * A corridor's items by id, kept from `route.subscribe`'s `items` (or a route snapshot's) and the
 * room's pushes, as protocol.md's "Pushes on route rooms" says.
 */
export class CorridorItems {
  constructor(items = []) {
    /** id → IntelItem */
    this.items = new Map(items.map((i) => [i.id, i]));
  }

  /** Applies one push of the corridor's room; returns whether the items changed. */
  apply(push) {
    const d = push.data ?? {};
    switch (push.event) {
      case "intel.added":
      case "intel.updated":
        this.items.set(d.item.id, d.item);
        return true;
      case "intel.linked": {
        let changed = false;
        for (const [a, b] of [[d.item, d.to], [d.to, d.item]]) {
          const item = this.items.get(a);
          if (item && !item.links.includes(b)) {
            this.items.set(a, { ...item, links: [...item.links, b] });
            changed = true;
          }
        }
        return changed;
      }
      case "intel.expired":
        return this.items.delete(d.item);
      default:
        return false;
    }
  }

  /** The items, newest first (`"time"`) or closest to the destination first (`"distance"`). */
  sorted(order = "time") {
    const all = [...this.items.values()];
    if (order === "distance") return all.sort((a, b) => a.distanceToDestinationMeters - b.distanceToDestinationMeters || (a.id < b.id ? -1 : 1));
    return all.sort((a, b) => b.at - a.at || (a.id < b.id ? -1 : 1));
  }
}
