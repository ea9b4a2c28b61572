"""The web console in a real headless chromium against a live 3-broker cluster: what a person
sees on each page, changes made through the page's forms (each confirmed first), bad input
refused with a message, and a killed broker marked offline without a reload.

One cluster and one browser for the module; screenshots of every page go to
`.praha/screenshots/` (or $PRAHA_SCREENSHOTS)."""
from __future__ import annotations

import ssl
import time
import urllib.request
import uuid
from urllib.parse import quote

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CTP
from console_browser import chromium, confirm_submit, console_process, shot, text_of, texts_of
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from praha.cluster.certs import issue, make_ca
from praha.common import TopicPartition
from praha.console.app import PAGES
from praha.testing.cluster import cluster_on_chroot, wait_for

pytestmark = pytest.mark.integration

TOPIC, GROUP = "orders", "billing"


class Env:
    def __init__(self, cluster, url, store, bootstrap):
        self.cluster, self.url, self.store, self.bootstrap = cluster, url, store, bootstrap


@pytest.fixture(scope="module")
def env(zookeeper, tmp_path_factory):
    root = tmp_path_factory.mktemp("console")
    with cluster_on_chroot(zookeeper.connect_string, root / "cluster", 3, {"offsets.topic.num.partitions": "3"}) as c:
        _seed(c.bootstrap)
        with console_process("--dir", str(c.root), log=root / "console.log") as url:
            yield Env(c.cluster, url, c.store, c.bootstrap)


