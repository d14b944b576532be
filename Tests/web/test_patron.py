"""The patron page (/patron): find a venue, land in one from its QR code, check in, the live queue
(votes, taking a vote back, who voted, requests), kept live across browsers and a server restart,
titles shown as text, laid out for a phone."""

import random
import time

from conftest import Relay, announced, by_label, record_announcements, screenshot, screenshot_from_top, sign_up, text_of, unique, wait
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.common.by import By

QUEUE_JS = """return [...document.querySelectorAll('ol[aria-label="Queue"] > li')].map(li =>
  [li.querySelector('.name').textContent, Number(li.querySelector('.count').textContent)])"""


def press(d, label):
    """Clicks the control named `label`, scrolled to the middle of the screen first (clear of the
    sticky header and the status toast, as a person would see it)."""
    e = by_label(d, label)
    d.execute_script("arguments[0].scrollIntoView({block: 'center'})", e)
    e.click()
    return e


def queue(d):
    """The queue as the page shows it: [(title, votes), ...] in order."""
    return [tuple(r) for r in d.execute_script(QUEUE_JS)]


def wait_queue(d, expected, seconds=10):
    expected = [tuple(e) for e in expected]
    try:
        wait(d, seconds).until(lambda d: queue(d) == expected)
    except Exception:
        raise AssertionError(f"the queue shows {queue(d)}, expected {expected}")


def make_venue(client, titles=("Song A", "Song B", "Song C"), lat=60.1, lon=19.94, name=None):
    """An owner (protocol client) with a venue and a playlist of `titles` (uris t:<title>)."""
    owner = client(unique("owner"))
    venue = owner.call("venue.register", {"name": name or f"Bar {unique('v')}", "address": "Storgatan 1", "postcode": "22100",
                                          "city": "Mariehamn", "country": "FI", "lat": lat, "lon": lon})["venue"]
    owner.call("venue.playlist.set", {"venue": venue["id"], "playlistUri": f"pl:{venue['id']}", "creator": "dj",
                                      "tracks": [{"uri": f"t:{t}", "title": t, "artist": "Band"} for t in titles]})
    return owner, venue


def guest(client, venue=None):
    """Another patron, through the protocol."""
    return client(unique("guest"))


