"""The traveller's page (/traveller): a route chosen by coordinates, by location or from the recent
destinations; its corridor and reports on an SVG map and in a live list (sorted, filtered); posting,
liking, commenting, linking; karma; markup in a report staying text; phone width; catching up after
the server restarts; a transit operator's alert (GTFS and GTFS-Realtime through the operator API) at
each stop of a line, live, in the language chosen on the page."""

import csv
import io
import math
import os
import re
import shutil
import stat
import tempfile
import time
import zipfile
from types import SimpleNamespace

import pytest
from conftest import (REPO, Client, Relay, Server, announced, by_label, console_errors, free_port, log_in, record_announcements, screenshot, screenshot_from_top, sign_up, unique,
                      wait, wait_text)
from google.transit import gtfs_realtime_pb2 as gtfs_rt
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

PUBLIC = os.path.join(REPO, "Sources", "Server", "WebClient", "Public")
FILES = ["traveller.html", "js/traveller.js", "css/traveller.css"]



class Route:
    """Eminönü to Karaköy over the Galata bridge (about 1 km), as in docs/protocol.md, moved north
    by `k` × 0.05° (5.6 km): each test has a corridor of its own on the session's server."""

    def __init__(self, k):
        at = lambda lat, lon: (round(lat + 0.05 * k, 4), lon)
        self.frm = at(41.017, 28.97)
        self.to = at(41.0245, 28.977)
        self.bridge = at(41.0205, 28.9735)
        self.near_end = at(41.0238, 28.9764)
        self.near_start = at(41.0178, 28.9707)
        self.far_away = at(41.06, 28.90)


def meters(a, b):
    r = math.pi / 180
    h = math.sin((b[0] - a[0]) * r / 2) ** 2 + math.cos(a[0] * r) * math.cos(b[0] * r) * math.sin((b[1] - a[1]) * r / 2) ** 2
    return 2 * 6371008.8 * math.asin(math.sqrt(h))

def first_words(body):
    """As traveller.js names a report's buttons: its first 5 words, at most 40 characters."""
    return " ".join(body.split()[:5])[:40].rstrip()


def new_traveller(browser, server):
    """A new browser on /traveller, with a new user signed up there."""
    d = browser()
    sign_up(d, server, "/traveller")
    return d


def open_route(d, route, label=None, width=None):
    frm, to = route.frm, route.to
    for name, value in (("From latitude", frm[0]), ("From longitude", frm[1]), ("To latitude", to[0]), ("To longitude", to[1])):
        field = by_label(d, name)
        field.clear()
        field.send_keys(str(value))
    if label:
        field = by_label(d, "Name of the destination (optional)")
        field.clear()
        field.send_keys(label)
    if width:
        d.find_element(By.CSS_SELECTOR, f"#width option[value='{width}']").click()
    by_label(d, "Show reports on this route").click()
    wait_route(d, label)


def wait_route(d, label=None):
    wait(d).until(lambda d: d.find_element(By.ID, "route").is_displayed()
                  and d.find_element(By.ID, "route-title").text == f"Your route to {label or 'your destination'}")


def map_label(d):
    return d.find_element(By.ID, "map").get_attribute("aria-label")


def wait_map_reports(d, n):
    word = "report" if n == 1 else "reports"
    wait(d).until(lambda d: map_label(d).startswith(f"Map of your route with {n} {word}"), f"the map never showed {n} {word}")


def bodies(d):
    """The reports' bodies, in list order."""
    # Read in one script: the list may be redrawn between two WebDriver calls.
    return d.execute_script("return [...document.querySelectorAll('#reports > li .text')].map(e => e.innerText)")


def card(d, body):
    """The list item of the report with this body."""
    def find(d):
        for li in d.find_elements(By.CSS_SELECTOR, "#reports > li"):
            if li.find_element(By.CSS_SELECTOR, ".text").text == body:
                return li
        return False
    return wait(d).until(find, f"no report {body!r} in the list")


def wait_card(d, body, text):
    """Waits until the card of the report with this body says `text`."""
    wait(d).until(lambda d: text in card(d, body).text, f"the card of {body!r} never said {text!r}")


def markers(d):
    """The map's markers: [(kind, title)]."""
    return [(m.get_attribute("class").split()[-1], m.find_element(By.TAG_NAME, "title").get_attribute("textContent"))
            for m in d.find_elements(By.CSS_SELECTOR, "#map g.marker")]