def _seed(bootstrap: str) -> None:
    """A topic with 30 records (one with a needle and a header) and a group that read 10."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, 3, 3)])[TOPIC].result(30)
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(30):
        value = f'{{"order": {i}, "item": "{"golden-needle" if i == 17 else "plain"}"}}'
        p.produce(TOPIC, value.encode(), key=f"k{i}".encode(), partition=i % 3,
                  headers=[("source", b"web" if i == 17 else b"app")])
    assert p.flush(30) == 0
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "enable.auto.commit": "false"})
    c.assign([CTP(TOPIC, 0, 0)])
    got = 0
    for _ in range(200):
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got += 1
            if got == 10:
                c.commit(message=m, asynchronous=False)
                break
    c.close()
    assert got == 10


@pytest.fixture(scope="module")
def browser(env):
    with chromium() as driver:
        yield driver


def _open(browser, env, path: str) -> None:
    browser.get(env.url + path)
    wait_for(lambda: browser.execute_script("return document.readyState") == "complete", timeout=30,
             what=f"{path} to load")


def test_every_declared_page_opens_without_an_error(env, browser):
    filled = {"{name}": quote(TOPIC), "{group_id}": quote(GROUP)}
    for page in PAGES:
        path = page.path
        for k, v in filled.items():
            path = path.replace(k, v)
        _open(browser, env, path)
        assert browser.find_elements(By.TAG_NAME, "h1"), f"{path} has no heading"
        assert not browser.find_elements(By.ID, "error"), f"{path}: {text_of(browser, '#error')}"
        shot(browser, f"page-{page.name}")


def test_overview_shows_the_controller_and_its_epoch(env, browser):
    _open(browser, env, "/")
    controller = env.store.get_controller_id()
    assert text_of(browser, "#controller") == str(controller)
    assert text_of(browser, "#controller-epoch") == str(env.store.get_controller_epoch()[0])
    assert "controller" in text_of(browser, f"#broker-{controller}")
    assert text_of(browser, "#alive-count") == "3"


def test_topic_page_shows_partitions_leaders_and_isr_as_zookeeper_has_them(env, browser):
    _open(browser, env, f"/topics/{TOPIC}")
    states, _ = env.store.get_partition_states([TopicPartition(TOPIC, p) for p in range(3)])
    for tp, st in states.items():
        row = f"#partition-{tp.partition}"
        assert text_of(browser, f"{row} .leader") == str(st.leader_and_isr.leader)
        assert sorted(text_of(browser, f"{row} .isr").split(",")) == sorted(str(r) for r in st.leader_and_isr.isr)
        assert text_of(browser, f"{row} .hw") == "10"


def test_topic_list_shows_messages_and_the_groups_lag(env, browser):
    _open(browser, env, "/topics")
    cells = texts_of(browser, f"#topic-{TOPIC} td")
    assert cells[4] == "30"  # messages
    assert cells[7] == "0"  # the group committed only partition 0, to its end


def test_the_topic_list_pages_and_finds_by_name(env, browser):
    """Only a page of topics is asked about (100 by default): paged here one topic a page."""
    _open(browser, env, "/topics?size=1&internal=1")
    assert "page 1 of " in text_of(browser, "#topics-summary")
    first = [r.get_attribute("id") for r in browser.find_elements(By.CSS_SELECTOR, "#topics tbody tr")]
    assert first == ["topic-__consumer_offsets"]  # names in order: "_" sorts before letters
    browser.find_element(By.ID, "page-next").click()
    wait_for(lambda: "page 2 of " in text_of(browser, "#topics-summary"), timeout=30, what="page 2")
    second = [r.get_attribute("id") for r in browser.find_elements(By.CSS_SELECTOR, "#topics tbody tr")]
    assert len(second) == 1
    assert second != first
    _open(browser, env, "/topics")
    browser.find_element(By.CSS_SELECTOR, "#find-topics input[name=q]").send_keys("rder")
    browser.find_element(By.CSS_SELECTOR, "#find-topics button").click()
    wait_for(lambda: "with “rder” in the name" in text_of(browser, "#topics-summary"), timeout=30, what="the search")
    assert [r.get_attribute("id") for r in browser.find_elements(By.CSS_SELECTOR, "#topics tbody tr")] == \
        [f"topic-{TOPIC}"]
    _open(browser, env, "/topics?page=two")
    assert "the page must be a whole number" in text_of(browser, "#error")


def test_a_filtered_scan_finds_the_one_message_and_shows_progress(env, browser):
    _open(browser, env, f"/topics/{TOPIC}/messages?run=1&start=oldest&order=oldest&value=golden-needle&format=json")
    wait_for(lambda: browser.find_elements(By.ID, "scan-summary"), timeout=60, what="the scan's results")
    assert text_of(browser, "#scan-status").startswith("done: scanned 30, 1 matched")
    values = texts_of(browser, "#results .value")
    assert len(values) == 1
    assert '"item": "golden-needle"' in values[0]  # pretty JSON
    shot(browser, "messages-filtered")
    _open(browser, env, f"/topics/{TOPIC}/messages?run=1&header=source%3Dweb")
    wait_for(lambda: browser.find_elements(By.ID, "scan-summary"), timeout=60, what="the header scan")
    assert texts_of(browser, "#results .key") == ["k17"]


def test_a_group_shows_its_lag_and_a_reset_is_applied_after_its_dry_run(env, browser):
    gid = f"reset-{uuid.uuid4().hex[:6]}"
    c = Consumer({"bootstrap.servers": env.bootstrap, "group.id": gid, "enable.auto.commit": "false"})
    c.commit(offsets=[CTP(TOPIC, p, 4) for p in range(3)], asynchronous=False)
    c.close()
    _open(browser, env, f"/groups/{gid}")
    assert text_of(browser, "#total-lag") == "18"  # 3 partitions × (10 − 4)
    producer = Producer({"bootstrap.servers": env.bootstrap, "acks": "all"})
    for _ in range(5):
        producer.produce(TOPIC, b"more", partition=1)
    assert producer.flush(30) == 0
    del producer
    wait_for(lambda: text_of(browser, "#total-lag") == "23", timeout=30, what="the lag to update live")
    Select(browser.find_element(By.CSS_SELECTOR, "#reset-form select[name=mode]")).select_by_visible_text("to-earliest")
    browser.find_element(By.ID, "dry-run").click()
    wait_for(lambda: browser.find_elements(By.ID, "plan"), timeout=30, what="the dry run")
    assert texts_of(browser, "#plan .new-offset") == ["0", "0", "0"]
    shot(browser, "group-dry-run")
    committed = _committed(env, gid)
    assert committed == {0: 4, 1: 4, 2: 4}, "a dry run must not write"
    confirm_submit(browser, "#apply-reset")
    wait_for(lambda: browser.find_elements(By.ID, "msg"), timeout=30, what="the reset's confirmation")
    assert _committed(env, gid) == {0: 0, 1: 0, 2: 0}
    assert text_of(browser, "#total-lag") == "35"


def _committed(env, gid: str) -> dict[int, int]:
    c = Consumer({"bootstrap.servers": env.bootstrap, "group.id": gid})
    try:
        return {tp.partition: tp.offset for tp in c.committed([CTP(TOPIC, p) for p in range(3)], timeout=30)}
    finally:
        c.close()


def test_create_a_topic_and_set_a_config_from_the_pages(env, browser):
    _open(browser, env, "/topics")
    browser.find_element(By.CSS_SELECTOR, "#create-topic input[name=name]").send_keys("made-in-browser")
    confirm_submit(browser, "#create-topic")
    wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "#partitions #partition-2"), timeout=30,
             what="the new topic's page")
    form = "#config-retention\\.ms form"
    browser.find_element(By.CSS_SELECTOR, f"{form} input[name=value]").send_keys("3600000")
    confirm_submit(browser, form)
    wait_for(lambda: browser.find_elements(By.ID, "msg"), timeout=30, what="the config change")
    assert text_of(browser, "#config-retention\\.ms .value") == "3600000"
    assert "DYNAMIC_TOPIC_CONFIG" in text_of(browser, "#config-retention\\.ms")


def test_bad_input_gets_a_clear_message_and_changes_nothing(env, browser):
    _open(browser, env, f"/topics/{TOPIC}/messages?run=1&start=offset&offset=ten")
    assert "offset must be a whole number" in text_of(browser, "#error")
    _open(browser, env, "/topics/no-such-topic")
    assert "UNKNOWN_TOPIC_OR_PARTITION" in text_of(browser, "#error")
    _open(browser, env, f"/topics/{TOPIC}")
    before = text_of(browser, "#config-cleanup\\.policy .value")
    form = "#config-cleanup\\.policy form"
    browser.find_element(By.CSS_SELECTOR, f"{form} input[name=value]").send_keys("shred")
    confirm_submit(browser, form)
    wait_for(lambda: browser.find_elements(By.ID, "error"), timeout=30, what="the refusal")
    assert "INVALID_CONFIG" in text_of(browser, "#error") or "shred" in text_of(browser, "#error")
    assert text_of(browser, "#config-cleanup\\.policy .value") == before
    shot(browser, "bad-config")
    _open(browser, env, f"/groups/{GROUP}/reset?mode=to-datetime&value=2999-01-01T00:00:00.000")
    assert "in the future" in text_of(browser, "#error")
    assert not browser.find_elements(By.ID, "plan")


def test_a_client_quota_set_and_removed_on_the_page(env, browser):
    """AlterClientQuotas from the page: a bad value refused, a good one written where the
    brokers read it (ZooKeeper's /config/clients), then removed."""
    import json

    def set_quota(value: str) -> None:
        form = browser.find_element(By.ID, "set-quota")
        form.find_element(By.NAME, "name").send_keys("billing-app")
        form.find_element(By.NAME, "value").send_keys(value)
        confirm_submit(browser, "#set-quota")

    _open(browser, env, "/acls")
    set_quota("fast")
    wait_for(lambda: browser.find_elements(By.ID, "error"), timeout=30, what="the refusal")
    assert "a quota is a number, got 'fast'" in text_of(browser, "#error")
    set_quota("1048576")
    wait_for(lambda: browser.find_elements(By.ID, "msg"), timeout=30, what="the quota set")
    assert text_of(browser, "#msg") == "set producer_byte_rate=1048576 for clients billing-app"
    assert "producer_byte_rate=1048576" in text_of(browser, "#quota-clients-billing-app")
    data, _ = env.store.client.get("/config/clients/billing-app")
    assert json.loads(data)["config"] == {"producer_byte_rate": "1048576"}
    shot(browser, "quota-set")
    confirm_submit(browser, "#quota-clients-billing-app form.remove-quota")
    wait_for(lambda: "removed producer_byte_rate of clients billing-app" in browser.page_source, timeout=30,
             what="the quota removed")
    assert not browser.find_elements(By.ID, "quota-clients-billing-app")


def test_produce_from_the_page(env, browser):
    _open(browser, env, f"/topics/{TOPIC}/messages")
    browser.find_element(By.CSS_SELECTOR, "#produce input[name=key]").send_keys("from-page")
    browser.find_element(By.CSS_SELECTOR, "#produce textarea[name=value]").send_keys("hello from chromium")
    confirm_submit(browser, "#produce")
    wait_for(lambda: browser.find_elements(By.ID, "msg"), timeout=30, what="the produce")
    assert "produced to orders-" in text_of(browser, "#msg")
    _open(browser, env, f"/topics/{TOPIC}/messages?run=1&key=from-page")
    wait_for(lambda: browser.find_elements(By.ID, "scan-summary"), timeout=60, what="the scan")
    assert texts_of(browser, "#results .value") == ["hello from chromium"]


def test_the_console_serves_https_when_given_a_certificate(env, tmp_path):
    ca = make_ca(tmp_path)
    cert = issue(ca, tmp_path, "console", "127.0.0.1")
    context = ssl.create_default_context(cafile=str(ca.path))
    with console_process("--dir", str(env.cluster.root), "--certfile", str(cert.cert), "--keyfile", str(cert.key),
                         log=tmp_path / "console.log", context=context) as url:
        assert url.startswith("https://")
        with urllib.request.urlopen(url + "/brokers", timeout=30, context=context) as r:
            assert r.status == 200
            assert b'id="broker-1"' in r.read()


PRICE_V1 = {"type": "record", "name": "Price", "namespace": "shop",
            "fields": [{"name": "sku", "type": "string"}, {"name": "cents", "type": "long"}]}
PRICE_V2 = {**PRICE_V1, "fields": [*PRICE_V1["fields"], {"name": "currency", "type": "string", "default": "EUR"}]}


def test_schemas_page_shows_a_subjects_versions_compatibility_and_a_diff(env, browser):
    """The console found the cluster's registry itself (`--dir`); a subject registered with
    confluent-kafka's client shows with both versions, its level and their diff, and an Avro
    value written by its serializer is decoded on the messages page."""
    import json

    from confluent_kafka.admin import AdminClient, NewTopic
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    urls = [b["schema_registry"] for b in env.cluster.status()["brokers"] if b.get("schema_registry")]
    assert len(urls) == 3
    topic, subject = "prices", "prices-value"
    client = SchemaRegistryClient({"url": urls[1]})
    client.register_schema(subject, Schema(json.dumps(PRICE_V1), "AVRO"))
    client.set_compatibility(subject, "FORWARD")
    admin = AdminClient({"bootstrap.servers": env.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 3)])[topic].result(30)
    serializer = AvroSerializer(client, json.dumps(PRICE_V2))  # registers version 2 on first use
    p = Producer({"bootstrap.servers": env.bootstrap, "acks": "all"})
    p.produce(topic, serializer({"sku": "pear-7", "cents": 129, "currency": "CZK"},
                                SerializationContext(topic, MessageField.VALUE)), partition=0)
    assert p.flush(30) == 0
    assert client.get_versions(subject) == [1, 2]

    _open(browser, env, "/schemas")
    assert not browser.find_elements(By.ID, "no-registry")
    assert subject in texts_of(browser, "#subjects td")
    _open(browser, env, f"/schemas?subject={subject}&a=1&b=2")
    assert texts_of(browser, "#versions .version") == ["1", "2"]
    assert text_of(browser, "#compat") == "FORWARD"
    assert '"currency"' in text_of(browser, "#schema")  # the latest version shown
    added = [line for line in texts_of(browser, "#diff .add") if not line.startswith("+++")]
    assert any('"name": "currency"' in line for line in added), added
    shot(browser, "schemas-diff")

    _open(browser, env, f"/topics/{topic}/messages?run=1&start=oldest&order=oldest&format=schema")
    wait_for(lambda: browser.find_elements(By.ID, "scan-summary"), timeout=60, what="the scan")
    (value,) = texts_of(browser, "#results .value")
    assert "(AVRO)" in value
    assert '"sku": "pear-7"' in value
    assert '"cents": 129' in value
    assert '"CZK"' in value
    shot(browser, "messages-avro")


