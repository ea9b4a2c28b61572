"""Helpers of the console's browser tests: Debian's chromium driven by Selenium through
chromedriver, and `praha console` run as a process (stopped by PID)."""
from __future__ import annotations

import contextlib
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from praha.cluster.local import free_ports
from praha.testing.cluster import wait_for

ROOT = Path(__file__).resolve().parents[2]
#: screenshots of every page the tests open (artefacts; not committed)
SCREENSHOTS = Path(os.environ.get("PRAHA_SCREENSHOTS", ROOT / ".praha" / "screenshots"))
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1400,1000", "--disable-dev-shm-usage"]


@contextlib.contextmanager
def chromium() -> Iterator[object]:
    """A headless chromium with a fresh profile; quit (and its profile removed) at the end."""
    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        pytest.fail("chromium and chromium-driver are not installed (the Makefile's `test` installs them)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="praha-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for f in FLAGS + [f"--user-data-dir={profile}"]:
        options.add_argument(f)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


@contextlib.contextmanager
def console_process(*args: str, log: Path, context: ssl.SSLContext | None = None) -> Iterator[str]:
    """`praha console ARGS` on a free port; its base URL once it answers (over HTTPS with
    `context`). Stopped by PID."""
    (port,) = free_ports(1)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with open(log, "ab") as out:
        proc = subprocess.Popen([sys.executable, "-m", "praha", "console", "--port", str(port), *args],
                                stdout=out, stderr=out, env=env)
    url = f"{'https' if context else 'http'}://127.0.0.1:{port}"
    try:
        def up() -> bool:
            assert proc.poll() is None, f"the console exited: {log.read_text()[-2000:]}"
            with urllib.request.urlopen(url + "/static/console.css", timeout=2, context=context):
                return True
        wait_for(up, timeout=60, what="the console to answer")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def shot(driver, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    driver.save_screenshot(str(path))
    return path


def confirm_submit(driver, form_css: str, button_css: str = "button[type=submit]") -> None:
    """Submit a change form and accept the confirmation the page asks for."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait

    driver.find_element(By.CSS_SELECTOR, f"{form_css} {button_css}").click()
    WebDriverWait(driver, 10).until(EC.alert_is_present()).accept()


def texts_of(driver, css: str) -> list[str]:
    """The texts of every element `css` selects (looked up again if a refresh replaced them)."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By

    for _ in range(20):
        try:
            return [e.text for e in driver.find_elements(By.CSS_SELECTOR, css)]
        except StaleElementReferenceException:
            continue
    return [e.text for e in driver.find_elements(By.CSS_SELECTOR, css)]


def text_of(driver, css: str) -> str:
    """The element's text; looked up again when the live refresh replaced it meanwhile."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By

    for _ in range(20):
        try:
            return driver.find_element(By.CSS_SELECTOR, css).text
        except StaleElementReferenceException:
            continue
    return driver.find_element(By.CSS_SELECTOR, css).text
