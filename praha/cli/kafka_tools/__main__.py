"""`python -m praha.cli.kafka_tools kafka-topics --bootstrap-server B --list`."""
import sys

from praha.cli.kafka_tools import TOOLS, tool_for
from praha.cli.kafka_tools.base import run_tool

if __name__ == "__main__":
    tool = tool_for(sys.argv[1]) if len(sys.argv) > 1 else None
    if tool is None:
        print("usage: python -m praha.cli.kafka_tools TOOL [ARGS...]; tools: " + ", ".join(TOOLS), file=sys.stderr)
        sys.exit(1)
    sys.exit(run_tool(tool, sys.argv[2:]))
