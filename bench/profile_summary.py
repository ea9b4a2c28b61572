"""Summaries of py-spy's raw profiles (collapsed stacks: `frame;frame;... count` per line).

Prints, over one or more files (e.g. the three brokers of `bench/produce.py --profile`):
the functions where the samples were taken ("self") and the functions on the stack
("inclusive"), each as a share of all samples; with `--svg`, an icicle flame graph of
the merged stacks (root at the top, width = share of samples, hover for the frame).

Usage: .venv/bin/python bench/profile_summary.py RAW... [--top 30] [--svg OUT.svg] [--title T]
"""
from __future__ import annotations

import argparse
import html
import re
from collections import Counter
from dataclasses import dataclass, field

#: py-spy's frame: "function (file.py:line)"; the line is dropped to sum by function
_LINE = re.compile(r":\d+\)$")


def frame_name(frame: str) -> str:
    return _LINE.sub(")", frame)


def read_stacks(paths: list[str]) -> Counter[tuple[str, ...]]:
    stacks: Counter[tuple[str, ...]] = Counter()
    for path in paths:
        with open(path) as f:
            for line in f:
                line = line.rstrip("\n")
                if not line:
                    continue
                stack, _, count = line.rpartition(" ")
                frames = tuple(frame_name(s) for s in stack.split(";") if not s.startswith("process ")
                               and not s.startswith("thread "))
                stacks[frames] += int(count)
    return stacks


def self_and_inclusive(stacks: Counter[tuple[str, ...]]) -> tuple[Counter[str], Counter[str]]:
    own: Counter[str] = Counter()
    incl: Counter[str] = Counter()
    for frames, n in stacks.items():
        if frames:
            own[frames[-1]] += n
        for f in set(frames):
            incl[f] += n
    return own, incl


@dataclass
class _Node:
    count: int = 0
    children: dict[str, _Node] = field(default_factory=dict)


def flame_svg(stacks: Counter[tuple[str, ...]], title: str, width: int = 1600, row: int = 16) -> str:
    """An icicle graph: one row per stack depth, boxes below 0.1% of samples left out."""
    root = _Node()
    for frames, n in stacks.items():
        node = root
        node.count += n
        for f in frames:
            node = node.children.setdefault(f, _Node())
            node.count += n
    total = max(root.count, 1)
    boxes: list[str] = []
    depth_max = [0]

    def walk(node: _Node, x: float, depth: int) -> None:
        for name, child in sorted(node.children.items(), key=lambda kv: -kv[1].count):
            w = child.count / total * width
            if child.count / total >= 0.001:
                depth_max[0] = max(depth_max[0], depth)
                y = 30 + depth * row
                hue = 20 + (hash(name.split(" (")[-1]) % 40)
                label = html.escape(name)
                tip = f"{label}: {child.count} samples, {100 * child.count / total:.1f}%"
                text = label if w > 60 else ""
                boxes.append(f'<g><title>{tip}</title><rect x="{x:.1f}" y="{y}" width="{max(w - 0.5, 0.1):.1f}" '
                             f'height="{row - 1}" fill="hsl({hue},80%,60%)"/>'
                             f'<text x="{x + 2:.1f}" y="{y + row - 4}" font-size="10" clip-path="inset(0)">'
                             f'{text[: int(w / 6)]}</text></g>')
                walk(child, x, depth + 1)
            x += w

    walk(root, 0.0, 0)
    height = 40 + (depth_max[0] + 1) * row
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="monospace">'
            f'<text x="4" y="18" font-size="13">{html.escape(title)} ({total} samples)</text>'
            + "".join(boxes) + "</svg>\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("raw", nargs="+", help="py-spy raw files (collapsed stacks)")
    ap.add_argument("--top", type=int, default=30, help="functions to list (default 30)")
    ap.add_argument("--svg", help="write an icicle flame graph of the merged stacks here")
    ap.add_argument("--title", default="py-spy samples", help="the flame graph's title")
    args = ap.parse_args()
    stacks = read_stacks(args.raw)
    total = sum(stacks.values()) or 1
    own, incl = self_and_inclusive(stacks)
    print(f"{total} samples from {len(args.raw)} file(s)")
    print(f"\n{'self %':>7}  function")
    for name, n in own.most_common(args.top):
        print(f"{100 * n / total:>6.1f}%  {name}")
    print(f"\n{'incl %':>7}  function")
    for name, n in incl.most_common(args.top):
        print(f"{100 * n / total:>6.1f}%  {name}")
    if args.svg:
        with open(args.svg, "w") as f:
            f.write(flame_svg(stacks, args.title))


if __name__ == "__main__":
    main()