def test_patron_checks_in_votes_unvotes_requests_and_sees_who_voted(server, browser, client):
    owner, venue = make_venue(client)
    d = browser()
    name = sign_up(d, server, page=f"/patron?venue={venue['id']}")
    # Straight into the venue from its QR code's address.
    wait(d).until(lambda d: text_of(d, "venue-name") == venue["name"])
    wait_queue(d, [("Song A", 0), ("Song B", 0), ("Song C", 0)])
    assert by_label(d, "Connection").text == "Live"

    press(d, "Check in")
    wait(d).until(lambda d: text_of(d, "checked-in") == "1 person checked in")
    assert "checked in" in text_of(d, "checked-in-me")

    press(d, "Vote for Song C")
    wait_queue(d, [("Song C", 1), ("Song A", 0), ("Song B", 0)])
    by_label(d, "Remove my vote for Song C")
    # The row moved up with the button still focused (a keyboard user goes on from there).
    assert d.switch_to.active_element.accessible_name == "Remove my vote for Song C"
    wait(d).until(lambda d: "You voted for Song C. It is up next, with 1 vote." in text_of(d, "announcer"))

    # Someone else votes: the page follows, ties kept in entry order (B before C).
    other = guest(client)
    other.call("venue.vote", {"venue": venue["id"], "track": "t:Song B"})
    wait_queue(d, [("Song B", 1), ("Song C", 1), ("Song A", 0)])

    press(d, "Who voted for Song C")
    wait(d).until(lambda d: "Voted by you." in d.find_element(By.CSS_SELECTOR, 'li[data-uri="t:Song C"] .voters').text)
    press(d, "Who voted for Song B")
    wait(d).until(lambda d: f"Voted by {other.user['username']}." in d.find_element(By.CSS_SELECTOR, 'li[data-uri="t:Song B"] .voters').text)
    # An open list follows the votes.
    owner_vote = guest(client)
    owner_vote.call("venue.vote", {"venue": venue["id"], "track": "t:Song B"})
    wait(d).until(lambda d: f"Voted by {other.user['username']} and {owner_vote.user['username']}."
                  in d.find_element(By.CSS_SELECTOR, 'li[data-uri="t:Song B"] .voters').text)

    press(d, "Remove my vote for Song C")
    wait_queue(d, [("Song B", 2), ("Song A", 0), ("Song C", 0)])
    by_label(d, "Vote for Song C")

    # A request: a new track enters with the requester's vote.
    by_label(d, "Title").send_keys("Brand New")
    by_label(d, "Artist").send_keys("The Testers")
    press(d, "Request")
    wait_queue(d, [("Song B", 2), ("Brand New", 1), ("Song A", 0), ("Song C", 0)])
    by_label(d, "Remove my vote for Brand New")
    tracks = other.call("venue.playlist.get", {"venue": venue["id"]})["playlist"]["tracks"]
    assert [t["track"]["uri"] for t in tracks][1] == "request:brand new-the testers"
    assert by_label(d, "Title").get_attribute("value") == ""

    # Requesting a song already queued is a vote for it (the page finds it by title).
    by_label(d, "Title").send_keys("song a")
    press(d, "Request")
    wait_queue(d, [("Song B", 2), ("Song A", 1), ("Brand New", 1), ("Song C", 0)])  # a tie: Song A entered first

    # A refusal is shown as text: the venue does not take explicit songs.
    owner.call("venue.explicit.set", {"venue": venue["id"], "allowed": False})
    wait(d).until(lambda d: d.find_element(By.ID, "explicit-hint").is_displayed())
    by_label(d, "Title").send_keys("Rude Song")
    press(d, "Explicit lyrics")
    press(d, "Request")
    wait(d).until(lambda d: "explicit lyrics, which this venue does not allow" in d.find_element(By.CSS_SELECTOR, "#request .error").text)
    assert len(queue(d)) == 4

    # A song played less than the venue's no-repeat window ago.
    owner.call("venue.settings.set", {"venue": venue["id"], "noRepeatHours": 3})
    owner.call("venue.track.ended", {"venue": venue["id"], "track": "t:Song B"})
    wait_queue(d, [("Song A", 1), ("Brand New", 1), ("Song C", 0)])
    by_label(d, "Explicit lyrics").click()  # off again
    title = by_label(d, "Title")
    title.clear()
    title.send_keys("Song B")
    by_label(d, "Link or track id (optional)").send_keys("t:Song B")
    press(d, "Request")
    wait(d).until(lambda d: d.find_element(By.CSS_SELECTOR, "#request .error").text
                  == "Played recently: this venue does not repeat a track within 3 hours of playing it")
    # The venue's hourly limit, said in minutes.
    owner.call("venue.settings.set", {"venue": venue["id"], "votesPerUserPerHour": 1})
    press(d, "Vote for Song C")
    wait(d).until(lambda d: "You have used this venue's votes and requests for the hour. Try again in 60 minutes."
                  in text_of(d, "queue-error"))
    by_label(d, "Vote for Song C")
    assert name in text_of(d, "account")


def test_two_patrons_see_each_others_votes_live(server, browser, client):
    _, venue = make_venue(client, titles=("One", "Two", "Three"))
    page = f"/patron?venue={venue['id']}"
    a, b = browser(), browser()
    sign_up(a, server, page=page)
    sign_up(b, server, page=page)
    for d in (a, b):
        wait_queue(d, [("One", 0), ("Two", 0), ("Three", 0)])
    press(a, "Vote for Three")
    wait_queue(b, [("Three", 1), ("One", 0), ("Two", 0)])
    press(b, "Vote for Two")
    press(b, "Vote for Three")
    wait_queue(a, [("Three", 2), ("Two", 1), ("One", 0)])
    # Each page knows only its own votes.
    by_label(a, "Remove my vote for Three")
    by_label(a, "Vote for Two")
    by_label(b, "Remove my vote for Two")
    press(a, "Check in")
    press(b, "Check in")
    wait(a).until(lambda d: text_of(d, "checked-in") == "2 people checked in")


