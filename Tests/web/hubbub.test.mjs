// Unit tests of hubbub.js, the protocol's JavaScript client (docs/client.md, docs/protocol.md).
// Run: node --test Tests/web/   (Node 20, no packages). A fake WebSocket stands for the server;
// time is node:test's mock timers (setTimeout), so backoff and timeouts are checked exactly.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import {
  Hubbub, Room, VenueQueue, CorridorItems, HubbubError, State, defaultURL,
} from "../../Sources/Server/WebClient/Public/js/hubbub.js";

// ---- the fake server side

/** A fresh WebSocket class per test (its own list of sockets). The test plays the server. */
function fakeWebSocket() {
  class FakeWebSocket {
    static CONNECTING = 0;
    static OPEN = 1;
    static CLOSING = 2;
    static CLOSED = 3;
    static sockets = [];

    constructor(url, protocol) {
      this.url = url;
      this.protocol = protocol;
      this.readyState = FakeWebSocket.CONNECTING;
      this.sent = []; // the client's messages, parsed
      this.closedByClient = null;
      this.onopen = this.onmessage = this.onclose = this.onerror = null;
      FakeWebSocket.sockets.push(this);
    }

    static get last() { return FakeWebSocket.sockets.at(-1); }

    // The WebSocket API the client uses.
    send(text) {
      if (this.readyState !== FakeWebSocket.OPEN) throw new Error("send on a socket that is not open");
      this.sent.push(JSON.parse(text));
    }

    close(code = 1000, reason = "") {
      if (this.readyState >= FakeWebSocket.CLOSING) return;
      this.closedByClient = { code, reason };
      this.readyState = FakeWebSocket.CLOSING;
      // As in a browser: the close event comes later, with the code the client sent (echoed).
      setImmediate(() => this._closed(code, reason));
    }

    // The server's side.
    accept() {
      this.readyState = FakeWebSocket.OPEN;
      this.onopen?.({});
    }

    deliver(message) {
      this.onmessage?.({ data: typeof message === "string" ? message : JSON.stringify(message) });
    }

    reply(id, result = {}) { this.deliver({ id, ok: true, result }); }

    refuse(id, code, message, extra = {}) { this.deliver({ id, ok: false, error: { code, message, ...extra } }); }

    push(room, seq, epoch, event, data = {}) { this.deliver({ room, seq, epoch, event, data }); }

    /** The server closes the connection (or it drops: 1006). */
    drop(code = 1006, reason = "") {
      if (this.readyState === FakeWebSocket.CLOSED) return;
      this.onerror?.({});
      this._closed(code, reason);
    }

    _closed(code, reason) {
      this.readyState = FakeWebSocket.CLOSED;
      this.onclose?.({ code, reason, wasClean: code !== 1006 });
    }

    /** The last message the client sent with `op`. */
    lastOp(op) { return this.sent.filter((m) => m.op === op).at(-1); }

    ops() { return this.sent.map((m) => m.op); }
  }
  return FakeWebSocket;
}

function memoryStorage(initial = {}) {
  const map = new Map(Object.entries(initial));
  return {
    map,
    getItem: (k) => (map.has(k) ? map.get(k) : null),
    setItem: (k, v) => { map.set(k, String(v)); },
    removeItem: (k) => { map.delete(k); },
  };
}

/** Lets promise callbacks and setImmediate work run (real time: only setTimeout is mocked). */
const flush = async (rounds = 3) => { for (let i = 0; i < rounds; i++) await new Promise((r) => setImmediate(r)); };

const ALICE = { id: "uAb7WNMJYR7I1", username: "alice" };
const TOKEN = "v2.uAb7WNMJYR7I1.1720353600123.1722945600.b8GTIVkKHGBjtrdz.sig";

/**
 * A hub on a fake socket, setTimeout mocked. `open`: connect and accept (answering the kept
 * token's auth when there is one). Records every `state` and `user` event.
 */
async function setup(t, { token = null, open = true, random = null, ...options } = {}) {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  if (random !== null) t.mock.method(Math, "random", typeof random === "function" ? random : () => random);
  const WS = fakeWebSocket();
  const storage = memoryStorage(token ? { "hubbub.token": token } : {});
  const hub = new Hubbub({
    url: "ws://hubbub.test/ws", WebSocket: WS, storage, timeoutMs: 1000, minBackoffMs: 100, maxBackoffMs: 1600, ...options,
  });
  const states = [];
  const users = [];
  hub.addEventListener("state", (e) => states.push(e.detail));
  hub.addEventListener("user", (e) => users.push(e.detail));
  const env = { hub, WS, storage, states, users, get ws() { return WS.last; } };
  if (open) {
    const connected = hub.connect();
    WS.last.accept();
    if (token) {
      assert.equal(WS.last.sent[0].op, "auth");
      WS.last.reply(WS.last.sent[0].id, { user: ALICE });
    }
    await connected;
    await flush();
  }
  return env;
}

/** Drops the connection and lets the reconnect happen (Math.random mocked or not: waits out the cap). */
async function reconnect(t, env, { code = 1006, reason = "", auth = null } = {}) {
  const before = env.WS.sockets.length;
  env.ws.drop(code, reason);
  await flush();
  t.mock.timers.tick(env.hub.maxBackoffMs + 5_000);
  assert.equal(env.WS.sockets.length, before + 1, "a new socket after the delay");
  env.ws.accept();
  if (auth) {
    const a = env.ws.sent[0];
    assert.equal(a.op, "auth");
    env.ws.reply(a.id, { user: auth });
  }
  await flush();
  return env.ws;
}

/** The retry after a drop, due at once (Math.random mocked to 0): the new socket opens, auth is
 * sent alone first, and is answered with ALICE. */
async function retryWithAuth(t, env) {
  t.mock.timers.tick(0);
  env.ws.accept();
  await flush();
  assert.deepEqual(env.ws.ops(), ["auth"]);
  env.ws.reply(env.ws.sent[0].id, { user: ALICE });
  await flush();
}

// ---- errors

describe("HubbubError", () => {
  test("carries code, message, op and retryAfterMs, and is an Error", () => {
    const e = new HubbubError("rate_limited", "too many write requests", { op: "venue.vote", retryAfterMs: 734 });
    assert.ok(e instanceof Error);
    assert.equal(e.name, "HubbubError");
    assert.equal(e.code, "rate_limited");
    assert.equal(e.message, "too many write requests");
    assert.equal(e.op, "venue.vote");
    assert.equal(e.retryAfterMs, 734);
    const plain = new HubbubError("not_found", "no venue vk3j9mxq2pa");
    assert.equal(plain.op, null);
    assert.equal(plain.retryAfterMs, null);
  });

  test(".field names the argument a message is about", () => {
    const cases = {
      "missing field venue": "venue",
      "field lat must be a number": "lat",
      "track.uri is empty": "track.uri",
      "tracks[2].title must be a string": "tracks[2].title",
      "field q is longer than 200 characters": "q",
      "field tracks has more than 5000 items": "tracks",
      "field since.seq must not be negative": "since.seq",
      "field via[2] must be {lat, lon} with lat in -90…90 and lon in -180…180": "via[2]",
      "field room: unknown room shop:s1": "room",
      "field kinds[0]: party is not one of disruption, poi": "kinds[0]",
      "field to: an item cannot be linked to itself": "to",
      "missing field track.uri": "track.uri",
      "track.durationMs must not be negative": "track.durationMs",
      "track.uri is longer than 1024 bytes": "track.uri",
      "password must be at least 8 characters": "password",
      "username must be 3 to 32 characters": "username",
      "email is not a valid address": "email",
      "privacy.votes: unknown list (checkins, votes or requests)": "privacy.votes",
      "passwordConfirmation: the passwords don't match": "passwordConfirmation",
      "username Carol is already taken": "username",
      "email CAROL@example.com is already taken": "email",
      "track.missing uri": "track.uri", // protocol.md's quirk for a missing Track field
    };
    for (const [message, field] of Object.entries(cases)) {
      assert.equal(new HubbubError("bad_request", message).field, field, message);
    }
  });

  test(".field is null for messages about no argument", () => {
    for (const message of [
      "too many write requests", "wrong username/email or password", "no venue vk3j9mxq2pa", "token expired",
      "only an owner can reset the playlist", "the playlist is full", "you already voted for this track",
      "ik7m2qxw9dnpa and i3fzt8hcr6eyb are linked already", "could not save the change; try again",
      "played recently: this venue does not repeat a track within 2 h of playing it", "unknown op no.such.op",
    ]) {
      assert.equal(new HubbubError("conflict", message).field, null, message);
    }
  });
});