def post_from_page(d, body, kind="disruption", modes=(), tags="", place=None):
    by_label(d, "Disruption (closure, delay, danger)" if kind == "disruption" else "Place worth knowing").click()
    by_label(d, "What's happening?").send_keys(body)
    if tags:
        by_label(d, "Tags (optional)").send_keys(tags)
    for mode in modes:
        by_label(d, {"walk": "Walking", "cycle": "Cycling", "car": "Driving", "transit": "Transit"}[mode]).click()
    if place:
        for name, value in (("Report latitude", place[0]), ("Report longitude", place[1])):
            field = by_label(d, name)
            field.clear()
            field.send_keys(str(value))
    by_label(d, "Post report").click()
    wait(d).until(lambda d: by_label(d, "What's happening?").get_attribute("value") == "", "the report was not posted")


def post(c, body, where, kind="disruption", **extra):
    return c.call("intel.post", {"lat": where[0], "lon": where[1], "kind": kind, "body": body, **extra})["item"]


def segment_distance(p, a, b):
    (px, py), (ax, ay), (bx, by) = p, a, b
    dx, dy = bx - ax, by - ay
    t = max(0, min(1, ((px - ax) * dx + (py - ay) * dy) / (dx * dx + dy * dy or 1)))
    return math.hypot(px - ax - t * dx, py - ay - t * dy)


def test_the_files_build_the_page_without_markup_from_strings_inline_code_or_other_origins():
    for name in FILES:
        text = open(os.path.join(PUBLIC, name), encoding="utf-8").read()
        for banned in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
            assert banned not in text, f"{name} uses {banned}"
        # Nothing from another origin: the only absolute URL is the SVG namespace (a name, never fetched).
        assert set(re.findall(r"https?://[^\s\"'`)]+", text)) <= {"http://www.w3.org/2000/svg"}, name
    html = open(os.path.join(PUBLIC, "traveller.html"), encoding="utf-8").read()
    assert re.findall(r"<script\b[^>]*>", html) == ['<script type="module" src="/js/traveller.js">'], "inline script"
    assert "<style" not in html and not re.search(r"\sstyle\s*=", html), "inline style"
    assert not re.search(r"\son[a-z]+\s*=", html), "an on* attribute"
    js = open(os.path.join(PUBLIC, "js", "traveller.js"), encoding="utf-8").read()
    assert ".style." not in js and "setAttribute(\"style\"" not in js and "cssText" not in js


def test_choose_a_route_by_coordinates_post_a_report_see_it_on_the_map_and_in_the_list(server, browser, client):
    r = Route(1)
    d = browser()
    name = sign_up(d, server, "/traveller")
    assert by_label(d, "Connection").text == "Live"
    wait_text(d, "my-karma", "0 points")
    carol = client(unique("carol"))
    post(carol, "Coffee place under the bridge #kahve", r.near_end, kind="poi", modes=["walk"])
    open_route(d, r, label="Karaköy", width=300)
    wait_map_reports(d, 1)
    assert d.find_element(By.ID, "map").get_attribute("role") == "img"
    assert bodies(d) == ["Coffee place under the bridge #kahve"]
    assert by_label(d, "Reports along your route").tag_name == "ol"
    # The corridor: a band as wide as 300 m in the map's scale, from the start to the destination.
    band = d.find_element(By.CSS_SELECTOR, "#map polyline.band")
    pts = [tuple(map(float, p.split(","))) for p in band.get_attribute("points").split()]
    assert len(pts) == 2
    start = d.find_element(By.CSS_SELECTOR, "#map circle.start")
    assert math.dist(pts[0], (float(start.get_attribute("cx")), float(start.get_attribute("cy")))) < 0.2
    assert d.find_elements(By.CSS_SELECTOR, "#map rect.end")
    route_px = math.dist(pts[0], pts[1])
    width_px = float(band.get_attribute("stroke-width"))
    assert abs(width_px / route_px - 300 / meters(r.frm, r.to)) < 0.01, (width_px, route_px)
    # Fitted to the map: the band inside the view box, filling its width or its height.
    _, _, w, h = map(float, d.find_element(By.ID, "map").get_dom_attribute("viewBox").split())
    xs, ys = [x for x, _ in pts], [y for _, y in pts]
    assert 0 <= min(xs) - width_px / 2 and max(xs) + width_px / 2 <= w
    assert 0 <= min(ys) - width_px / 2 and max(ys) + width_px / 2 <= h
    assert max((max(xs) - min(xs) + width_px) / w, (max(ys) - min(ys) + width_px) / h) > 0.8
    # North is up: the destination is north-east of the start.
    assert pts[1][1] < pts[0][1] and pts[1][0] > pts[0][0]

    post_from_page(d, "Ferry queue past the fish market", kind="disruption", modes=["walk", "transit"], tags="ferry, queue",
                   place=r.bridge)
    li = card(d, "Ferry queue past the fish market")
    assert "by you" in li.text and "for walking, transit" in li.text
    assert "#ferry" in li.text and "#queue" in li.text
    wait_map_reports(d, 2)
    assert map_label(d) == "Map of your route with 2 reports: 1 disruption, 1 place"
    kinds = dict((t.split(": ", 1)[1].split(" (")[0], k) for k, t in markers(d))
    assert kinds == {"Ferry queue past the fish market": "disruption", "Coffee place under the bridge #kahve": "poi"}
    # The report lies inside the band drawn.
    marker = d.find_element(By.CSS_SELECTOR, "#map g.marker.disruption text")
    p = (float(marker.get_attribute("x")), float(marker.get_attribute("y")) - 4)
    assert segment_distance(p, pts[0], pts[1]) <= width_px / 2
    # One's own report has no Like button; the karma counts it.
    assert not [b for b in li.find_elements(By.TAG_NAME, "button") if b.is_displayed() and b.text == "Like"]
    wait_text(d, "my-karma", "1 point")
    assert "newcomer" in d.find_element(By.ID, "my-karma").text.lower()
    assert name in d.find_element(By.ID, "account").text
    screenshot_from_top(d, "traveller")


