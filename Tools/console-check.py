#!/usr/bin/python3
"""The console in a real browser: headless Chromium driven by Selenium against real canopy-servers.

Starts two servers on free ports of 127.0.0.1, each with its own data folder: a development server
(no credential: the console opens directly) and one with --admin-secret (the console asks). Then
checks, in Chromium (`chromium --headless=new`, /usr/bin/chromedriver):

  tree        the seeded tree shows, nested nodes expand
  live        a REST write appears within 1 s and flashes
  edit        an inline edit, an add, a rename, a clone and a delete made in the page land on the server
  query       the query bar's results, and its warning for an ordering no .indexOn declares
  xss         a key <img src=x onerror=alert(1)> and a value <script>alert(1)</script> show as text, run nothing
  transfer    importing a file and exporting it again round-trip it byte for byte
  big         a node with 1,000,000 children: first page, scrolling down and up, bounded DOM
  rules       the rules document shows; a refused one is shown at its line and column; a good one is set
  secret      with --admin-secret the console asks; a wrong credential is refused, the right one works,
              kept in sessionStorage only; import in parts under a small request limit, export with it;
              the rules simulator and the log of refused requests refuse without the admin credential
              and without it the namespace list, Connections and Load refuse and say so
  simulator   the rules simulator shows the verdict and the deciding rule (or the rules tried), and agrees
              with the recorded outcome and the server's own answer on cases of firebase-rules-cases.json
  refusals    a refused REST write shows in the Rules view's log of refused requests, as text
  namespaces  the namespace picker lists a second namespace and opens it
  connections the Connections view shows a WebSocket client the check opens, its listen and onDisconnect
  load        the Load view's charts move while writes happen
  origin      a page of another origin is refused `owner` (fetch and WebSocket) and served without it; the
              console opened at a name that is not the server's (DNS rebinding) says why it cannot sign in
  hot         (only with --figures) events/s reaching the page while canopy-load writes to what it shows

Every wait waits for a state (WebDriverWait), never a fixed time.

    Tools/console-check.py [CASE ...] [--bin DIR] [--screenshots DIR] [--figures] [--keep]

--bin: the folder of canopy-server (and canopy-load for --figures), default .build/debug.
--screenshots DIR: PNGs of each view (Docs/console/ holds the ones the docs show).
--figures: measure the first page of the 1,000,000-children node (several times) and the update
rate the page keeps up with under canopy-load (use release builds: --bin .build/release).
Needs the Debian packages chromium, chromium-driver and python3-selenium (run with /usr/bin/python3).
"""

import argparse
import http.server
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.error
import urllib.parse
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException, StaleElementReferenceException, TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

SECRET = "console-check-admin-secret-0123456789"
BIG_CHILDREN = 1_000_000
WAIT = 60
SEED = {
    "users": {
        "ada": {"name": "Ada Lovelace", "born": 1815, "admin": True, "langs": ["en", "fr", "it"]},
        "alan": {"name": "Alan Turing", "born": 1912, "admin": False},
        "grace": {"name": "Grace Hopper", "born": 1906, "admin": True},
    },
    "rooms": {"lobby": {"topic": "Welcome", "messages": {"m1": {"by": "ada", "text": "hello"}}}},
    "counter": 42,
    "xss": {"<img src=x onerror=alert(1)>": "<script>alert(1)</script>"},
}