describe("defaultURL", () => {
  test("ws: for http pages, wss: for https, /ws on the page's host", () => {
    assert.equal(defaultURL({ protocol: "http:", host: "localhost:8080" }), "ws://localhost:8080/ws");
    assert.equal(defaultURL({ protocol: "https:", host: "hubbub.example" }), "wss://hubbub.example/ws");
  });

  test("without a location (not a page) it asks for a url", () => {
    assert.throws(() => defaultURL(null), HubbubError);
  });

  test("Hubbub takes the page's origin when given no url", (t) => {
    const saved = Object.getOwnPropertyDescriptor(globalThis, "location");
    Object.defineProperty(globalThis, "location", { value: { protocol: "https:", host: "pub.example" }, configurable: true });
    try {
      const hub = new Hubbub({ WebSocket: fakeWebSocket(), storage: memoryStorage() });
      assert.equal(hub.url, "wss://pub.example/ws");
    } finally {
      if (saved) Object.defineProperty(globalThis, "location", saved);
      else delete globalThis.location;
    }
  });
});

// ---- connection and requests

describe("connection", () => {
  test("opens the url with the hubbub.v1 subprotocol; state goes connecting → open", async (t) => {
    const env = await setup(t, { open: false });
    assert.equal(env.hub.state, State.idle);
    const connected = env.hub.connect();
    assert.equal(env.WS.sockets.length, 1);
    assert.equal(env.ws.url, "ws://hubbub.test/ws");
    assert.equal(env.ws.protocol, "hubbub.v1");
    assert.equal(env.hub.state, State.connecting);
    env.ws.accept();
    await connected;
    assert.equal(env.hub.state, State.open);
    assert.deepEqual(env.states.map((s) => s.state), ["connecting", "open"]);
    env.hub.connect(); // once: no second socket
    assert.equal(env.WS.sockets.length, 1);
  });

  test("state events through a drop, a reconnect and close()", async (t) => {
    const env = await setup(t, { random: 0.5 });
    env.ws.drop(1006, "");
    await flush();
    t.mock.timers.tick(1000);
    env.ws.accept();
    await flush();
    env.hub.close();
    assert.deepEqual(env.states, [
      { state: "connecting" }, { state: "open" },
      { state: "reconnecting", code: 1006, reason: "", retryInMs: 50 },
      { state: "connecting" }, { state: "open" },
      { state: "idle" },
    ]);
  });

  test("close() closes the socket with 1000, fails what is pending, and does not reconnect", async (t) => {
    const env = await setup(t);
    const pending = env.hub.request("venue.get", { venue: "v1" });
    const ws = env.ws;
    env.hub.close();
    await assert.rejects(pending, (e) => e instanceof HubbubError && e.code === "disconnected");
    assert.deepEqual(ws.closedByClient, { code: 1000, reason: "bye" });
    await flush();
    t.mock.timers.tick(60_000);
    assert.equal(env.WS.sockets.length, 1, "no reconnect after close()");
    assert.equal(env.hub.state, State.idle);
  });

  test("a WebSocket constructor that throws is retried like a drop", async (t) => {
    let fail = true;
    const WS = fakeWebSocket();
    class Flaky extends WS {
      constructor(url, protocol) {
        if (fail) { fail = false; throw new Error("blocked"); }
        super(url, protocol);
      }
    }
    const env = await setup(t, { open: false, random: 0, WebSocket: Flaky });
    const connected = env.hub.connect();
    assert.equal(env.hub.state, State.reconnecting);
    t.mock.timers.tick(0);
    assert.equal(WS.sockets.length, 1);
    WS.last.accept();
    await connected;
    assert.equal(env.hub.state, State.open);
  });
});

describe("requests", () => {
  test("replies are matched by id, whatever their order", async (t) => {
    const env = await setup(t);
    const a = env.hub.request("venue.vote", { venue: "v1", track: "t1" });
    const b = env.hub.request("venue.get", { venue: "v1" });
    const [ma, mb] = env.ws.sent;
    assert.deepEqual(ma, { id: ma.id, op: "venue.vote", args: { venue: "v1", track: "t1" } });
    assert.equal(mb.op, "venue.get");
    assert.notEqual(ma.id, mb.id);
    env.ws.reply(mb.id, { venue: { id: "v1" } });
    env.ws.reply(ma.id, { track: "t1", votes: 2 });
    assert.deepEqual(await a, { track: "t1", votes: 2 });
    assert.deepEqual(await b, { venue: { id: "v1" } });
  });

  test("ids are fresh integers", async (t) => {
    const env = await setup(t);
    for (let i = 0; i < 5; i++) env.hub.request("venue.get", { venue: "v" }).catch(() => {});
    const ids = env.ws.sent.map((m) => m.id);
    assert.equal(new Set(ids).size, 5);
    assert.ok(ids.every(Number.isInteger));
  });

  test("no reply in time → HubbubError timeout; a late reply is ignored", async (t) => {
    const env = await setup(t);
    const p = env.hub.request("venue.get", { venue: "v1" });
    const id = env.ws.sent[0].id;
    t.mock.timers.tick(999);
    let settled = false;
    p.then(() => { settled = true; }, () => { settled = true; });
    await flush();
    assert.equal(settled, false);
    t.mock.timers.tick(1);
    await assert.rejects(p, (e) => e instanceof HubbubError && e.code === "timeout" && e.op === "venue.get");
    env.ws.reply(id, {}); // too late: nothing happens
  });

  test("a request's own timeoutMs", async (t) => {
    const env = await setup(t);
    const p = env.hub.request("venue.search", { q: "x" }, { timeoutMs: 50 });
    t.mock.timers.tick(50);
    await assert.rejects(p, { code: "timeout" });
  });

  test("an error reply → HubbubError with code, message, retryAfterMs and field", async (t) => {
    const env = await setup(t);
    const vote = env.hub.request("venue.vote", { venue: "v1", track: "t1" });
    env.ws.refuse(env.ws.sent[0].id, "rate_limited", "too many write requests", { retryAfterMs: 734 });
    await assert.rejects(vote, (e) => {
      assert.ok(e instanceof HubbubError);
      assert.equal(e.code, "rate_limited");
      assert.equal(e.message, "too many write requests");
      assert.equal(e.retryAfterMs, 734);
      assert.equal(e.op, "venue.vote");
      assert.equal(e.field, null);
      return true;
    });
    const register = env.hub.request("venue.register", { name: "Bar" });
    env.ws.refuse(env.ws.sent[1].id, "bad_request", "field lat must be a number");
    await assert.rejects(register, (e) => e.code === "bad_request" && e.field === "lat" && e.retryAfterMs === null);
  });

  test("messages that are not JSON, replies to unknown ids and id:null replies are ignored", async (t) => {
    const env = await setup(t);
    const p = env.hub.request("venue.get", { venue: "v1" });
    env.ws.deliver("{not json");
    env.ws.reply(999, { stray: true });
    env.ws.deliver({ id: null, ok: false, error: { code: "bad_request", message: "message must be a JSON object" } });
    env.ws.reply(env.ws.sent[0].id, { ok: 1 });
    assert.deepEqual(await p, { ok: 1 });
  });

  test("a request made before connect() connects", async (t) => {
    const env = await setup(t, { open: false });
    const p = env.hub.request("venue.get", { venue: "v1" });
    assert.equal(env.WS.sockets.length, 1);
    assert.equal(env.ws.sent.length, 0, "queued until open");
    env.ws.accept();
    await flush();
    assert.equal(env.ws.sent[0].op, "venue.get");
    env.ws.reply(env.ws.sent[0].id, {});
    await p;
  });

  test("requests made while disconnected are queued and sent, in order, after the reconnect", async (t) => {
    const env = await setup(t, { random: 0 });
    env.ws.drop();
    await flush();
    assert.equal(env.hub.state, State.reconnecting);
    const a = env.hub.request("venue.vote", { venue: "v1", track: "a" });
    const b = env.hub.request("venue.vote", { venue: "v1", track: "b" });
    t.mock.timers.tick(0);
    const ws = env.ws;
    assert.equal(env.WS.sockets.length, 2);
    assert.equal(ws.sent.length, 0);
    ws.accept();
    await flush();
    assert.deepEqual(ws.sent.map((m) => m.args.track), ["a", "b"]);
    ws.reply(ws.sent[1].id, { n: 2 });
    ws.reply(ws.sent[0].id, { n: 1 });
    assert.deepEqual([await a, await b], [{ n: 1 }, { n: 2 }]);
  });

  test("a queued request's timeout runs while it waits", async (t) => {
    const env = await setup(t, { random: 0 });
    env.ws.drop();
    await flush();
    const p = env.hub.request("venue.get", { venue: "v1" });
    t.mock.timers.tick(1000); // the reconnect (at 0 ms) happened, but the socket never opened
    await assert.rejects(p, { code: "timeout" });
    env.ws.accept();
    await flush();
    assert.deepEqual(env.ws.sent, [], "a timed-out request is not sent later");
  });

  test("requests in flight when the connection drops fail with disconnected", async (t) => {
    const env = await setup(t, { random: 0 });
    const p = env.hub.request("venue.vote", { venue: "v1", track: "a" });
    env.ws.drop(1006);
    await assert.rejects(p, (e) => e instanceof HubbubError && e.code === "disconnected" && e.op === "venue.vote");
    t.mock.timers.tick(0);
    env.ws.accept();
    await flush();
    assert.deepEqual(env.ws.sent, [], "not sent again: it may have run");
  });
});

