"""The owner page (/owner): register a venue, its guest link, put on a playlist (pasted or from a
file), start it over, clear the votes, the explicit switch and the house rules, the player (now
playing, track ended) and the live queue; the venues remembered; laid out for a phone."""

import os
import re

from conftest import REPO, by_label, log_in, screenshot, screenshot_from_top, sign_up, text_of, unique, wait
from selenium.webdriver.common.by import By
from test_patron import press, queue, wait_queue

PUBLIC = os.path.join(REPO, "Sources", "Server", "WebClient", "Public")
PAGE_FILES = ["patron.html", "owner.html", "js/patron.js", "js/owner.js", "js/venue.js", "css/venue.css"]


def settings_of(c, venue_id):
    return c.call("venue.playlist.get", {"venue": venue_id})["playlist"]["settings"]


def until(check, seconds=10):
    """Polls a protocol-side condition (the page's change reaches the server)."""
    import time
    deadline = time.monotonic() + seconds
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("the change did not reach the server")
        time.sleep(0.1)


def register(d, name, lat="60.1", lon="19.94"):
    by_label(d, "Venue name").send_keys(name)
    by_label(d, "Street address").send_keys("Storgatan 1")
    by_label(d, "Postcode").send_keys("22100")
    by_label(d, "City").send_keys("Mariehamn")
    by_label(d, "Country").send_keys("Finland")
    if lat is not None:
        by_label(d, "Latitude").send_keys(lat)
        by_label(d, "Longitude").send_keys(lon)
    press(d, "Register the venue")


def venue_id_of(d):
    wait(d).until(lambda d: "venue=" in d.current_url)
    return re.search(r"venue=([^&]+)", d.current_url).group(1)


def playing(d):
    return d.execute_script("""return [...document.querySelectorAll('ol[aria-label="Queue"] > li.playing .name')].map(e => e.textContent)""")


