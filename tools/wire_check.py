"""Compare praha's message definitions (`praha/protocol/messages/*.wire`) with Apache Kafka's.

A development check, not a test: it needs Kafka's JSON message definitions, which praha
does not ship. Two references are read when present:

- Kafka 4.1's definitions, as bundled by the kafka-python wheel in the test venv
  (`kafka/protocol/schemas/resources/*.json`);
- the apache/kafka mirror (`/work/.mirror/apache+kafka/repo`, or `--mirror DIR`), whose
  trunk also has the KIP-848 and share-group messages and the ZooKeeper-mode controller APIs.

For every version that praha and a reference both define, the fields present at that
version are compared one by one: name, type, nullable, tag, default (Kafka's implied
defaults filled in). Versions a reference marks unstable are skipped for it. Exit status 1
when anything differs, with one line per difference.

    .venv/bin/python tools/wire_check.py              # check everything
    .venv/bin/python tools/wire_check.py --emit Fetch # praha's format for Kafka's Fetch (to start a definition)
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from praha.protocol.messages.definition import (  # noqa: E402
    ALL,
    NONE,
    Api,
    Field,
    Message,
    MessageKind,
    Versions,
    load_all,
    snake,
)

MIRROR = Path("/work/.mirror/apache+kafka/repo")
MIRROR_DIR = "clients/src/main/resources/common/message"
_COMMENT = re.compile(r"(?m)^\s*//.*$")


@dataclass
class Reference:
    """One source of Kafka's definitions: name → parsed JSON."""

    label: str
    messages: dict[str, dict]


def _parse_json(text: str) -> dict:
    return json.loads(_COMMENT.sub("", text))


def kafka_python_reference() -> Reference | None:
    try:
        import kafka.protocol.schemas.resources as res  # the test venv's independent client
    except ImportError:
        return None
    folder = Path(res.__file__).parent
    return Reference("kafka 4.1 (kafka-python bundle)",
                     {p.stem: _parse_json(p.read_text()) for p in folder.glob("*.json")})


def mirror_reference(repo: Path) -> Reference | None:
    if not (repo / "HEAD").exists() and not (repo / ".git").exists():
        return None
    names = subprocess.run(["git", "-C", str(repo), "ls-tree", "--name-only", f"HEAD:{MIRROR_DIR}"],
                           capture_output=True, text=True, check=True).stdout.split()
    out = {}
    for name in names:
        if name.endswith(".json"):
            text = subprocess.run(["git", "-C", str(repo), "show", f"HEAD:{MIRROR_DIR}/{name}"],
                                  capture_output=True, text=True, check=True).stdout
            out[name[:-5]] = _parse_json(text)
    head = subprocess.run(["git", "-C", str(repo), "log", "-1", "--format=%h %cs"],
                          capture_output=True, text=True, check=True).stdout.strip()
    return Reference(f"apache/kafka mirror {head}", out)


# --- Kafka JSON → praha's model -------------------------------------------------------

def _versions(text: str | None, default: Versions = NONE) -> Versions:
    return default if text is None else Versions.parse(str(text))


def _type(kafka_type: str) -> str:
    return f"[{kafka_type[2:]}]" if kafka_type.startswith("[]") else kafka_type


def _fields(raw: list[dict], common: dict[str, list[dict]]) -> list[Field]:
    out = []
    for f in raw:
        t = _type(f["type"])
        versions = _versions(f.get("versions"), ALL)
        elem = t.strip("[]")
        children = f.get("fields")
        if children is None and elem in common:
            children = common[elem]
        field = Field(snake(f["name"]), t, versions,
                      _versions(f.get("nullableVersions")),
                      f.get("tag"),
                      _versions(f.get("taggedVersions")) if "tag" in f else NONE,
                      None if "default" not in f else str(f["default"]).strip().lower()
                      if isinstance(f["default"], bool) else str(f["default"]).strip(),
                      _fields(children or [], common))
        out.append(field)
    return out


def kafka_message(doc: dict) -> Message:
    common = {s["name"]: s["fields"] for s in doc.get("commonStructs", [])}
    return Message(doc["apiKey"], doc["name"], MessageKind(doc["type"]),
                   _versions(doc["validVersions"]), _versions(doc["flexibleVersions"]),
                   _fields(doc.get("fields", []), common))


def _unstable_from(doc: dict) -> int | None:
    """The first version a reference marks unstable (`latestVersionUnstable`), if any."""
    if doc.get("latestVersionUnstable"):
        return Versions.parse(doc["validVersions"]).hi
    return None


# --- per-version comparison ------------------------------------------------------------

_IMPLIED = {"bool": "false", "string": "", "bytes": "", "records": "", "uuid": "AAAAAAAAAAAAAAAAAAAAAA"}


def _default(f: Field, version: int) -> str:
    if f.default is not None:
        d = f.default
        if re.fullmatch(r"0x[0-9a-fA-F]+", d):
            d = str(int(d, 16))
        return d
    if f.is_array or f.is_struct:
        return ""
    return _IMPLIED.get(f.type, "0")


def flatten(fields: list[Field], version: int, path: str = "") -> Iterator[tuple[str, str]]:
    """(path, facts) of every field present at `version`, in wire order."""
    for f in fields:
        if version not in f.versions:
            continue
        here = f"{path}{f.name}"
        tag = f" tag={f.tag}" if f.tagged_at(version) else ""
        facts = f"{f.type}{' nullable' if f.nullable_at(version) else ''}{tag} default={_default(f, version)!r}"
        yield here, facts
        yield from flatten(f.fields, version, here + ".")


