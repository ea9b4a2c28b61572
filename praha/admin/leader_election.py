"""Leader elections, as Kafka's kafka-leader-election.sh (and, for preferred elections through
ZooKeeper, as the older kafka-preferred-replica-election.sh).

  1. resolve the partitions: all of them, a topic's, one partition, or a JSON file
     `{"partitions":[{"topic":"foo","partition":1}]}`; unknown topics or partitions and
     duplicates are errors, and then nothing is sent;
  2a. default: send ElectLeaders (election type preferred) to the controller, which
     answers per partition: elected, ELECTION_NOT_NEEDED (the preferred replica already
     leads) or an error such as PREFERRED_LEADER_NOT_AVAILABLE; election type unclean
     brings offline partitions back with any live replica (ELECTION_NOT_NEEDED for a
     partition that has a live leader, ELIGIBLE_LEADERS_NOT_AVAILABLE when none is alive);
  2b. `via_zookeeper`: create `/admin/preferred_replica_election` with the partitions not
     led by their preferred replica, wait until the controller deletes it, then compare
     each leader with its preferred replica.
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

from praha.common import TopicPartition, partitions_by_topic
from praha.errors import ErrorCode, InvalidRequestError, PrahaError, UnknownTopicError
from praha.protocol.client_security import PLAINTEXT, ClientSecurity
from praha.zk import znodes as zn
from praha.zk.store import ZkStore

Results = dict[TopicPartition, tuple[int, str | None]]
PREFERRED, UNCLEAN = 0, 1
ELECTION_TYPES = {"preferred": PREFERRED, "unclean": UNCLEAN}


def parse_election_json(text: str) -> set[TopicPartition]:
    """Kafka's `--path-to-json-file` format."""
    try:
        obj = json.loads(text)
    except ValueError as e:
        raise InvalidRequestError(f"the election file is not valid JSON: {e}") from None
    usage = 'expected {"partitions":[{"topic":"foo","partition":1},...]}'
    if not isinstance(obj, dict) or not isinstance(obj.get("partitions"), list):
        raise InvalidRequestError(f"invalid election JSON: {usage}")
    tps = []
    for entry in obj["partitions"]:
        if not (
            isinstance(entry, dict)
            and isinstance(entry.get("topic"), str)
            and isinstance(entry.get("partition"), int)
            and not isinstance(entry.get("partition"), bool)
        ):
            raise InvalidRequestError(f"invalid election entry {json.dumps(entry)}: {usage}")
        tps.append(TopicPartition(entry["topic"], entry["partition"]))
    if not tps:
        raise InvalidRequestError("the election file lists no partitions")
    dupes = sorted({tp for tp in tps if tps.count(tp) > 1})
    if dupes:
        raise InvalidRequestError(
            f"Replica election data contains duplicate partitions: {', '.join(map(str, dupes))}")
    return set(tps)


def resolve_partitions(store: ZkStore, all_partitions: bool = False, topic: str | None = None,
                       partition: int | None = None, partitions: Collection[TopicPartition] | None = None
                       ) -> set[TopicPartition]:
    """The partitions named, checked against ZooKeeper (all of them for `all_partitions`)."""
    topics = store.get_all_topics() if all_partitions else sorted(
        {topic} if topic is not None else {tp.topic for tp in partitions or ()})
    assignments, bad = store.get_topic_assignments(topics)
    if bad:
        raise PrahaError("; ".join(str(e) for e in bad.values()))
    if all_partitions:
        return {TopicPartition(t, p) for t, a in assignments.items() for p in a.partitions}
    unknown_topics = [t for t in topics if t not in assignments]
    if unknown_topics:
        raise UnknownTopicError(f"Topic '{unknown_topics[0]}' does not exist." if len(unknown_topics) == 1
                                else f"Topics {', '.join(unknown_topics)} do not exist.")
    if topic is not None:
        if partition is None:
            return {TopicPartition(topic, p) for p in assignments[topic].partitions}
        partitions = [TopicPartition(topic, partition)]
    unknown = sorted(tp for tp in partitions or () if tp.partition not in assignments[tp.topic].partitions)
    if unknown:
        raise UnknownTopicError(f"Unknown partition{'s' if len(unknown) > 1 else ''}: "
                                f"{', '.join(map(str, unknown))}")
    return set(partitions or ())


