"""`praha console`: the web console (docs/console.md).

  praha console [--port 8080] [--host 127.0.0.1] [--dir D | --zookeeper H:P | --bootstrap-server H:P]
                [--security-protocol SASL_SSL --sasl-mechanism SCRAM-SHA-512 --ca-file ca.pem]
                [--state-change-logs DIR] [--schema-registry URL] [--certfile F --keyfile F]

On a cluster with SASL listeners every visitor logs in with a SCRAM user and the console acts
as that user, so the cluster's ACLs decide what they see and may change.
"""
from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

from praha.cli.options import CliError, add_cluster_options, at_least, bootstrap_of


def cmd_console(args: argparse.Namespace) -> int:
    from praha.console.server import serve, target_of_dir
    from praha.console.target import Target

    if bool(args.certfile) != bool(args.keyfile):
        raise CliError("HTTPS needs both --certfile and --keyfile")
    if args.bootstrap_server or args.zookeeper:
        target = Target(bootstrap_of(args), args.zookeeper, args.security_protocol, args.sasl_mechanism or "",
                        str(args.ca_file) if args.ca_file else None, args.state_change_logs, args.schema_registry)
        if args.security_protocol.startswith("SASL") and not args.sasl_mechanism:
            raise CliError(f"--security-protocol {args.security_protocol} needs --sasl-mechanism")
    else:
        target = target_of_dir(args.dir, args.schema_registry)
        if args.state_change_logs:
            target = Target(target.bootstrap, target.zookeeper, target.security_protocol, target.sasl_mechanism,
                            target.ca_file, args.state_change_logs, target.schema_registry)
    logging.getLogger("praha.console").setLevel(logging.INFO)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s: %(message)s"))
    logging.getLogger("praha.console").addHandler(handler)
    logging.getLogger("praha.console").propagate = False
    serve(target, args.host, args.port, args.certfile, args.keyfile)
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser("console", help="the web console (brokers, topics, messages, groups, timeline...)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--port", type=at_least(0), default=8080, help="HTTP(S) port (default 8080)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    add_cluster_options(p)
    s = p.add_argument_group("security of the cluster's listeners (a --dir cluster's are known)")
    s.add_argument("--security-protocol", default="PLAINTEXT",
                   choices=["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"])
    s.add_argument("--sasl-mechanism", choices=["SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"],
                   help="visitors log in with this mechanism")
    s.add_argument("--ca-file", type=Path, help="CA certificate (PEM) the brokers' certificates are signed by")
    p.add_argument("--state-change-logs", type=Path, help="directory searched for state-change.log files "
                                                          "(the timeline; default: the --dir cluster's)")
    p.add_argument("--schema-registry", metavar="URL", help="a Confluent-compatible schema registry")
    p.add_argument("--certfile", help="serve HTTPS with this certificate (PEM)")
    p.add_argument("--keyfile", help="... and this private key (PEM)")
    p.set_defaults(fn=cmd_console)