def test_owner_registers_sets_a_playlist_and_runs_the_jukebox(server, browser, client):
    d = browser()
    user = sign_up(d, server, page="/owner")
    by_label(d, "Your venues")
    name = f"Owner's Bar {unique('o')}"

    # A missing coordinate is named, next to its field.
    register(d, name, lat=None)
    wait(d).until(lambda d: "latitude" in d.find_element(By.CSS_SELECTOR, "#register .error").text)
    assert by_label(d, "Latitude").get_attribute("aria-invalid") == "true"
    by_label(d, "Latitude").send_keys("60,1")  # a decimal comma is fine
    by_label(d, "Longitude").send_keys("19.94")
    press(d, "Register the venue")
    vid = venue_id_of(d)
    wait(d).until(lambda d: text_of(d, "venue-name") == name)
    link = by_label(d, f"{server.url}/patron?venue={vid}")
    assert link.get_attribute("href") == f"{server.url}/patron?venue={vid}"

    # Paste a playlist: dash lines, a CSV line with a quoted comma, a comment, a repeat.
    by_label(d, "Playlist name").send_keys("Friday")
    by_label(d, "Songs, one per line").send_keys(
        "Song One — Band A\nSong Two - Band B\nspotify:track:3,\"Song, Three\",Band C,explicit\n\n# a comment\nSong One — Band A\n")
    wait(d).until(lambda d: "3 songs ready; 1 repeated line left out." in text_of(d, "pl-preview"))
    press(d, "Put this playlist on")
    wait_queue(d, [("Song One", 0), ("Song Two", 0), ("Song, Three", 0)])
    wait(d).until(lambda d: "“Friday”" in text_of(d, "playlist-now"))

    # Guests vote and request: the owner's queue follows live.
    guest = client(unique("guest"))
    guest.call("venue.vote", {"venue": vid, "track": "track:song two-band b"})
    guest.call("venue.request", {"venue": vid, "track": {"uri": "x:new", "title": "Fresh Request", "artist": "Guest Band"}})
    wait_queue(d, [("Song Two", 1), ("Fresh Request", 1), ("Song One", 0), ("Song, Three", 0)])
    assert guest.call("venue.playlist.get", {"venue": vid})["playlist"]["tracks"][3]["track"]["explicit"] is True

    # Clear the votes (a second tap confirms): the requested song stays.
    press(d, "Clear all votes")
    press(d, "Tap again to clear all votes")
    wait_queue(d, [("Song One", 0), ("Song Two", 0), ("Song, Three", 0), ("Fresh Request", 0)])

    # Start over: back to the playlist's own songs.
    guest.call("venue.vote", {"venue": vid, "track": "spotify:track:3"})
    wait_queue(d, [("Song, Three", 1), ("Song One", 0), ("Song Two", 0), ("Fresh Request", 0)])
    press(d, "Start the playlist over")
    press(d, "Tap again to start the playlist over")
    wait_queue(d, [("Song One", 0), ("Song Two", 0), ("Song, Three", 0)])

    # The same list again is refused as such; a changed one replaces it.
    press(d, "Put this playlist on")
    wait(d).until(lambda d: "already the venue's" in d.find_element(By.CSS_SELECTOR, "#playlist .error").text)

    # The explicit switch.
    switch = by_label(d, "Allow explicit lyrics in requests")
    assert switch.is_selected()
    press(d, "Allow explicit lyrics in requests")
    until(lambda: settings_of(guest, vid)["explicitAllowed"] is False)
    wait(d).until(lambda d: by_label(d, "Allow explicit lyrics in requests").is_selected() is False and by_label(d, "Allow explicit lyrics in requests").is_enabled())

    # The house rules: a value out of range is named by its label; then saved.
    votes = by_label(d, "Votes per guest per hour")
    votes.clear()
    votes.send_keys("0")
    press(d, "Save the rules")
    wait(d).until(lambda d: "“Votes per guest per hour” must be between 1 and 10000" in d.find_element(By.CSS_SELECTOR, "#rules .error").text)
    assert votes.get_attribute("aria-invalid") == "true"
    votes.clear()
    votes.send_keys("5")
    norepeat = by_label(d, "Don't replay a song within (hours; 0: no limit)")
    norepeat.clear()
    norepeat.send_keys("3")
    press(d, "Fair mode: guests with fewer waiting requests go first in ties")
    press(d, "Save the rules")
    wait(d).until(lambda d: text_of(d, "rules-ok") == "Saved.")
    s = settings_of(guest, vid)
    assert (s["votesPerUserPerHour"], s["noRepeatHours"], s["fairMode"], s["explicitAllowed"]) == (5, 3, True, False)

    # The player: play what is up next, then it ends and leaves the queue.
    guest.call("venue.vote", {"venue": vid, "track": "track:song two-band b"})
    wait(d).until(lambda d: "Up next: Song Two — Band B (1 vote)" in text_of(d, "up-next"))
    press(d, "Play up next")
    wait(d).until(lambda d: playing(d) == ["Song Two"] and text_of(d, "now-title") == "Song Two — Band B")
    wait_queue(d, [("Song Two", 1), ("Song One", 0), ("Song, Three", 0)])
    press(d, "Track ended")
    wait_queue(d, [("Song One", 0), ("Song, Three", 0)])
    wait(d).until(lambda d: text_of(d, "now-title") == "Nothing is playing")
    # Any song can be played at once; the guests' pages see it.
    press(d, "Play Song, Three now")
    wait(d).until(lambda d: playing(d) == ["Song, Three"])
    assert guest.call("venue.playlist.get", {"venue": vid})["playlist"]["nowPlaying"] == "spotify:track:3"

    # The venue is remembered on this device.
    press(d, "← All my venues")
    mine = by_label(d, "Your venues")
    wait(d).until(lambda d: name in mine.text)
    d.refresh()
    wait(d).until(lambda d: name in by_label(d, "Your venues").text)
    press(d, name)
    wait_queue(d, [("Song, Three", 0), ("Song One", 0)])
    assert user in text_of(d, "account")