def test_another_traveller_sees_a_report_and_its_like_arrive_live(server, browser):
    r = Route(2)
    a, b = new_traveller(browser, server), new_traveller(browser, server)
    open_route(a, r, label="Karaköy")
    open_route(b, r, label="Karaköy")
    wait_map_reports(b, 0)
    body = f"Bridge closed to cars {unique('n')}"
    post_from_page(a, body, kind="disruption", modes=["car"], place=r.bridge)
    # B never reloads: the report arrives, is announced, drawn and listed.
    li = card(b, body)
    wait_map_reports(b, 1)
    wait(b).until(lambda d: d.find_element(By.ID, "announcer").get_attribute("textContent")
                  == f"New disruption on your route: {body}")
    assert "0 likes" in li.text
    by_label(b, f"Like {first_words(body)}").click()
    by_label(b, f"You liked {first_words(body)}")
    # A sees the like arrive, and the karma it earned (1 for the report, 2 for the like).
    wait_card(a, body, "1 like ·")
    wait_text(a, "my-karma", "3 points")
    screenshot_from_top(b, "traveller-live")


def test_sorting_and_filters_change_the_list_and_the_map(server, browser, client):
    r = Route(3)
    d = new_traveller(browser, server)
    dave = client(unique("dave"))
    now = time.time()
    tag = unique("t")
    # Oldest but closest to the destination; newest but furthest; in between, for every mode.
    post(dave, f"Cafe open late {tag}", r.near_end, kind="poi", modes=["walk"], at=now - 600)
    post(dave, f"Roadworks on the quay {tag}", r.near_start, kind="disruption", modes=["car"], at=now - 60)
    post(dave, f"Tram stopped {tag}", r.bridge, kind="disruption", at=now - 300)
    open_route(d, r)
    wait_map_reports(d, 3)
    assert [b.rsplit(" ", 1)[0] for b in bodies(d)] == ["Roadworks on the quay", "Tram stopped", "Cafe open late"]
    newest, closest = by_label(d, "Newest first"), by_label(d, "Closest to destination first")
    assert newest.get_attribute("aria-pressed") == "true" and closest.get_attribute("aria-pressed") == "false"
    closest.click()
    wait(d).until(lambda d: [b.rsplit(" ", 1)[0] for b in bodies(d)] == ["Cafe open late", "Tram stopped", "Roadworks on the quay"])
    assert newest.get_attribute("aria-pressed") == "false" and closest.get_attribute("aria-pressed") == "true"
    # The map numbers its markers as the list does.
    titles = sorted(t for _, t in markers(d))
    assert titles[0].startswith("1. Place: Cafe open late") and titles[2].startswith("3. Disruption: Roadworks")

    by_label(d, "Show disruptions").click()
    wait(d).until(lambda d: [b.rsplit(" ", 1)[0] for b in bodies(d)] == ["Cafe open late"])
    assert by_label(d, "Show disruptions").get_attribute("aria-pressed") == "false"
    assert map_label(d).startswith("Map of your route with 1 report (2 hidden by filters)")
    assert [k for k, _ in markers(d)] == ["poi"]
    by_label(d, "Show disruptions").click()
    by_label(d, "Show reports for driving").click()
    # The car-only report goes; the one for every mode stays.
    wait(d).until(lambda d: [b.rsplit(" ", 1)[0] for b in bodies(d)] == ["Cafe open late", "Tram stopped"])
    by_label(d, "Show reports for walking").click()
    wait(d).until(lambda d: [b.rsplit(" ", 1)[0] for b in bodies(d)] == ["Tram stopped"])
    assert len(markers(d)) == 1
    # The choice is kept across a reload.
    d.refresh()
    by_label(d, f"Go to {r.to[0]:.4f}, {r.to[1]:.4f}").click()
    wait_map_reports(d, 1)
    assert by_label(d, "Show reports for walking").get_attribute("aria-pressed") == "false"
    assert by_label(d, "Closest to destination first").get_attribute("aria-pressed") == "true"


