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
   * @param {string} message for people; it names the field or the rule
   * @param {{op?: string, retryAfterMs?: number}} [details] the request's op; `retryAfterMs` (with
   *   `rate_limited` only): how long to wait before trying again
   */
  constructor(code, message, { op = null, retryAfterMs = null } = {}) {
    super(message);
    this.name = "HubbubError";
    this.code = code;
    this.op = op;
    this.retryAfterMs = retryAfterMs;
  }

  /**
   * The argument the message names, if it names one: where a form shows the error.
   * `missing field venue` → `venue`, `field lat must be a number` → `lat`, `track.uri is empty` →
   * `track.uri`, `tracks[2].title must be a string` → `tracks[2].title`,
   * `passwordConfirmation: the passwords don't match` → `passwordConfirmation`,
   * `username Carol is already taken` → `username`; null for `no venue vk3j9mxq2pa`.
   */
  get field() {
    const msg = this.message;
    const path = String.raw`[A-Za-z_]\w*(?:\.\w+|\[\d+\])*`; // track.uri, tracks[2].title
    let m = new RegExp(`^(?:missing field |field )(${path})`).exec(msg);
    if (m) return m[1];
    // protocol.md's quirk: a Track's missing field reads `track.missing uri`.
    m = new RegExp(`^(${path})\\.missing (\\w+)$`).exec(msg);
    if (m) return `${m[1]}.${m[2]}`;
    m = /^(username|email) \S+ is already taken$/.exec(msg);
    if (m) return m[1];
    m = new RegExp(`^(${path})(?: (?:is|must|has|may)\\b|: )`).exec(msg);
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

/** Errors of a re-subscribe worth trying again: the room is still there, the server was busy. */
const TRANSIENT = new Set(["timeout", "unavailable", "rate_limited"]);

/** Hands an exception of a page's handler to the runtime's error reporting, so that one bug in a
 * page does not stop the protocol's bookkeeping (seq, epoch, the queue of requests). */
function report(error) {
  if (typeof globalThis.reportError === "function") globalThis.reportError(error);
  else console.error(error);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * One session with a Hubbub server: requests as promises, rooms that stay subscribed across
 * reconnects, and the log-in kept across reloads.
 *
 * Events (an EventTarget): `state` (`detail: {state, retryInMs?, code?, reason?}`), `user`
 * (`detail: {user, reason}`: logged in, out, or the kept token no longer works: then `user` is null
 * and `reason` says why), `push` (`detail`: every push as it arrives, before its room's handler,
 * old and repeated ones included).
 */
export class Hubbub extends EventTarget {
  /**
   * @param {object} [options]
   * @param {string} [options.url] the `/ws` endpoint (default: the page's host, `defaultURL()`)
   * @param {number} [options.timeoutMs=10000] how long a request waits for its reply
   * @param {number} [options.minBackoffMs=250] the first reconnect delay's cap
   * @param {number} [options.maxBackoffMs=15000] the largest reconnect delay
   * @param {object} [options.storage] where the token is kept (`getItem`/`setItem`/`removeItem`;
   *   default: localStorage, else memory)
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
    /** One of `State`. */
    this.state = State.idle;
    this._socket = null;
    this._nextId = 1;
    this._pending = new Map(); // id → entry {id, op, args, sent, resolve, reject, timer, onReply}
    this._queue = []; // entries made while not open: sent once open (after the re-login)
    this._rooms = new Map(); // room name → Room
    this._attempt = 0; // reconnects since the last open connection: the backoff's exponent
    this._retryTimer = null;
    this._retryAfterMs = 0; // a refused re-login's retryAfterMs: the next try waits at least that
    this._opened = null; // {promise, resolve}: resolves when the state next becomes open
  }

  /** The kept token (null when none). */
  get token() {
    try {
      return this.storage.getItem(this.storageKey);
    } catch (_) {
      return null;
    }
  }

  /** Opens the connection (once; it then reconnects by itself until `close()`). Resolves when
   * open and, if a token was kept, logged in again with it (or found it no longer works). */
  connect() {
    if (this.state === State.idle) this._open();
    return this._whenOpen();
  }

  /** Closes the connection for good (no reconnect); pending requests fail as `disconnected`.
   * Rooms are kept: a later `connect()` joins them again, with `since`. */
  close() {
    clearTimeout(this._retryTimer);
    this._attempt = 0;
    this._retryAfterMs = 0;
    this._setState(State.idle);
    const socket = this._socket;
    this._socket = null;
    if (socket) socket.close(1000, "bye");
    this._failPending("closed by the client");
  }

  /**
   * Sends one request; resolves with its `result`, rejects with a `HubbubError`. Made while the
   * connection is down, it waits for the next connection (its timeout running); made before
   * `connect()`, it connects.
   * @param {string} op
   * @param {object} [args]
   * @param {{timeoutMs?: number}} [options]
   * @returns {Promise<object>}
   */
  request(op, args = {}, { timeoutMs = this.timeoutMs } = {}) {
    return this._call(op, args, { timeoutMs }).promise;
  }

  /**
   * A request's entry (its `promise` settles with the reply). `onReply(result)` runs as soon as a
   * success is read, before any later message is: a subscribe's room must know its seq and epoch
   * before the pushes that follow the reply, and a WebSocket may hand over several messages
   * without running promise callbacks in between. `first`: sent at once even though the state is
   * not open (the re-login, ahead of the queue).
   */
  _call(op, args, { timeoutMs = this.timeoutMs, onReply = null, first = false } = {}) {
    if (this.state === State.idle) this.connect();
    const entry = { id: this._nextId++, op, args, sent: false, onReply };
    entry.promise = new Promise((resolve, reject) => { entry.resolve = resolve; entry.reject = reject; });
    entry.timer = setTimeout(() => {
      this._drop(entry);
      entry.reject(new HubbubError("timeout", `no reply to ${op} within ${timeoutMs} ms`, { op }));
    }, timeoutMs);
    this._pending.set(entry.id, entry);
    if (first || this.state === State.open) this._send(entry);
    else this._queue.push(entry);
    return entry;
  }

  /** Forgets a request (its reply, if one comes, is ignored). */
  _drop(entry) {
    clearTimeout(entry.timer);
    this._pending.delete(entry.id);
    const i = this._queue.indexOf(entry);
    if (i >= 0) this._queue.splice(i, 1);
  }

  // ---- accounts

  /** Creates an account and logs in as it (the token is kept).
   * @param {{username: string, password: string, email?: string, passwordConfirmation?: string}} fields */
  async signup({ username, password, email, passwordConfirmation }) {
    const args = { username, password };
    if (email) args.email = email;
    if (passwordConfirmation !== undefined) args.passwordConfirmation = passwordConfirmation;
    return this._loggedIn(await this.request("account.signup", args));
  }

  /** Logs in with a username or email and a password (the token is kept). */
  async login(login, password) {
    return this._loggedIn(await this.request("account.login", { login, password }));
  }

  /** Logs out: the token is revoked on the server and forgotten here (forgotten even if the
   * server could not be told). */
  async logout() {
    try {
      if (this.user) await this.request("account.logout");
    } finally {
      this._forgetToken("logged out");
    }
  }

  _loggedIn(result) {
    try {
      this.storage.setItem(this.storageKey, result.token);
    } catch (_) { /* storage full or refused: logged in for this page only */ }
    this._setUser(result.user);
    return result;
  }

  _forgetToken(reason) {
    // A kept token that stopped working counts as a log-out even before its user was known (a
    // reload with an expired token): the page hears why it is anonymous.
    const had = this.user !== null || this.token !== null;
    try {
      this.storage.removeItem(this.storageKey);
    } catch (_) { /* nothing kept */ }
    if (had) this._setUser(null, reason);
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
   * reply came and `snapshot` ran, or rejects with the refusal (then `error` runs too). A room of
   * that name already joined is left first.
   * @param {string} name `venue:<id>`, `route:<id>`, `user:<id>`, `event:<id>`
   * @param {{snapshot?: Function, push?: Function, recovered?: Function, error?: Function}} handlers
   *   `snapshot(snapshot, room)`: the room's state, fresh (the first time, and whenever the missed
   *   pushes could not be recovered); `push(push, room)`: each push, in seq order, none twice,
   *   none missed; `recovered(room)`: a re-subscribe recovered every missed push, and they have
   *   all been given to `push`; `error(err, room)`: the subscribe was refused (the room is left).
   * @returns {Room}
   */
  subscribe(name, handlers = {}) {
    this._rooms.get(name)?.close();
    const room = new Room(this, name, handlers);
    this._rooms.set(name, room);
    room.ready = this._join(room).then(() => room, (e) => {
      this._refused(room, e);
      throw e;
    });
    room.ready.catch(() => {}); // a caller that never awaits it is told through `error`
    return room;
  }

  /**
   * Joins a room whose first reply is another op's (`route.subscribe`: a corridor's room with a
   * filtered list): `result` must hold `room`, `seq` and `epoch`. Later reconnects subscribe with
   * `since` as for any room (a snapshot then is the route snapshot: every live item, unfiltered).
   * @param {{room: string, seq: number, epoch: string}} result
   * @param {object} [handlers] as for `subscribe`
   * @returns {Room}
   */
  adopt(result, handlers = {}) {
    // No unsubscribe for a room of that name: route.subscribe has just joined the connection to
    // it (again, with another filter, say), and an unsubscribe now would take that back.
    this._rooms.get(result.room)?._leave();
    const room = new Room(this, result.room, handlers);
    this._rooms.set(result.room, room);
    room.seq = result.seq;
    room.epoch = result.epoch;
    room.ready = Promise.resolve(room);
    return room;
  }

  /** Subscribes `room` unless a subscribe of it is under way already (one at a time: a gap seen
   * while the re-subscribe is out must not send another). */
  _join(room) {
    if (!room._joining) room._joining = this._subscribeRoom(room).finally(() => { room._joining = null; });
    return room._joining;
  }

  /** `_join`, for the re-subscribes the client makes by itself: a refusal leaves the room. */
  _rejoin(room) {
    return this._join(room).catch((e) => this._refused(room, e));
  }

  /** Subscribes (with `since` once the room has a state) until a reply comes: a subscribe cut
   * off by a dropped connection is sent again on the next one; a re-subscribe that timed out or
   * found the server busy is tried again after a while. */
  async _subscribeRoom(room) {
    let wait = this.minBackoffMs;
    for (;;) {
      if (room.closed) return;
      const since = room.epoch !== null ? { seq: room.seq, epoch: room.epoch } : null;
      const args = since ? { room: room.name, since } : { room: room.name };
      room._awaitingReply = true;
      try {
        room._entry = this._call("subscribe", args, { onReply: (result) => room._joined(result, since) });
        await room._entry.promise;
        return;
      } catch (e) {
        room._awaitingReply = false;
        if (room.closed) return;
        if (this.state === State.idle) throw e; // closed by the page
        if (e.code === "disconnected") {
          await this._whenOpen();
        } else if (since && TRANSIENT.has(e.code)) {
          // A timeout has waited long enough; a busy server is given time (its retryAfterMs, or
          // a backoff).
          if (e.code !== "timeout") {
            await sleep(e.retryAfterMs ?? wait);
            wait = Math.min(wait * 2, this.maxBackoffMs);
          }
          if (this.state === State.idle) throw e;
        } else {
          throw e;
        }
      } finally {
        room._entry = null;
      }
    }
  }

  _refused(room, error) {
    if (room.closed) return;
    room._leave();
    room._handle("error", error);
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
    // Log in again with the kept token before anything else goes out: the queued requests and the
    // rooms need the user.
    const token = this.token;
    if (token) {
      try {
        const result = await this._call("auth", { token }, { first: true }).promise;
        if (socket !== this._socket) return;
        if (!this.user || this.user.id !== result.user.id) this._setUser(result.user);
      } catch (e) {
        if (socket !== this._socket) return;
        if (e.code === "unauthorized") {
          this._forgetToken(e.message); // go on, anonymous
        } else {
          // Rate limited, unavailable or no answer: keep the token and try later, on a new
          // connection, rather than go on anonymous and lose the rooms.
          this._retryAfterMs = e.retryAfterMs ?? 0;
          socket.close(4000, "could not log in again");
          return;
        }
      }
    }
    if (socket !== this._socket) return;
    this._attempt = 0;
    this._retryAfterMs = 0;
    this._setState(State.open);
    if (this._opened) { this._opened.resolve(); this._opened = null; }
    const queued = this._queue;
    this._queue = [];
    for (const entry of queued) this._send(entry);
    for (const room of this._rooms.values()) {
      // A room whose subscribe is queued (sent just above) or waits for this connection to send
      // it again is joining already.
      if (!room._joining) this._rejoin(room);
    }
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
    if (message === null || typeof message !== "object") return;
    if (message.room !== undefined && message.id === undefined) {
      this.dispatchEvent(new CustomEvent("push", { detail: message }));
      this._rooms.get(message.room)?._push(message);
      return;
    }
    const entry = this._pending.get(message.id);
    if (!entry) return; // id null (a malformed message of ours), or a request that timed out
    this._drop(entry);
    if (message.ok) {
      try {
        entry.onReply?.(message.result);
      } catch (e) {
        entry.reject(e);
        return;
      }
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
    for (const entry of [...this._pending.values()]) {
      if (!entry.sent) continue;
      this._drop(entry);
      entry.reject(new HubbubError("disconnected", `the connection closed (${code}${reason ? " " + reason : ""}) before ${entry.op} was answered`, { op: entry.op }));
    }
    if (code === 1008 || code === 4002) this._forgetToken(reason || "signed out by the server");
    if (this.state === State.idle) return;
    this._scheduleReconnect(code, reason);
  }

  /** The next try: soon after a graceful restart (1001 `restart`: the server asks for jitter),
   * else exponential backoff with full jitter; at least 5 s after a 4003 (too many requests), and
   * at least a refused re-login's `retryAfterMs`. */
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
    delay = Math.round(Math.max(delay, this._retryAfterMs));
    this._setState(State.reconnecting, { code, reason, retryInMs: delay });
    this._retryTimer = setTimeout(() => this._open(), delay);
  }

  _failPending(why) {
    const entries = [...this._pending.values()];
    this._pending.clear();
    this._queue = [];
    for (const entry of entries) {
      clearTimeout(entry.timer);
      entry.reject(new HubbubError("disconnected", `${why} before ${entry.op} was answered`, { op: entry.op }));
    }
  }
}

/** A room joined with `Hubbub.subscribe` or `Hubbub.adopt`: its name, where its pushes stand
 * (`seq`, `epoch`: the last push applied) and its last snapshot. */
export class Room {
  constructor(hub, name, handlers) {
    this.hub = hub;
    this.name = name;
    this.handlers = handlers;
    /** The seq of the last push applied (or the snapshot's). */
    this.seq = 0;
    /** The room's epoch (null until the first reply). */
    this.epoch = null;
    /** The last snapshot the server sent (null for an adopted room until it sends one). */
    this.snapshot = null;
    /** True once left (`close()`, or a refused subscribe). */
    this.closed = false;
    /** Resolves with the room once its first reply came. */
    this.ready = null;
    this._joining = null; // the subscribe under way (a promise), or null
    this._awaitingReply = false; // a subscribe is out: pushes wait for its reply
    this._entry = null; // the subscribe's request entry
    this._recoverTo = null; // a recovered re-subscribe's seq: `recovered` runs once it is reached
  }

  /** A subscribe's reply, read before any later message. */
  _joined(result, since) {
    this._awaitingReply = false;
    if (this.closed) return;
    this.epoch = result.epoch;
    if (result.snapshot !== undefined) {
      this.seq = result.seq;
      this.snapshot = result.snapshot;
      this._recoverTo = null;
      this._handle("snapshot", result.snapshot);
    } else if (since && result.recovered) {
      // The missed pushes, since.seq + 1 … result.seq, follow this reply: seq stays where it was
      // so that they are applied, and `recovered` waits for the last of them.
      this.seq = since.seq;
      this._recoverTo = result.seq;
      this._caughtUp();
    } else {
      this.seq = result.seq;
    }
  }

  _push(push) {
    // While a subscribe is out, the server sends again, after its reply, whatever follows `since`.
    if (this.closed || this._awaitingReply) return;
    if (push.epoch !== this.epoch) {
      // The room's log began a new epoch (its owner lost a change a snapshot may have shown):
      // positions in the old one mean nothing; a re-subscribe with since gets a fresh snapshot.
      this.hub._rejoin(this);
      return;
    }
    if (push.seq <= this.seq) return; // applied already
    if (push.seq > this.seq + 1) {
      // A gap (never expected: the server sends every push in order): ask again from what we
      // have; the pushes until its reply are ignored, then sent again.
      this.hub._rejoin(this);
      return;
    }
    this.seq = push.seq;
    this._handle("push", push);
    this._caughtUp();
  }

  _caughtUp() {
    if (this._recoverTo === null || this.seq < this._recoverTo) return;
    this._recoverTo = null;
    this._handle("recovered");
  }

  /** Runs a page's handler; an exception in it is reported, not allowed to stop the room. */
  _handle(name, ...args) {
    try {
      this.handlers[name]?.(...args, this);
    } catch (e) {
      report(e);
    }
  }

  /** Leaves the room (pushes stop; it is not joined again after a reconnect). */
  close() {
    if (this.closed) return;
    const queued = this._entry && !this._entry.sent;
    this._leave();
    // A subscribe still queued never goes out; one sent (or a room joined) is taken back. When
    // the connection is down the server has already forgotten the subscription.
    if (!queued && this.hub.state === State.open) this.hub.request("unsubscribe", { room: this.name }).catch(() => {});
  }

  /** Forgets the room here, without telling the server. */
  _leave() {
    this.closed = true;
    this._awaitingReply = false;
    if (this.hub._rooms.get(this.name) === this) this.hub._rooms.delete(this.name);
    const entry = this._entry;
    if (entry && !entry.sent) {
      this.hub._drop(entry);
      entry.reject(new HubbubError("disconnected", `left ${this.name} before subscribing`, { op: "subscribe" }));
    }
  }
}

/**
 * A venue's queue, kept from a PlaylistState and the room's pushes as protocol.md's "Applying
 * pushes to a snapshot" says: after each push, `order` equals the server's. The same rules as
 * the Swift client's `VenueQueue` (HubbubClient), plus the tracks' details, requesters, the
 * pinned track and the settings, for drawing.
 */
export class VenueQueue {
  /** @param {object} playlist a PlaylistState (`snapshot.playlist`, `playlist.snapshot`'s data,
   *   `venue.playlist.get`'s `playlist`) */
  constructor(playlist) {
    /** Uris in queue order (the pinned, now-playing track first). */
    this.order = [];
    /** uri → votes, for every queued uri. */
    this.votes = new Map();
    /** uri → Track (title, artist...), as the snapshots and `track.requested` gave them. */
    this.tracks = new Map();
    /** uri → requester's user id (null: the owner's, or a private requester). */
    this.requesters = new Map();
    /** The pinned uri, or null. */
    this.nowPlaying = null;
    /** `{uri, creator}`, or null when no playlist is set. */
    this.playlist = null;
    /** The venue's Settings, from the PlaylistState and `venue.updated`. */
    this.settings = null;
    this.replace(playlist);
  }

  /** Replaces everything with a PlaylistState's. */
  replace(state) {
    this.order = [];
    this.votes = new Map();
    this.requesters = new Map();
    this.playlist = state?.playlist ?? null;
    this.nowPlaying = state?.nowPlaying ?? null;
    if (state?.settings) this.settings = state.settings;
    for (const t of Array.isArray(state?.tracks) ? state.tracks : []) {
      const uri = t?.track?.uri;
      if (typeof uri !== "string") continue;
      this.order.push(uri);
      this.votes.set(uri, Number.isInteger(t.votes) ? t.votes : 0);
      this.tracks.set(uri, t.track);
      this.requesters.set(uri, t.requester ?? null);
    }
  }

  /** Applies one push of the venue's room; returns whether the queue (or the pinned track)
   * changed. A push whose data is malformed changes nothing. */
  apply(push) {
    const d = push?.data ?? {};
    switch (push?.event) {
      case "playlist.snapshot":
        this.replace(d);
        return true;
      case "track.moved": {
        if (typeof d.track !== "string" || !Number.isInteger(d.votes) || !Number.isInteger(d.index)) return false;
        const i = this.order.indexOf(d.track);
        if (i >= 0) this.order.splice(i, 1);
        this.order.splice(Math.min(Math.max(d.index, 0), this.order.length), 0, d.track);
        this.votes.set(d.track, d.votes);
        return true;
      }
      case "track.requested": {
        const uri = d.track?.uri;
        if (typeof uri !== "string") return false;
        this.tracks.set(uri, d.track);
        if (this.votes.has(uri)) return false;
        // Appended with 0 votes; the track.moved or playlist.reordered that follows places it.
        this.order.push(uri);
        this.votes.set(uri, 0);
        this.requesters.set(uri, d.by ?? null);
        return true;
      }
      case "playlist.reordered":
        if (!Array.isArray(d.order)) return false;
        this.order = d.order.filter((uri) => typeof uri === "string");
        this.votes = new Map(this.order.map((uri) => [uri, Number.isInteger(d.votes?.[uri]) ? d.votes[uri] : 0]));
        return true;
      case "playlist.removed":
        this.order = [];
        this.votes = new Map();
        this.playlist = null;
        this.nowPlaying = null;
        return true;
      case "nowplaying.changed":
        // The order changes with the playlist.reordered that follows.
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
 * A predicate for route.subscribe's `filter` object (`{kinds?, origins?, modes?, tags?}`), as
 * protocol.md's "Filter and order" says: for each list given and not empty, the item holds one of
 * its values (an item naming no mode passes every `modes` filter; tags compare lower-cased).
 */
function filterPredicate({ kinds = [], origins = [], modes = [], tags = [] } = {}) {
  const wanted = tags.map((t) => t.toLowerCase());
  return (item) =>
    (!kinds.length || kinds.includes(item.kind)) &&
    (!origins.length || origins.includes(item.origin)) &&
    (!modes.length || !item.modes?.length || item.modes.some((m) => modes.includes(m))) &&
    (!wanted.length || (item.tags ?? []).some((t) => wanted.includes(t.toLowerCase())));
}

/**
 * A corridor's items by id, kept from `route.subscribe`'s `items` (or a route snapshot's) and the
 * room's pushes, as protocol.md's "Pushes on route rooms" says.
 */
export class CorridorItems {
  /**
   * @param {object[]} [items] IntelItems (`route.subscribe`'s `items`, a route snapshot's)
   * @param {{filter?: object | ((item: object) => boolean)}} [options] the `filter` given to
   *   route.subscribe (the same object, or a predicate): applied to `intel.added`,
   *   `intel.updated` and `replace()`, since the server pushes every item of the corridor,
   *   whatever the filter
   */
  constructor(items = [], { filter = null } = {}) {
    /** The filter's predicate, or null (every item). */
    this.filter = typeof filter === "function" ? filter : filter ? filterPredicate(filter) : null;
    /** id → IntelItem */
    this.items = new Map();
    this.replace(items);
  }

  /** Replaces every item (a route snapshot's `items`, after a reconnect that could not recover). */
  replace(items = []) {
    this.items = new Map(items.filter((i) => !this.filter || this.filter(i)).map((i) => [i.id, i]));
  }

  /** Applies one push of the corridor's room; returns whether the items changed. */
  apply(push) {
    const d = push?.data ?? {};
    switch (push?.event) {
      case "intel.added":
      case "intel.updated":
        if (!d.item?.id) return false;
        if (this.filter && !this.filter(d.item)) return this.items.delete(d.item.id);
        this.items.set(d.item.id, d.item);
        return true;
      case "intel.linked": {
        // The room may hold one of the two or both; each held lists the other once, last.
        let changed = false;
        for (const [a, b] of [[d.item, d.to], [d.to, d.item]]) {
          const item = this.items.get(a);
          const links = item?.links ?? [];
          if (item && !links.includes(b)) {
            this.items.set(a, { ...item, links: [...links, b] }); // a new object: a page may hold the old one
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

  /**
   * The items in route.subscribe's orders: `"time"`, newest first (the same `at`: the greater id
   * first), or `"distance"`, closest to the destination first (the same distance: the smaller id
   * first). The server compares unrounded distances; here only the rounded metres are known, so
   * two items within a metre of each other may come the other way round.
   */
  sorted(order = "time") {
    const all = [...this.items.values()];
    const byId = (a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
    if (order === "distance") return all.sort((a, b) => a.distanceToDestinationMeters - b.distanceToDestinationMeters || byId(a, b));
    return all.sort((a, b) => b.at - a.at || byId(b, a));
  }
}