// ---- accounts and the kept token

describe("the kept token", () => {
  test("login keeps the token and tells the user; logout forgets both", async (t) => {
    const env = await setup(t);
    const login = env.hub.login("alice", "secret123");
    const m = env.ws.sent[0];
    assert.deepEqual(m.args, { login: "alice", password: "secret123" });
    assert.equal(m.op, "account.login");
    env.ws.reply(m.id, { user: ALICE, token: TOKEN });
    await login;
    assert.equal(env.storage.getItem("hubbub.token"), TOKEN);
    assert.equal(env.hub.token, TOKEN);
    assert.deepEqual(env.hub.user, ALICE);
    assert.deepEqual(env.users, [{ user: ALICE, reason: null }]);

    const logout = env.hub.logout();
    const out = env.ws.sent[1];
    assert.equal(out.op, "account.logout");
    env.ws.reply(out.id, {});
    await logout;
    assert.equal(env.storage.getItem("hubbub.token"), null);
    assert.equal(env.hub.user, null);
    assert.equal(env.users.at(-1).user, null);
  });

  test("signup sends the fields given and logs in", async (t) => {
    const env = await setup(t);
    const p = env.hub.signup({ username: "alice", password: "secret123", email: "alice@example.com" });
    assert.deepEqual(env.ws.sent[0].args, { username: "alice", password: "secret123", email: "alice@example.com" });
    env.ws.reply(env.ws.sent[0].id, { user: ALICE, token: TOKEN });
    await p;
    assert.equal(env.hub.token, TOKEN);
    const q = env.hub.signup({ username: "bob", password: "secret123", passwordConfirmation: "secret123" });
    assert.deepEqual(env.ws.sent[1].args, { username: "bob", password: "secret123", passwordConfirmation: "secret123" });
    env.ws.refuse(env.ws.sent[1].id, "conflict", "username bob is already taken");
    await assert.rejects(q, (e) => e.field === "username");
  });

  test("a token kept from before is sent with auth first; connect() resolves once logged in", async (t) => {
    const env = await setup(t, { token: TOKEN, open: false });
    let done = false;
    const connected = env.hub.connect().then(() => { done = true; });
    const early = env.hub.request("venue.get", { venue: "v1" });
    env.ws.accept();
    await flush();
    assert.deepEqual(env.ws.ops(), ["auth"], "nothing else before auth's reply");
    assert.deepEqual(env.ws.sent[0].args, { token: TOKEN });
    assert.equal(done, false);
    assert.equal(env.hub.state, State.connecting);
    env.ws.reply(env.ws.sent[0].id, { user: ALICE });
    await connected;
    assert.deepEqual(env.hub.user, ALICE);
    assert.deepEqual(env.users, [{ user: ALICE, reason: null }]);
    assert.deepEqual(env.ws.ops(), ["auth", "venue.get"]);
    env.ws.reply(env.ws.sent[1].id, {});
    await early;
  });

  test("on every reconnect: auth first, then the queued requests, then the rooms", async (t) => {
    const env = await setup(t, { token: TOKEN, random: 0 });
    const room = env.hub.subscribe("venue:v1");
    env.ws.reply(env.ws.sent.at(-1).id, { room: "venue:v1", seq: 0, epoch: "e1", snapshot: {} });
    await room.ready;
    env.ws.drop();
    await flush();
    const queued = env.hub.request("venue.vote", { venue: "v1", track: "t" });
    await retryWithAuth(t, env);
    assert.deepEqual(env.ws.ops(), ["auth", "venue.vote", "subscribe"]);
    assert.equal(env.users.length, 1, "the same user again: no second user event");
    env.ws.reply(env.ws.sent[1].id, {});
    await queued;
  });

  test("auth refused as unauthorized: the token is forgotten, user null with the reason, and the session goes on anonymous", async (t) => {
    const env = await setup(t, { token: TOKEN, open: false });
    const connected = env.hub.connect();
    const queued = env.hub.request("venue.get", { venue: "v1" });
    env.ws.accept();
    env.ws.refuse(env.ws.sent[0].id, "unauthorized", "token expired");
    await connected;
    assert.equal(env.hub.token, null);
    assert.equal(env.hub.user, null);
    assert.deepEqual(env.users, [{ user: null, reason: "token expired" }], "told even though no user was known yet");
    assert.deepEqual(env.ws.ops(), ["auth", "venue.get"]);
    env.ws.reply(env.ws.sent[1].id, {});
    await queued;
  });

  test("auth refused for another reason (rate limited): the token is kept, the socket closed, a later try waits retryAfterMs", async (t) => {
    const env = await setup(t, { token: TOKEN, open: false, random: 0 });
    const connected = env.hub.connect();
    env.ws.accept();
    env.ws.refuse(env.ws.sent[0].id, "rate_limited", "too many auth requests", { retryAfterMs: 1998 });
    await flush();
    assert.deepEqual(env.ws.closedByClient, { code: 4000, reason: "could not log in again" });
    assert.equal(env.hub.token, TOKEN);
    assert.equal(env.hub.state, State.reconnecting);
    assert.ok(env.states.at(-1).retryInMs >= 1998, `waits retryAfterMs (${env.states.at(-1).retryInMs})`);
    t.mock.timers.tick(1997);
    assert.equal(env.WS.sockets.length, 1);
    t.mock.timers.tick(1);
    assert.equal(env.WS.sockets.length, 2);
    env.ws.accept();
    env.ws.reply(env.ws.sent[0].id, { user: ALICE });
    await connected;
    assert.deepEqual(env.hub.user, ALICE);
  });

  for (const [code, reason] of [[1008, "token revoked (logged out)"], [1008, "account deleted"], [4002, "token expired"]]) {
    test(`close ${code} ${reason}: the token is forgotten, user null, and the next connection is anonymous`, async (t) => {
      const env = await setup(t, { token: TOKEN, random: 0 });
      assert.deepEqual(env.hub.user, ALICE);
      env.ws.drop(code, reason);
      assert.equal(env.hub.token, null);
      assert.equal(env.hub.user, null);
      assert.deepEqual(env.users.at(-1), { user: null, reason });
      await flush();
      t.mock.timers.tick(0);
      env.ws.accept();
      await flush();
      assert.equal(env.hub.state, State.open);
      assert.deepEqual(env.ws.sent, [], "no auth");
    });
  }

  test("logout forgets the token even when the server could not record it", async (t) => {
    const env = await setup(t, { token: TOKEN });
    const out = env.hub.logout();
    env.ws.refuse(env.ws.lastOp("account.logout").id, "unavailable", "could not record the log-out");
    await assert.rejects(out, { code: "unavailable" });
    assert.equal(env.hub.token, null);
    assert.equal(env.hub.user, null);
    assert.deepEqual(env.users.at(-1), { user: null, reason: "logged out" });
  });

  test("a 1008 without a reason still says why", async (t) => {
    const env = await setup(t, { token: TOKEN, random: 0 });
    env.ws.drop(1008, "");
    assert.deepEqual(env.users.at(-1), { user: null, reason: "signed out by the server" });
  });

  test("a storage that refuses to write does not break login", async (t) => {
    const env = await setup(t);
    env.storage.setItem = () => { throw new Error("QuotaExceededError"); };
    const login = env.hub.login("alice", "secret123");
    env.ws.reply(env.ws.sent[0].id, { user: ALICE, token: TOKEN });
    await login;
    assert.deepEqual(env.hub.user, ALICE);
  });

  test("the default storage key is hubbub.token, another can be given", async (t) => {
    const env = await setup(t, { storageKey: "my.token" });
    const login = env.hub.login("alice", "secret123");
    env.ws.reply(env.ws.sent[0].id, { user: ALICE, token: TOKEN });
    await login;
    assert.equal(env.storage.getItem("my.token"), TOKEN);
    assert.equal(env.storage.getItem("hubbub.token"), null);
  });
});