def test_comment_on_and_link_two_reports_and_read_a_posters_karma(server, browser, client):
    r = Route(4)
    d = new_traveller(browser, server)
    erin = client(unique("erin"))
    closed = post(erin, "Bridge closed to cars", r.bridge)
    ferry = post(erin, "Ferry every 20 minutes", r.near_start, kind="poi", modes=["transit"])
    open_route(d, r)
    wait_map_reports(d, 2)
    by_label(d, "Comments and links for Bridge closed to cars").click()
    wait_card(d, "Bridge closed to cars", "No comments yet.")
    by_label(d, "Your comment").send_keys("Still closed at 9, take the ferry")
    by_label(d, "Send comment on Bridge closed to cars").click()
    comments = by_label(d, "Comments on Bridge closed to cars")
    wait(d).until(lambda d: "Still closed at 9, take the ferry" in comments.text)
    wait(d).until(lambda d: "1 comment" in card(d, "Bridge closed to cars").find_element(By.CSS_SELECTOR, ".counts").text)
    assert erin.call("intel.get", {"item": closed["id"]})["comments"][0]["text"] == "Still closed at 9, take the ferry"
    # A comment made elsewhere shows up in the open panel.
    erin.call("intel.comment", {"item": closed["id"], "text": "Open again at 10"})
    wait(d).until(lambda d: "Open again at 10" in comments.text)

    link_to = by_label(d, "Link to…")
    options = [o.text for o in link_to.find_elements(By.TAG_NAME, "option")]
    assert options == ["Choose a report…", "Place: Ferry every 20 minutes"]
    link_to.find_element(By.XPATH, "option[2]").click()
    by_label(d, "Link Bridge closed to cars to the chosen report").click()
    wait_card(d, "Bridge closed to cars", "Linked to: Ferry every 20 minutes")
    wait_card(d, "Ferry every 20 minutes", "Linked to: Bridge closed to cars")
    assert erin.call("intel.get", {"item": ferry["id"]})["item"]["links"] == [closed["id"]]
    # Linking them again is refused, and said so.
    assert [o.text for o in link_to.find_elements(By.TAG_NAME, "option")] == ["No other report to link to"]

    # Erin's karma: 1 for each report, 2 for each of her reports linked.
    by_label(d, f"Karma of {erin.user['username']}").click()
    wait_card(d, "Bridge closed to cars", f"{erin.user['username']} has 6 karma points: newcomer.")
    screenshot_from_top(d, "traveller-comments")


def test_markup_in_a_report_or_a_comment_stays_text(server, browser, client):
    r = Route(5)
    d = new_traveller(browser, server)
    mallory = client(unique("mallory"))
    evil = '<img src=x onerror="window.pwned=1"> <b>bold</b>'
    item = post(mallory, evil, r.bridge)
    mallory.call("intel.comment", {"item": item["id"], "text": '<script>window.pwned=2</script><img src=y onerror="window.pwned=3">'})
    open_route(d, r)
    li = card(d, evil)
    assert li.find_element(By.CSS_SELECTOR, ".text").text == evil
    by_label(d, f"Comments and links for {first_words(evil)}").click()
    wait(d).until(lambda d: "<script>window.pwned=2</script>" in li.text)
    # A live one too.
    post(mallory, '<svg onload="window.pwned=4"></svg> <iframe src="/"></iframe>', r.near_end)
    card(d, '<svg onload="window.pwned=4"></svg> <iframe src="/"></iframe>')
    time.sleep(0.3)
    assert d.execute_script("return document.querySelectorAll('#main img, #main script, #main b, #main iframe, #reports svg').length") == 0
    assert d.execute_script("return window.pwned === undefined")
    assert any(evil in t for _, t in markers(d))


