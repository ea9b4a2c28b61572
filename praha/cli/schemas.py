"""`praha schemas`: the cluster's Schema Registry from the command line, over its REST API
(docs/schema-registry.md). Without --registry it talks to the local cluster's registry
(--dir), with the admin's credentials and the cluster's CA when the cluster is secure."""
from __future__ import annotations

import argparse
import base64
import json
import ssl
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from praha.cli.options import CliError

DESCRIPTION = """The Schema Registry every broker serves (Confluent's REST API).

  praha schemas list [--deleted] [--prefix P]
  praha schemas show --subject S [--version N|latest] | --id ID
  praha schemas register --subject S --schema-file F [--type AVRO|JSON|PROTOBUF] [--reference NAME=SUBJECT:VERSION ...]
  praha schemas check --subject S --schema-file F [--type T] [--version N|latest]   (exit 1 if incompatible)
  praha schemas compatibility [--subject S] [--set LEVEL | --unset]
  praha schemas delete --subject S [--version N] [--permanent]
"""
LEVELS = ("NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE")


class Registry:
    def __init__(self, url: str, user: str = "", password: str = "", ca: str = ""):
        self.url = url.rstrip("/")
        self.auth = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode() if user else ""
        self.context = ssl.create_default_context(cafile=ca) if ca else None

    def call(self, method: str, path: str, body: Any = None, **query: Any) -> Any:
        q = urllib.parse.urlencode({k: str(v).lower() if isinstance(v, bool) else v for k, v in query.items()
                                    if v not in (None, False)})
        headers = {"Content-Type": "application/vnd.schemaregistry.v1+json"}
        if self.auth:
            headers["Authorization"] = self.auth
        req = urllib.request.Request(f"{self.url}{path}" + (f"?{q}" if q else ""), method=method, headers=headers,
                                     data=json.dumps(body).encode() if body is not None else None)
        try:
            with urllib.request.urlopen(req, timeout=60, context=self.context) as resp:
                return json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as e:
            try:
                err = json.loads(e.read())
                raise CliError(f"{err.get('message')} (HTTP {e.code}, error code {err.get('error_code')})") from None
            except ValueError:
                raise CliError(f"HTTP {e.code} from {self.url}") from None
        except (urllib.error.URLError, OSError) as e:
            raise CliError(f"cannot reach the schema registry at {self.url}: {e}") from None


def _registry(args: argparse.Namespace) -> Registry:
    if args.registry:
        return Registry(args.registry, args.user or "", args.password or "", args.ca or "")
    from praha.cluster.local import LocalCluster

    cluster = LocalCluster(args.dir)
    if not cluster.exists():
        raise CliError(f"no local cluster in {args.dir}; give --registry URL")
    state = cluster.load()
    url = next((b.schema_registry for b in state.brokers.values() if b.schema_registry), "")
    if not url:
        raise CliError(f"the local cluster in {args.dir} runs no schema registry")
    if state.security_dir and not args.user:
        from praha.cluster.secure import ADMIN_USER, SecureSetup

        setup = SecureSetup.load(Path(state.security_dir))
        return Registry(url, ADMIN_USER, setup.admin_password, args.ca or str(setup.ca))
    return Registry(url, args.user or "", args.password or "", args.ca or "")


def _schema_body(args: argparse.Namespace) -> dict[str, Any]:
    try:
        text = Path(args.schema_file).read_text()
    except OSError as e:
        raise CliError(f"cannot read {args.schema_file}: {e}") from None
    body: dict[str, Any] = {"schema": text}
    if args.type != "AVRO":
        body["schemaType"] = args.type
    refs = []
    for r in args.reference or []:
        name, sep, rest = r.partition("=")
        subject, sep2, version = rest.rpartition(":")
        if not sep or not sep2 or not version.isdigit():
            raise CliError(f"--reference: expected NAME=SUBJECT:VERSION, got {r!r}")
        refs.append({"name": name, "subject": subject, "version": int(version)})
    if refs:
        body["references"] = refs
    return body


def _quote(s: str) -> str:
    return urllib.parse.quote(s, safe="")