// ---- reconnect delays

describe("reconnect delay", () => {
  /** Drops the connection `times` times without it ever opening; returns the delays announced. */
  async function delays(t, env, times, { code = 1006, reason = "" } = {}) {
    const out = [];
    for (let i = 0; i < times; i++) {
      env.ws.drop(code, reason);
      await flush();
      const d = env.states.at(-1);
      assert.equal(d.state, State.reconnecting);
      out.push(d.retryInMs);
      t.mock.timers.tick(d.retryInMs);
    }
    return out;
  }

  test("full jitter: the cap doubles from minBackoffMs up to maxBackoffMs", async (t) => {
    const env = await setup(t, { random: 0.999999 });
    assert.deepEqual(await delays(t, env, 7), [100, 200, 400, 800, 1600, 1600, 1600]);
  });

  test("full jitter: any delay in [0, cap]", async (t) => {
    const env = await setup(t, { random: 0 });
    assert.deepEqual(await delays(t, env, 4), [0, 0, 0, 0]);
  });

  test("the new socket comes exactly after the delay", async (t) => {
    const env = await setup(t, { random: 0.5 });
    env.ws.drop();
    await flush();
    assert.equal(env.states.at(-1).retryInMs, 50);
    t.mock.timers.tick(49);
    assert.equal(env.WS.sockets.length, 1);
    t.mock.timers.tick(1);
    assert.equal(env.WS.sockets.length, 2);
  });

  test("an open connection resets the backoff", async (t) => {
    const env = await setup(t, { random: 0.999999 });
    assert.deepEqual(await delays(t, env, 3), [100, 200, 400]);
    env.ws.accept();
    await flush();
    assert.deepEqual(await delays(t, env, 2), [100, 200]);
  });

  test("close 1001 restart: 200–1500 ms, whatever the backoff", async (t) => {
    let r = 0;
    const env = await setup(t, { random: () => r });
    await delays(t, env, 4); // the backoff grew
    r = 0;
    assert.deepEqual(await delays(t, env, 1, { code: 1001, reason: "restart" }), [200]);
    r = 0.999999;
    assert.deepEqual(await delays(t, env, 1, { code: 1001, reason: "restart" }), [1500]);
    r = 0.5;
    assert.deepEqual(await delays(t, env, 1, { code: 1001, reason: "restart" }), [850]);
  });

  test("close 1001 idle timeout is an ordinary drop", async (t) => {
    const env = await setup(t, { random: 0.999999 });
    assert.deepEqual(await delays(t, env, 1, { code: 1001, reason: "idle timeout" }), [100]);
  });

  for (const r of [0, 0.5, 0.999999]) {
    test(`close 4003: at least 5 s (Math.random ${r})`, async (t) => {
      const env = await setup(t, { random: r, maxBackoffMs: 30_000 });
      const [d] = await delays(t, env, 1, { code: 4003, reason: "rate limits far exceeded" });
      assert.ok(d >= 5000, `${d} ≥ 5000`);
    });
  }

  test("the state event of a drop carries the close code and reason", async (t) => {
    const env = await setup(t, { random: 0 });
    env.ws.drop(4001, "slow consumer");
    await flush();
    assert.deepEqual(env.states.at(-1), { state: "reconnecting", code: 4001, reason: "slow consumer", retryInMs: 0 });
  });
});

// ---- rooms

const SNAP = { venue: { id: "v1" }, checkedIn: 0, playlist: { playlist: null, nowPlaying: null, tracks: [] } };

/** Subscribes to `name` and answers with a snapshot at (seq, epoch); records every handler call. */
async function joined(env, name = "venue:v1", { seq = 0, epoch = "e1", snapshot = SNAP } = {}) {
  const calls = [];
  const room = env.hub.subscribe(name, {
    snapshot: (s, r) => { assert.equal(r, room); calls.push(["snapshot", s]); },
    push: (p, r) => { assert.equal(r, room); calls.push(["push", p.seq, p.event]); },
    recovered: (r) => { assert.equal(r, room); calls.push(["recovered"]); },
    error: (e, r) => { assert.equal(r, room); calls.push(["error", e.code]); },
  });
  const m = env.ws.lastOp("subscribe");
  assert.deepEqual(m.args, { room: name });
  env.ws.reply(m.id, { room: name, seq, epoch, snapshot });
  assert.equal(await room.ready, room);
  return { room, calls };
}

