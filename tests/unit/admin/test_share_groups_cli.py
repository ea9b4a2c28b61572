"""`praha groups --share`'s option rules, before any I/O: which actions take --share, which reset
scenarios a share group has (Kafka's kafka-share-groups), one group for an offsets change."""
from __future__ import annotations

import pytest

from praha.cli.groups import check_options
from praha.cli.main import build_parser
from praha.cli.options import CliError


def args(line: str):
    return build_parser().parse_args(["groups", *line.split(), "--bootstrap-server", "127.0.0.1:9"])


@pytest.mark.parametrize("line", [
    "--share --list",
    "--share --describe --group g",
    "--share --reset-offsets --group g --topic t --to-earliest --execute",
    "--share --reset-offsets --group g --all-topics --to-offset 4 --dry-run",
    "--share --delete-offsets --group g --topic t",
])
def test_share_actions_pass_the_checks(line):
    check_options(args(line))


@pytest.mark.parametrize(("line", "message"), [
    ("--share --delete --group g", "Option --share is only valid with --list, --describe, --reset-offsets"),
    ("--share --reset-offsets --group g --topic t --shift-by 2", "takes --to-earliest, --to-latest, --to-offset"),
    ("--share --reset-offsets --group g --topic t --to-current", "takes --to-earliest, --to-latest, --to-offset"),
])
def test_share_misuse_is_refused(line, message):
    with pytest.raises(CliError, match=message):
        check_options(args(line))
