"""`evalctl view` in a real Chromium, as a person uses it: Debian's chromium driven through
its chromium-driver by selenium (nothing is downloaded), headless, on a fresh profile,
against the live server the command starts. It filters runs, opens a case's history,
compares two runs, and checks what each page shows.

Skipped where chromium, chromedriver or selenium is missing (`make setup-browser` installs
the first two, as root on Debian). With EVALCTL_VIEW_SCREENSHOTS=DIR it also saves the
screenshots docs/history.md shows.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.test_view import serve
from tests.view_helpers import BROKEN_AT, RUNS, build_store, commit


def _driver_path() -> str | None:
    given = os.environ.get("EVALCTL_CHROMEDRIVER")
    if given:
        return given
    # GitHub's Ubuntu runners ship ChromeDriver beside Chrome, in the folder this names.
    runner = os.environ.get("CHROMEWEBDRIVER")
    if runner and Path(runner, "chromedriver").is_file():
        return str(Path(runner, "chromedriver"))
    return shutil.which("chromedriver")


def _browser_path() -> str | None:
    candidates = [os.environ.get("EVALCTL_CHROMIUM", ""), "chromium", "chromium-browser"]
    candidates += ["google-chrome", "google-chrome-stable"]
    return next((shutil.which(c) for c in candidates if c and shutil.which(c)), None)


def _have_selenium() -> bool:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return False
    return True


pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        _driver_path() is None or _browser_path() is None or not _have_selenium(),
        reason="needs chromium, chromedriver and selenium (`make setup-browser` as root on Debian)",
    ),
]

FLAGS = (
    "--headless",
    "--no-sandbox",  # tests may run as root in a container
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1100,900",
)


@pytest.fixture(scope="module")
def viewer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    store = build_store(tmp_path_factory.mktemp("store") / "history.sqlite")
    proc = serve(store)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("evalctl view: "), line
        yield line.split(": ", 1)[1].strip()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = _browser_path() or ""
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('profile')}")
    driver = webdriver.Chrome(service=Service(executable_path=_driver_path()), options=options)
    driver.set_page_load_timeout(120)
    try:
        yield driver
    finally:
        driver.quit()


def _shot(browser: Any, name: str) -> None:
    folder = os.environ.get("EVALCTL_VIEW_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(Path(folder) / f"view-{name}.png"))


def _until(browser: Any, done: Any) -> None:
    """Wait for a navigation a click started (a form's submit returns before the next page
    has loaded); generous, as the machine may be busy."""
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(browser, 120).until(done)


def _click_to(browser: Any, element: Any, fragment: str) -> None:
    element.click()
    _until(browser, lambda d: fragment in d.current_url)


def _rows(browser: Any, table: str) -> list[str]:
    from selenium.webdriver.common.by import By

    return [r.text for r in browser.find_elements(By.CSS_SELECTOR, f"#{table} tbody tr")]


def test_filter_runs_open_a_case_and_compare_two_runs(browser: Any, viewer: str) -> None:
    from selenium.webdriver.common.by import By

    browser.get(viewer)
    assert browser.title == "Runs · evalctl view"
    assert len(_rows(browser, "runs")) == min(RUNS, 50)
    changes = browser.find_element(By.ID, "changes").find_element(By.XPATH, "following::table")
    assert "shop/steady" in changes.text and commit(BROKEN_AT)[:12] in changes.text
    _shot(browser, "runs")

    # Filter: the runs since the second day's noon, by typing into the form and submitting.
    since = browser.find_element(By.NAME, "since")
    since.send_keys("2026-11-02T12:00")
    _click_to(browser, browser.find_element(By.ID, "apply"), "since=2026-11-02T12%3A00")
    rows = _rows(browser, "runs")
    assert len(rows) == 5
    assert all("2026-11-02 1" in r for r in rows)
    assert "5 runs in the store, filtered" in browser.find_element(By.CLASS_NAME, "meta").text
    browser.find_element(By.NAME, "branch").send_keys("no-such-branch")
    _click_to(browser, browser.find_element(By.ID, "apply"), "branch=no-such-branch")
    assert _rows(browser, "runs") == ["no runs match these filters"]

    # A case's history: from the cases page, the strip with the changepoint marked.
    _click_to(browser, browser.find_element(By.LINK_TEXT, "Cases"), "/cases")
    row = next(r for r in browser.find_elements(By.CSS_SELECTOR, "#cases tbody tr")
               if "shop/steady" in r.text)  # fmt: skip
    assert "100% → 0%" in row.text
    _shot(browser, "cases")
    _click_to(browser, row.find_element(By.LINK_TEXT, "shop/steady"), "/cases/shop/steady")
    squares = browser.find_elements(By.CSS_SELECTOR, "#strip a")
    statuses = [s.get_attribute("data-status") for s in squares]
    assert statuses == ["pass"] * (BROKEN_AT - 1) + ["fail"] * (RUNS - BROKEN_AT + 1)
    # The mark is drawn between run 24's square and run 25's.
    mark = browser.find_element(By.CSS_SELECTOR, "#strip .cp").rect
    assert squares[BROKEN_AT - 2].rect["x"] < mark["x"] < squares[BROKEN_AT - 1].rect["x"]
    assert commit(BROKEN_AT)[:12] in browser.find_element(By.ID, "changepoint").text
    answers = [a.text for a in browser.find_elements(By.CSS_SELECTOR, ".side pre.answer")]
    assert answers == ["steady says pass in run 24", "steady says fail in run 25"]
    _shot(browser, "case")

    # Two runs compared: from the latest run's page, "compare it with the run before".
    _click_to(browser, browser.find_element(By.LINK_TEXT, "Runs"), "/runs")
    _click_to(browser, browser.find_elements(By.CSS_SELECTOR, "#runs tbody tr td a")[0], "/runs/")
    before = browser.find_element(By.PARTIAL_LINK_TEXT, "compare it with the run before")
    _click_to(browser, before, "/compare/")
    verdict = browser.find_element(By.ID, "verdict").find_element(By.XPATH, "following::p")
    assert re.match(r"(OK|FAILED|UNSCORED) \(exit \d, statistical gate\)", verdict.text)
    changed = browser.find_elements(By.CSS_SELECTOR, "h3")
    assert changed and all("→" in h.text for h in changed)
    sides = browser.find_elements(By.CSS_SELECTOR, ".side")
    assert sides and all(len(s.find_elements(By.CSS_SELECTOR, "pre.answer")) == 2 for s in sides)
    _shot(browser, "compare")


def test_the_hostile_transcript_shows_as_text_and_runs_nothing(browser: Any, viewer: str) -> None:
    from selenium.webdriver.common.by import By

    browser.get(viewer + "cases/shop/hostile")
    # Had any of it run, an alert would be open and this would raise.
    answer = browser.find_elements(By.CSS_SELECTOR, ".side pre.answer")[0].text
    assert answer.startswith('answer <script>alert("pwned")</script><img src=x onerror=alert(1)>')
    assert browser.find_elements(By.CSS_SELECTOR, "main script, main img") == []


def test_trends_draw_their_charts(browser: Any, viewer: str) -> None:
    from selenium.webdriver.common.by import By

    browser.get(viewer + "trends/shop")
    charts = browser.find_elements(By.CSS_SELECTOR, "figure svg")
    assert len(charts) == 3
    assert all(c.size["width"] > 500 and c.size["height"] > 150 for c in charts)
    band = browser.find_element(By.CSS_SELECTOR, "figure svg polygon")
    assert band.size["height"] > 20
    _shot(browser, "trends")


def test_the_flaky_page_ranks_the_coin_cases(browser: Any, viewer: str) -> None:
    from selenium.webdriver.common.by import By

    browser.get(viewer + "flaky")
    rows = _rows(browser, "flaky")
    assert {rows[0].split()[0], rows[1].split()[0]} == {"shop/coin-a", "shop/coin-b"}
    assert browser.find_element(By.TAG_NAME, "h1").text == "Flaky cases"


def test_the_static_site_in_the_browser(
    browser: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    from selenium.webdriver.common.by import By

    from evalctl.history.store import open_store
    from evalctl.view.static import write_site

    folder = tmp_path_factory.mktemp("static")
    build_store(folder / "history.sqlite")
    with open_store(str(folder / "history.sqlite")) as store:
        write_site(store, folder / "site")
    browser.get((folder / "site" / "index.html").as_uri())
    assert len(_rows(browser, "runs")) == RUNS  # a static list is whole
    _click_to(browser, browser.find_element(By.LINK_TEXT, "Cases"), "/cases/index.html")
    _click_to(browser, browser.find_element(By.LINK_TEXT, "shop/steady"), "/shop/steady/index")
    squares = browser.find_elements(By.CSS_SELECTOR, "#strip a")
    statuses = [s.get_attribute("data-status") for s in squares]
    assert statuses == ["pass"] * (BROKEN_AT - 1) + ["fail"] * (RUNS - BROKEN_AT + 1)
    assert browser.find_elements(By.CSS_SELECTOR, "#strip .cp")
    # Its links are files of the site: the changepoint's run opens.
    link = browser.find_element(By.ID, "changepoint").find_element(By.TAG_NAME, "a")
    _click_to(browser, link, "/runs/")
    assert browser.find_element(By.TAG_NAME, "h1").text.startswith("Run ")
    assert browser.current_url.endswith("/index.html")
