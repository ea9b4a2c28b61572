"""What a consumer group subscribes to: topic names and RE2 regular expressions (no I/O).

Kafka's coordinator evaluates `SubscribedTopicRegex` with RE2/J: the whole topic name must
match, and the syntax is RE2's (no look-around, no back-references), so a pattern Java's
`Pattern` or Python's `re` would take may be refused here with INVALID_REGULAR_EXPRESSION.
A resolved regex is kept in the group (and its record) and evaluated again whenever the
topics change, which is how a regex subscription picks up a new topic and drops a deleted one.
"""
from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping

import re2

from praha.coordinator.group.consumer.model import TopicInfo
from praha.errors import ErrorCode, PrahaError


@functools.lru_cache(maxsize=1024)
def compile_regex(pattern: str) -> re2._Regexp:
    """The compiled RE2 pattern, or Kafka's INVALID_REGULAR_EXPRESSION."""
    options = re2.Options()
    options.log_errors = False
    try:
        return re2.compile(pattern, options)
    except re2.error as e:
        raise PrahaError(f"SubscribedTopicRegex {pattern!r} is not a valid RE2 expression: {e}",
                         ErrorCode.INVALID_REGULAR_EXPRESSION) from None


def resolve(pattern: str, topic_names: Iterable[str]) -> frozenset[str]:
    rx = compile_regex(pattern)
    return frozenset(t for t in topic_names if rx.fullmatch(t) is not None)


def subscription_metadata(names: Iterable[str], topics: Mapping[str, TopicInfo]) -> dict[str, TopicInfo]:
    """The subscribed topics that exist, with their ids and partition counts."""
    return {n: topics[n] for n in sorted(set(names)) if n in topics}