describe("rooms", () => {
  test("subscribe: the snapshot handler gets the state; seq and epoch are kept", async (t) => {
    const env = await setup(t);
    const { room, calls } = await joined(env, "venue:v1", { seq: 3, epoch: "h7tq4nwe" });
    assert.ok(room instanceof Room);
    assert.equal(room.name, "venue:v1");
    assert.deepEqual(calls, [["snapshot", SNAP]]);
    assert.equal(room.seq, 3);
    assert.equal(room.epoch, "h7tq4nwe");
    assert.deepEqual(room.snapshot, SNAP);
  });

  test("pushes are applied in order; old and duplicate pushes are ignored", async (t) => {
    const env = await setup(t);
    const { room, calls } = await joined(env, "venue:v1", { seq: 1, epoch: "e1" });
    const seen = [];
    env.hub.addEventListener("push", (e) => seen.push(e.detail.seq));
    env.ws.push("venue:v1", 1, "e1", "track.moved"); // already in the snapshot
    env.ws.push("venue:v1", 2, "e1", "track.moved");
    env.ws.push("venue:v1", 2, "e1", "track.moved"); // twice
    env.ws.push("venue:v1", 3, "e1", "track.requested");
    env.ws.push("venue:v9", 4, "e1", "track.moved"); // another room
    await flush();
    assert.deepEqual(calls.slice(1), [["push", 2, "track.moved"], ["push", 3, "track.requested"]]);
    assert.equal(room.seq, 3);
    assert.deepEqual(seen, [1, 2, 2, 3, 4], "the push event sees every push");
    assert.equal(env.ws.sent.filter((m) => m.op === "subscribe").length, 1, "no re-subscribe");
  });

  test("a push of another epoch (the room's log began anew): one re-subscribe with since, then the fresh snapshot", async (t) => {
    const env = await setup(t);
    const { room, calls } = await joined(env, "venue:v1", { seq: 4, epoch: "e1" });
    env.ws.push("venue:v1", 5, "e2", "track.moved");
    env.ws.push("venue:v1", 6, "e2", "track.moved");
    await flush();
    const subs = env.ws.sent.filter((m) => m.op === "subscribe");
    assert.equal(subs.length, 2, "one re-subscribe");
    assert.deepEqual(subs[1].args, { room: "venue:v1", since: { seq: 4, epoch: "e1" } });
    const fresh = { ...SNAP, checkedIn: 9 };
    env.ws.reply(subs[1].id, { room: "venue:v1", seq: 6, epoch: "e2", recovered: false, snapshot: fresh });
    env.ws.push("venue:v1", 7, "e2", "track.moved");
    await flush();
    assert.deepEqual(calls.slice(1), [["snapshot", fresh], ["push", 7, "track.moved"]], "no push of the new epoch before its snapshot");
    assert.equal(room.epoch, "e2");
    assert.equal(room.seq, 7);
  });

  test("after a reconnect: subscribe with since, recovered, the missed pushes applied once, in order", async (t) => {
    const env = await setup(t, { token: TOKEN, random: 0 });
    const { room, calls } = await joined(env, "venue:v1", { seq: 0, epoch: "e1" });
    env.ws.push("venue:v1", 1, "e1", "track.moved");
    env.ws.push("venue:v1", 2, "e1", "track.moved");
    const ws = await reconnect(t, env, { auth: ALICE });
    const sub = ws.lastOp("subscribe");
    assert.deepEqual(ws.ops(), ["auth", "subscribe"]);
    assert.deepEqual(sub.args, { room: "venue:v1", since: { seq: 2, epoch: "e1" } });
    // As the server sends them: the reply, then the missed pushes at once (same tick), then live ones.
    ws.reply(sub.id, { room: "venue:v1", seq: 5, epoch: "e1", recovered: true });
    ws.push("venue:v1", 3, "e1", "track.moved");
    ws.push("venue:v1", 4, "e1", "track.requested");
    ws.push("venue:v1", 5, "e1", "track.moved");
    ws.push("venue:v1", 5, "e1", "track.moved");
    ws.push("venue:v1", 6, "e1", "presence.changed");
    await flush();
    assert.deepEqual(calls, [
      ["snapshot", SNAP],
      ["push", 1, "track.moved"], ["push", 2, "track.moved"],
      ["push", 3, "track.moved"], ["push", 4, "track.requested"], ["push", 5, "track.moved"],
      ["recovered"],
      ["push", 6, "presence.changed"],
    ]);
    assert.equal(room.seq, 6);
  });

  test("recovered with the pushes arriving a tick after the reply", async (t) => {
    const env = await setup(t, { random: 0 });
    const { room, calls } = await joined(env, "venue:v1", { seq: 4, epoch: "e1" });
    const ws = await reconnect(t, env);
    ws.reply(ws.lastOp("subscribe").id, { room: "venue:v1", seq: 6, epoch: "e1", recovered: true });
    await flush();
    ws.push("venue:v1", 5, "e1", "track.moved");
    await flush();
    ws.push("venue:v1", 6, "e1", "track.moved");
    await flush();
    assert.deepEqual(calls.slice(1), [["push", 5, "track.moved"], ["push", 6, "track.moved"], ["recovered"]]);
    assert.equal(room.seq, 6);
  });

  test("recovered with nothing missed: the recovered handler at once", async (t) => {
    const env = await setup(t, { random: 0 });
    const { calls } = await joined(env, "venue:v1", { seq: 4, epoch: "e1" });
    const ws = await reconnect(t, env);
    ws.reply(ws.lastOp("subscribe").id, { room: "venue:v1", seq: 4, epoch: "e1", recovered: true });
    await flush();
    assert.deepEqual(calls.slice(1), [["recovered"]]);
  });

  test("not recovered: the snapshot handler gets the fresh snapshot and the new epoch's pushes follow", async (t) => {
    const env = await setup(t, { random: 0 });
    const { room, calls } = await joined(env, "venue:v1", { seq: 7, epoch: "e1" });
    const ws = await reconnect(t, env);
    assert.deepEqual(ws.lastOp("subscribe").args.since, { seq: 7, epoch: "e1" });
    const fresh = { ...SNAP, checkedIn: 4 };
    ws.reply(ws.lastOp("subscribe").id, { room: "venue:v1", seq: 0, epoch: "p4xw9c2m", recovered: false, snapshot: fresh });
    ws.push("venue:v1", 1, "p4xw9c2m", "track.moved");
    ws.push("venue:v1", 2, "p4xw9c2m", "track.moved");
    await flush();
    assert.deepEqual(calls.slice(1), [["snapshot", fresh], ["push", 1, "track.moved"], ["push", 2, "track.moved"]]);
    assert.equal(room.epoch, "p4xw9c2m");
    assert.equal(room.seq, 2);
    assert.deepEqual(room.snapshot, fresh);
  });

  test("a gap: one re-subscribe with since; pushes meanwhile wait for the pushes the server sends again", async (t) => {
    const env = await setup(t);
    const { room, calls } = await joined(env, "venue:v1", { seq: 1, epoch: "e1" });
    env.ws.push("venue:v1", 2, "e1", "track.moved");
    env.ws.push("venue:v1", 4, "e1", "track.moved"); // 3 is missing
    env.ws.push("venue:v1", 5, "e1", "track.moved");
    await flush();
    const subs = env.ws.sent.filter((m) => m.op === "subscribe");
    assert.equal(subs.length, 2, "one re-subscribe, not one per push");
    assert.deepEqual(subs[1].args, { room: "venue:v1", since: { seq: 2, epoch: "e1" } });
    env.ws.push("venue:v1", 6, "e1", "track.moved"); // live, before the reply
    env.ws.reply(subs[1].id, { room: "venue:v1", seq: 6, epoch: "e1", recovered: true });
    for (const seq of [3, 4, 5, 6, 7]) env.ws.push("venue:v1", seq, "e1", "track.moved");
    await flush();
    assert.deepEqual(calls.slice(1).map((c) => c[1] ?? c[0]), [2, 3, 4, 5, 6, "recovered", 7]);
    assert.equal(room.seq, 7);
  });

  test("a subscribe made while disconnected is sent once the connection (and auth) is back", async (t) => {
    const env = await setup(t, { token: TOKEN, random: 0 });
    env.ws.drop();
    await flush();
    const room = env.hub.subscribe("venue:v1");
    await retryWithAuth(t, env);
    assert.deepEqual(env.ws.ops(), ["auth", "subscribe"]);
    assert.deepEqual(env.ws.sent[1].args, { room: "venue:v1" });
    env.ws.reply(env.ws.sent[1].id, { room: "venue:v1", seq: 0, epoch: "e1", snapshot: SNAP });
    assert.equal(await room.ready, room);
  });

  test("a subscribe cut off by a drop is sent again on the next connection; ready resolves then", async (t) => {
    const env = await setup(t, { random: 0 });
    let ready = false;
    const snaps = [];
    const room = env.hub.subscribe("venue:v1", { snapshot: (s) => snaps.push(s) });
    room.ready.then(() => { ready = true; });
    assert.equal(env.ws.lastOp("subscribe").args.room, "venue:v1");
    const ws = await reconnect(t, env);
    assert.equal(ready, false);
    const again = ws.sent.filter((m) => m.op === "subscribe");
    assert.equal(again.length, 1, "sent once on the new connection");
    assert.deepEqual(again[0].args, { room: "venue:v1" }, "no since: it never had a state");
    ws.reply(again[0].id, { room: "venue:v1", seq: 2, epoch: "e1", snapshot: SNAP });
    assert.equal(await room.ready, room);
    assert.deepEqual(snaps, [SNAP]);
    assert.equal(room.seq, 2);
  });

  test("room.close() sends unsubscribe; the room is not joined again after a reconnect", async (t) => {
    const env = await setup(t, { random: 0 });
    const { room, calls } = await joined(env, "venue:v1", { seq: 0, epoch: "e1" });
    room.close();
    assert.equal(room.closed, true);
    assert.deepEqual(env.ws.sent.at(-1).args, { room: "venue:v1" });
    assert.equal(env.ws.sent.at(-1).op, "unsubscribe");
    env.ws.push("venue:v1", 1, "e1", "track.moved");
    const ws = await reconnect(t, env);
    assert.deepEqual(ws.sent, []);
    assert.deepEqual(calls, [["snapshot", SNAP]]);
    room.close(); // twice: nothing more
    assert.deepEqual(ws.sent, []);
  });

  test("room.close() while its subscribe is still queued: the subscribe is never sent", async (t) => {
    const env = await setup(t, { random: 0 });
    env.ws.drop();
    await flush();
    const room = env.hub.subscribe("venue:v1");
    room.close();
    t.mock.timers.tick(0);
    env.ws.accept();
    await flush();
    assert.deepEqual(env.ws.sent, [], "neither subscribe nor unsubscribe");
    await room.ready; // settles
  });

  test("a refused subscribe: ready rejects, the error handler is told, and it is not retried", async (t) => {
    const env = await setup(t, { random: 0 });
    const errors = [];
    const room = env.hub.subscribe("venue:nope", { error: (e) => errors.push(e.code) });
    env.ws.refuse(env.ws.lastOp("subscribe").id, "not_found", "no venue nope");
    await assert.rejects(room.ready, (e) => e instanceof HubbubError && e.code === "not_found");
    assert.deepEqual(errors, ["not_found"]);
    assert.equal(room.closed, true);
    const ws = await reconnect(t, env);
    assert.deepEqual(ws.sent, [], "a refused room is not joined again");
  });

  test("a re-subscribe refused after a reconnect: the error handler, and the room is left", async (t) => {
    const env = await setup(t, { random: 0 });
    const { room, calls } = await joined(env, "venue:v1", { seq: 0, epoch: "e1" });
    let ws = await reconnect(t, env);
    ws.refuse(ws.lastOp("subscribe").id, "not_found", "no venue v1");
    await flush();
    assert.deepEqual(calls.at(-1), ["error", "not_found"]);
    assert.equal(room.closed, true);
    ws = await reconnect(t, env);
    assert.deepEqual(ws.sent, []);
  });

  test("a re-subscribe that timed out or was unavailable is tried again", async (t) => {
    const env = await setup(t, { random: 0 });
    const { room, calls } = await joined(env, "venue:v1", { seq: 3, epoch: "e1" });
    const ws = await reconnect(t, env);
    t.mock.timers.tick(1000); // the subscribe's timeout
    await flush();
    let subs = ws.sent.filter((m) => m.op === "subscribe");
    assert.equal(subs.length, 2, "tried again after the timeout");
    ws.refuse(subs[1].id, "unavailable", "could not read your stream; try again");
    await flush();
    t.mock.timers.tick(1600);
    await flush();
    subs = ws.sent.filter((m) => m.op === "subscribe");
    assert.equal(subs.length, 3, "tried again after unavailable");
    assert.deepEqual(subs[2].args.since, { seq: 3, epoch: "e1" });
    ws.reply(subs[2].id, { room: "venue:v1", seq: 3, epoch: "e1", recovered: true });
    await flush();
    assert.deepEqual(calls.slice(1), [["recovered"]]);
    assert.equal(room.closed, false);
  });

  test("subscribing again to the same name replaces the room", async (t) => {
    const env = await setup(t);
    const first = await joined(env, "venue:v1", { seq: 0, epoch: "e1" });
    const second = env.hub.subscribe("venue:v1");
    assert.equal(first.room.closed, true);
    assert.deepEqual(env.ws.ops().slice(-2), ["unsubscribe", "subscribe"]);
    env.ws.reply(env.ws.lastOp("subscribe").id, { room: "venue:v1", seq: 0, epoch: "e1", snapshot: SNAP });
    await second.ready;
    env.ws.push("venue:v1", 1, "e1", "track.moved");
    assert.equal(second.seq, 1);
    assert.deepEqual(first.calls, [["snapshot", SNAP]]);
  });

  test("a handler that throws does not stop the room", async (t) => {
    const env = await setup(t);
    const reported = [];
    t.mock.method(console, "error", (e) => reported.push(e));
    const saved = globalThis.reportError;
    globalThis.reportError = undefined;
    t.after(() => { globalThis.reportError = saved; });
    const room = env.hub.subscribe("venue:v1", { snapshot: () => { throw new Error("page bug"); }, push: () => { throw new Error("page bug 2"); } });
    env.ws.reply(env.ws.lastOp("subscribe").id, { room: "venue:v1", seq: 0, epoch: "e1", snapshot: SNAP });
    await room.ready;
    env.ws.push("venue:v1", 1, "e1", "track.moved");
    env.ws.push("venue:v1", 2, "e1", "track.moved");
    assert.equal(room.seq, 2);
    assert.equal(reported.length, 3);
    assert.equal(room.closed, false);
  });

  test("pushes of a room before its first reply are ignored", async (t) => {
    const env = await setup(t);
    const got = [];
    const room = env.hub.subscribe("venue:v1", { push: (p) => got.push(p.seq) });
    env.ws.push("venue:v1", 1, "e1", "track.moved");
    env.ws.reply(env.ws.lastOp("subscribe").id, { room: "venue:v1", seq: 1, epoch: "e1", snapshot: SNAP });
    env.ws.push("venue:v1", 1, "e1", "track.moved");
    env.ws.push("venue:v1", 2, "e1", "track.moved");
    await room.ready;
    assert.deepEqual(got, [2]);
  });

  test("close() of the hub while a first subscribe is out: ready rejects as disconnected, the room is left", async (t) => {
    const env = await setup(t);
    const errors = [];
    const room = env.hub.subscribe("venue:v1", { error: (e) => errors.push(e.code) });
    env.hub.close();
    await assert.rejects(room.ready, { code: "disconnected" });
    assert.deepEqual(errors, ["disconnected"]);
    assert.equal(room.closed, true);
  });

  test("close() of the hub with rooms: connect() again joins them with since", async (t) => {
    const env = await setup(t);
    await joined(env, "venue:v1", { seq: 2, epoch: "e1" });
    env.hub.close();
    env.hub.connect();
    env.ws.accept();
    await flush();
    assert.deepEqual(env.ws.lastOp("subscribe").args, { room: "venue:v1", since: { seq: 2, epoch: "e1" } });
  });
});