def compare(ours: Message, theirs: Message, versions: range, label: str) -> list[str]:
    problems = []
    for v in versions:
        if ours.is_flexible(v) != theirs.is_flexible(v):
            problems.append(
                f"{ours.name} v{v}: flexible {ours.is_flexible(v)} here, {theirs.is_flexible(v)} in {label}"
            )
        a, b = list(flatten(ours.fields, v)), list(flatten(theirs.fields, v))
        if a == b:
            continue
        da, db = dict(a), dict(b)
        for name in sorted(set(da) | set(db)):
            if da.get(name) != db.get(name):
                problems.append(f"{ours.name} v{v} {name}: {da.get(name, 'absent')} here, "
                                f"{db.get(name, 'absent')} in {label}")
        if not problems and [n for n, _ in a] != [n for n, _ in b]:
            problems.append(f"{ours.name} v{v}: field order differs from {label}")
    return problems


def check(apis: dict[int, Api], refs: list[Reference]) -> tuple[list[str], list[str]]:
    """(differences, notes): notes say which versions no reference covered."""
    problems: list[str] = []
    notes: list[str] = []
    for api in apis.values():
        for msg in (api.request, api.response):
            covered: set[int] = set()
            for ref in refs:
                doc = ref.messages.get(msg.name)
                if doc is None:
                    continue
                theirs = kafka_message(doc)
                if theirs.api_key != msg.api_key:
                    problems.append(f"{msg.name}: api key {msg.api_key} here, {theirs.api_key} in {ref.label}")
                # Kafka marks only the request; the response's version is as unstable
                unstable = _unstable_from(ref.messages.get(msg.name.removesuffix("Response") + "Request", doc))
                hi = min(msg.versions.hi, theirs.versions.hi if unstable is None else unstable - 1)
                lo = max(msg.versions.lo, theirs.versions.lo)
                problems += compare(msg, theirs, range(lo, hi + 1), ref.label)
                covered.update(range(lo, hi + 1))
            missing = [v for v in range(msg.versions.lo, msg.versions.hi + 1) if v not in covered]
            if missing:
                notes.append(f"{msg.name} v{missing[0]}-{missing[-1]}: in no stable reference")
                for ref in refs:  # still compared with an unstable one, as a note
                    doc = ref.messages.get(msg.name)
                    if doc is not None:
                        theirs = kafka_message(doc)
                        rng = [v for v in missing if v in theirs.versions]
                        diffs = compare(msg, theirs, range(rng[0], rng[-1] + 1),
                                        ref.label + " (unstable)") if rng else []
                        notes += (
                            diffs or [f"  {msg.name} v{rng[0]}-{rng[-1]} agrees with {ref.label} (unstable)"]
                            if rng
                            else []
                        )
    return problems, notes


# --- emitting praha's format (to start a new definition from Kafka's) ------------------

def _field_line(f: Field, indent: int) -> str:
    words = [f"{' ' * indent}{f.name}: {f.type}"]
    if f.versions != ALL:
        words.append(str(f.versions))
    if f.nullable != NONE:
        covers = f.nullable.lo <= f.versions.lo and f.nullable.hi >= f.versions.hi
        words.append("nullable" if covers else f"nullable={f.nullable}")
    if f.tag is not None:
        words.append(f"tag={f.tag}" if f.tagged == f.versions else f"tag={f.tag}@{f.tagged}")
    if f.default is not None:
        d = f.default
        words.append(f'default="{d}"' if d == "" or " " in d else f"default={d}")
    return " ".join(words)


def emit_fields(fields: list[Field], indent: int, common: set[str], seen: set[str]) -> Iterator[str]:
    for f in fields:
        yield _field_line(f, indent)
        if f.is_struct and f.element in common:
            continue
        yield from emit_fields(f.fields, indent + 2, common, seen)


def emit(req_doc: dict, resp_doc: dict) -> str:
    req, resp = kafka_message(req_doc), kafka_message(resp_doc)
    name = req.name.removesuffix("Request")
    lines = [f"api {req.api_key} {name} {req.versions} flexible={req.flexible}"]
    for doc, msg in ((req_doc, req), (resp_doc, resp)):
        lines.append(msg.kind.value)
        common = {s["name"] for s in doc.get("commonStructs", [])}
        lines += emit_fields(msg.fields, 2, common, set())
        for s in doc.get("commonStructs", []):
            lines.append(f"  struct {s['name']}")
            lines += emit_fields(_fields(s["fields"], {c["name"]: c["fields"] for c in doc["commonStructs"]}),
                                 4, common, set())
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mirror", type=Path, default=MIRROR, help="an apache/kafka git directory")
    p.add_argument("--emit", metavar="API", action="append", default=[],
                   help="print praha's format for Kafka's definition of API (e.g. Fetch) and exit")
    args = p.parse_args(argv)
    refs = [r for r in (kafka_python_reference(), mirror_reference(args.mirror)) if r is not None]
    if not refs:
        print("no reference: neither kafka-python's bundle nor the mirror is here", file=sys.stderr)
        return 2
    if args.emit:
        for name in args.emit:
            ref = next((r for r in refs if f"{name}Request" in r.messages), None)
            if ref is None:
                print(f"# {name}: in no reference", file=sys.stderr)
                return 2
            print(f"# from {ref.label}")
            print(emit(ref.messages[f"{name}Request"], ref.messages[f"{name}Response"]))
        return 0
    apis = load_all()
    problems, notes = check(apis, refs)
    for line in notes:
        print(f"note: {line}")
    for line in problems:
        print(line)
    print(f"{len(apis)} APIs checked against {', '.join(r.label for r in refs)}: "
          f"{len(problems)} differences")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
