"""The registry's HTTP server (one per broker, on `schema.registry.listeners`): routes a
request through `api.ROUTES`, answers errors as Confluent's JSON, forwards writes to the
primary when this broker is not it, and on a secure cluster serves HTTPS and checks HTTP
basic credentials against the cluster's SCRAM users (`Access`)."""
from __future__ import annotations

import base64
import hmac
import json
import logging
import ssl
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from praha.protocol.scram import ScramCredential, ScramMechanism
from praha.registry import api, errors
from praha.registry.errors import RegistryError

log = logging.getLogger(__name__)
CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
MAX_BODY = 16 * 1024 * 1024


@dataclass
class Access:
    """Who may do what on a secure cluster: credentials are the users' SCRAM credentials
    (`credentials(user)`), writes need a super user or Alter on the cluster (`may_alter`)."""

    credentials: Callable[[str], dict[ScramMechanism, ScramCredential]]
    may_alter: Callable[[str, str], bool]

    def authenticate(self, header: str | None) -> str:
        """The user of an `Authorization: Basic` header (401 unless its password is right)."""
        if not header or not header.startswith("Basic "):
            raise errors.unauthorized()
        try:
            user, _, password = base64.b64decode(header[6:]).decode().partition(":")
        except (ValueError, UnicodeDecodeError):
            raise errors.unauthorized() from None
        for mechanism, cred in self.credentials(user).items():
            salted = mechanism.salted_password(password, cred.salt, cred.iterations)
            stored = mechanism.hash(mechanism.hmac(salted, b"Client Key"))
            if hmac.compare_digest(stored, cred.stored_key):
                return user
        raise errors.unauthorized()


class RegistryHttpServer:
    def __init__(self, registry: api.Registry, host: str, port: int, is_primary: Callable[[], bool],
                 primary_url: Callable[[], str], tls: ssl.SSLContext | None = None, access: Access | None = None,
                 forward_tls: ssl.SSLContext | None = None):
        self.registry = registry
        self.is_primary, self.primary_url = is_primary, primary_url
        self.access = access
        self.forward_tls = forward_tls
        self.requests = 0
        self.forwarded = 0
        handler = _handler_class(self)
        self.httpd = ThreadingHTTPServer((host, port), handler)
        self.httpd.daemon_threads = True
        if tls is not None:
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="schema-registry-http", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    # ------------------------------------------------------------------ one request
    def handle(self, method: str, target: str, body: bytes, headers: Any, client_host: str) -> tuple[int, bytes]:
        self.requests += 1
        parts = urlsplit(target)
        path = parts.path.rstrip("/")
        try:
            user = self.access.authenticate(headers.get("Authorization")) if self.access else "ANONYMOUS"
            found = api.match(method, path)
            if found is None:
                if api.path_known(path):
                    return 405, _json({"error_code": 405, "message": "HTTP 405 Method Not Allowed"})
                return 404, _json({"error_code": 404, "message": "HTTP 404 Not Found"})
            route, params = found
            params = {k: unquote(v) for k, v in params.items()}
            query = dict(parse_qsl(parts.query, keep_blank_values=True))
            call = api.Call(method, params, query, body, user)
            if route.writes:
                if self.access is not None and not self.access.may_alter(user, client_host):
                    raise errors.forbidden(user, "change the schema registry (it needs Alter on the cluster)")
                if not self.is_primary():
                    return self._forward(method, target, body, headers)
                status, out = route.handler(self.registry, call)
            else:
                status, out = api.answer(self.registry, route, call)
            return status, _json(out)
        except RegistryError as e:
            return e.status, _json(e.body())
        except Exception as e:  # noqa: BLE001 - a bug must not kill the server; the client sees 500
            log.exception("schema registry: %s %s failed", method, target)
            return 500, _json({"error_code": 50001, "message": f"Error in the backend data store - {e!r}"})

    def _forward(self, method: str, target: str, body: bytes, headers: Any) -> tuple[int, bytes]:
        """A write on a broker that is not primary: sent on to the primary as it came; once it
        answers, this broker reads `_schemas` up to the write (read-your-writes here too)."""
        self.forwarded += 1
        url = self.primary_url().rstrip("/") + target
        fwd_headers = {"Content-Type": headers.get("Content-Type") or CONTENT_TYPE}
        if headers.get("Authorization"):
            fwd_headers["Authorization"] = headers["Authorization"]
        request = urllib.request.Request(url, data=body if body else None, method=method, headers=fwd_headers)
        try:
            with urllib.request.urlopen(request, timeout=60, context=self.forward_tls) as resp:
                status, out = resp.status, resp.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()
        except (urllib.error.URLError, OSError) as e:
            raise errors.forwarding_error(str(e)) from e
        self.registry.store.catch_up()
        return status, out


def _json(body: Any) -> bytes:
    return json.dumps(body, separators=(",", ":")).encode()


def _handler_class(server: RegistryHttpServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "praha-schema-registry"
        # headers and body are two writes: without TCP_NODELAY the body waits for the
        # client's delayed ACK (~40 ms a request on a kept-alive connection)
        disable_nagle_algorithm = True

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY:
                status, out = 413, _json({"error_code": 413, "message": "Request body too large"})
                self.close_connection = True
            else:
                body = self.rfile.read(length) if length else b""
                status, out = server.handle(self.command, self.path, body, self.headers, self.client_address[0])
            self.send_response(status)
            self.send_header("Content-Type", CONTENT_TYPE)
            self.send_header("Content-Length", str(len(out)))
            if status == 401:
                self.send_header("WWW-Authenticate", 'Basic realm="praha"')
            self.end_headers()
            self.wfile.write(out)

        do_GET = do_POST = do_PUT = do_DELETE = _serve

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
            log.debug("schema registry: " + format, *args)

    return Handler