def cmd_schemas(args: argparse.Namespace) -> int:
    reg = _registry(args)
    action = args.action
    if action in ("show", "register", "check", "delete") and not args.subject and not (action == "show" and args.id):
        raise CliError(f"schemas {action} needs --subject")
    if action in ("register", "check") and not args.schema_file:
        raise CliError(f"schemas {action} needs --schema-file")
    s = _quote(args.subject) if args.subject else ""
    if action == "list":
        for subject in reg.call("GET", "/subjects", deleted=args.deleted, subjectPrefix=args.prefix):
            print(subject)
    elif action == "show":
        if args.id is not None:
            out = reg.call("GET", f"/schemas/ids/{args.id}")
        else:
            out = reg.call("GET", f"/subjects/{s}/versions/{args.version or 'latest'}", deleted=args.deleted)
            out["versions"] = reg.call("GET", f"/subjects/{s}/versions", deleted=args.deleted)
            out["compatibility"] = reg.call("GET", f"/config/{s}", defaultToGlobal=True)["compatibilityLevel"]
        print(json.dumps(out, indent=2))
    elif action == "register":
        out = reg.call("POST", f"/subjects/{s}/versions", _schema_body(args), normalize=args.normalize)
        print(f"registered {args.subject}: id {out['id']}, version {out.get('version')}")
    elif action == "check":
        path = f"/compatibility/subjects/{s}/versions" + (f"/{args.version}" if args.version else "")
        out = reg.call("POST", path, _schema_body(args), verbose=True)
        if out["is_compatible"]:
            print(f"compatible with {args.subject}")
            return 0
        print(f"NOT compatible with {args.subject}:")
        for m in out.get("messages") or []:
            print(f"  {m}")
        return 1
    elif action == "compatibility":
        path = f"/config/{s}" if s else "/config"
        if args.set:
            print(reg.call("PUT", path, {"compatibility": args.set})["compatibility"])
        elif args.unset:
            reg.call("DELETE", path)
            print(reg.call("GET", path, defaultToGlobal=True)["compatibilityLevel"])
        else:
            print(reg.call("GET", path, defaultToGlobal=True)["compatibilityLevel"])
    elif action == "delete":
        path = f"/subjects/{s}" + (f"/versions/{args.version}" if args.version else "")
        out = reg.call("DELETE", path, permanent=args.permanent)
        what = "permanently deleted" if args.permanent else "deleted (soft; --permanent removes it)"
        print(f"{what}: {args.subject} version(s) {out}")
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser("schemas", help="the Schema Registry: list, show, register, check, compatibility, delete",
                       description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("action", choices=("list", "show", "register", "check", "compatibility", "delete"))
    p.add_argument("--subject", metavar="S", help="the subject (e.g. TOPIC-value)")
    p.add_argument("--version", metavar="N", help="a version number or `latest`")
    p.add_argument("--id", type=int, metavar="ID", help="show: a schema by its global id")
    p.add_argument("--schema-file", metavar="F", help="register/check: the schema's text (.avsc, .json, .proto)")
    p.add_argument("--type", default="AVRO", type=str.upper, choices=("AVRO", "JSON", "PROTOBUF"),
                   help="the schema's type (default AVRO)")
    p.add_argument("--reference", action="append", metavar="NAME=SUBJECT:VERSION",
                   help="register/check: a schema this one references (repeat for several)")
    p.add_argument("--normalize", action="store_true", help="register: normalise the schema first")
    p.add_argument("--deleted", action="store_true", help="list/show: include soft-deleted subjects and versions")
    p.add_argument("--prefix", default="", metavar="P", help="list: only subjects starting with P")
    p.add_argument("--set", type=str.upper, choices=LEVELS, metavar="LEVEL",
                   help="compatibility: set the level (" + ", ".join(LEVELS) + ")")
    p.add_argument("--unset", action="store_true", help="compatibility: remove the subject's (or global) level")
    p.add_argument("--permanent", action="store_true", help="delete: permanently (after a soft delete)")
    g = p.add_argument_group("registry to talk to (default: the local cluster's in --dir)")
    from praha.cluster.local import DEFAULT_DIR

    g.add_argument("--dir", type=Path, default=DEFAULT_DIR, help=f"local cluster directory (default {DEFAULT_DIR})")
    g.add_argument("--registry", metavar="URL", help="any broker's registry URL (praha cluster status --json)")
    g.add_argument("--user", help="HTTP basic auth user (a SCRAM user of a secure cluster)")
    g.add_argument("--password", help="its password")
    g.add_argument("--ca", metavar="PEM", help="the CA to trust for https")
    p.set_defaults(fn=cmd_schemas)