def test_the_destination_is_offered_again_after_a_reload(server, browser, client):
    r = Route(6)
    d = new_traveller(browser, server)
    label = unique("Work")
    open_route(d, r, label=label, width=1000)
    d.refresh()
    go = by_label(d, f"Go to {label}")
    assert not d.find_element(By.ID, "route").is_displayed()
    screenshot(d, "traveller-start")
    go.click()
    wait_route(d, label)
    assert "within 500 m of it" in d.find_element(By.ID, "route-summary").text  # the width it had
    # Going there again while there keeps the route live (the room is joined, not left).
    by_label(d, f"Go to {label}").click()
    wait_route(d, label)
    time.sleep(0.3)
    body = f"Lift out of order {unique('x')}"
    post(client(unique("fred")), body, r.near_end, kind="disruption")
    card(d, body)
    # Another route: its reports only, live; the first route's room is left.
    other = Route(12)
    open_route(d, other, label="Elsewhere")
    wait_map_reports(d, 0)
    post(client(unique("gus")), f"On the first route {unique('x')}", r.bridge)
    elsewhere = f"On the other route {unique('x')}"
    post(client(unique("hub")), elsewhere, other.bridge)
    card(d, elsewhere)
    assert bodies(d) == [elsewhere]
    # Forgetting it.
    by_label(d, f"Forget {label}").click()
    wait(d).until(lambda d: not d.find_elements(By.XPATH, f"//button[text()='Go to {label}']"))


def test_a_destination_from_another_device_asks_where_to_start(server, browser):
    r = Route(13)
    d = browser()
    name = sign_up(d, server, "/traveller")
    label = unique("Gym")
    open_route(d, r, label=label)
    # The same traveller on another phone: the destination is there, the start is not.
    other = browser()
    log_in(other, server, name, "/traveller")
    by_label(other, f"Go to {label}").click()
    wait(other).until(lambda d: "Where do you start from?" in d.find_element(By.CSS_SELECTOR, "#plan-form .error").text)
    assert by_label(other, "From latitude").get_attribute("aria-invalid") == "true"
    assert other.switch_to.active_element == by_label(other, "From latitude")
    assert by_label(other, "To latitude").get_attribute("value") == str(r.to[0])
    by_label(other, "From latitude").send_keys(str(r.near_start[0]))
    by_label(other, "From longitude").send_keys(str(r.near_start[1]))
    by_label(other, f"Go to {label}").click()
    wait_route(other, label)


def test_use_my_location_for_the_start_and_the_report(server, browser):
    r = Route(7)
    d = new_traveller(browser, server)
    d.execute_cdp_cmd("Browser.grantPermissions", {"permissions": ["geolocation"], "origin": server.url})
    d.execute_cdp_cmd("Emulation.setGeolocationOverride", {"latitude": r.near_start[0], "longitude": r.near_start[1], "accuracy": 10})
    by_label(d, "Use my location").click()
    wait(d).until(lambda d: by_label(d, "From latitude").get_attribute("value") == str(r.near_start[0]))
    assert by_label(d, "From longitude").get_attribute("value") == str(r.near_start[1])
    for name, value in (("To latitude", r.to[0]), ("To longitude", r.to[1])):
        by_label(d, name).send_keys(str(value))
    by_label(d, "Show reports on this route").click()
    wait_route(d)
    # The report's place defaults to the start; "Report from where I am" takes the location again.
    assert by_label(d, "Report latitude").get_attribute("value") == str(r.near_start[0])
    for name, value in (("Report latitude", r.bridge[0]), ("Report longitude", r.bridge[1])):
        by_label(d, name).clear()
        by_label(d, name).send_keys(str(value))
    by_label(d, "Report from where I am").click()
    wait(d).until(lambda d: by_label(d, "Report latitude").get_attribute("value") == str(r.near_start[0]))
    assert by_label(d, "Report longitude").get_attribute("value") == str(r.near_start[1])
    assert d.find_elements(By.CSS_SELECTOR, "#map g.pin")


@pytest.fixture
def short_lived_server():
    """A server of its own whose reports expire 6 s after they were posted or last liked."""
    data = tempfile.mkdtemp(prefix="hubbub-web-ttl-")
    binary = os.environ.get("HB_BIN", os.path.join(REPO, ".build", "release", "hubbub"))
    wrapper = os.path.join(data, "hubbub-short-ttl")
    with open(wrapper, "w") as f:
        f.write(f'#!/bin/sh\nexec "{binary}" "$@" --routes-intel-ttl-seconds 6\n')
    os.chmod(wrapper, os.stat(wrapper).st_mode | stat.S_IEXEC)
    s = Server(wrapper, data, free_port())
    s.start()
    yield s
    s.stop()
    shutil.rmtree(data, ignore_errors=True)