describe("adopt (route.subscribe's room)", () => {
  const RESULT = {
    room: "route:7xKlwqNWyDjkWPWv", seq: 4, epoch: "m3q8xk2d",
    corridor: { from: { lat: 41.017, lon: 28.97 }, to: { lat: 41.0245, lon: 28.977 }, via: [], widthMeters: 300, recorded: false },
    items: [],
  };

  test("the room continues from the reply's seq; after a reconnect it subscribes with since", async (t) => {
    const env = await setup(t, { random: 0 });
    const pushes = [];
    const snaps = [];
    const sub = env.hub.request("route.subscribe", { from: RESULT.corridor.from, to: RESULT.corridor.to });
    env.ws.reply(env.ws.sent[0].id, RESULT);
    const room = env.hub.adopt(await sub, { push: (p) => pushes.push(p.seq), snapshot: (s) => snaps.push(s) });
    assert.equal(await room.ready, room);
    assert.equal(room.name, RESULT.room);
    assert.equal(room.seq, 4);
    assert.equal(room.epoch, "m3q8xk2d");
    env.ws.push(RESULT.room, 4, "m3q8xk2d", "intel.added");
    env.ws.push(RESULT.room, 5, "m3q8xk2d", "intel.added");
    assert.deepEqual(pushes, [5]);
    const ws = await reconnect(t, env);
    assert.deepEqual(ws.lastOp("subscribe").args, { room: RESULT.room, since: { seq: 5, epoch: "m3q8xk2d" } });
    const snapshot = { corridor: RESULT.corridor, items: [] };
    ws.reply(ws.lastOp("subscribe").id, { room: RESULT.room, seq: 0, epoch: "q9dx4kvn", recovered: false, snapshot });
    await flush();
    assert.deepEqual(snaps, [snapshot]);
  });

  test("adopting the room route.subscribe just joined again (a new filter) sends no unsubscribe", async (t) => {
    const env = await setup(t);
    const first = env.hub.adopt(RESULT);
    const again = env.hub.adopt({ ...RESULT, seq: 6 });
    assert.equal(first.closed, true);
    assert.equal(again.closed, false);
    assert.deepEqual(env.ws.sent, [], "the connection stays in the room");
    env.ws.push(RESULT.room, 7, "m3q8xk2d", "intel.added");
    assert.equal(again.seq, 7);
  });
});

// ---- VenueQueue

const track = (n, extra = {}) => ({ uri: `spotify:track:${n}`, title: `Song ${n}`, artist: "Band", explicit: false, durationMs: null, coverUrl: null, ...extra });
const state = (entries, more = {}) => ({
  playlist: { uri: "spotify:playlist:1", creator: "dj" },
  nowPlaying: null,
  tracks: entries.map(([n, votes, requester = null]) => ({ track: track(n), votes, requester })),
  settings: { explicitAllowed: true, votesPerUserPerHour: 60, requestsPerUserPerHour: 10, noRepeatHours: 0, fairMode: false, fairModeMaxPendingPerUser: 2 },
  ...more,
});
const T = (n) => `spotify:track:${n}`;
const votesOf = (q) => Object.fromEntries(q.votes);
const push = (event, data, seq = 1) => ({ room: "venue:v1", seq, epoch: "e1", event, data });