def test_a_killed_broker_is_marked_offline_without_a_reload(env, browser):
    _open(browser, env, "/brokers")
    controller = env.store.get_controller_id()
    victim = next(b for b in (1, 2, 3) if b != controller)
    browser.execute_script("window.notReloaded = true")
    assert "online" in text_of(browser, f"#broker-{victim} .state")
    env.cluster.kill_broker(victim)
    t0 = time.monotonic()
    wait_for(lambda: "OFFLINE" in text_of(browser, f"#broker-{victim} .state"), timeout=60,
             what=f"broker {victim} marked offline")
    print(f"broker {victim} shown offline {time.monotonic() - t0:.1f} s after SIGKILL")
    assert browser.execute_script("return window.notReloaded") is True
    shot(browser, "broker-offline")
    _open(browser, env, "/timeline")
    assert f"broker {victim} go" in browser.find_element(By.ID, "timeline").text  # seen by the console or the logs


def test_a_kip848_consumer_group_shows_its_type_state_and_members(env, browser, capsys):
    """Kafka 4's consumer groups are described by ConsumerGroupDescribe (DescribeGroups answers
    GROUP_ID_NOT_FOUND for them): the list and the group page show the type, a live state
    and the member with its assignment, not a Dead classic group."""
    gid = f"modern-{uuid.uuid4().hex[:6]}"
    c = Consumer({"bootstrap.servers": env.bootstrap, "group.id": gid, "group.protocol": "consumer",
                  "client.id": "kip848-member", "enable.auto.commit": "false", "auto.offset.reset": "earliest"})
    try:
        c.subscribe([TOPIC])
        wait_for(lambda: (c.poll(0.5), len(c.assignment()) == 3)[1], timeout=60, what="the member's assignment")
        _open(browser, env, "/groups")
        wait_for(lambda: browser.find_elements(By.ID, f"group-{gid}"), timeout=30, what="the group in the list")
        cells = [td.text for td in browser.find_elements(By.CSS_SELECTOR, f"#group-{gid} td")]
        assert cells[1] == "consumer", cells
        assert cells[3] == "Stable", cells
        assert cells[4] == "1", cells
        _open(browser, env, f"/groups/{gid}")
        assert text_of(browser, "#group-state") == "Stable"
        rows = [tr.text for tr in browser.find_elements(By.CSS_SELECTOR, "#members tbody tr")]
        assert len(rows) == 1
        assert "kip848-member" in rows[0]
        assert all(f"{TOPIC}-{p}" in rows[0] for p in range(3)), rows
        shot(browser, "group-kip848")
        # `praha groups --describe` (kafka-consumer-groups) describes it too, as Kafka 4's tool does
        from praha.cli.main import main

        capsys.readouterr()
        state = env.cluster.load()  # a live broker: an earlier test of this module kills one
        live = next(f"127.0.0.1:{b.port}" for b in state.brokers.values() if env.cluster.broker_running(b))
        assert main(["groups", "--bootstrap-server", live, "--describe", "--group", gid, "--members"]) == 0
        out = capsys.readouterr().out
        assert "kip848-member" in out, out
        assert "Consumer group" not in out, out
    finally:
        c.close()