def test_the_page_catches_up_by_itself_after_a_server_restart(server, browser, client):
    owner, venue = make_venue(client, titles=("First", "Second"))
    d = browser()
    name = sign_up(d, server, page=f"/patron?venue={venue['id']}")
    wait_queue(d, [("First", 0), ("Second", 0)])
    press(d, "Vote for Second")
    wait_queue(d, [("Second", 1), ("First", 0)])
    d.execute_script("window.notReloaded = true")

    server.restart()
    # While the page reconnects: another patron votes, the owner starts a track.
    voter = guest(client)
    voter.call("venue.vote", {"venue": venue["id"], "track": "t:First"})
    voter.call("venue.vote", {"venue": venue["id"], "track": "t:Second"})

    wait_queue(d, [("Second", 2), ("First", 1)], seconds=20)
    wait(d, 20).until(lambda d: by_label(d, "Connection").text == "Live")
    # The page still knows which vote is the user's, and still takes votes.
    by_label(d, "Remove my vote for Second")
    press(d, "Vote for First")
    wait_queue(d, [("First", 2), ("Second", 2)])
    # ...and still gets the others' changes live, on the new connection.
    owner2 = client()
    owner2.call("account.login", {"login": owner.user["username"], "password": "secret123"})
    owner2.call("venue.track.ended", {"venue": venue["id"], "track": "t:First"})
    wait_queue(d, [("Second", 2)])
    assert name in text_of(d, "account")
    assert d.execute_script("return window.notReloaded") is True  # caught up without a reload
    # The browser logs the refused tries while the server was down: those only.
    logged = [e["message"] for e in d.get_log("browser") if e["level"] == "SEVERE"]
    assert all("ERR_CONNECTION_REFUSED" in m or "1001" in m for m in logged), logged


def test_the_page_catches_up_by_itself_after_a_network_drop(server, browser, client):
    _, venue = make_venue(client, titles=("Left", "Right"))
    proxy = Relay(server.port)
    d = None
    try:
        d = browser()
        sign_up(d, proxy, page=f"/patron?venue={venue['id']}")
        wait_queue(d, [("Left", 0), ("Right", 0)])
        d.execute_script("window.notReloaded = true")
        record_announcements(d)
        # The network goes: the page notices and retries; meanwhile others vote and request.
        proxy.cut()
        wait(d).until(lambda d: by_label(d, "Connection").text.startswith("Reconnecting"))
        voter = guest(client)
        voter.call("venue.vote", {"venue": venue["id"], "track": "t:Right"})
        voter.call("venue.request", {"venue": venue["id"], "track": {"uri": "t:Missed", "title": "Missed", "artist": "Band"}})
        time.sleep(0.3)
        assert queue(d) == [("Left", 0), ("Right", 0)]  # still offline: nothing new
        # It comes back: the page recovers what it missed (same room epoch: the missed pushes).
        proxy.restore()
        wait(d, 20).until(lambda d: by_label(d, "Connection").text == "Live")
        wait_queue(d, [("Right", 1), ("Missed", 1), ("Left", 0)])
        # Said once the missed pushes are applied (the next song's announcement may follow soon after).
        wait(d).until(lambda d: [a for a in announced(d) if "Back online" in a])
        # Live again: the next vote arrives as it happens.
        voter.call("venue.vote", {"venue": venue["id"], "track": "t:Left"})
        wait_queue(d, [("Left", 1), ("Right", 1), ("Missed", 1)])  # a tie: Left entered first
        press(d, "Vote for Left")
        wait_queue(d, [("Left", 2), ("Right", 1), ("Missed", 1)])
        assert d.execute_script("return window.notReloaded") is True
        logged = [e["message"] for e in d.get_log("browser") if e["level"] == "SEVERE"]
        assert all("WebSocket" in m for m in logged), logged
    finally:
        # Off the page first: closing the relay under it would make it retry against a closed
        # port, and that failure (logged after the check above) would fail the fixture's check.
        if d is not None:
            d.get("about:blank")
        proxy.close()


def test_a_track_title_is_shown_as_text(server, browser, client):
    evil = "<img src=x onerror=alert(1)>"
    _, venue = make_venue(client, titles=(evil, "Plain"))
    d = browser()
    sign_up(d, server, page=f"/patron?venue={venue['id']}")
    wait_queue(d, [(evil, 0), ("Plain", 0)])
    press(d, f"Vote for {evil}")
    wait(d).until(lambda d: evil in text_of(d, "up-next"))
    # A patron requests another such title.
    by_label(d, "Title").send_keys('"><script>alert(2)</script>')
    press(d, "Request")
    wait_queue(d, [(evil, 1), ('"><script>alert(2)</script>', 1), ("Plain", 0)])
    assert d.find_elements(By.TAG_NAME, "img") == []
    assert d.execute_script("return document.querySelectorAll('main script').length") == 0
    try:
        d.switch_to.alert
        raise AssertionError("an alert ran")
    except NoAlertPresentException:
        pass