def elect_via_api(locate: Callable[[], tuple[str, int]], partitions: Collection[TopicPartition] | None,
                  timeout: float = 30.0, election_type: int = PREFERRED,
                  security: ClientSecurity = PLAINTEXT) -> Results:
    """ElectLeaders (preferred or unclean) to the controller; None = every partition."""
    from praha.admin.controller_api import call_controller
    from praha.protocol.messages.gen.admin import ElectLeadersRequest as Req

    topic_partitions = None
    if partitions is not None:
        by_topic = partitions_by_topic(sorted(partitions))
        topic_partitions = [Req.TopicPartitions(topic=t, partitions=ps) for t, ps in by_topic.items()]
    request = Req(election_type=election_type, topic_partitions=topic_partitions, timeout_ms=int(timeout * 1000))

    def not_controller(r: Any) -> bool:
        if getattr(r, "error_code", 0) == ErrorCode.NOT_CONTROLLER:
            return True
        return any(p.error_code == ErrorCode.NOT_CONTROLLER
                   for t in r.replica_election_results for p in t.partition_result)

    response, version = call_controller(locate, request, not_controller, timeout=timeout + 5, security=security)
    if version >= 1 and response.error_code != ErrorCode.NONE:
        raise PrahaError(f"the controller refused the election: {_code_name(response.error_code)}")
    return {TopicPartition(t.topic, p.partition_id): (p.error_code, p.error_message)
            for t in response.replica_election_results for p in t.partition_result}


def _preferred_and_leaders(store: ZkStore, partitions: Collection[TopicPartition]
                           ) -> tuple[dict[TopicPartition, int], dict[TopicPartition, tuple[int, tuple[int, ...]]]]:
    assignments, _ = store.get_topic_assignments({tp.topic for tp in partitions})
    preferred = {tp: assignments[tp.topic].partitions[tp.partition].replicas[0] for tp in partitions
                 if tp.topic in assignments and tp.partition in assignments[tp.topic].partitions
                 and assignments[tp.topic].partitions[tp.partition].replicas}
    states, _ = store.get_partition_states(partitions)
    return preferred, {tp: (s.leader_and_isr.leader, tuple(s.leader_and_isr.isr)) for tp, s in states.items()}


def elect_via_zookeeper(store: ZkStore, partitions: Collection[TopicPartition], timeout: float = 30.0,
                        poll: float = 0.2) -> Results:
    """Write `/admin/preferred_replica_election` and judge the outcome from the leaders."""
    if store.exists(zn.PREFERRED_REPLICA_ELECTION_PATH) is not None:
        raise PrahaError("A preferred replica election is already in progress "
                         "(/admin/preferred_replica_election exists); try again when the controller has removed it.")
    preferred, before = _preferred_and_leaders(store, partitions)
    results: Results = {tp: (ErrorCode.ELECTION_NOT_NEEDED, "Leader election not needed for topic partition.")
                        for tp in partitions if tp in preferred and before.get(tp, (-1,))[0] == preferred[tp]}
    needed = sorted(set(partitions) - set(results))
    if not needed:
        return results
    store.create_preferred_election(needed)
    deadline = time.monotonic() + timeout
    done = False
    while time.monotonic() < deadline:
        if store.exists(zn.PREFERRED_REPLICA_ELECTION_PATH) is None:
            done = True
            break
        time.sleep(poll)
    _, after = _preferred_and_leaders(store, needed)
    brokers, _ = store.get_live_brokers()
    for tp in needed:
        leader, isr = after.get(tp, (-1, ()))
        want = preferred.get(tp, -1)
        if leader == want:
            results[tp] = (ErrorCode.NONE, None)
        elif not done:
            results[tp] = (ErrorCode.REQUEST_TIMED_OUT, f"the controller has not processed the election within "
                                                        f"{timeout:.0f}s (/admin/preferred_replica_election remains)")
        elif want not in brokers or want not in isr:
            results[tp] = (ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
                           f"Preferred replica {want} is {'not alive' if want not in brokers else 'not in the ISR'}.")
        else:
            results[tp] = (ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, f"Leader is still {leader}, not {want}.")
    return results


def format_results(results: Mapping[TopicPartition, tuple[int, str | None]], election: str = "PREFERRED"
                   ) -> tuple[list[str], int]:
    """Kafka's LeaderElectionCommand output lines, and the number of failures."""
    ok = sorted(tp for tp, (code, _) in results.items() if code == ErrorCode.NONE)
    noop = sorted(tp for tp, (code, _) in results.items() if code == ErrorCode.ELECTION_NOT_NEEDED)
    failed = sorted(tp for tp in results if tp not in ok and tp not in noop)
    lines = []
    if ok:
        lines.append(f"Successfully completed leader election ({election}) for partitions {_join(ok)}")
    if noop:
        lines.append(f"Valid replica already elected for partitions {_join(noop)}")
    for tp in failed:
        code, message = results[tp]
        lines.append(f"Error completing leader election ({election}) for partition: {tp}: "
                     f"{_code_name(code)}" + (f": {message}" if message else ""))
    if not results:
        lines.append("No leader election was needed.")
    return lines, len(failed)


def _join(tps: Iterable[TopicPartition]) -> str:
    return ", ".join(map(str, tps))


def _code_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error {code}"


__all__ = ["PREFERRED", "UNCLEAN", "ELECTION_TYPES", "parse_election_json", "resolve_partitions", "elect_via_api",
           "elect_via_zookeeper", "format_results",
           "Results"]