def test_reports_leave_the_list_and_the_map_when_they_expire_and_a_like_keeps_one_longer(short_lived_server, browser):
    r = Route(14)
    server = short_lived_server
    d = new_traveller(browser, server)
    open_route(d, r)
    poster, liker = Client(server), Client(server)
    try:
        poster.signup(unique("pia"))
        liker.signup(unique("quin"))
        plain = post(poster, "Puddle on the path", r.bridge, kind="poi")
        liked = post(poster, "Broken traffic lights", r.near_end)
        wait_map_reports(d, 2)
        time.sleep(3)
        liker.call("intel.like", {"item": liked["id"]})  # now it lives 6 s from this like
        wait(d, 15).until(lambda d: bodies(d) == ["Broken traffic lights"], "the unliked report did not expire")
        assert map_label(d).startswith("Map of your route with 1 report:")
        wait(d, 15).until(lambda d: bodies(d) == [], "the liked report did not expire")
        wait_map_reports(d, 0)
        assert "No reports on this route right now." in d.find_element(By.ID, "empty").text
        assert plain["id"] not in d.page_source
    finally:
        poster.close()
        liker.close()


def test_a_report_outside_the_corridor_is_said_to_be_so(server, browser):
    r = Route(8)
    d = new_traveller(browser, server)
    open_route(d, r)
    post_from_page(d, "Somewhere else entirely", place=r.far_away)
    wait(d).until(lambda d: "outside your route's corridor" in d.find_element(By.CSS_SELECTOR, "#post-form .error").text)
    assert bodies(d) == []


def test_the_page_fits_a_phone(server, browser, client):
    r = Route(9)
    d = new_traveller(browser, server)
    assert d.execute_script("return window.innerWidth") == 412
    assert d.execute_script("return document.documentElement.scrollWidth") <= 412
    post(client(unique("gil")), "Averyveryverylongwordwithoutanyspaceswhatsoever" * 4 + " #" + "x" * 49, r.bridge,
         modes=["walk", "cycle", "car", "transit"])
    open_route(d, r, label="A destination with a rather long name, to see that it wraps on a phone")
    wait_map_reports(d, 1)
    by_label(d, "Comments and links for " + first_words("Averyveryverylongwordwithoutanyspaceswhatsoever" * 4)).click()
    by_label(d, "Link to…")
    assert d.execute_script("return document.documentElement.scrollWidth") <= 412
    # Every control is reachable with the keyboard and has a name.
    unnamed = d.execute_script("""
        return [...document.querySelectorAll('button, input, select, textarea, a[href]')]
          .filter((e) => e.offsetParent !== null && e.tabIndex >= 0)
          .filter((e) => !(e.labels?.length || e.getAttribute('aria-label') || e.textContent.trim()))
          .map((e) => e.outerHTML.slice(0, 80));""")
    assert unnamed == []


def test_the_page_catches_up_after_its_connection_drops(server, browser, client):
    r = Route(10)
    proxy = Relay(server.port)
    try:
        d = new_traveller(browser, proxy)
        open_route(d, r, label="Karaköy")
        kim = client(unique("kim"))
        before = post(kim, f"Before the drop {unique('r')}", r.bridge)
        card(d, before["body"])
        record_announcements(d)
        proxy.cut()
        wait(d).until(lambda d: by_label(d, "Connection").text.startswith("Reconnecting"))
        # Meanwhile, on the same corridor: a report, a like, a comment and a link.
        during = post(kim, f"During the drop {unique('r')}", r.near_end, kind="poi")
        liker = client(unique("lea"))
        liker.call("intel.like", {"item": before["id"]})
        liker.call("intel.comment", {"item": before["id"], "text": "seen"})
        liker.call("intel.link", {"item": during["id"], "to": before["id"]})
        time.sleep(0.5)
        assert not [b for b in bodies(d) if b == during["body"]]
        proxy.restore()
        wait(d, 20).until(lambda d: by_label(d, "Connection").text == "Live")
        card(d, during["body"])
        wait_card(d, before["body"], "1 like · 1 comment")
        wait_card(d, before["body"], f"Linked to: {first_words(during['body'])}")
        # Recovered from the room's history (not a fresh snapshot): said once every push was applied.
        wait(d).until(lambda d: "Back online: caught up with your route." in announced(d))
        # And live again afterwards.
        after = post(kim, f"After the drop {unique('r')}", r.near_start)
        card(d, after["body"])
        wait_map_reports(d, 3)
        assert console_errors(d) == []
    finally:
        proxy.close()


def offline_across_a_restart(d, server, client, r, extra=None):
    """A report shown; the page kept offline while the server restarts (with `extra` flags) and a
    report is posted; then online again: both reports shown, the connection live."""
    before = f"Before the restart {unique('r')}"
    post(client(unique("hal")), before, r.bridge)
    card(d, before)
    record_announcements(d)
    d.execute_cdp_cmd("Network.enable", {})
    offline = {"offline": True, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1}
    d.execute_cdp_cmd("Network.emulateNetworkConditions", offline)
    server.restart(extra=extra)
    wait(d).until(lambda d: by_label(d, "Connection").text.startswith("Reconnecting"))
    after = f"After the restart {unique('r')}"
    post(client(unique("ida")), after, r.near_end, kind="poi")
    d.execute_cdp_cmd("Network.emulateNetworkConditions", {**offline, "offline": False})
    wait(d, 20).until(lambda d: by_label(d, "Connection").text == "Live")
    card(d, after)
    card(d, before)


