"""The network-namespace layout's plan, without root: names carry praha's prefix and fit
Linux's 15-character link names, addresses come from 198.18.0.0/15, the record round-trips,
and the nftables script says what each fault means."""
from __future__ import annotations

import pytest

from praha.cluster import netns


def test_plan_names_and_addresses():
    lay = netns.plan(7, ["zk1", "b1", "b12"])
    assert lay.bridge == "prh7-br"
    assert lay.gateway == "198.18.7.1"
    assert [(n.netns, n.link, n.address) for n in lay.nodes.values()] == [
        ("praha-7-zk1", "prh7-zk1", "198.18.7.10"), ("praha-7-b1", "prh7-b1", "198.18.7.11"),
        ("praha-7-b12", "prh7-b12", "198.18.7.12")]
    longest = netns.plan(255, ["zk123", "b99999"])
    assert all(len(n.link) <= 15 for n in longest.nodes.values())
    assert len(longest.bridge) <= 15


@pytest.mark.parametrize(("index", "names"), [(256, ["b1"]), (-1, ["b1"]), (0, ["B1"]), (0, ["toolongname"]),
                                         (0, [f"b{i}" for i in range(250)])])
def test_plan_refuses_what_cannot_be_made(index, names):
    with pytest.raises(netns.NetnsError):
        netns.plan(index, names)


def test_layout_record_round_trips(tmp_path):
    lay = netns.plan(3, ["zk1", "b1"])
    lay.save(tmp_path / "netns.json")
    back = netns.NetnsLayout.load(tmp_path / "netns.json")
    assert back == lay
    assert netns.NetnsLayout.load(tmp_path / "none.json") is None
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(netns.NetnsError):
        netns.NetnsLayout.load(tmp_path / "bad.json")


def test_up_and_down_commands_cover_every_node():
    lay = netns.plan(1, ["zk1", "b1"])
    up = [" ".join(c) for c in netns.up_commands(lay)]
    assert up[0] == "ip link add prh1-br type bridge"
    assert "ip addr add 198.18.1.1/24 dev prh1-br" in up
    assert "ip -n praha-1-b1 addr add 198.18.1.11/24 dev eth0" in up
    down = [" ".join(c) for c in netns.down_commands(lay)]
    assert down == ["ip netns del praha-1-zk1", "ip link del prh1-zk1", "ip netns del praha-1-b1",
                    "ip link del prh1-b1", "ip link del prh1-br"]


def test_nft_script_for_each_kind_of_drop():
    script = netns.nft_script([
        netns.Drop(("198.18.1.10", "198.18.1.11")),           # partition: nothing from these peers
        netns.Drop(("198.18.1.12",), inbound=False),          # one way: nothing to this peer
        netns.Drop(("198.18.1.13",), percent=30),             # flaky link
        netns.Drop(()), netns.Drop((), inbound=False),        # cut off entirely
    ])
    lines = [line.strip() for line in script.splitlines()]
    assert lines[:3] == ["table inet praha_faults", "delete table inet praha_faults", "table inet praha_faults {"]
    inp = lines[lines.index("chain input {") + 2:lines.index("chain output {") - 1]
    out = lines[lines.index("chain output {") + 2:-2]
    assert inp == ["ip saddr { 198.18.1.10, 198.18.1.11 } drop",
                   "ip saddr { 198.18.1.13 } numgen random mod 100 < 30 drop", 'iifname "eth0" drop']
    assert out == ["ip daddr { 198.18.1.12 } drop", 'oifname "eth0" drop']
    empty = netns.nft_script([])
    assert "drop" not in empty
