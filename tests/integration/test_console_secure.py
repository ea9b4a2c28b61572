"""The console on a secure cluster (`praha cluster up --secure`): visitors log in with a SCRAM
user and the console acts as that user, so the cluster's ACLs decide what the pages show; a
wrong password gets a login error; no password appears in a page or the console's log.

The console here is the one `praha cluster up --console PORT` starts beside the cluster, and
the module's last test checks that `praha cluster down` stops it by its PID."""
from __future__ import annotations

import json
import urllib.request

import psutil
import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from console_browser import chromium, confirm_submit, shot, text_of
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from praha.cluster.local import LocalCluster, free_ports
from praha.cluster.secure import SecureSetup
from praha.testing.cluster import wait_for
from praha.testing.zookeeper import delete_chroot, unique_chroot

pytestmark = pytest.mark.integration
ALICE = "alice-Secret-42"


@pytest.fixture(scope="module")
def secure(zookeeper, tmp_path_factory):
    from praha.cli.main import main as praha

    root = tmp_path_factory.mktemp("console-secure") / "cluster"
    connect = unique_chroot(zookeeper.connect_string)
    (port,) = free_ports(1)
    try:
        assert praha(["cluster", "up", "--secure", "--brokers", "1", "--dir", str(root), "--zookeeper", connect,
                      "--broker-config", "offsets.topic.replication.factor=1",
                      "--broker-config", "offsets.topic.num.partitions=1", "--console", str(port)]) == 0
        beside = json.loads((root / "console.json").read_text())
        assert beside["port"] == port
        assert psutil.pid_exists(beside["pid"])
        state = LocalCluster(root).load()
        bootstrap = ",".join(f"127.0.0.1:{b.port}" for b in state.brokers.values())
        admin_conf = SecureSetup.load(root.parent / "cluster" / "security").client_settings(bootstrap)[
            "confluent-kafka"
        ]
        admin = AdminClient(admin_conf)
        for f in admin.create_topics([NewTopic("seen", 1, 1), NewTopic("hidden", 1, 1)]).values():
            f.result(30)
        assert praha(["configs", "--dir", str(root), "--entity-type", "users", "--entity-name", "alice",
                      "--alter", "--add-config", f"SCRAM-SHA-512=[password={ALICE}]"]) == 0
        assert praha(["acls", "--dir", str(root), "--add", "--allow-principal", "User:alice",
                      "--operation", "Describe", "--topic", "seen"]) == 0
        url = f"http://127.0.0.1:{port}"
        wait_for(lambda: _answers(url), timeout=60, what="the console started by `cluster up --console`")
        with chromium() as browser:
            yield url, browser, root / "console.log"
    finally:
        cluster = LocalCluster(root)
        auth = cluster.zk_auth(cluster.load()) if cluster.exists() else None
        try:
            from praha.console.server import stop_beside

            stop_beside(root)  # when a test failed before `cluster down`
            cluster.down(timeout=15)
        finally:
            delete_chroot(connect, auth=auth)  # its znodes have ACLs: removed as their owner


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/static/console.css", timeout=5) as r:
            return r.status == 200
    except OSError:
        return False


def _login(browser, url: str, user: str, password: str) -> None:
    browser.get(url + "/topics")
    wait_for(lambda: browser.find_elements(By.ID, "login"), timeout=30, what="the login form")
    browser.find_element(By.ID, "user").clear()
    browser.find_element(By.ID, "user").send_keys(user)
    browser.find_element(By.ID, "password").send_keys(password)
    browser.find_element(By.ID, "login").click()


def test_a_wrong_password_gets_a_login_error(secure):
    url, browser, _ = secure
    _login(browser, url, "alice", "not-her-password")
    wait_for(lambda: browser.find_elements(By.ID, "error"), timeout=30, what="the login error")
    assert "login failed for user 'alice'" in text_of(browser, "#error")
    assert "not-her-password" not in browser.page_source
    shot(browser, "login-refused")


def test_a_user_sees_only_the_topics_acls_let_her_describe(secure):
    url, browser, log = secure
    _login(browser, url, "alice", ALICE)
    wait_for(lambda: browser.find_elements(By.ID, "topics"), timeout=30, what="the topic list")
    assert browser.find_elements(By.ID, "topic-seen")
    assert not browser.find_elements(By.ID, "topic-hidden")
    shot(browser, "secure-topics-alice")
    browser.get(url + "/topics/hidden")
    assert "UNKNOWN_TOPIC_OR_PARTITION" in text_of(browser, "#error")
    assert ALICE not in browser.page_source
    text = log.read_text()
    assert "console login: user 'alice'" in text
    assert ALICE not in text
    assert "not-her-password" not in text
    # without Describe on the cluster her ACL page says so (and the console lives on: confluent-kafka's
    # describe of every SCRAM user aborted the process on this refusal)
    browser.get(url + "/acls")
    assert "CLUSTER_AUTHORIZATION_FAILED" in browser.page_source or "authoriz" in browser.page_source.lower()
    assert _answers(url)


def _as(browser, url: str, user: str, password: str) -> None:
    browser.get(url + "/logout")
    _login(browser, url, user, password)
    wait_for(lambda: browser.find_elements(By.ID, "topics"), timeout=30, what=f"{user}'s topic list")


def _admin_on_acls(secure) -> tuple[str, object, object, str]:
    """(url, browser, console log, the admin's password), the admin logged in on /acls."""
    url, browser, log = secure
    admin_password = SecureSetup.load(log.parent / "security").admin_password
    browser.get(url + "/acls")
    if not browser.find_elements(By.ID, "acls") or not text_of(browser, ".who").startswith("admin "):
        _as(browser, url, "admin", admin_password)
        browser.get(url + "/acls")
    return url, browser, log, admin_password


