"""The network faults' plans (pure): each partition shape cuts what its name says and no
more, one_way drops one direction only, flaky_link drops a share at random, and the same
seed plans the same cut."""
from __future__ import annotations

import random

import pytest

from praha.chaos import netfaults
from praha.chaos.config import NETWORK_KINDS, CampaignConfig
from praha.cluster.netns import Drop, nft_script

ADDR = {"zk1": "10.0.0.1", "zk2": "10.0.0.2", "zk3": "10.0.0.3",
        "b1": "10.0.0.11", "b2": "10.0.0.12", "b3": "10.0.0.13", "b4": "10.0.0.14", "b5": "10.0.0.15"}
GW = "10.0.0.254"


def view() -> netfaults.View:
    return netfaults.View(dict(ADDR), GW, controller=2, leader=3, followers=(4, 5))


def reachable(plan: netfaults.NetPlan, src: str, dst: str) -> bool:
    """Does a packet from src arrive at dst under the plan?"""
    s = ADDR.get(src, GW)
    for d in plan.drops.get(dst, []):
        if d.inbound and d.percent >= 100 and (not d.peers or s in d.peers):
            return False
    return True


def shaped(shape: str) -> netfaults.NetPlan:
    for seed in range(500):
        plan = netfaults.plan_partition(view(), random.Random(seed))
        if plan.shape == shape:
            return plan
    raise AssertionError(f"no seed below 500 plans {shape}")


def test_every_shape_is_planned_by_some_seed():
    shapes = {netfaults.plan_partition(view(), random.Random(s)).shape for s in range(200)}
    assert shapes == set(netfaults.PARTITION_SHAPES)


def test_controller_from_zookeeper_only():
    p = shaped("controller_from_zk")
    assert all(not reachable(p, "b2", z) and not reachable(p, z, "b2") for z in ("zk1", "zk2", "zk3"))
    assert all(reachable(p, "b2", b) and reachable(p, b, "b2") for b in ("b1", "b3", "b4", "b5"))
    assert p.cuts_zookeeper


def test_leader_from_followers_but_not_zookeeper():
    p = shaped("leader_from_followers")
    assert all(not reachable(p, "b3", f) and not reachable(p, f, "b3") for f in ("b4", "b5"))
    assert all(reachable(p, "b3", z) and reachable(p, z, "b3") for z in ("zk1", "zk2", "zk3"))
    assert reachable(p, "b3", "b1")
    assert reachable(p, "b4", "b5")
    assert not p.cuts_zookeeper


def test_broker_from_zookeeper_only_spares_the_controller():
    p = shaped("broker_from_zk")
    (victim,) = [n for n in p.drops if n.startswith("b")]
    assert victim != "b2"
    assert all(not reachable(p, victim, z) for z in ("zk1", "zk2", "zk3"))
    assert all(reachable(p, victim, b) for b in ADDR if b.startswith("b") and b != victim)


def test_halves_cut_every_pair_across_and_none_within():
    p = shaped("halves")
    a, b = p.sides
    assert set(a) | set(b) == set(ADDR)
    assert not set(a) & set(b)
    assert all(not reachable(p, x, y) and not reachable(p, y, x) for x in a for y in b)
    assert all(reachable(p, x, y) for side in (a, b) for x in side for y in side)


def test_bridge_middle_reaches_both_sides():
    p = shaped("bridge")
    a, (middle,), c = p.sides
    assert all(reachable(p, middle, x) and reachable(p, x, middle) for x in a + c)
    assert all(not reachable(p, x, y) for x in a for y in c)


def test_client_cut_from_the_leader_only():
    p = shaped("client_from_leader")
    assert not reachable(p, "clients", "b3")
    assert reachable(p, "clients", "b1")
    assert all(reachable(p, n, "b3") for n in ADDR if n != "b3")


def test_one_way_drops_one_direction():
    for seed in range(30):
        p = netfaults.plan_one_way(view(), random.Random(seed))
        (victim,) = p.drops
        peers = p.sides[0]
        assert all(not reachable(p, x, victim) and reachable(p, victim, x) for x in peers)


def flaky(mode: str) -> list[netfaults.NetPlan]:
    plans = [netfaults.plan_flaky_link(view(), random.Random(s)) for s in range(60)]
    return [p for p in plans if (p.detour is None) == (mode == "drop")]


def test_flaky_link_drops_a_share_at_random():
    drops = flaky("drop")
    assert len(drops) > 10
    for p in drops:
        ((victim, (drop,)),) = p.drops.items()
        assert 10 <= drop.percent <= 40
        assert drop.inbound
        assert drop.peers
        assert f"numgen random mod 100 < {drop.percent} drop" in nft_script([drop])


def test_flaky_link_delays_what_peers_and_clients_send_through_a_proxy():
    delays = flaky("delay")
    assert len(delays) > 10
    for p in delays:
        d = p.detour
        assert d is not None
        assert not p.drops
        assert d.node.startswith("b")
        assert GW in d.peers
        assert ADDR[d.node] not in d.peers  # the clients always; never itself
        assert set(d.peers) - {GW} <= {a for n, a in ADDR.items() if n.startswith("b")}  # brokers only
        assert 20 <= d.delay_ms <= 200
        assert 50 <= d.jitter_ms <= 1000
        assert p.describe()["detour"]["delay_ms"] == d.delay_ms
        assert p.shape == f"delay_{d.delay_ms}ms_jitter_{d.jitter_ms}ms"


def test_a_drop_plan_of_a_seed_is_what_it_was_before_delays():
    """Seed 3 planned this drop before flaky_link could delay (the mode is drawn last)."""
    p = netfaults.plan_flaky_link(view(), random.Random(3))
    rng = random.Random(3)
    victim = rng.choice(view().brokers)
    others = [n for n in sorted(ADDR) if n != victim]
    peers = rng.sample(others, rng.randint(1, len(others)))
    percent = rng.randint(10, 40)
    if p.detour is None:
        assert p.drops == {victim: [Drop(tuple(ADDR[x] for x in peers), percent=percent)]}
    else:
        assert p.detour.node == victim


def test_same_seed_same_plan():
    assert netfaults.plan_partition(view(), random.Random(9)) == netfaults.plan_partition(view(), random.Random(9))


@pytest.mark.parametrize("netns", [False, True])
def test_network_kinds_only_on_hosts_of_their_own(netns):
    kinds = set(CampaignConfig(netns=netns).effective_kinds())
    assert (NETWORK_KINDS <= kinds) == netns
    assert (not NETWORK_KINDS & kinds) == (not netns)


def test_describe_names_the_drops():
    d = netfaults.NetPlan("x", {"b1": [Drop(("10.0.0.2",), percent=20)]}, [["b1"], ["b2"]]).describe()
    assert d == {"shape": "x", "sides": [["b1"], ["b2"]],
                 "drops": {"b1": [{"peers": ["10.0.0.2"], "inbound": True, "percent": 20}]}}