def test_a_playlist_from_a_file_and_a_venue_opened_by_its_code(server, browser, client, tmp_path):
    owner = client(unique("owner"))
    password_user = owner.user["username"]
    venue = owner.call("venue.register", {"name": "Kept Elsewhere", "address": "Main St 2", "postcode": "1000", "city": "Oslo",
                                          "country": "NO", "lat": 59.9, "lon": 10.7})["venue"]
    d = browser()
    log_in(d, server, password_user, "/owner")
    by_label(d, "Venue code or guest link").send_keys(f"{server.url}/patron?venue={venue['id']}")
    press(d, "Open")
    wait(d).until(lambda d: text_of(d, "venue-name") == "Kept Elsewhere")
    wait(d).until(lambda d: "No playlist yet" in text_of(d, "queue-empty"))

    csv = tmp_path / "late-night.csv"
    csv.write_text("uri,title,artist\nspotify:track:a1,Night Drive,Neon\nspotify:track:a2,\"Slow, Slower\",Tide\n", encoding="utf-8")
    by_label(d, "Or load a .txt or .csv file").send_keys(str(csv))
    wait(d).until(lambda d: "2 songs ready." in text_of(d, "pl-preview"))
    assert by_label(d, "Playlist name").get_attribute("value") == "late-night"
    press(d, "Put this playlist on")
    wait_queue(d, [("Night Drive", 0), ("Slow, Slower", 0)])
    assert [t["track"]["uri"] for t in owner.call("venue.playlist.get", {"venue": venue["id"]})["playlist"]["tracks"]] == \
        ["spotify:track:a1", "spotify:track:a2"]


def test_the_owner_page_is_laid_out_for_a_phone(server, browser, client):
    d = browser()
    sign_up(d, server, page="/owner")
    by_label(d, "Register the venue")
    assert d.execute_script("return document.documentElement.scrollWidth") <= 412
    screenshot(d, "owner-venues")
    register(d, "The Crown & Anchor")
    vid = venue_id_of(d)
    by_label(d, "Playlist name").send_keys("Friday night")
    by_label(d, "Songs, one per line").send_keys("\n".join([
        "Mr. Brightside — The Killers", "Dancing Queen — ABBA", "Wonderwall — Oasis", "Sweet Caroline — Neil Diamond",
        "Bohemian Rhapsody — Queen", "Don't Stop Me Now — Queen"]))
    press(d, "Put this playlist on")
    wait(d).until(lambda d: len(queue(d)) == 6)
    guests = [client(unique("guest")) for _ in range(2)]
    for g, songs in zip(guests, (["wonderwall — oasis", "dancing queen — abba"], ["wonderwall — oasis"])):
        for s in songs:
            title, artist = s.split(" — ")
            g.call("venue.vote", {"venue": vid, "track": f"track:{title}-{artist}"})
    guests[0].call("venue.checkin", {"venue": vid})
    guests[1].call("venue.request", {"venue": vid, "track": {"uri": "x:1", "title": "Africa", "artist": "Toto"}})
    wait(d).until(lambda d: queue(d)[0] == ("Wonderwall", 2))
    press(d, "Play up next")
    wait(d).until(lambda d: playing(d) == ["Wonderwall"])
    assert d.execute_script("return window.innerWidth") == 412
    assert d.execute_script("return document.documentElement.scrollWidth") <= 412
    screenshot_from_top(d, "owner")


def test_the_venue_pages_build_no_html_from_strings_and_run_no_inline_code():
    for rel in PAGE_FILES:
        with open(os.path.join(PUBLIC, rel), encoding="utf-8") as f:
            text = f.read()
        for bad in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
            assert bad not in text, f"{rel} uses {bad}"
        if rel.endswith(".html"):
            assert not re.search(r"<script(?![^>]*\bsrc=)", text), f"{rel} has an inline script"
            assert not re.search(r"\sstyle=", text), f"{rel} has a style attribute"
            assert not re.search(r"\son[a-z]+=", text), f"{rel} has an on* attribute"
            assert not re.search(r"(src|href)=\"(https?:)?//", text), f"{rel} loads from another origin"