def announcement(d):
    return d.find_element(By.ID, "announcer").get_attribute("textContent")


def test_the_page_takes_a_fresh_snapshot_after_the_server_restarts(server, browser, client):
    # A corridor's room is made by the node that watches it, never stored: after the restart it
    # is loaded in a new epoch, and only the fresh route snapshot can bring the page up to date
    # (the report posted meanwhile included).
    r = Route(11)
    d = new_traveller(browser, server)
    open_route(d, r, label="Karaköy")
    offline_across_a_restart(d, server, client, r)
    wait(d).until(lambda d: [a for a in announced(d) if "brought up to date" in a])
    assert "Back online: caught up with your route." not in announced(d), announced(d)
    later = f"Later still {unique('r')}"
    post(client(unique("jo")), later, r.near_start)
    card(d, later)
    wait_map_reports(d, 3)
    assert console_errors(d) == []


# ---- transit alerts

# Tram line 4 of a small feed runs west to east along 60.25 N, a stop every 0.01° (555 m); the
# traveller's corridor runs south to north across it at T3, 150 m either side: it holds T3 alone.
# The stops' ids sort T0 first, so the item's lat/lon (its first point) lies off the route.
TRAM_STOPS = [(f"T{i}", f"Tram stop {i}", 60.25, round(24.90 + 0.01 * i, 2)) for i in range(6)]
ACROSS_T3 = ((60.24, 24.93), (60.26, 24.93))


def gtfs_zip():
    """The feed: agency HSL (its language: Finnish), the stops, tram route R4 (route_type 0), a trip."""
    def table(rows):
        out = io.StringIO()
        csv.writer(out, lineterminator="\n").writerows(rows)
        return out.getvalue()
    times = [["trip_id", "arrival_time", "departure_time", "stop_id", "stop_sequence"]]
    times += [["R4-1", f"08:{2 * k:02d}:00", f"08:{2 * k:02d}:00", stop[0], str(k + 1)] for k, stop in enumerate(TRAM_STOPS)]
    files = {
        "agency.txt": table([["agency_id", "agency_name", "agency_url", "agency_timezone", "agency_lang"],
                             ["HSL", "Helsingin seudun liikenne", "https://example.org/", "Europe/Helsinki", "fi"]]),
        "stops.txt": table([["stop_id", "stop_name", "stop_lat", "stop_lon"]] + [list(map(str, s)) for s in TRAM_STOPS]),
        "routes.txt": table([["route_id", "agency_id", "route_short_name", "route_type"], ["R4", "HSL", "4", "0"]]),
        "trips.txt": table([["route_id", "service_id", "trip_id"], ["R4", "WD", "R4-1"]]),
        "stop_times.txt": table(times),
    }
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, text in files.items():
            z.writestr(name, text)
    return buf.getvalue()


def alert_message(entity_id=None, texts=(), stops=(), routes=(), full=False):
    """A FeedMessage: one alert (texts: [(text, language)]) on those stops and routes, or none."""
    m = gtfs_rt.FeedMessage()
    m.header.gtfs_realtime_version = "2.0"
    m.header.incrementality = gtfs_rt.FeedHeader.FULL_DATASET if full else gtfs_rt.FeedHeader.DIFFERENTIAL
    m.header.timestamp = int(time.time())
    if entity_id:
        e = m.entity.add()
        e.id = entity_id
        for stop in stops:
            e.alert.informed_entity.add(stop_id=stop)
        for route in routes:
            e.alert.informed_entity.add(route_id=route)
        for text, language in texts:
            e.alert.header_text.translation.add(text=text, language=language)
    return m.SerializeToString()


def post_alerts(server, feed, message):
    status, answer = server.post(f"/api/feeds/gtfs-rt?feed={feed}", message, "application/x-protobuf")
    assert status == 200, answer
    return answer


def own_language(c, username):
    """The language in the profile of `username` (c logs in as them)."""
    if c.user is None or c.user["username"] != username:
        c.user = c.call("account.login", {"login": username, "password": "secret123"})["user"]
    return c.call("profile.get")["profile"]["language"]


def language_is(c, username, tag, seconds=5):
    deadline = time.monotonic() + seconds
    while (got := own_language(c, username)) != tag and time.monotonic() < deadline:
        time.sleep(0.1)
    assert got == tag


