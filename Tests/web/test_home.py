"""The home page: served by the server itself with its headers, usable at phone width, sign-up
and log-in through the account panel, the token kept across a reload."""

import urllib.request

from conftest import by_label, log_in, screenshot, sign_up, wait
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC


def test_the_server_serves_the_page_with_its_headers(server):
    with urllib.request.urlopen(urllib.request.Request(server.url + "/", headers={"Accept-Encoding": "gzip"})) as r:
        assert r.status == 200
        assert r.headers["Content-Type"] == "text/html; charset=utf-8"
        assert r.headers["Content-Encoding"] == "gzip"
        assert "script-src 'self'" in r.headers["Content-Security-Policy"]
        assert "unsafe-inline" not in r.headers["Content-Security-Policy"]
        etag = r.headers["ETag"]
    req = urllib.request.Request(server.url + "/", headers={"If-None-Match": etag})
    try:
        urllib.request.urlopen(req)
        raise AssertionError("expected 304")
    except urllib.error.HTTPError as e:
        assert e.code == 304


def test_sign_up_log_out_and_in_and_stay_signed_in_across_a_reload(server, browser):
    d = browser()
    name = sign_up(d, server)
    assert by_label(d, "Connection").text == "Live"
    screenshot(d, "home")
    d.refresh()
    wait(d).until(EC.text_to_be_present_in_element((By.ID, "account"), name))
    by_label(d, "Log out").click()
    log_in(d, server, name, page=None)


def test_a_refused_sign_up_names_the_field(server, browser):
    d = browser()
    d.get(server.url + "/")
    by_label(d, "Username").send_keys("ok_name")
    by_label(d, "Email").send_keys("ok_name@example.com")
    d.find_element(By.ID, "signup-password").send_keys("lettersonly")
    by_label(d, "Sign up").click()
    wait(d).until(lambda d: "letter and a digit" in d.find_element(By.CSS_SELECTOR, "#account form:nth-of-type(2) .error").text)
    assert d.find_element(By.ID, "signup-password").get_attribute("aria-invalid") == "true"


def test_the_page_is_laid_out_for_a_phone(server, browser):
    d = browser()
    d.get(server.url + "/")
    by_label(d, "Choose a page")
    assert d.execute_script("return window.innerWidth") == 412
    # Nothing wider than the screen: no sideways scrolling.
    assert d.execute_script("return document.documentElement.scrollWidth") <= 412