describe("VenueQueue", () => {
  test("from a PlaylistState: order, votes, tracks, requesters, now playing, settings", () => {
    const q = new VenueQueue(state([[3, 2], [7, 1, "uTs2c1wbO_NqS"], [1, 0], [2, 0]], { nowPlaying: T(3) }));
    assert.deepEqual(q.order, [T(3), T(7), T(1), T(2)]);
    assert.deepEqual(votesOf(q), { [T(3)]: 2, [T(7)]: 1, [T(1)]: 0, [T(2)]: 0 });
    assert.equal(q.nowPlaying, T(3));
    assert.deepEqual(q.playlist, { uri: "spotify:playlist:1", creator: "dj" });
    assert.equal(q.settings.votesPerUserPerHour, 60);
    assert.deepEqual(q.entries()[1], { uri: T(7), track: track(7), votes: 1, requester: "uTs2c1wbO_NqS", playing: false });
    assert.equal(q.entries()[0].playing, true);
  });

  test("an empty or missing PlaylistState", () => {
    for (const s of [null, undefined, {}, { playlist: null, nowPlaying: null, tracks: [] }]) {
      const q = new VenueQueue(s);
      assert.deepEqual(q.order, []);
      assert.equal(q.votes.size, 0);
      assert.equal(q.playlist, null);
    }
  });

  test("three guests vote (the Swift client's UC8 vector): 3 ← 2 votes, 2 ← 1 vote", () => {
    const q = new VenueQueue(state([[1, 0], [2, 0], [3, 0]]));
    assert.equal(q.apply(push("track.moved", { track: T(3), votes: 1, index: 0, cause: { action: "vote", by: "uA" } })), true);
    q.apply(push("track.moved", { track: T(3), votes: 2, index: 0, cause: { action: "vote", by: "uB" } }));
    q.apply(push("track.moved", { track: T(2), votes: 1, index: 1, cause: { action: "vote", by: "uC" } }));
    assert.deepEqual(q.order, [T(3), T(2), T(1)]);
    assert.deepEqual(votesOf(q), { [T(1)]: 0, [T(2)]: 1, [T(3)]: 2 });
  });

  test("track.moved: remove, insert at index (clamped to the list), set the votes", () => {
    const q = new VenueQueue(state([[1, 3], [2, 2], [3, 1], [4, 0]]));
    q.apply(push("track.moved", { track: T(1), votes: 0, index: 3 }));
    assert.deepEqual(q.order, [T(2), T(3), T(4), T(1)]);
    q.apply(push("track.moved", { track: T(4), votes: 9, index: 99 }));
    assert.deepEqual(q.order, [T(2), T(3), T(1), T(4)], "clamped to the end");
    q.apply(push("track.moved", { track: T(1), votes: 12, index: -4 }));
    assert.deepEqual(q.order, [T(1), T(2), T(3), T(4)], "clamped to 0");
    assert.equal(q.votes.get(T(1)), 12);
    q.apply(push("track.moved", { track: T(2), votes: 2, index: 1 }));
    assert.deepEqual(q.order, [T(1), T(2), T(3), T(4)], "in place");
  });

  test("track.moved of a uri not in the list inserts it", () => {
    const q = new VenueQueue(state([[1, 0], [2, 0]]));
    q.apply(push("track.moved", { track: T(9), votes: 1, index: 1 }));
    assert.deepEqual(q.order, [T(1), T(9), T(2)]);
    assert.equal(q.votes.get(T(9)), 1);
  });

  test("a malformed track.moved (no index, votes or track) leaves the queue as it is, as in Swift", () => {
    const q = new VenueQueue(state([[1, 0], [2, 0]]));
    for (const data of [{ track: T(2), votes: 1 }, { track: T(2), index: 0 }, { votes: 1, index: 0 }, { track: T(2), votes: 1, index: "0" }]) {
      assert.equal(q.apply(push("track.moved", data)), false, JSON.stringify(data));
      assert.deepEqual(q.order, [T(1), T(2)]);
      assert.equal(q.votes.get(T(2)), 0);
    }
  });

  test("track.requested appends with 0 votes, then track.moved places it", () => {
    const q = new VenueQueue(state([[1, 2], [2, 1], [3, 0]]));
    assert.equal(q.apply(push("track.requested", { track: track(9), by: "uTs2c1wbO_NqS" })), true);
    assert.deepEqual(q.order, [T(1), T(2), T(3), T(9)]);
    assert.equal(q.votes.get(T(9)), 0);
    q.apply(push("track.moved", { track: T(9), votes: 1, index: 2, cause: { action: "request", by: "uTs2c1wbO_NqS" } }));
    assert.deepEqual(q.order, [T(1), T(2), T(9), T(3)]);
    assert.equal(q.votes.get(T(9)), 1);
    const e = q.entries()[2];
    assert.deepEqual(e.track, track(9));
    assert.equal(e.requester, "uTs2c1wbO_NqS");
  });

  test("track.requested of a uri already queued does not append it twice or reset its votes", () => {
    const q = new VenueQueue(state([[1, 2], [2, 1]]));
    q.apply(push("track.requested", { track: track(2), by: null }));
    assert.deepEqual(q.order, [T(1), T(2)]);
    assert.equal(q.votes.get(T(2)), 1);
  });

  test("playlist.reordered replaces order and votes; a uri missing from votes has 0", () => {
    const q = new VenueQueue(state([[1, 2], [2, 1], [3, 0]]));
    q.apply(push("playlist.reordered", { order: [T(3), T(1), T(2), T(4)], votes: { [T(3)]: 5, [T(1)]: 2 } }));
    assert.deepEqual(q.order, [T(3), T(1), T(2), T(4)]);
    assert.deepEqual(votesOf(q), { [T(3)]: 5, [T(1)]: 2, [T(2)]: 0, [T(4)]: 0 });
    q.apply(push("playlist.reordered", { order: [T(1)], votes: {} }));
    assert.deepEqual(votesOf(q), { [T(1)]: 0 }, "uris no longer queued are gone");
  });

  test("votes.cleared then playlist.reordered (clearVotes)", () => {
    const q = new VenueQueue(state([[1, 2], [2, 1], [3, 0]]));
    assert.equal(q.apply(push("votes.cleared", {})), false);
    assert.deepEqual(votesOf(q), { [T(1)]: 2, [T(2)]: 1, [T(3)]: 0 }, "votes.cleared alone changes nothing");
    q.apply(push("playlist.reordered", { order: [T(1), T(2), T(3)], votes: { [T(1)]: 0, [T(2)]: 0, [T(3)]: 0 } }));
    assert.deepEqual(votesOf(q), { [T(1)]: 0, [T(2)]: 0, [T(3)]: 0 });
  });

  test("playlist.snapshot replaces everything", () => {
    const q = new VenueQueue(state([[1, 2], [2, 1]]));
    q.apply(push("playlist.snapshot", state([[5, 0], [6, 0]], { playlist: { uri: "spotify:playlist:2", creator: "dj2" } })));
    assert.deepEqual(q.order, [T(5), T(6)]);
    assert.deepEqual(votesOf(q), { [T(5)]: 0, [T(6)]: 0 });
    assert.equal(q.playlist.uri, "spotify:playlist:2");
  });

  test("playlist.removed empties the list", () => {
    const q = new VenueQueue(state([[1, 2], [2, 1]], { nowPlaying: T(1) }));
    assert.equal(q.apply(push("playlist.removed", { venue: "v1" })), true);
    assert.deepEqual(q.order, []);
    assert.equal(q.votes.size, 0);
    assert.equal(q.playlist, null);
    assert.equal(q.nowPlaying, null);
    assert.deepEqual(q.entries(), []);
  });

  test("nowplaying.changed pins the track; the playlist.reordered that follows moves it first", () => {
    const q = new VenueQueue(state([[1, 2], [2, 1], [3, 0]]));
    q.apply(push("nowplaying.changed", { track: T(3) }));
    assert.equal(q.nowPlaying, T(3));
    assert.deepEqual(q.order, [T(1), T(2), T(3)], "the order waits for playlist.reordered");
    q.apply(push("playlist.reordered", { order: [T(3), T(1), T(2)], votes: { [T(3)]: 0, [T(1)]: 2, [T(2)]: 1 } }));
    assert.deepEqual(q.entries().map((e) => [e.uri, e.playing]), [[T(3), true], [T(1), false], [T(2), false]]);
    q.apply(push("nowplaying.changed", { track: null }));
    assert.equal(q.nowPlaying, null);
  });

  test("venue.updated keeps the settings; other events leave the queue", () => {
    const q = new VenueQueue(state([[1, 0]]));
    const settings = { ...q.settings, fairMode: true };
    assert.equal(q.apply(push("venue.updated", { venue: { id: "v1" }, settings })), false);
    assert.equal(q.settings.fairMode, true);
    for (const event of ["presence.changed", "venue.removed", "venue.updated", "something.new"]) {
      assert.equal(q.apply(push(event, { checkedIn: 3 })), false, event);
    }
    assert.deepEqual(q.order, [T(1)]);
  });

  test("a requester kept private (null) stays null", () => {
    const q = new VenueQueue(state([]));
    q.apply(push("track.requested", { track: track(4), by: null }));
    assert.equal(q.entries()[0].requester, null);
  });

  test("a long random run of pushes keeps the list equal to the server's", () => {
    // A model server: moves tracks, appends requests, reorders, resets; each change is sent as
    // the push protocol.md says. The client's list must equal the model's after every push.
    let seed = 42;
    const rand = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
    let truth = [[1, 0], [2, 0], [3, 0], [4, 0], [5, 0]].map(([n, v]) => ({ uri: T(n), votes: v }));
    const q = new VenueQueue(state(truth.map((e) => [Number(e.uri.split(":")[2]), e.votes])));
    let next = 6;
    for (let step = 0; step < 500; step++) {
      const r = rand(100);
      const pushes = [];
      if (r < 55 && truth.length) {
        const from = rand(truth.length);
        const [e] = truth.splice(from, 1);
        e.votes = Math.max(0, e.votes + (rand(3) - 1));
        const to = rand(truth.length + 1);
        truth.splice(to, 0, e);
        pushes.push(["track.moved", { track: e.uri, votes: e.votes, index: to, cause: { action: "vote", by: null } }]);
      } else if (r < 80) {
        const n = next++;
        const e = { uri: T(n), votes: 1 };
        const to = rand(truth.length + 1);
        truth.splice(to, 0, e);
        pushes.push(["track.requested", { track: track(n), by: null }]);
        pushes.push(["track.moved", { track: e.uri, votes: 1, index: to, cause: { action: "request", by: null } }]);
      } else if (r < 93) {
        truth = truth.filter(() => rand(10) > 0).sort(() => rand(3) - 1);
        const votes = {};
        for (const e of truth) if (e.votes > 0) votes[e.uri] = e.votes; // omitted: 0
        pushes.push(["playlist.reordered", { order: truth.map((e) => e.uri), votes }]);
        for (const e of truth) if (!votes[e.uri]) e.votes = 0;
      } else {
        truth = truth.slice(0, rand(6) + 1).map((e) => ({ uri: e.uri, votes: 0 }));
        pushes.push(["playlist.snapshot", state(truth.map((e) => [Number(e.uri.split(":")[2]), 0]))]);
      }
      for (const [event, data] of pushes) q.apply(push(event, data));
      assert.deepEqual(q.order, truth.map((e) => e.uri), `step ${step}`);
      assert.deepEqual(votesOf(q), Object.fromEntries(truth.map((e) => [e.uri, e.votes])), `step ${step}`);
    }
  });
});