def test_a_transit_alert_arrives_live_in_the_chosen_language_at_each_stop_and_follows_its_operator(server, browser, client):
    feed = unique("CityTransit")
    status, answer = server.post(f"/api/feeds/gtfs?feed={feed}", gtfs_zip(), "application/zip")
    assert status == 200 and answer["stops"] == 6 and answer["rejected"] == 0, answer
    d = browser()
    name = sign_up(d, server, "/traveller")
    me = client()
    # Never chosen: the browser's language (en-GB) is taken, and kept in the profile.
    language_is(me, name, "en")
    open_route(d, SimpleNamespace(frm=ACROSS_T3[0], to=ACROSS_T3[1]), label="Kallio", width=300)
    language = by_label(d, "Language of alerts")
    assert language.get_attribute("value") == "en"
    Select(language).select_by_visible_text("Suomi")
    language_is(me, name, "fi")

    fi = "Raitiolinja 4 ei liikennöi: ratatyö"
    en = "Tram line 4 is not running: track works"
    tr = "4 numaralı tramvay hattı çalışmıyor: ray çalışması"
    answer = post_alerts(server, feed, alert_message("works-4", [(fi, "fi"), (en, "en"), (tr, "tr")], routes=["R4"]))
    assert answer["added"] == 1, answer
    # Live, in Finnish: the operator and its line named, each stop on the map, the marker at T3.
    li = card(d, fi)
    wait_map_reports(d, 1)
    assert li.find_element(By.CSS_SELECTOR, ".line").text == f"{feed} · tram"
    assert "At 6 stops, 1 of them along your route." in li.text
    assert not [b for b in li.find_elements(By.TAG_NAME, "button") if b.is_displayed() and b.text == "Like"]
    assert d.find_element(By.ID, "stops-key").is_displayed()
    stops = d.find_elements(By.CSS_SELECTOR, "#map g.stops.disruption circle")
    _, _, w, h = map(float, d.find_element(By.ID, "map").get_dom_attribute("viewBox").split())
    spots = [(float(c.get_attribute("cx")), float(c.get_attribute("cy"))) for c in stops]
    assert len(spots) >= 2 and all(0 <= x <= w and 0 <= y <= h for x, y in spots), spots
    band = d.find_element(By.CSS_SELECTOR, "#map polyline.band")
    ends = [tuple(map(float, p.split(","))) for p in band.get_attribute("points").split()]
    marker = d.find_element(By.CSS_SELECTOR, "#map g.marker.disruption text")
    at = (float(marker.get_attribute("x")), float(marker.get_attribute("y")) - 4)
    assert segment_distance(at, *ends) <= float(band.get_attribute("stroke-width")) / 2
    # The other stops lie on the tram line: a row across the map, level with the marker.
    assert all(abs(y - at[1]) < 1 for _, y in spots), (at, spots)
    assert d.execute_script("return document.documentElement.scrollWidth") <= 412

    # Another language: the list is read again, in Turkish.
    Select(language).select_by_visible_text("Türkçe")
    card(d, tr)
    assert bodies(d) == [tr]
    # The operator revises it (new texts, two stops): the card follows, live, still in Turkish.
    fi2, tr2 = "Raitiolinja 4 ajaa vain pysäkeille T3 ja T4", "4 numaralı tramvay yalnızca T3 ve T4 duraklarında"
    post_alerts(server, feed, alert_message("works-4", [(fi2, "fi"), (tr2, "tr")], stops=["T3", "T4"]))
    li = card(d, tr2)
    wait(d).until(lambda d: "At 2 stops, 1 of them along your route." in card(d, tr2).text)
    assert bodies(d) == [tr2]
    assert li.find_element(By.CSS_SELECTOR, ".line").text == feed  # on stops alone: no line named
    wait(d).until(lambda d: d.find_element(By.ID, "announcer").get_attribute("textContent").startswith("Alert updated: 4 numaralı"))
    # The original texts: the operator's own language (Finnish), kept across a reload; never
    # replaced by the browser's language again.
    Select(language).select_by_visible_text("Original texts")
    card(d, fi2)
    language_is(me, name, None)
    d.refresh()
    by_label(d, "Go to Kallio").click()
    wait_route(d, "Kallio")
    card(d, fi2)
    wait(d).until(lambda d: by_label(d, "Language of alerts").get_attribute("value") == "")
    assert own_language(me, name) is None
    # A full dataset without it ends it: off the list and the map.
    post_alerts(server, feed, alert_message(full=True))
    wait(d).until(lambda d: bodies(d) == [], "the ended alert stayed in the list")
    wait_map_reports(d, 0)
    assert not d.find_elements(By.CSS_SELECTOR, "#map g.stops")
    assert not d.find_element(By.ID, "stops-key").is_displayed()
