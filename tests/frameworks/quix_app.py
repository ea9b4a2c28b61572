"""A stateful Quix Streams application, run in `.venv-quix` by tests/integration/test_quix_streams.py.

It keeps, per key, the running total and count of the `amount` of every input record in
Quix's RocksDB state (backed by a compacted changelog topic that Quix creates and checks
through the admin API), and writes each new total to the output topic. SIGTERM stops it
cleanly: Quix commits its last checkpoint (state, changelog and offsets) before exiting.
"""
from __future__ import annotations

import argparse
import logging

from quixstreams import Application


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--broker", required=True)
    p.add_argument("--group", required=True)
    p.add_argument("--input", required=True)
    p.add_argument("--output", required=True)
    p.add_argument("--state-dir", required=True)
    p.add_argument("--log-level", default="INFO")
    p.add_argument("--commit-every", type=int, default=0, help="checkpoint after this many records (0: by time)")
    args = p.parse_args()

    app = Application(broker_address=args.broker, consumer_group=args.group, auto_offset_reset="earliest",
                      state_dir=args.state_dir, commit_interval=0.5, commit_every=args.commit_every,
                      loglevel=getattr(logging, args.log_level))
    source = app.topic(args.input, key_deserializer="str", value_deserializer="json")
    totals = app.topic(args.output, key_serializer="str", value_serializer="json")

    def add(value: dict, state) -> dict:  # noqa: ANN001 - Quix's State
        total = state.get("total", 0) + value["amount"]
        count = state.get("count", 0) + 1
        state.set("total", total)
        state.set("count", count)
        return {"total": total, "count": count, "seq": value["seq"]}

    app.dataframe(source).apply(add, stateful=True).to_topic(totals)
    app.run()


if __name__ == "__main__":
    main()
