"""What the browser tests share: a Hubbub server (restartable on its data), headless Chromium at
phone width through Selenium and Debian's chromedriver, a protocol client to set up data, and
screenshots into docs/screenshots/.

Run through scripts/test-web.sh (it installs chromium, chromium-driver, selenium and pytest)."""

import itertools
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request

import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait
from websockets.sync.client import connect

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCREENSHOTS = os.path.join(REPO, "docs", "screenshots")
API_KEY = "browser-tests-key"
PHONE = (412, 915)
_names = itertools.count(1)


def unique(prefix):
    """A fresh username (usernames are unique per server)."""
    return f"{prefix}{os.getpid() % 1000}x{next(_names)}"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Server:
    """One hubbub process on a fixed port and data directory, so a test can restart it and the
    pages reconnect to the same address."""

    def __init__(self, binary, data, port):
        self.binary, self.data, self.port = binary, data, port
        self.proc = None
        self.extra = []
        self.log = open(os.path.join(data, "server.log"), "ab")

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws(self):
        return f"ws://127.0.0.1:{self.port}/ws"

    def start(self):
        self.proc = subprocess.Popen(
            [self.binary, "--host", "127.0.0.1", "--port", str(self.port), "--data-dir", self.data, "--api-key", API_KEY,
             "--log-level", "warning",
             # Many users sign up from 127.0.0.1 in one run.
             "--auth-signups-per-address-per-hour", "100000", "--auth-address-failures-per-hour", "100000",
             "--rate-limits-auth-burst", "1000", "--rate-limits-auth-per-second", "1000"]
            + (["--web-root", os.environ["HUBBUB_WEB_ROOT"]] if os.environ.get("HUBBUB_WEB_ROOT") else [])
            + self.extra,
            stdout=self.log, stderr=self.log, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(self.url + "/healthz", timeout=1) as r:
                    if r.status == 200:
                        return
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"hubbub exited with {self.proc.returncode}; log in {self.data}/server.log")
                time.sleep(0.1)
        raise RuntimeError("hubbub did not answer /healthz within 30 s")

    def stop(self, sig=signal.SIGTERM):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def restart(self, sig=signal.SIGTERM, down_seconds=0.5, extra=None):
        """Stops and starts the server; `extra` (flags) replaces the options of the last restart
        (a test that sets any restarts it again without them when it ends: the server is shared)."""
        self.stop(sig)
        time.sleep(down_seconds)
        self.extra = list(extra or [])
        self.start()

    def post(self, path, body, content_type="application/xml"):
        """An operator request (feeds): the answer's status and JSON."""
        req = urllib.request.Request(self.url + path, data=body if isinstance(body, bytes) else body.encode(), method="POST",
                                     headers={"Authorization": f"Bearer {API_KEY}", "Content-Type": content_type})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")


@pytest.fixture(scope="session")
def server():
    binary = os.environ.get("HB_BIN", os.path.join(REPO, ".build", "release", "hubbub"))
    data = tempfile.mkdtemp(prefix="hubbub-web-")
    s = Server(binary, data, free_port())
    s.start()
    yield s
    s.stop()
    shutil.rmtree(data, ignore_errors=True)


class Client:
    """The wire protocol from Python (websockets), to set up what a page then shows."""

    def __init__(self, server):
        # websockets wants its connection used as a context manager: entered here, left in close().
        self._connection = connect(server.ws, subprotocols=["hubbub.v1"], open_timeout=10)
        self.ws = self._connection.__enter__()
        self.ids = itertools.count(1)
        self.pushes = []
        self.user = None

    def call(self, op, args=None):
        """The op's result; raises with the server's error."""
        rid = next(self.ids)
        self.ws.send(json.dumps({"id": rid, "op": op, "args": args or {}}))
        while True:
            msg = json.loads(self.ws.recv(timeout=15))
            if msg.get("id") == rid:
                if not msg["ok"]:
                    raise RuntimeError(f"{op}: {msg['error']}")
                return msg["result"]
            if "room" in msg:
                self.pushes.append(msg)

    def signup(self, username, password="secret123"):
        r = self.call("account.signup", {"username": username, "email": f"{username}@example.com", "password": password})
        self.user = r["user"]
        return r

    def close(self):
        self._connection.__exit__(None, None, None)


@pytest.fixture
def client(server):
    made = []

    def make(username=None):
        c = Client(server)
        if username:
            c.signup(username)
        made.append(c)
        return c

    yield make
    for c in made:
        c.close()


def new_browser(width=PHONE[0], height=PHONE[1]):
    options = webdriver.ChromeOptions()
    options.binary_location = os.environ.get("CHROMIUM", "/usr/lib/chromium/chromium" if os.path.exists("/usr/lib/chromium/chromium") else "/usr/bin/chromium")
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                 "--disable-extensions", "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-features=Translate,OptimizationHints,MediaRouter", f"--window-size={width},{height}",
                 "--force-device-scale-factor=1", "--lang=en-GB"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(executable_path=os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver"))
    driver = webdriver.Chrome(service=service, options=options)
    driver.set_page_load_timeout(30)
    # Headless windows are at least 500 px wide: the page is laid out at the phone's width instead.
    emulate(driver, width, height)
    return driver


def emulate(driver, width, height):
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600})


@pytest.fixture
def browser():
    """A factory of fresh browsers (each its own profile: its own user), closed after the test.
    Each is checked for JavaScript errors and CSP violations at the end."""
    made = []

    def make(**kwargs):
        d = new_browser(**kwargs)
        made.append(d)
        return d

    yield make
    problems = []
    for d in made:
        try:
            problems += [e["message"] for e in d.get_log("browser") if e["level"] == "SEVERE" and "favicon" not in e["message"]]
        finally:
            d.quit()
    assert not problems, f"errors in the browser's console: {problems}"