// ---- CorridorItems

const item = (id, { at = 1720357800, d = 500, links = [], likes = 0 } = {}) => ({
  id, lat: 41.02, lon: 28.97, kind: "poi", origin: "traveler", tags: [], modes: [], body: id, at, expiresAt: at + 43200,
  likes, comments: 0, links, by: { user: "uAb7WNMJYR7I1", alias: "alice" }, distanceToDestinationMeters: d,
});
const rpush = (event, data) => ({ room: "route:r1", seq: 1, epoch: "m3q8xk2d", event, data });
const ids = (list) => list.map((i) => i.id);

describe("CorridorItems", () => {
  test("intel.added inserts, or replaces an item already there", () => {
    const c = new CorridorItems([item("i1")]);
    assert.equal(c.apply(rpush("intel.added", { item: item("i2") })), true);
    assert.equal(c.apply(rpush("intel.added", { item: item("i1", { likes: 3 }) })), true);
    assert.equal(c.items.size, 2);
    assert.equal(c.items.get("i1").likes, 3);
  });

  test("intel.updated replaces the item, or inserts it if missing", () => {
    const c = new CorridorItems([item("i1")]);
    c.apply(rpush("intel.updated", { item: item("i1", { likes: 1 }) }));
    c.apply(rpush("intel.updated", { item: item("i3") }));
    assert.equal(c.items.get("i1").likes, 1);
    assert.deepEqual([...c.items.keys()].sort(), ["i1", "i3"]);
  });

  test("intel.linked with both items held: each lists the other, once", () => {
    const c = new CorridorItems([item("ik7"), item("i3f")]);
    assert.equal(c.apply(rpush("intel.linked", { item: "ik7", to: "i3f" })), true);
    assert.deepEqual(c.items.get("ik7").links, ["i3f"]);
    assert.deepEqual(c.items.get("i3f").links, ["ik7"]);
    assert.equal(c.apply(rpush("intel.linked", { item: "ik7", to: "i3f" })), false, "no duplicate link");
    assert.equal(c.apply(rpush("intel.linked", { item: "i3f", to: "ik7" })), false, "either way round");
    assert.deepEqual(c.items.get("ik7").links, ["i3f"]);
  });

  test("intel.linked with one item held: only that one changes; none held: nothing", () => {
    const c = new CorridorItems([item("ik7", { links: ["iold"] })]);
    assert.equal(c.apply(rpush("intel.linked", { item: "ixx", to: "ik7" })), true);
    assert.deepEqual(c.items.get("ik7").links, ["iold", "ixx"], "appended last");
    assert.equal(c.items.has("ixx"), false);
    assert.equal(c.apply(rpush("intel.linked", { item: "ia", to: "ib" })), false);
  });

  test("intel.linked does not change the item object a page may hold", () => {
    const before = item("ik7");
    const c = new CorridorItems([before, item("i3f")]);
    c.apply(rpush("intel.linked", { item: "ik7", to: "i3f" }));
    assert.deepEqual(before.links, []);
  });

  test("intel.expired removes the item, if there", () => {
    const c = new CorridorItems([item("i1"), item("i2")]);
    assert.equal(c.apply(rpush("intel.expired", { item: "i1" })), true);
    assert.equal(c.apply(rpush("intel.expired", { item: "i1" })), false);
    assert.deepEqual([...c.items.keys()], ["i2"]);
  });

  test("other events change nothing", () => {
    const c = new CorridorItems([item("i1")]);
    assert.equal(c.apply(rpush("track.moved", {})), false);
    assert.equal(c.items.size, 1);
  });

  test("sorted: newest first (time; the same at: the greater id first) or closest first (distance; the smaller id first)", () => {
    const c = new CorridorItems([
      item("ib", { at: 100, d: 900 }), item("ia", { at: 300, d: 50 }), item("ic", { at: 200, d: 50 }), item("id", { at: 300, d: 400 }),
    ]);
    assert.deepEqual(ids(c.sorted()), ["id", "ia", "ic", "ib"]);
    assert.deepEqual(ids(c.sorted("time")), ["id", "ia", "ic", "ib"]);
    assert.deepEqual(ids(c.sorted("distance")), ["ia", "ic", "id", "ib"]);
  });

  test("replace() loads a route snapshot's items (not recovered)", () => {
    const c = new CorridorItems([item("i1")]);
    c.replace([item("i7"), item("i8")]);
    assert.deepEqual([...c.items.keys()], ["i7", "i8"]);
  });

  test("a filter applies to intel.added and intel.updated, as route.subscribe's did", () => {
    const c = new CorridorItems([], { filter: (i) => i.kind === "disruption" });
    c.apply(rpush("intel.added", { item: item("i1") })); // a poi
    c.apply(rpush("intel.added", { item: { ...item("i2"), kind: "disruption" } }));
    assert.deepEqual([...c.items.keys()], ["i2"]);
    c.replace([item("i3"), { ...item("i4"), kind: "disruption" }]);
    assert.deepEqual([...c.items.keys()], ["i4"], "replace() filters a route snapshot's unfiltered items");
  });

  test("the filter object given to route.subscribe works as protocol.md's Filter and order says", () => {
    const mk = (id, extra) => ({ ...item(id), ...extra });
    const c = new CorridorItems([
      mk("i1", { kind: "disruption", modes: ["car"], tags: ["traffic"] }),
      mk("i2", { kind: "disruption", modes: [], tags: ["Köprü"] }), // no mode: passes every modes filter
      mk("i3", { kind: "poi", modes: ["walk"], tags: ["kahve"] }),
      mk("i4", { kind: "disruption", modes: ["walk", "cycle"], tags: [], origin: "provider" }),
    ], { filter: { kinds: ["disruption"], modes: ["walk"] } });
    assert.deepEqual([...c.items.keys()], ["i2", "i4"]);
    const tagged = new CorridorItems(c.sorted(), { filter: { tags: ["köprü"], origins: [] } });
    assert.deepEqual([...tagged.items.keys()], ["i2"], "tags compared lower-cased; an empty list lets all through");
    const none = new CorridorItems([mk("i5", {})], { filter: {} });
    assert.equal(none.items.size, 1);
  });
});