def test_find_a_venue_by_search_and_near_me(server, browser, client):
    lat, lon = round(random.uniform(-60, 60), 4), round(random.uniform(-150, 150), 4)
    label = unique("Zq")
    _, near = make_venue(client, name=f"The {label} Tavern", lat=lat, lon=lon + 0.005)
    _, far = make_venue(client, name=f"{label} Far Away Inn", lat=lat + 1, lon=lon)
    d = browser()
    sign_up(d, server, page="/patron")
    by_label(d, "Search venues").send_keys(label.lower())
    press(d, "Search")
    results = by_label(d, "Venues found")
    wait(d).until(lambda d: len(results.find_elements(By.TAG_NAME, "li")) == 2)
    assert "2 venues found" in text_of(d, "results-status")

    d.execute_cdp_cmd("Browser.grantPermissions", {"origin": server.url, "permissions": ["geolocation"]})
    d.execute_cdp_cmd("Emulation.setGeolocationOverride", {"latitude": lat, "longitude": lon, "accuracy": 10})
    press(d, "Venues near me")
    wait(d).until(lambda d: text_of(d, "results-status") == "1 venue near you.")
    assert "m away" in results.text and far["name"] not in results.text
    screenshot(d, "patron-find")
    press(d, near["name"])
    wait(d).until(lambda d: text_of(d, "venue-name") == near["name"])
    assert d.current_url.endswith(f"/patron?venue={near['id']}")
    wait_queue(d, [("Song A", 0), ("Song B", 0), ("Song C", 0)])
    # Back: the search again.
    d.back()
    by_label(d, "Venues near me")
    # An unknown venue's code: said so, and the search offered.
    d.get(server.url + "/patron?venue=vnope000000")
    wait(d).until(lambda d: "does not exist" in text_of(d, "page-error"))
    by_label(d, "Search venues")


def test_the_page_is_laid_out_for_a_phone(server, browser, client):
    titles = ("Mr. Brightside", "A Really Long Song Title That Keeps Going On And On Without Stopping Anywhere",
              "Dancing Queen", "Wonderwall", "Supercalifragilisticexpialidocious_and_then_some_more_letters", "Sweet Caroline")
    owner, venue = make_venue(client, titles=titles, name="The Crown & Anchor")
    voters = [guest(client) for _ in range(3)]
    for i, v in enumerate(voters):
        for t in titles[2:2 + i + 1]:
            v.call("venue.vote", {"venue": venue["id"], "track": f"t:{t}"})
    owner.call("venue.nowPlaying", {"venue": venue["id"], "track": "t:Mr. Brightside"})
    voters[0].call("venue.checkin", {"venue": venue["id"]})
    d = browser()
    # From the table's QR code, not signed in yet.
    d.get(server.url + f"/patron?venue={venue['id']}")
    by_label(d, "Sign up")
    assert d.execute_script("return document.documentElement.scrollWidth") <= 412
    screenshot(d, "patron-signin")
    sign_up(d, server, page=f"/patron?venue={venue['id']}")
    wait(d).until(lambda d: len(queue(d)) == 6)
    press(d, "Vote for Wonderwall")
    by_label(d, "Remove my vote for Wonderwall")
    press(d, "Who voted for Dancing Queen")
    wait(d).until(lambda d: "Voted by" in d.find_element(By.CSS_SELECTOR, 'li[data-uri="t:Dancing Queen"] .voters').text)
    assert d.execute_script("return window.innerWidth") == 412
    assert d.execute_script("return document.documentElement.scrollWidth") <= 412
    # Every button can be reached with the keyboard and says what it does.
    names = d.execute_script("return [...document.querySelectorAll('button')].filter(b => b.offsetParent).map(b => b.tabIndex)")
    assert all(t >= 0 for t in names)
    screenshot_from_top(d, "patron")