def _logs_in(log, user: str, password: str) -> bool:
    """Whether the cluster takes this SCRAM login (the console's own check, without a page)."""
    from praha.console.cluster_client import ClusterClient, LoginError
    from praha.console.server import target_of_dir

    client = ClusterClient(target_of_dir(log.parent), user, password)
    try:
        client.check_login()
        return True
    except LoginError:
        return False
    finally:
        client.close()


def test_an_acl_added_on_the_page_applies_and_its_removal_too(secure):
    """The admin gives alice Describe on `hidden` from the ACL page (confirmed, logged): she
    then sees it; then it is removed from the page. A malformed principal changes nothing."""
    url, browser, log, admin_password = _admin_on_acls(secure)
    form = browser.find_element(By.ID, "add-acl")
    form.find_element(By.NAME, "principal").send_keys("alice")
    Select(form.find_element(By.NAME, "operation")).select_by_visible_text("DESCRIBE")
    form.find_element(By.NAME, "name").send_keys("hidden")
    confirm_submit(browser, "#add-acl")
    wait_for(lambda: browser.find_elements(By.ID, "error"), timeout=30, what="the refusal")
    assert "a principal is User:name, got 'alice'" in text_of(browser, "#error")

    form = browser.find_element(By.ID, "add-acl")
    form.find_element(By.NAME, "principal").send_keys("User:alice")
    Select(form.find_element(By.NAME, "operation")).select_by_visible_text("DESCRIBE")
    form.find_element(By.NAME, "name").send_keys("hidden")
    confirm_submit(browser, "#add-acl")
    wait_for(lambda: "added: ALLOW User:alice DESCRIBE on TOPIC hidden" in text_of(browser, "#msg"), timeout=30,
             what="the ACL added")
    rows = [r.text for r in browser.find_elements(By.CSS_SELECTOR, "#acls tr.acl")]
    assert any("User:alice" in r and "hidden" in r and "DESCRIBE" in r for r in rows), rows
    shot(browser, "acl-added")

    _as(browser, url, "alice", ALICE)
    assert browser.find_elements(By.ID, "topic-hidden")  # the ACL applies

    _as(browser, url, "admin", admin_password)
    browser.get(url + "/acls")
    at = next(i for i, r in enumerate(browser.find_elements(By.CSS_SELECTOR, "#acls tr.acl"))
              if "User:alice" in r.text and "hidden" in r.text) + 1
    confirm_submit(browser, f"#acls tr.acl:nth-of-type({at}) form.remove-acl")
    wait_for(lambda: "removed: ALLOW User:alice DESCRIBE on TOPIC hidden" in text_of(browser, "#msg"), timeout=30,
             what="the ACL removed")
    assert not [r for r in browser.find_elements(By.CSS_SELECTOR, "#acls tr.acl")
                if "User:alice" in r.text and "hidden" in r.text]
    text = log.read_text()
    assert "change by admin: add ACL ALLOW User:alice DESCRIBE on TOPIC hidden: done" in text
    assert "change by admin: remove ACL ALLOW User:alice DESCRIBE on TOPIC hidden: done" in text
    assert admin_password not in text


def test_a_scram_user_set_on_the_page_logs_in_and_is_removed(secure):
    """The admin sets erin's SCRAM-SHA-512 password on the page: the cluster takes erin's login
    with it; the credential removed on the page, it does not. The password is neither shown nor
    logged."""
    url, browser, log, admin_password = _admin_on_acls(secure)
    form = browser.find_element(By.ID, "set-user")
    form.find_element(By.NAME, "user").send_keys("erin")
    form.find_element(By.NAME, "password").send_keys("erin-Pass-7")
    confirm_submit(browser, "#set-user")
    wait_for(lambda: "set the SCRAM-SHA-512 credential of erin" in text_of(browser, "#msg"), timeout=30,
             what="erin's credential set")
    assert "erin" in text_of(browser, "#users"), text_of(browser, "#users")
    assert browser.find_elements(By.ID, "user-erin-SCRAM_SHA_512"), browser.find_element(By.ID, "users").get_attribute(
        "innerHTML")
    assert "erin-Pass-7" not in browser.page_source
    assert _logs_in(log, "erin", "erin-Pass-7")
    assert not _logs_in(log, "erin", "not-erins")

    confirm_submit(browser, "#user-erin-SCRAM_SHA_512 form.remove-user")
    wait_for(lambda: "removed the SCRAM-SHA-512 credential of erin" in text_of(browser, "#msg"), timeout=30,
             what="erin's credential removed")
    assert not _logs_in(log, "erin", "erin-Pass-7")
    text = log.read_text()
    assert "change by admin: set SCRAM credential erin SCRAM-SHA-512 iterations=8192: done" in text
    assert "erin-Pass-7" not in text


def test_cluster_down_stops_the_console_that_cluster_up_started(secure):
    """Last in the module: `praha cluster down` stops the console by the PID in console.json."""
    from praha.cli.main import main as praha

    url, _, log = secure
    root = log.parent
    pid = json.loads((root / "console.json").read_text())["pid"]
    proc = psutil.Process(pid)
    assert "console" in proc.cmdline()
    assert _answers(url)
    assert praha(["cluster", "down", "--dir", str(root)]) == 0
    wait_for(lambda: not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE, timeout=30,
             what=f"console pid {pid} to exit")
    assert not (root / "console.json").exists()
    assert not _answers(url)