def wait(driver, seconds=10):
    """Waits for a condition; an element that a redraw replaced meanwhile just means "not yet"."""
    return WebDriverWait(driver, seconds, poll_frequency=0.1, ignored_exceptions=(StaleElementReferenceException,))


# The elements whose own text, label or aria-label holds the name: the only ones Chromium is asked
# for its accessible name (one round trip each), which makes finding a control quick on long pages.
_CANDIDATES_JS = """
const fold = (t) => (t || '').replace(/\\s+/g, ' ').trim().toLowerCase();
const want = fold(arguments[0]);
return [...document.querySelectorAll('button, a, input, select, textarea, [role], ul, ol, section, nav, [aria-label]')].filter(e => {
  const ids = (e.getAttribute('aria-labelledby') || '').split(/\\s+/).filter(Boolean);
  const text = [e.getAttribute('aria-label'), e.getAttribute('title'), e.textContent, ...[...(e.labels || [])].map(l => l.textContent),
                ...ids.map(id => document.getElementById(id)?.textContent)].map(fold).join(' | ');
  return text.includes(want);
});"""


def by_label(driver, label, seconds=10):
    """The displayed element whose accessible name is `label` (Chromium's computed name, as a
    screen reader hears it), once there."""
    def find(d):
        for e in d.execute_script(_CANDIDATES_JS, label):
            try:
                if e.is_displayed() and e.accessible_name == label:
                    return e
            except Exception:
                continue
        return False
    return wait(driver, seconds).until(find, f"nothing named {label!r} appeared")


def sign_up(driver, server, page="/", username=None):
    """Opens `page` and signs up a new user there; returns the username."""
    username = username or unique("web")
    driver.get(server.url + page)
    by_label(driver, "Username").send_keys(username)
    by_label(driver, "Email").send_keys(f"{username}@example.com")
    driver.find_element(By.ID, "signup-password").send_keys("secret123")
    by_label(driver, "Sign up").click()
    wait(driver).until(EC.text_to_be_present_in_element((By.ID, "account"), username))
    return username


def screenshot(driver, name):
    """Saves the page as docs/screenshots/<name>.png (whole page height)."""
    os.makedirs(SCREENSHOTS, exist_ok=True)
    width = driver.execute_script("return window.innerWidth")
    height = driver.execute_script("return Math.max(document.body.scrollHeight, document.documentElement.scrollHeight)")
    emulate(driver, width, min(max(height, PHONE[1]), 4000))
    try:
        driver.save_screenshot(os.path.join(SCREENSHOTS, f"{name}.png"))
    finally:
        emulate(driver, width, PHONE[1])


class Relay:
    """A TCP relay in front of the server: a page loaded through `url` connects its WebSocket
    through it too, so `cut()` takes the page's network away (its connections drop, new ones are
    refused until `restore()`) while the server and its rooms' history run on."""

    def __init__(self, target_port):
        self.target = target_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.refusing = False
        self.open = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                down, _ = self.listener.accept()
            except OSError:
                return
            if self.refusing:
                down.close()
                continue
            try:
                up = socket.create_connection(("127.0.0.1", self.target))
            except OSError:
                down.close()
                continue
            with self.lock:
                self.open += [down, up]
            for a, b in ((down, up), (up, down)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a, b):
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        finally:
            for s in (a, b):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

    def cut(self):
        """Drops every relayed connection and refuses new ones."""
        self.refusing = True
        with self.lock:
            for s in self.open:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            self.open = []

    def restore(self):
        self.refusing = False

    def close(self):
        self.listener.close()
        self.cut()


def console_errors(driver, expected=("WebSocket connection to",)):
    """The browser console's errors, less those a test caused on purpose (failed reconnects while
    the network or the server was down)."""
    return [e["message"] for e in driver.get_log("browser")
            if e["level"] == "SEVERE" and not any(x in e["message"] for x in expected)]


def record_announcements(driver):
    """From now on, every text the page announces is kept (`announced`): a later announcement
    replaces the status line's text, sometimes before a test can read it (a debounced one)."""
    driver.execute_script("""window.announced = [];
        const region = document.getElementById("announcer");
        new MutationObserver(() => { if (region.textContent) window.announced.push(region.textContent); })
            .observe(region, {childList: true, characterData: true, subtree: true});""")


def announced(driver):
    """What the page announced since `record_announcements`, in order."""
    return driver.execute_script("return window.announced")


def text_of(driver, element_id):
    """The element's text, as shown."""
    return driver.find_element(By.ID, element_id).text


def wait_text(driver, element_id, needle, seconds=10):
    """Waits until the element's text holds `needle` (a string or a compiled regex); returns the text."""
    def holds(d):
        t = text_of(d, element_id)
        return (needle.search(t) if isinstance(needle, re.Pattern) else needle in t) and t
    return wait(driver, seconds).until(holds, f"{needle!r} never appeared in #{element_id}")


def log_in(driver, server, username, page="/"):
    """Opens `page` (None: stays on the page open) and logs `username` in there (the password
    sign_up and Client.signup give); returns once the account panel names the user."""
    if page is not None:
        driver.get(server.url + page)
    by_label(driver, "Username or email").send_keys(username)
    driver.find_element(By.ID, "login-password").send_keys("secret123")
    by_label(driver, "Log in").click()
    wait(driver).until(EC.text_to_be_present_in_element((By.ID, "account"), username))


def screenshot_from_top(driver, name):
    """screenshot(), the page scrolled back to its top first (as it opens)."""
    driver.execute_script("window.scrollTo(0, 0)")
    screenshot(driver, name)