def say(message):
    print(f"console-check: {message}", flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A canopy-server on a free port with its own data folder, stopped by stop()."""

    def __init__(self, binary, folder, name, *arguments, credential="owner"):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.credential = credential
        self.log_path = os.path.join(folder, f"{name}.log")
        data = os.path.join(folder, f"{name}-data")
        with open(self.log_path, "w") as log:
            self.process = subprocess.Popen(
                [binary, "--host", "127.0.0.1", "--port", str(self.port), "--data", data, "--log-level", "warning",
                 *arguments],
                stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"canopy-server exited: {open(self.log_path).read()}")
            try:
                urllib.request.urlopen(f"{self.url}/health", timeout=1).read()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"canopy-server on {self.url} did not answer /health")

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def request(self, method, path, body=None, ns=None, raw=False, query=""):
        """A REST request with the server's admin credential; the answer's bytes (raw) or JSON."""
        url = f"{self.url}{path}.json?" + (f"ns={ns}&" if ns else "") + query
        data = body if isinstance(body, bytes) else (None if body is None else json.dumps(body).encode())
        request = urllib.request.Request(url, data=data, method=method,
                                         headers={"Authorization": f"Bearer {self.credential}"})
        with urllib.request.urlopen(request, timeout=300) as answer:
            content = answer.read()
        return content if raw else (json.loads(content) if content else None)


class Check:
    def __init__(self, options, folder):
        self.options = options
        self.folder = folder
        self.downloads = os.path.join(folder, "downloads")
        os.makedirs(self.downloads)
        binary = os.path.join(options.bin, "canopy-server")
        if not os.access(binary, os.X_OK):
            sys.exit(f"console-check: {binary} is missing; build it first (swift build --product canopy-server)")
        self.binary = binary
        # Room for the 1,000,000-children node in one PUT.
        self.dev = Server(binary, folder, "dev", "--max-message-bytes", "67108864")
        # A small request limit, so that an import of a larger file goes in parts.
        self.secret = Server(binary, folder, "secret", "--max-message-bytes", "300000", "--admin-secret", SECRET,
                             credential=SECRET)
        self.driver = self.browser()
        self.failures = []
        self.figures = {}

    def browser(self):
        options = webdriver.ChromeOptions()
        options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
        for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,800",
                         "--disable-gpu", "--hide-scrollbars",
                         # A name of 127.0.0.1 that is not localhost, as a DNS-rebinding site's would be.
                         "--host-resolver-rules=MAP console-check.test 127.0.0.1"]:
            options.add_argument(argument)
        options.add_experimental_option("prefs", {"download.default_directory": self.downloads,
                                                  "download.prompt_for_download": False})
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
        driver.execute_cdp_cmd("Browser.setDownloadBehavior",
                               {"behavior": "allow", "downloadPath": self.downloads, "eventsEnabled": True})
        return driver

    def close(self):
        try:
            self.driver.quit()
        finally:
            self.dev.stop()
            self.secret.stop()

    # Waiting.

    def wait(self, condition, what, timeout=WAIT):
        try:
            return WebDriverWait(self.driver, timeout, poll_frequency=0.02).until(lambda _: condition())
        except TimeoutException:
            raise AssertionError(f"timed out waiting for {what}") from None

    def js(self, script, *arguments):
        return self.driver.execute_script(script, *arguments)

    def open(self, server, path="/", ns=None, fragment=""):
        url = f"{server.url}{path}" + (f"?ns={ns}" if ns else "") + fragment
        self.driver.get(url)

    def wait_tree(self):
        self.wait(lambda: self.js("return document.querySelector('.tree')?.dataset.state") == "ready", "the tree")

    def row(self, path):
        rows = self.driver.find_elements(By.CSS_SELECTOR, f'.row[data-path="{css(path)}"]')
        return rows[0] if rows else None

    def wait_row(self, path):
        return self.wait(lambda: self.row(path), f"the row {path}")

    def row_value(self, path):
        return self.js(
            "const row = document.querySelector(`.row[data-path=\"${arguments[0]}\"] .value`);"
            "return row ? row.textContent : null;", path.replace("\\", "\\\\").replace('"', '\\"'))

    def click_in_row(self, path, selector, what):
        """Clicks `selector` inside the row of `path` (in one step: rows are redrawn as data changes)."""
        self.wait(lambda: self.js(
            "const row = document.querySelector(`.row[data-path=\"${arguments[0]}\"]`);"
            "const target = row && row.querySelector(arguments[1]);"
            "if (!target) return false; target.click(); return true;", css(path), selector), what)

    def click_action(self, path, action):
        self.click_in_row(path, f'[data-action="{action}"]', f"the {action} button of {path}")

    def expand(self, path):
        self.click_in_row(path, ".toggle", f"the toggle of {path}")

    def edit_value(self, path, selector=".leaf-editor input"):
        """Opens the editor of the leaf at `path` (once no other editor is open) and returns its field."""
        self.wait(lambda: not self.driver.find_elements(By.CSS_SELECTOR, ".leaf-editor"), "the last editor to close")
        self.click_in_row(path, ".value", f"the value of {path}")
        return self.wait(lambda: self.driver.find_elements(
            By.CSS_SELECTOR, f'.row[data-path="{css(path)}"] {selector}'), f"the editor of {path}")[0]

    def click_page_action(self, action):
        """Clicks the page's `data-action` button, finding it again if the page re-rendered it meanwhile."""

        def clicked():
            try:
                self.driver.find_element(By.CSS_SELECTOR, f'[data-action="{action}"]').click()
                return True
            except StaleElementReferenceException:
                return False

        self.wait(clicked, f"the {action} button to take a click")

    def dialog(self):
        return self.wait(lambda: self.visible_dialog(), "a dialog")

    def visible_dialog(self):
        dialogs = self.driver.find_elements(By.CSS_SELECTOR, "dialog[open]")
        return dialogs[0] if dialogs else None

    def press(self, dialog, action):
        dialog.find_element(By.CSS_SELECTOR, f'button[data-action="{action}"]').click()

    def wait_dialog_closed(self):
        self.wait(lambda: not self.visible_dialog(), "the dialog to close")

    def wait_server(self, server, path, expected, what, ns=None):
        last = [None]

        def holds():
            last[0] = server.request("GET", path, ns=ns)
            return last[0] == expected

        try:
            WebDriverWait(self.driver, WAIT, poll_frequency=0.05).until(lambda _: holds())
        except TimeoutException:
            raise AssertionError(f"{what}: the server holds {last[0]!r} at {path}, expected {expected!r}") from None

    def screenshot(self, name):
        if self.options.screenshots:
            os.makedirs(self.options.screenshots, exist_ok=True)
            self.driver.save_screenshot(os.path.join(self.options.screenshots, f"{name}.png"))

    def no_alert(self):
        try:
            alert = self.driver.switch_to.alert
        except NoAlertPresentException:
            return
        text = alert.text
        alert.dismiss()
        raise AssertionError(f"a page alert ran: {text!r}")

    # Cases.

    def case_tree(self):
        self.dev.request("PUT", "/", SEED)
        self.open(self.dev, "/")
        self.wait_tree()
        for key in SEED:
            self.wait_row(f"/{key}")
        assert self.row_value("/counter") == "42", self.row_value("/counter")
        self.expand("/users")
        self.wait_row("/users/ada")
        self.expand("/users/ada")
        self.wait_row("/users/ada/name")
        assert self.row_value("/users/ada/name") == '"Ada Lovelace"', self.row_value("/users/ada/name")
        self.expand("/rooms")
        self.wait_row("/rooms/lobby")
        ActionChains(self.driver).move_to_element(self.wait_row("/users/ada/name")).perform()
        self.screenshot("data")

    def case_live(self):
        self.dev.request("PUT", "/", SEED)
        self.open(self.dev, "/users")
        self.wait_tree()
        self.expand("/users/ada")
        self.wait_row("/users/ada/born")
        self.js("""
            window.__changed = null;
            const canvas = document.querySelector('.tree-canvas');
            new MutationObserver(() => {
                const value = document.querySelector('.row[data-path="/users/ada/born"] .value');
                if (window.__changed === null && value && value.textContent === '1816') {
                    window.__changed = {at: performance.now(), flash: value.closest('.row').dataset.flash || ''};
                }
            }).observe(canvas, {subtree: true, childList: true, characterData: true, attributes: true});
        """)
        before = self.js("return performance.now()")
        self.dev.request("PUT", "/users/ada/born", 1816)
        changed = self.wait(lambda: self.js("return window.__changed"), "the write to appear in the page")
        elapsed = changed["at"] - before
        assert elapsed < 1000, f"the write took {elapsed:.0f} ms to appear"
        assert changed["flash"].startswith("changed"), f"the row did not flash as changed: {changed['flash']!r}"
        self.figures["write_to_page_ms"] = round(elapsed)
        self.dev.request("PUT", "/users/bob", {"name": "Bob"})
        row = self.wait_row("/users/bob")
        self.wait(lambda: (row.get_attribute("data-flash") or "").startswith("added"), "the added row to flash")
        self.dev.request("DELETE", "/users/bob")
        self.wait(lambda: (self.row("/users/bob") is not None
                           and self.row("/users/bob").get_attribute("data-kind") == "ghost")
                  or self.row("/users/bob") is None, "the removed row")
        self.wait(lambda: self.row("/users/bob") is None, "the removed row to go")
        say(f"live: a REST write reached the page in {elapsed:.0f} ms")

    def case_edit(self):
        self.dev.request("PUT", "/", SEED)
        self.open(self.dev, "/users")
        self.wait_tree()
        self.expand("/users/ada")
        # Typed inline edits: a number, a string, a boolean.
        editor = self.edit_value("/users/ada/born")
        editor.clear()
        editor.send_keys("1815")
        self.screenshot("edit")
        editor.send_keys(Keys.ENTER)
        self.wait_server(self.dev, "/users/ada/born", 1815, "inline edit (number)")
        editor = self.edit_value("/users/ada/name")
        editor.clear()
        editor.send_keys("Augusta Ada King")
        editor.send_keys(Keys.ENTER)
        self.wait_server(self.dev, "/users/ada/name", "Augusta Ada King", "inline edit (string)")
        select = self.edit_value("/users/ada/admin", ".leaf-editor select.edit-value")
        select.send_keys("false")
        self.driver.find_element(By.CSS_SELECTOR, '.leaf-editor [data-action="save-edit"]').click()
        self.wait_server(self.dev, "/users/ada/admin", False, "inline edit (boolean)")
        # Add a child with a push id prefilled.
        self.click_action("/users/ada", "add-child")
        dialog = self.dialog()
        key = dialog.find_element(By.NAME, "key").get_attribute("value")
        assert len(key) == 20 and key[0] == "-", f"the prefilled key is not a push id: {key!r}"
        dialog.find_element(By.NAME, "type").send_keys("JSON")
        dialog.find_element(By.NAME, "value").send_keys('{"where": "London"}')
        self.screenshot("add-child")
        self.press(dialog, "add")
        self.wait_dialog_closed()
        self.wait_server(self.dev, f"/users/ada/{key}", {"where": "London"}, "add child")
        # Rename and clone, each one multi-path update.
        self.click_action("/users/grace", "clone")
        dialog = self.dialog()
        field = dialog.find_element(By.NAME, "key")
        field.clear()
        field.send_keys("grace2")
        self.press(dialog, "clone")
        self.wait_dialog_closed()
        self.wait_server(self.dev, "/users/grace2", SEED["users"]["grace"], "clone")
        self.click_action("/users/grace2", "rename")
        dialog = self.dialog()
        field = dialog.find_element(By.NAME, "key")
        field.clear()
        field.send_keys("hopper")
        self.press(dialog, "rename")
        self.wait_dialog_closed()
        self.wait_server(self.dev, "/users/hopper", SEED["users"]["grace"], "rename (new key)")
        self.wait_server(self.dev, "/users/grace2", None, "rename (old key)")
        # Delete, after a confirmation.
        self.click_action("/users/hopper", "delete")
        dialog = self.dialog()
        self.screenshot("delete")
        self.press(dialog, "confirm-delete")
        self.wait_dialog_closed()
        self.wait_server(self.dev, "/users/hopper", None, "delete")
        self.wait(lambda: self.row("/users/hopper") is None, "the deleted row to go")

    def case_query(self):
        self.dev.request("PUT", "/", SEED)
        self.open(self.dev, "/users")
        self.wait_tree()
        self.click_page_action("toggle-query")
        bar = self.wait(lambda: self.driver.find_element(By.CSS_SELECTOR, "form.query-bar"), "the query bar")
        bar.find_element(By.NAME, "by").send_keys("child")
        bar.find_element(By.NAME, "child").send_keys("born")
        bar.find_element(By.NAME, "start").send_keys("1900")
        bar.find_element(By.CSS_SELECTOR, '[data-action="run-query"]').click()
        self.wait_tree()
        self.wait_row("/users/alan")
        self.wait(lambda: self.row("/users/ada") is None, "ada (born 1815) to be left out")
        warning = self.wait(lambda: [b for b in self.driver.find_elements(By.CSS_SELECTOR, ".banner.warning")
                                     if b.is_displayed()], "the no_index warning")[0]
        assert ".indexOn" in warning.text and "born" in warning.text, warning.text
        self.screenshot("query")
        bar = self.driver.find_element(By.CSS_SELECTOR, "form.query-bar")
        bar.find_element(By.NAME, "by").send_keys("key")
        bar.find_element(By.NAME, "startKind").send_keys("start after")
        start = bar.find_element(By.NAME, "start")
        start.clear()
        start.send_keys("ada")
        bar.find_element(By.NAME, "limitKind").send_keys("last")
        limit = bar.find_element(By.NAME, "limit")
        limit.clear()
        limit.send_keys("1")
        bar.find_element(By.CSS_SELECTOR, '[data-action="run-query"]').click()
        self.wait(lambda: self.js("return [...document.querySelectorAll('.row[data-path]')].map(r => r.dataset.path)")
                  == ["/users/grace"], "the last child after ada by key")

    def case_xss(self):
        self.dev.request("PUT", "/", SEED)
        self.open(self.dev, "/xss")
        self.wait_tree()
        key = "<img src=x onerror=alert(1)>"
        path = f"/xss/{key}"
        self.wait_row(path)
        shown = self.js("return document.querySelector(`.row[data-path=\"${arguments[0]}\"] .key`).textContent", path)
        assert shown == key, f"the key shows as {shown!r}"
        assert self.row_value(path) == '"<script>alert(1)</script>"', self.row_value(path)
        assert self.js("return document.querySelectorAll('.tree img, .tree script').length") == 0, "markup ran"
        self.no_alert()
        # The breadcrumb and the dialogs show the key as text too.
        self.open(self.dev, "/xss/" + urllib.parse.quote(key))
        self.wait_tree()
        crumbs = self.driver.find_element(By.CSS_SELECTOR, ".breadcrumb").text
        assert key in crumbs, crumbs
        assert self.js("return document.querySelectorAll('img').length") == 0
        self.no_alert()
        self.screenshot("xss")

    def case_transfer(self):
        # A document as the server writes JSON (compact, keys in the server's order), about 2 MB.
        document = {f"item{i:05d}": {"n": i, "tags": {"a": True, "b": "x" * (i % 50)}, "text": f"record {i} " * 10}
                    for i in range(12000)}
        source = os.path.join(self.folder, "import.json")
        self.dev.request("PUT", "/scratch", document)
        exact = self.dev.request("GET", "/scratch", raw=True)
        self.dev.request("DELETE", "/scratch")
        with open(source, "wb") as out:
            out.write(exact)
        self.dev.request("PUT", "/transfer/placeholder", True)
        self.open(self.dev, "/transfer")
        self.wait_tree()
        self.click_page_action("import-here")
        dialog = self.dialog()
        dialog.find_element(By.NAME, "file").send_keys(source)
        self.press(dialog, "import")
        self.wait_dialog_closed()
        on_server = self.dev.request("GET", "/transfer", raw=True)
        assert on_server == exact, "the imported data differs from the file"
        self.export_and_compare(self.dev, "/transfer", "transfer.json", exact)
        say(f"transfer: {len(exact):,} bytes imported and exported byte for byte")

    def export_and_compare(self, server, path, name, expected):
        target = os.path.join(self.downloads, name)
        if os.path.exists(target):
            os.remove(target)
        self.click_page_action("export-here")

        def downloaded():
            names = os.listdir(self.downloads)
            if any(n.endswith(".crdownload") for n in names) or name not in names:
                return False
            with open(target, "rb") as file:
                return file.read() == expected or None

        try:
            self.wait(downloaded, f"{name} to be downloaded whole")
        except AssertionError:
            have = open(target, "rb").read() if os.path.exists(target) else None
            raise AssertionError(f"the export differs: {len(have) if have else 'no'} bytes, expected "
                                 f"{len(expected)}; in the folder: {os.listdir(self.downloads)}") from None

    def case_big(self):
        children = self.options.big_children
        say(f"big: seeding {children:,} children")
        started = time.monotonic()
        body = ("{" + ",".join(f'"k{i:07d}":{i}' for i in range(children)) + "}").encode()
        self.dev.request("PUT", "/big", body, ns="big", query="print=silent")
        say(f"big: seeded in {time.monotonic() - started:.1f} s")
        timings = []
        for _ in range(self.options.repeat if self.options.figures else 1):
            self.open(self.dev, "/big", ns="big")
            self.wait_tree()
            timings.append(int(self.js("return document.querySelector('.tree').dataset.firstPageMs")))
        first_page = min(timings) if self.options.figures else timings[0]
        self.figures["first_page_ms"] = timings
        say(f"big: first page on screen {timings} ms after navigation")
        assert self.row("/big/k0000000") is not None
        assert first_page < 1000, f"the first page took {first_page} ms"
        tree = self.driver.find_element(By.CSS_SELECTOR, ".tree")
        state = lambda name: tree.get_attribute(f"data-{name}")
        peak_rendered = 0
        peak_rows = 0
        # Scroll down through 20 pages.
        for step in range(20):
            last = self.last_key()
            self.js("arguments[0].scrollTop = arguments[0].scrollHeight", tree)
            self.wait(lambda: self.last_key() != last and state("pages") and self.all_loaded(),
                      f"the page after {last}")
            peak_rendered = max(peak_rendered, int(state("rendered")))
            peak_rows = max(peak_rows, int(state("rows")))
        bottom = self.last_key()
        assert bottom >= "k0001000", f"scrolled down only to {bottom}"
        assert int(state("pages")) <= 6, state("pages")
        first_after_down = self.first_key()
        assert first_after_down > "k0000000", "the first pages were not dropped"
        # Scroll back up through 10 pages.
        for step in range(10):
            first = self.first_key()
            self.js("arguments[0].scrollTop = 0", tree)
            self.wait(lambda: self.first_key() < first and self.all_loaded(), f"the page before {first}")
            peak_rendered = max(peak_rendered, int(state("rendered")))
            peak_rows = max(peak_rows, int(state("rows")))
        assert self.first_key() < first_after_down
        # The last children, and a key in the middle.
        self.click_page_action("last-page")
        last_key = f"k{children - 1:07d}"
        self.wait(lambda: self.row(f"/big/{last_key}") is not None and state("at-end") == "true", "the last page")
        jump = self.driver.find_element(By.CSS_SELECTOR, ".jump-key")
        middle = f"k{children // 2:07d}"
        jump.send_keys(middle, Keys.ENTER)
        self.wait(lambda: self.row(f"/big/{middle}") is not None, f"the page at {middle}")
        self.wait(lambda: self.all_loaded() and int(state("pages")) >= 2, "the page before it")
        self.screenshot("big")
        assert peak_rendered <= 100, f"{peak_rendered} rows in the DOM"
        assert peak_rows <= 7 * 50, f"{peak_rows} rows held"
        heap = self.js("return performance.memory ? performance.memory.usedJSHeapSize : null")
        # Keys with a space and a plus page too (a bound goes in the query string percent-encoded).
        spaced = {f"key {i:03d}+": i for i in range(120)}
        self.dev.request("PUT", "/spaced", spaced, ns="big")
        self.open(self.dev, "/spaced", ns="big")
        self.wait_tree()
        tree = self.driver.find_element(By.CSS_SELECTOR, ".tree")
        for wanted in ["key 070+", "key 119+"]:
            self.js("arguments[0].scrollTop = arguments[0].scrollHeight", tree)
            self.wait(lambda: wanted in [row["key"] for row in self.rows_held()], f"the row {wanted}")
        held = [row["key"] for row in self.rows_held()]
        assert held == sorted(spaced), f"{len(held)} rows held: {held[:3]} … {held[-3:]}"
        sizes = self.js("return window.__console.tree.pages.map(p => Object.keys(p.data || {}).length)")
        assert sizes == [50, 50, 20], f"pages of {sizes} children (the bounds were misread)"
        self.figures["big_peak_dom_rows"] = peak_rendered
        self.figures["big_peak_rows_held"] = peak_rows
        say(f"big: scrolled to {bottom} and back; at most {peak_rendered} rows in the DOM, {peak_rows} held"
            + (f", JS heap {heap / 1e6:.0f} MB" if heap else ""))

    def rows_held(self):
        return self.js("return window.__console.tree.rows.filter(r => r.keys)"
                       ".map(r => ({key: r.keys[r.keys.length - 1], kind: r.kind}))")

    def last_key(self):
        keys = self.js("return window.__console?.tree?.rows.filter(r => r.keys).map(r => r.keys[r.keys.length-1])")
        return max(keys) if keys else ""

    def first_key(self):
        keys = self.js("return window.__console?.tree?.rows.filter(r => r.keys).map(r => r.keys[r.keys.length-1])")
        return min(keys) if keys else ""

    def all_loaded(self):
        return self.js("return window.__console?.tree?.pages.every(p => p.loaded) && !window.__console.tree.loading")

    def case_rules(self):
        self.open(self.dev, "/", fragment="#rules")
        area = self.wait(lambda: self.driver.find_element(By.CSS_SELECTOR, "textarea.rules-text"), "the editor")
        self.wait(lambda: "Loading" not in self.driver.find_element(By.CSS_SELECTOR, ".rules-status").text,
                  "the rules to load")
        bad = '{\n  "rules": {\n    ".read": "auth != null &&",\n    ".write": true\n  }\n}'
        self.js("arguments[0].value = arguments[1]; arguments[0].dispatchEvent(new Event('input'))", area, bad)
        self.click_page_action("save-rules")
        status = self.driver.find_element(By.CSS_SELECTOR, ".rules-status")
        self.wait(lambda: status.get_attribute("data-line"), "the refusal's line")
        assert status.get_attribute("data-line") == "3", status.get_attribute("data-line")
        assert "line 3" in status.text, status.text
        assert self.driver.find_elements(By.CSS_SELECTOR, ".gutter .error-line"), "the line is not marked"
        self.screenshot("rules")
        good = ('{\n  // Everyone reads; writes need a signed-in user.\n  "rules": {\n    ".read": true,\n'
                '    ".write": "auth != null",\n    "users": { ".indexOn": ["born"] }\n  }\n}')
        self.js("arguments[0].value = arguments[1]; arguments[0].dispatchEvent(new Event('input'))", area, good)
        self.click_page_action("save-rules")
        self.wait(lambda: "Saved" in status.text, "the rules to be saved")
        with urllib.request.urlopen(urllib.request.Request(
                f"{self.dev.url}/.settings/rules.json", headers={"Authorization": "Bearer owner"})) as answer:
            assert answer.read().decode() == good
        self.screenshot("rules-saved")
        open_rules = '{"rules": {".read": true, ".write": true}}'
        urllib.request.urlopen(urllib.request.Request(
            f"{self.dev.url}/.settings/rules.json", data=open_rules.encode(), method="PUT",
            headers={"Authorization": "Bearer owner"})).read()

    def case_secret(self):
        self.secret.request("PUT", "/", {"private": {"note": "only the admin reads this"}})
        urllib.request.urlopen(urllib.request.Request(
            f"{self.secret.url}/.settings/rules.json", data=b'{"rules": {".read": false, ".write": false}}',
            method="PUT", headers={"Authorization": f"Bearer {SECRET}"})).read()
        self.open(self.secret, "/")
        dialog = self.wait(lambda: self.driver.find_elements(By.CSS_SELECTOR, "dialog.sign-in[open]"),
                           "the sign-in dialog")[0]
        assert not self.driver.find_elements(By.CSS_SELECTOR, ".tree"), "the data showed before signing in"
        field = dialog.find_element(By.NAME, "credential")
        field.send_keys("not-the-secret")
        self.press(dialog, "sign-in")
        status = dialog.find_element(By.CSS_SELECTOR, ".dialog-status")
        self.wait(lambda: "Refused" in status.text, "the refusal")
        self.screenshot("sign-in")
        assert self.visible_dialog(), "a wrong credential was accepted"
        field.clear()
        field.send_keys(SECRET)
        self.press(dialog, "sign-in")
        self.wait_dialog_closed()
        self.wait_tree()
        self.wait_row("/private")
        identity = self.driver.find_element(By.CSS_SELECTOR, ".identity-text").text
        assert identity == "admin", identity
        stored = self.js("return [sessionStorage.getItem('canopy.console.credential'), localStorage.length,"
                         " document.cookie]")
        assert stored == [SECRET, 0, ""], stored
        # An import over the server's request limit goes in parts; the export carries the credential.
        document = {f"g{g:03d}": {f"r{r:04d}": {"text": "y" * 40, "n": r} for r in range(200)} for g in range(40)}
        self.dev.request("PUT", "/scratch", document)
        exact = self.dev.request("GET", "/scratch", raw=True)
        self.dev.request("DELETE", "/scratch")
        assert len(exact) > 300000
        source = os.path.join(self.folder, "parts.json")
        with open(source, "wb") as out:
            out.write(exact)
        self.open(self.secret, "/parts")
        self.wait_tree()
        self.click_page_action("import-here")
        dialog = self.dialog()
        dialog.find_element(By.NAME, "file").send_keys(source)
        self.press(dialog, "import")
        self.wait(lambda: "in parts" in dialog.find_element(By.CSS_SELECTOR, ".dialog-status").text
                  or not self.visible_dialog(), "the import")
        self.screenshot("import")
        self.wait_dialog_closed()
        assert self.secret.request("GET", "/parts", raw=True) == exact, "the import in parts differs"
        self.export_and_compare(self.secret, "/parts", "parts.json", exact)
        # A new tab (a new session) asks again.
        self.js("sessionStorage.clear()")
        self.open(self.secret, "/")
        self.wait(lambda: self.driver.find_elements(By.CSS_SELECTOR, "dialog.sign-in[open]"), "the sign-in dialog")
        # Without the credential the rules tools and the admin views refuse, and say so.
        self.secret_rules_tools()
        for tab, view in [("connections", ".connections-view"), ("load", ".load-view")]:
            self.tab(tab)
            status = self.wait(lambda: self.driver.find_elements(
                By.CSS_SELECTOR, f'{view} .ops-status[data-refused="401"]'), f"the {tab} view's refusal")[0]
            assert "admin" in status.text, status.text
            if tab == "connections":
                self.screenshot("refused")
        self.driver.find_element(By.CSS_SELECTOR, ".namespace-toggle").click()
        self.wait(lambda: self.driver.find_elements(By.CSS_SELECTOR, '.namespace-note[data-refused="401"]'),
                  "the namespace list's refusal")

    # The rules simulator and the log of refused requests.

    def secret_rules_tools(self):
        """Without the admin credential the simulator and the log refuse, over REST and in the page."""
        for method, tool, body in [("POST", "simulate", b'{"path": "/", "operation": "read"}'),
                                   ("GET", "refusals", None)]:
            for headers in [{}, {"Authorization": "Bearer not-the-secret"}]:
                try:
                    urllib.request.urlopen(urllib.request.Request(
                        f"{self.secret.url}/.settings/rules/{tool}.json", data=body, method=method, headers=headers))
                    raise AssertionError(f"{tool} answered without the admin credential")
                except urllib.error.HTTPError as error:
                    assert error.code == 401, (tool, error.code)
                    assert "error" in json.loads(error.read()), tool
        dialog = self.visible_dialog()
        self.press(dialog, "anonymous")
        self.wait_dialog_closed()
        self.driver.find_element(By.CSS_SELECTOR, '.tabs a[data-tab="rules"]').click()
        self.wait(lambda: self.driver.find_elements(By.CSS_SELECTOR, ".rules-simulator form"), "the simulator")
        status = self.driver.find_element(By.CSS_SELECTOR, ".log-status")
        self.wait(lambda: "admin credential" in status.text, "the log's refusal")
        self.click_page_action("simulate")
        result = self.driver.find_element(By.CSS_SELECTOR, ".sim-result")
        self.wait(lambda: result.get_attribute("data-verdict") == "error", "the simulator's refusal")
        assert "admin credential" in result.text, result.text
        assert not self.driver.find_elements(By.CSS_SELECTOR, ".refusal"), "refusals showed without the admin"

    def open_rules(self, server, ns=None):
        self.open(server, "/", ns=ns, fragment="#rules")
        self.wait(lambda: self.driver.find_elements(By.CSS_SELECTOR, ".rules-simulator form"), "the simulator")

    def simulate(self, operation, path, auth=None, data=None, draft=False):
        """Fills the simulator (auth: None, a uid, or a dict of token claims), runs it and returns the result."""
        form = self.driver.find_element(By.CSS_SELECTOR, ".rules-simulator form")
        result = self.driver.find_element(By.CSS_SELECTOR, ".sim-result")
        runs = result.get_attribute("data-runs") or "0"
        kind = "none" if auth is None else "uid" if isinstance(auth, str) else "claims"
        self.js("""
            const [form, values] = arguments;
            for (const [name, value] of Object.entries(values)) {
                const field = form.elements[name];
                if (field.type === "checkbox") field.checked = value; else field.value = value;
                field.dispatchEvent(new Event(field.tagName === "SELECT" ? "change" : "input"));
            }""", form, {"sim-operation": operation, "sim-path": path, "sim-auth-kind": kind,
                         "sim-uid": auth if isinstance(auth, str) else "",
                         "sim-claims": json.dumps(auth) if isinstance(auth, dict) else "",
                         "sim-data": json.dumps(data), "sim-draft": draft})
        form.find_element(By.CSS_SELECTOR, '[data-action="simulate"]').click()
        # Before its first verdict the result has no runs at all: read that as "0", as `runs` is.
        self.wait(lambda: self.js("return arguments[0].dataset.runs || '0'", result) != runs, "the simulator's verdict")
        return result

    def set_rules(self, server, rules, ns=None):
        url = f"{server.url}/.settings/rules.json" + (f"?ns={ns}" if ns else "")
        urllib.request.urlopen(urllib.request.Request(
            url, data=rules.encode(), method="PUT", headers={"Authorization": f"Bearer {server.credential}"})).read()

    def case_simulator(self):
        rules = ('{\n  "rules": {\n    "users": {\n      "$uid": {\n        ".read": "auth != null && auth.uid == $uid",\n'
                 '        ".write": "auth.uid == $uid || auth.token.admin == true",\n'
                 '        "born": { ".validate": "newData.isNumber()" }\n      }\n    }\n  }\n}')
        self.set_rules(self.dev, rules, ns="sim")
        self.dev.request("PUT", "/", SEED, ns="sim")
        self.open_rules(self.dev, ns="sim")
        result = self.simulate("read", "/users/ada", "ada")
        assert result.get_attribute("data-verdict") == "allowed", result.text
        assert "/users/$uid/.read" in result.find_element(By.CSS_SELECTOR, ".decided-by").text, result.text
        result = self.simulate("set", "/users/ada/born", {"sub": "grace", "admin": True}, data=1816)
        assert result.get_attribute("data-verdict") == "allowed", result.text
        result = self.simulate("set", "/users/ada/born", "ada", data="1815")
        assert result.get_attribute("data-verdict") == "denied", result.text
        assert "/users/$uid/born/.validate" in result.text, result.text
        result = self.simulate("read", "/users/ada", "alan")
        assert result.get_attribute("data-verdict") == "denied", result.text
        tried = [item.text for item in result.find_elements(By.CSS_SELECTOR, ".tried li")]
        assert len(tried) == 1 and "auth != null && auth.uid == $uid" in tried[0] and "was false" in tried[0], tried
        self.screenshot("simulator")
        # The draft in the editor, not saved.
        area = self.driver.find_element(By.CSS_SELECTOR, "textarea.rules-text")
        self.wait(lambda: area.get_attribute("value") == rules, "the rules in the editor")
        self.js("arguments[0].value = arguments[1]; arguments[0].dispatchEvent(new Event('input'))", area,
                '{"rules": {".read": true}}')
        result = self.simulate("read", "/users/ada", None, draft=True)
        assert result.get_attribute("data-verdict") == "allowed" and "draft rules" in result.text, result.text
        # Cases of the rules corpus whose auth the page can give (none, or a uid): the page's verdict is the
        # recorded one and the server's own answer to the request.
        corpus = json.load(open("Tests/RulesTests/Fixtures/firebase-rules-cases.json"))
        chosen = [case for case in corpus
                  if case["op"] in ("read", "set", "update") and not {"skip", "disputed", "needs_now", "query"} & set(case)
                  and (case["auth"] is None or set(case["auth"]) == {"uid"})
                  and "auth." not in json.dumps(case["rules"]).replace("auth.uid", "")]
        picked = [case for op in ("read", "set", "update") for case in [c for c in chosen if c["op"] == op][:4]]
        assert len(picked) >= 10, len(picked)
        for case in picked:
            self.set_rules(self.dev, json.dumps(case["rules"]), ns="corpus")
            self.dev.request("PUT", "/", json.dumps(case["data"]).encode(), ns="corpus")
            if case is picked[0]:
                self.open_rules(self.dev, ns="corpus")
            auth = None if case["auth"] is None else case["auth"]["uid"]
            result = self.simulate(case["op"], case["path"], auth, data=case.get("value"))
            shown, text = self.js("return [arguments[0].dataset.verdict, arguments[0].textContent]", result)
            verdict = {"allowed": "allow", "denied": "deny"}.get(shown, f"{shown}: {text}")
            override = urllib.parse.quote(json.dumps(case["auth"]))
            method = {"read": "GET", "set": "PUT", "update": "PATCH"}[case["op"]]
            try:
                self.dev.request(method, case["path"].rstrip("/") or "/",
                                 None if method == "GET" else json.dumps(case.get("value")).encode(),
                                 ns="corpus", query=f"auth_variable_override={override}")
                answer = "allow"
            except urllib.error.HTTPError as error:
                answer = "deny" if error.code == 401 else f"status {error.code}"
            assert verdict == case["expect"] == answer, (case["id"], verdict, case["expect"], answer)
        say(f"simulator: {len(picked)} corpus cases agree ({', '.join(case['id'] for case in picked)})")

    def case_refusals(self):
        self.set_rules(self.dev, json.dumps({"rules": {".read": True, "users": {"$uid": {".write": "auth.uid == $uid"}}}},
                                            indent=2), ns="log")
        self.open_rules(self.dev, ns="log")
        status = self.driver.find_element(By.CSS_SELECTOR, ".log-status")
        self.wait(lambda: "live" in status.text, "the log")
        key = "<img src=x onerror=alert(1)>"
        for path in ["/users/ada/name", "/users/" + urllib.parse.quote(key, safe="")]:
            try:
                urllib.request.urlopen(urllib.request.Request(
                    f"{self.dev.url}{path}.json?ns=log", data=b'"<script>alert(1)</script>"', method="PUT"))
                raise AssertionError(f"the write to {path} was not refused")
            except urllib.error.HTTPError as error:
                assert error.code == 401, error.code
        rows = self.wait(lambda: len(self.driver.find_elements(By.CSS_SELECTOR, ".refusal")) >= 2 and
                         self.driver.find_elements(By.CSS_SELECTOR, ".refusal"), "the refusals in the log")
        newest = rows[0].find_element(By.CSS_SELECTOR, ".refusal-path").text
        assert newest == f"/users/{key}", newest
        cells = [rows[1].find_element(By.CSS_SELECTOR, selector).text
                 for selector in [".refusal-operation", ".refusal-path", ".refusal-who", ".refusal-transport"]]
        assert cells == ["set", "/users/ada/name", "unauthenticated", "rest"], cells
        rows[1].find_element(By.CSS_SELECTOR, "summary").click()
        tried = self.wait(lambda: rows[1].find_elements(By.CSS_SELECTOR, ".tried li"), "the rules tried")
        assert "/users/$uid/.write" in tried[0].text and "auth.uid == $uid" in tried[0].text, tried[0].text
        assert not self.driver.find_elements(By.CSS_SELECTOR, ".refusal img, .refusal script"), "a key became markup"
        alan = urllib.parse.quote(json.dumps({"uid": "alan"}))
        try:
            self.dev.request("PATCH", "/users/ada", {"name": "Alan"}, ns="log", query=f"auth_variable_override={alan}")
            raise AssertionError("alan's update of /users/ada was not refused")
        except urllib.error.HTTPError as error:
            assert error.code == 401, error.code
        self.wait(lambda: self.driver.find_elements(By.CSS_SELECTOR, ".refusal")[0].find_element(
            By.CSS_SELECTOR, ".refusal-who").text == "alan", "alan's refusal in the log")
        self.screenshot("refusals")

    # The server's own state (admin only).

    def open_probe(self, server, ns, listen, presence):
        """Opens, from the page, a second realtime connection to `ns` that listens at `listen` and
        queues an onDisconnect set at `presence`; window.__probe.ready once both were answered."""
        self.js(
            "const [url, listen, presence] = arguments;"
            "const probe = window.__probe = {socket: new WebSocket(url), answered: 0};"
            "probe.socket.onmessage = (event) => {"
            "  const message = JSON.parse(event.data);"
            "  if (message.t === 'c' && message.d.t === 'h') {"
            "    probe.socket.send(JSON.stringify({t: 'd', d: {r: 1, a: 'q', b: {p: listen, h: ''}}}));"
            "    probe.socket.send(JSON.stringify({t: 'd', d: {r: 2, a: 'o', b: {p: presence, d: 'offline'}}}));"
            "  } else if (message.t === 'd' && message.d.r) probe.answered++;"
            "};",
            f"ws://127.0.0.1:{server.port}/.ws?v=5&ns={ns}", listen, presence)
        self.wait(lambda: self.js("return window.__probe.answered") >= 2, "the probe's listen and onDisconnect")

    def tab(self, name):
        self.driver.find_element(By.CSS_SELECTOR, f'.tabs a[data-tab="{name}"]').click()

    def case_namespaces(self):
        self.dev.request("PUT", "/inventory", {"widgets": 12, "gears": 40}, ns="second")
        self.open(self.dev, "/")
        self.wait_tree()
        self.driver.find_element(By.CSS_SELECTOR, ".namespace-toggle").click()
        item = self.wait(lambda: self.driver.find_elements(By.CSS_SELECTOR, '.namespace-item[data-namespace="second"]'),
                         "the namespace second in the picker")[0]
        listed = [e.get_attribute("data-namespace") for e in self.driver.find_elements(By.CSS_SELECTOR, ".namespace-item")]
        assert "default" in listed and listed == sorted(listed), listed
        assert "stored" in item.text, item.text
        self.screenshot("namespaces")
        item.click()
        self.wait(lambda: "ns=second" in self.driver.current_url, "the page of namespace second")
        self.wait_tree()
        self.wait_row("/inventory")
        assert self.driver.find_element(By.CSS_SELECTOR, ".namespace-input").get_attribute("value") == "second"

    def case_connections(self):
        self.dev.request("PUT", "/rooms", {"lobby": {"topic": "welcome"}}, ns="ops")
        self.open(self.dev, "/", ns="ops", fragment="#connections")
        view = self.wait(lambda: self.driver.find_elements(By.CSS_SELECTOR, ".connections-view[data-count]"),
                         "the connections view")[0]
        self.wait(lambda: view.get_attribute("data-count") not in (None, ""), "the first snapshot")
        self.open_probe(self.dev, "ops", "/rooms", "/presence/probe")

        def probe_row():
            rows = self.js(
                "return [...document.querySelectorAll('.connections-table tbody tr')].map(r => ["
                "r.dataset.session, r.querySelector('.col-listens').textContent,"
                "r.querySelector('.col-on-disconnect').textContent, r.querySelector('.col-identity').textContent,"
                "r.querySelector('.col-address').textContent])")
            found = [row for row in rows if row[1] == "1" and row[2] == "1"]
            return found[0] if found else None

        row = self.wait(probe_row, "the probe's row (1 listen, 1 onDisconnect)")
        session = row[0]
        assert row[3] == "unauthenticated" and row[4] == "127.0.0.1", row
        assert int(view.get_attribute("data-count")) >= 2, "the console's own connection is listed too"
        self.screenshot("connections")
        self.js("window.__probe.socket.close()")
        self.wait(lambda: not self.driver.find_elements(By.CSS_SELECTOR, f'tr[data-session="{css(session)}"]'),
                  "the probe's row to go")
        self.wait_server(self.dev, "/presence/probe", "offline", "the probe's onDisconnect", ns="ops")

    def case_load(self):
        self.open(self.dev, "/", ns="ops", fragment="#load")
        view = self.wait(lambda: self.driver.find_elements(By.CSS_SELECTOR, ".load-view"), "the load view")[0]
        self.wait(lambda: int(view.get_attribute("data-samples")) >= 1, "the first sample")
        self.open_probe(self.dev, "ops", "/ticker", "/presence/load-probe")
        written = [0]

        def moved():
            # Writes (more in some seconds than in others), until the charts of writes, events, bytes
            # sent and latency have moved and hold a few seconds.
            written[0] += 1
            for _ in range(1 + int(time.time() * 2) % 4):
                self.dev.request("PUT", "/ticker", {"n": written[0], "at": time.time()}, ns="ops")
            charts = self.js(
                "return Object.fromEntries([...document.querySelectorAll('.chart')].map(c => "
                "[c.dataset.series, [Number(c.dataset.max || 0), Number(c.dataset.points || 0)]]))")
            return (all(charts.get(name, [0])[0] > 0 for name in ["writes", "events", "bytes", "latency", "connections"])
                    and charts["writes"][1] >= (12 if self.options.screenshots else 2))

        self.wait(moved, "the writes, events, bytes and latency charts to move")
        self.screenshot("load")
        self.js("window.__probe.socket.close()")

    def case_origin(self):
        # A page of another site (a plain page on another port, with no CSP) tries the development
        # server's `owner`.
        site = http.server.ThreadingHTTPServer(("127.0.0.1", 0), OtherSite)
        threading.Thread(target=site.serve_forever, daemon=True).start()
        try:
            self.driver.get(f"http://127.0.0.1:{site.server_address[1]}/")
            answers = self.other_site_tries_owner()
        finally:
            site.shutdown()
            site.server_close()
        assert answers["owner"][0] == 403 and "another origin" in answers["owner"][1], answers
        assert answers["read"] == 403, answers
        assert answers["anonymous"][0] == 200, answers
        assert answers["socket"] == "permission_denied", answers
        assert self.dev.request("GET", "/origin-check") == 1, "the page without the credential wrote"
        self.dev.request("DELETE", "/origin-check")
        # The development server opened at a name another site could point here: `owner` is refused.
        self.driver.get(f"http://console-check.test:{self.dev.port}/")
        dialog = self.wait(lambda: self.driver.find_elements(By.CSS_SELECTOR, "dialog.sign-in[open]"),
                           "the sign-in dialog")[0]
        self.wait(lambda: "browser page" in dialog.text, "the reason in the dialog")
        self.press(dialog, "anonymous")
        self.wait_dialog_closed()

    def other_site_tries_owner(self):
        """From the page shown: a PUT and a read with ?auth=owner, a PUT without it, and a WebSocket's
        auth with owner, against the development server."""
        return self.driver.execute_async_script(
            "const [base, ws, done] = arguments; const results = {};"
            "const put = (query) => fetch(`${base}/origin-check.json${query}`, {method: 'PUT', body: '1'})"
            "  .then(async (r) => [r.status, await r.text()]);"
            "results.owner = await put('?auth=owner');"
            "results.read = await fetch(`${base}/.json?auth=owner`).then((r) => r.status);"
            "results.anonymous = await put('');"
            "const socket = new WebSocket(ws);"
            "socket.onmessage = (event) => {"
            "  const message = JSON.parse(event.data);"
            "  if (message.t === 'c' && message.d.t === 'h')"
            "    socket.send(JSON.stringify({t: 'd', d: {r: 1, a: 'auth', b: {cred: 'owner'}}}));"
            "  else if (message.t === 'd' && message.d.r === 1) { results.socket = message.d.b.s; socket.close();"
            "    done(results); }"
            "};",
            self.dev.url, f"ws://127.0.0.1:{self.dev.port}/.ws?v=5")

    def case_hot(self):
        load = os.path.join(self.options.bin, "canopy-load")
        results = []
        self.dev.request("PUT", "/fan", {"about": "canopy-load fanout sets topic, rate times a second",
                                         "listeners": 1, "owner": "ada"}, ns="load")
        for rate in self.options.rates:
            self.open(self.dev, "/fan", ns="load")
            self.wait_tree()
            counters = "return [window.__console.events, window.__console.tree.framesDrawn || 0, performance.now()]"
            events_before, frames_before, started = self.js(counters)
            run = subprocess.Popen(
                [load, "fanout", "--server", f"127.0.0.1:{self.dev.port}", "--namespace", "load", "--listeners", "1",
                 "--rate", str(rate), "--duration", str(self.options.hot_seconds), "--json"],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            self.wait(lambda: self.js(counters)[0] - events_before >= rate * 2, "two seconds of events", timeout=120)
            self.screenshot("hot")
            output, errors = run.communicate(timeout=600)
            if run.returncode != 0:
                raise AssertionError(f"canopy-load failed ({run.returncode}): {errors[-2000:]}")
            figures = json.loads(output)["canopy"]
            writes = figures["writes"]
            load_ended = self.js("return performance.now()")
            self.wait(lambda: self.js(counters)[0] - events_before >= writes, f"the {writes} events", timeout=120)
            events, frames, ended = self.js(counters)
            events -= events_before
            frames -= frames_before
            seconds = figures["seconds"]
            on_server = self.dev.request("GET", "/fan/topic", ns="load")
            self.wait(lambda: self.row_value("/fan/topic") == json.dumps(on_server), "the page to show the last value")
            result = {"rate": rate, "writes": writes, "page_events": events,
                      "page_events_per_second": round(events / ((ended - started) / 1000)), "frames": frames,
                      "frames_per_second": round(frames / ((ended - started) / 1000), 1),
                      "listener_p99_ms": round(figures["latency"]["p99Ms"], 1),
                      "page_behind_at_end_ms": round(ended - load_ended)}
            results.append(result)
            say(f"hot: {json.dumps(result)}")
        self.figures["hot"] = results


class OtherSite(http.server.BaseHTTPRequestHandler):
    """Another web site: one blank page, no Content-Security-Policy."""

    def do_GET(self):
        body = b"<!doctype html><title>another site</title><p>another site"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *arguments):
        pass


def css(text):
    return text.replace("\\", "\\\\").replace('"', '\\"')


CASES = ["tree", "live", "edit", "query", "xss", "transfer", "rules", "secret", "big", "simulator", "refusals",
         "namespaces", "connections", "load", "origin"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="*", help=f"cases to run (default: {' '.join(CASES)})")
    parser.add_argument("--bin", default=".build/debug")
    parser.add_argument("--screenshots", help="folder for PNGs of each view")
    parser.add_argument("--figures", action="store_true", help="measure the figures for Docs/BENCHMARKS.md")
    parser.add_argument("--repeat", type=int, default=5, help="first-page measurements with --figures")
    parser.add_argument("--rates", type=int, nargs="*", default=[100, 1000, 5000], help="canopy-load rates for hot")
    parser.add_argument("--hot-seconds", type=int, default=10, help="seconds canopy-load writes for hot")
    parser.add_argument("--big-children", type=int, default=BIG_CHILDREN)
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    options = parser.parse_args()
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    options.bin = os.path.abspath(options.bin)
    if options.screenshots:
        options.screenshots = os.path.abspath(options.screenshots)
    cases = options.cases or (CASES + (["hot"] if options.figures else []))
    folder = tempfile.mkdtemp(prefix="canopy-console-check-")
    check = None
    passed = 0
    try:
        check = Check(options, folder)
        for name in cases:
            started = time.monotonic()
            try:
                getattr(check, f"case_{name}")()
                check.no_alert()
                passed += 1
                say(f"ok: {name} ({time.monotonic() - started:.1f} s)")
            except Exception as error:  # noqa: BLE001 — every failure is reported, the next case runs
                check.failures.append(name)
                say(f"FAIL: {name}: {error}")
                traceback.print_exc()
                for entry in check.driver.get_log("browser")[-20:]:
                    say(f"  browser: {entry.get('level')} {entry.get('message')}")
                check.screenshot(f"failed-{name}")
        if check.figures:
            say("figures: " + json.dumps(check.figures))
    finally:
        if check:
            check.close()
        if options.keep:
            say(f"kept {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)
    failed = len(check.failures) if check else len(cases)
    say(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
