"""The web application: one table of pages (`PAGES`), their handlers, sessions and changes.

Pages are rendered on the server (Jinja2); `static/console.js` refreshes each page's live part
every few seconds, streams a message scan's progress (server-sent events) and asks for
confirmation before a change. Every change is a POST carrying the session's CSRF token and
`confirmed=yes`, is logged (one line: who, what, outcome; never a secret) and on success
redirects back to the page with what was done; a refused change re-renders the page with
Kafka's error and changes nothing.
"""
from __future__ import annotations

import asyncio
import json
import logging
import queue
import secrets
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from praha.admin.group_plans import ResetMode, parse_datetime_ms, parse_duration_ms
from praha.analytics.timeline import Event, Kind, log_files, read_events
from praha.common import TopicPartition
from praha.console import messages as msgs
from praha.console.cluster_client import (
    LAG_HISTORY,
    MAX_PAGE_SIZE,
    PAGE_SIZE,
    AclRow,
    ClusterClient,
    ConsoleError,
    LoginError,
)
from praha.console.schemas import Registry, RegistryError, diff
from praha.console.target import Target
from praha.errors import PrahaError

log = logging.getLogger("praha.console")
changes = logging.getLogger("praha.console.changes")
HERE = Path(__file__).parent
COOKIE = "praha_console"
#: how often a page's live part is fetched again (ms)
REFRESH_MS = 2000
#: a session unused this long is forgotten (its user logs in again)
SESSION_IDLE_S = 8 * 3600


@dataclass(frozen=True)
class Page:
    """One bookmarkable address: `nav` pages are in the menu; `sample` is a path the browser
    test opens (with `{topic}`/`{group}` filled in)."""

    path: str
    name: str
    title: str
    nav: bool = True


PAGES: tuple[Page, ...] = (
    Page("/", "overview", "Cluster"),
    Page("/brokers", "brokers", "Brokers"),
    Page("/topics", "topics", "Topics"),
    Page("/topics/{name}", "topic", "Topic", nav=False),
    Page("/topics/{name}/messages", "messages", "Messages", nav=False),
    Page("/groups", "groups", "Groups"),
    Page("/groups/{group_id}", "group", "Group", nav=False),
    Page("/transactions", "transactions", "Transactions"),
    Page("/acls", "acls", "ACLs, users, quotas"),
    Page("/schemas", "schemas", "Schemas"),
    Page("/timeline", "timeline", "Timeline"),
)


@dataclass
class Session:
    user: str
    client: ClusterClient
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    last_seen: float = field(default_factory=time.monotonic)


class Console:
    """The application's state: the target, the sessions, ZooKeeper, the observed events."""

    def __init__(self, target: Target, zk: Any = None, https: bool = False):
        self.target = target
        self.zk = zk
        self.https = https
        self.sessions: dict[str, Session] = {}
        self._lock = threading.Lock()
        self._shared: ClusterClient | None = None
        self.observed: list[Event] = []
        self._last_seen: tuple[int, frozenset[int]] | None = None
        self.registry = Registry(target.schema_registry, target.ca_file) if target.schema_registry else None

    def warm(self, client: ClusterClient) -> None:
        """Ask for the topic list's first page in the background, so the connections, API
        versions and the groups' offsets a visitor's first list needs are there already."""
        def run() -> None:
            try:
                client.topics_page()
            except PrahaError as e:
                log.warning("console: the topic list could not be asked for ahead: %s", e)
        threading.Thread(target=run, name="console-warm", daemon=True).start()

    def shared_client(self) -> ClusterClient:
        with self._lock:
            if self._shared is None:
                self._shared = ClusterClient(self.target, zk=self.zk)
            return self._shared

    def session_of(self, request: Request) -> Session | None:
        token = request.cookies.get(COOKIE, "")
        s = self.sessions.get(token)
        if s is not None:
            s.last_seen = time.monotonic()
        return s

    def open_session(self, user: str, client: ClusterClient) -> tuple[str, Session]:
        token = secrets.token_urlsafe(32)
        s = Session(user, client)
        now = time.monotonic()
        with self._lock:
            for old in [t for t, o in self.sessions.items() if now - o.last_seen > SESSION_IDLE_S]:
                gone = self.sessions.pop(old)
                if gone.client is not self._shared:
                    gone.client.close()
            self.sessions[token] = s
        return token, s

    def observe(self, controller: int, live: set[int]) -> None:
        """Controller and broker changes the console itself saw (kept beside the logs' events)."""
        now = int(time.time() * 1000)
        seen = (controller, frozenset(live))
        with self._lock:
            last, self._last_seen = self._last_seen, seen
            if last is None or last == seen:
                return
            if last[0] != controller:
                self.observed.append(Event(now, Kind.CONTROLLER, -1, f"the console saw broker {controller} "
                                                                    f"become the controller (was {last[0]})"))
            for b in sorted(last[1] - live):
                self.observed.append(Event(now, Kind.BROKER_DOWN, -1, f"the console saw broker {b} go offline"))
            for b in sorted(live - last[1]):
                self.observed.append(Event(now, Kind.BROKER_UP, -1, f"the console saw broker {b} come back"))
            del self.observed[:-500]


templates = Jinja2Templates(directory=str(HERE / "templates"))
templates.env.globals.update(PAGES=[p for p in PAGES if p.nav], REFRESH_MS=REFRESH_MS, iso=msgs.iso,
                             quote=lambda s: quote(str(s), safe=""))
templates.env.filters["size"] = lambda n: _size(n)


def _size(n: int | None) -> str:
    if n is None or n < 0:
        return "?"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


Handler = Callable[[Request, Session], Awaitable[Response]]


def build_app(console: Console) -> Starlette:
    def page(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            session = console.session_of(request)
            if session is None:
                if console.target.needs_login:
                    return RedirectResponse("/login?next=" + quote(str(request.url.path)), 303)
                token, session = console.open_session("", console.shared_client())
                response = await _guarded(handler, request, session)
                _set_cookie(response, token, console.https)
                return response
            return await _guarded(handler, request, session)
        return endpoint

    async def _guarded(handler: Handler, request: Request, session: Session) -> Response:
        try:
            return await handler(request, session)
        except PrahaError as e:
            return render(request, session, "error.html", {"title": "Error", "error": str(e)}, 400)

    def render(request: Request, session: Session, template: str, ctx: dict[str, Any], status: int = 200) -> Response:
        live_only = request.headers.get("x-live") == "1"
        ctx = {"live_only": live_only, "session": session, "user": session.user, "target": console.target,
               "msg": request.query_params.get("msg", ""), "error": ctx.pop("error", ""), **ctx}
        return templates.TemplateResponse(request, template, ctx, status_code=status)

    async def call(fn: Callable[..., Any], *args: Any) -> Any:
        return await run_in_threadpool(fn, *args)

    # -- pages -----------------------------------------------------------------------------
    async def overview(request: Request, s: Session) -> Response:
        ov = await call(s.client.overview)
        console.observe(ov.controller_id, {b.id for b in ov.brokers if b.alive})
        return render(request, s, "overview.html", {"title": "Cluster", "ov": ov})

    async def brokers(request: Request, s: Session) -> Response:
        ov = await call(s.client.overview)
        console.observe(ov.controller_id, {b.id for b in ov.brokers if b.alive})
        return render(request, s, "brokers.html", {"title": "Brokers", "ov": ov})

    async def topics(request: Request, s: Session) -> Response:
        q = request.query_params
        page = _int(q.get("page") or "1", "page", 1)
        size = _int(q.get("size") or str(PAGE_SIZE), "page size", 1)
        if size > MAX_PAGE_SIZE:
            raise ConsoleError(f"the page size must be at most {MAX_PAGE_SIZE}, got {size}")
        internal = q.get("internal") == "1"
        found = await call(s.client.topics_page, page, size, q.get("q") or "", internal)
        base = {"q": q.get("q") or "", **({"internal": "1"} if internal else {}),
                **({"size": str(size)} if size != PAGE_SIZE else {})}
        links = {name: "/topics?" + urlencode({k: v for k, v in {**base, "page": str(n)}.items() if v})
                 for name, n in (("first", 1), ("prev", found.page - 1), ("next", found.page + 1),
                                 ("last", found.pages)) if 1 <= n <= found.pages and n != found.page}
        return render(request, s, "topics.html", {"title": "Topics", "found": found, "rows": found.rows,
                                                  "links": links, "q": base["q"], "internal": internal})

    async def topic(request: Request, s: Session, error: str = "", status: int = 200) -> Response:
        name = request.path_params["name"]
        parts = await call(s.client.topic, name)
        configs = await call(s.client.configs, name) if not request.headers.get("x-live") else []
        return render(request, s, "topic.html", {"title": f"Topic {name}", "name": name, "parts": parts,
                                                 "configs": configs, "error": error}, status)

    async def messages(request: Request, s: Session) -> Response:
        name = request.path_params["name"]
        parts = await call(s.client.partitions_of, name)
        error = ""
        try:
            req = msgs.ScanRequest.parse(name, request.query_params)
        except msgs.ScanInputError as e:
            req, error = None, str(e)
        if req is not None and req.partition is not None and req.partition not in {p.partition for p in parts}:
            error = f"{name} has no partition {req.partition}"
            req = None
        scan_url = f"/topics/{quote(name, safe='')}/messages/scan?{request.url.query}" \
            if req is not None and request.query_params.get("run") else ""
        return render(request, s, "messages.html", {"title": f"Messages of {name}", "name": name, "parts": parts,
                                                    "q": request.query_params, "scan_url": scan_url,
                                                    "registry": console.registry is not None, "error": error},
                      400 if error else 200)

    async def scan_stream(request: Request, s: Session) -> Response:
        name = request.path_params["name"]
        try:
            req = msgs.ScanRequest.parse(name, request.query_params)
            parts = await call(s.client.topic, name)
        except PrahaError as e:
            err = str(e)

            async def failed() -> Any:
                yield _sse("error", {"error": err})
            return StreamingResponse(failed(), media_type="text/event-stream")
        bounds = {p.partition: (p.log_start or 0, p.high_watermark or 0) for p in parts
                  if req.partition is None or p.partition == req.partition}
        starts = None
        if req.start is msgs.StartAt.TIME and req.time_ms is not None:
            starts = {tp.partition: o for tp, o in (await call(
                s.client.list_offsets, [TopicPartition(name, p) for p in bounds], "time", False, req.time_ms)).items()}
        ranges = msgs.plan_ranges(req, bounds, starts)
        updates: queue.Queue[tuple[str, Any]] = queue.Queue()
        stop = threading.Event()

        def run() -> None:
            try:
                result = msgs.scan(s.client.confluent_config(), req, ranges,
                                   progress=lambda p: updates.put(("progress", p.as_json())),
                                   should_stop=stop.is_set)
                updates.put(("done", result))
            except Exception as e:  # shown on the page
                updates.put(("error", str(e)))

        threading.Thread(target=run, name="console-scan", daemon=True).start()

        async def events() -> Any:
            try:
                yield _sse("progress", {"scanned": 0, "total": sum(hi - lo for lo, hi in ranges.values()),
                                        "matched": 0, "done": False})
                while True:
                    try:
                        kind, payload = updates.get_nowait()
                    except queue.Empty:
                        if await request.is_disconnected():
                            return
                        await asyncio.sleep(0.1)
                        continue
                    if kind == "progress":
                        yield _sse("progress", payload)
                    elif kind == "error":
                        yield _sse("error", {"error": payload})
                        return
                    else:
                        html = _render_results(payload, req, console.registry)
                        yield _sse("done", {**payload.as_json(), "html": html})
                        return
            finally:
                stop.set()

        return StreamingResponse(events(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    async def groups(request: Request, s: Session) -> Response:
        rows = await call(s.client.groups)
        return render(request, s, "groups.html", {"title": "Groups", "rows": rows})

    async def group(request: Request, s: Session, extra: dict[str, Any] | None = None, status: int = 200) -> Response:
        gid = request.path_params["group_id"]
        d = await call(s.client.group, gid)
        history = list(LAG_HISTORY.get(gid, ()))
        return render(request, s, "group.html", {"title": f"Group {gid}", "g": d, "history": history,
                                                 "spark": _sparkline(history), **(extra or {})}, status)

    async def transactions(request: Request, s: Session) -> Response:
        rows = await call(s.client.transactions)
        return render(request, s, "transactions.html", {"title": "Transactions", "rows": rows})

    async def acls(request: Request, s: Session, error: str = "", status: int = 200) -> Response:
        errors = []
        out: dict[str, Any] = {}
        for key, fn in (("acls", s.client.acls), ("users", s.client.scram_users), ("quotas", s.client.quotas)):
            try:
                out[key] = await call(fn)
            except PrahaError as e:
                out[key] = []
                errors.append(f"{key}: {e}")
        return render(request, s, "acls.html", {"title": "ACLs, users, quotas", **out, "problems": errors,
                                                "error": error, "choices": ACL_CHOICES}, status)

    async def schemas(request: Request, s: Session) -> Response:
        ctx: dict[str, Any] = {"title": "Schemas", "registry": console.registry}
        reg = console.registry
        if reg is not None:
            q = request.query_params
            subject = q.get("subject") or ""
            try:
                ctx["subjects"] = await call(reg.subjects)
                ctx["global_compat"] = await call(reg.compatibility)
                if subject:
                    ctx["subject"] = subject
                    ctx["versions"] = await call(reg.versions, subject)
                    ctx["compat"] = await call(reg.compatibility, subject)
                    shown = q.get("version") or "latest"
                    ctx["schema"] = await call(reg.version, subject, shown)
                    if q.get("a") and q.get("b"):
                        a = await call(reg.version, subject, q["a"])
                        b = await call(reg.version, subject, q["b"])
                        ctx["diff"] = diff(a, b)
            except RegistryError as e:
                ctx["error"] = str(e)
        return render(request, s, "schemas.html", ctx)

    async def timeline(request: Request, s: Session) -> Response:
        root = console.target.state_change_logs
        files = await call(log_files, root) if root is not None and root.exists() else []
        events = await call(read_events, files) if files else []
        kinds = request.query_params.getlist("kind")
        merged = sorted(events + list(console.observed), reverse=True)
        if kinds:
            merged = [e for e in merged if e.kind.name in kinds]
        return render(request, s, "timeline.html", {"title": "Timeline", "events": merged[:1000], "files": files,
                                                    "kinds": list(Kind), "chosen": kinds})

    # -- changes ---------------------------------------------------------------------------
    def change(handler: Callable[[Request, Session, dict[str, str]], Awaitable[Response]]) -> Handler:
        async def guarded(request: Request, s: Session) -> Response:
            form = {k: str(v) for k, v in (await request.form()).items()}
            if form.get("csrf") != s.csrf:
                raise ConsoleError("the form is stale (its token does not match your session): reload the page")
            if form.get("confirmed") != "yes":
                raise ConsoleError("the change was not confirmed; nothing was changed")
            return await handler(request, s, form)
        return guarded

    def logged(s: Session, action: str, what: str, outcome: str) -> None:
        changes.info("change by %s: %s %s: %s", s.user or "anonymous", action, what, outcome)

    async def do(s: Session, action: str, what: str, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            result = await call(fn, *args)
        except PrahaError as e:
            logged(s, action, what, f"refused ({e})")
            raise
        logged(s, action, what, "done")
        return result

    def back(path: str, msg: str) -> Response:
        return RedirectResponse(f"{path}?{urlencode({'msg': msg})}", 303)

    async def create_topic(request: Request, s: Session, f: dict[str, str]) -> Response:
        name = f.get("name", "").strip()
        partitions = _int(f.get("partitions", ""), "partitions", 1)
        rf = _int(f.get("replication", ""), "replication factor", 1)
        configs = dict(_kv(line) for line in f.get("configs", "").splitlines() if line.strip())
        await do(s, "create topic", name, s.client.create_topic, name, partitions, rf, configs)
        return back(f"/topics/{quote(name, safe='')}", f"created topic {name}")

    async def acl_change(request: Request, s: Session, f: dict[str, str]) -> Response:
        try:
            row = acl_of_form(f)
            add = f.get("action") == "add"
            if not add and f.get("action") != "delete":
                raise ConsoleError(f"unknown action {f.get('action')!r}")
            what = f"{row.permission} {row.principal} {row.operation} on {row.resource_type} {row.name}"
            await do(s, "add ACL" if add else "remove ACL", what, s.client.change_acl, row, add)
            return back("/acls", f"{'added' if add else 'removed'}: {what}")
        except PrahaError as e:
            return await acls(request, s, error=f"{e} — nothing was changed", status=400)

    async def user_change(request: Request, s: Session, f: dict[str, str]) -> Response:
        """A SCRAM user's credential set or removed; the password is neither logged nor shown."""
        try:
            user, mechanism = f.get("user", "").strip(), f.get("mechanism", "").strip()
            if not user:
                raise ConsoleError("the user needs a name")
            if f.get("action") == "delete":
                await do(s, "remove SCRAM credential", f"{user} {mechanism}", s.client.change_scram_user, user,
                         mechanism, None, 0)
                return back("/acls", f"removed the {mechanism} credential of {user}")
            password = f.get("password", "")
            if not password:
                raise ConsoleError("the password must not be empty")
            iterations = _int(f.get("iterations", "") or "8192", "iterations", 4096)
            await do(s, "set SCRAM credential", f"{user} {mechanism} iterations={iterations}",
                     s.client.change_scram_user, user, mechanism, password, iterations)
            return back("/acls", f"set the {mechanism} credential of {user}")
        except PrahaError as e:
            return await acls(request, s, error=f"{e} — nothing was changed", status=400)

    async def quota_change(request: Request, s: Session, f: dict[str, str]) -> Response:
        try:
            kind, name, key = f.get("kind", ""), f.get("name", "").strip(), f.get("key", "").strip()
            who = f"{kind} {name or '(default)'}"
            if f.get("action") == "delete":
                await do(s, "remove quota", f"{who} {key}", s.client.change_quota, kind, name, key, None)
                return back("/acls", f"removed {key} of {who}")
            text = f.get("value", "").strip()
            try:
                value = float(text)
            except ValueError:
                raise ConsoleError(f"a quota is a number, got {text!r}") from None
            await do(s, "set quota", f"{who} {key}={text}", s.client.change_quota, kind, name, key, value)
            return back("/acls", f"set {key}={text} for {who}")
        except PrahaError as e:
            return await acls(request, s, error=f"{e} — nothing was changed", status=400)

    async def topic_change(request: Request, s: Session, f: dict[str, str]) -> Response:
        name = request.path_params["name"]
        action = f.get("action", "")
        path = f"/topics/{quote(name, safe='')}"
        try:
            if action == "delete":
                await do(s, "delete topic", name, s.client.delete_topic, name)
                return back("/topics", f"deleted topic {name}")
            if action == "partitions":
                total = _int(f.get("total", ""), "partition count", 1)
                await do(s, "add partitions", f"{name} to {total}", s.client.add_partitions, name, total)
                return back(path, f"{name} now has {total} partitions")
            if action == "delete-records":
                p = _int(f.get("partition", ""), "partition", 0)
                before = _int(f.get("before", ""), "offset", -1)
                low = await do(s, "delete records", f"{name}-{p} before {before}", s.client.delete_records, name, p,
                               before)
                return back(path, f"records of {name}-{p} before {low} deleted; the log now starts at {low}")
            if action == "config":
                key = f.get("key", "").strip()
                value = None if f.get("delete") == "yes" else f.get("value", "")
                await do(s, "alter config", f"{name} {key}", s.client.alter_config, name, key, value)
                return back(path, f"{key} of {name} " + ("deleted" if value is None else f"set to {value}"))
            raise ConsoleError(f"unknown action {action!r}")
        except PrahaError as e:
            return await topic(request, s, error=f"{e} — nothing was changed", status=400)

    async def group_change(request: Request, s: Session, f: dict[str, str]) -> Response:
        gid = request.path_params["group_id"]
        path = f"/groups/{quote(gid, safe='')}"
        action = f.get("action", "")
        try:
            if action == "delete":
                await do(s, "delete group", gid, s.client.delete_group, gid)
                return back("/groups", f"deleted group {gid}")
            if action == "apply-reset":
                offsets = {TopicPartition(t, int(p)): int(o) for t, p, o in json.loads(f.get("plan", "[]"))}
                await do(s, "reset offsets", f"{gid} ({len(offsets)} partitions)", s.client.apply_reset, gid, offsets)
                return back(path, f"offsets of {len(offsets)} partitions reset")
            raise ConsoleError(f"unknown action {action!r}")
        except PrahaError as e:
            return await group(request, s, {"error": f"{e} — nothing was changed"}, 400)

    async def group_dry_run(request: Request, s: Session) -> Response:
        """The reset's plan, shown before anything is written (a GET: it changes nothing)."""
        gid = request.path_params["group_id"]
        q = request.query_params
        try:
            mode = ResetMode(q.get("mode", ""))
            if mode is ResetMode.FROM_FILE:
                raise ValueError("a file of offsets is kafka-consumer-groups' --from-file")
        except ValueError:
            return await group(request, s, {"error": f"unknown reset mode {q.get('mode')!r}"}, 400)
        try:
            value = _reset_value(mode, q.get("value", "").strip())
            plan = await call(s.client.plan_reset, gid, q.get("topic", "").strip() or None, mode, value)
        except PrahaError as e:
            return await group(request, s, {"error": f"{e} — nothing was changed"}, 400)
        rows = sorted(plan.offsets.items())
        encoded = json.dumps([[tp.topic, tp.partition, o] for tp, o in rows])
        return await group(request, s, {"plan": rows, "plan_json": encoded, "warnings": plan.warnings,
                                        "reset_mode": mode.value, "reset_value": q.get("value", "")})

    async def produce(request: Request, s: Session, f: dict[str, str]) -> Response:
        name = request.path_params["name"]
        path = f"/topics/{quote(name, safe='')}/messages"
        partition = f.get("partition", "").strip()
        p = _int(partition, "partition", 0) if partition else None
        headers = msgs.parse_headers(f.get("headers", ""))
        await call(s.client.partitions_of, name)
        part, off = await do(s, "produce", name, msgs.produce, s.client.confluent_config(), name,
                             f.get("key") or None, f.get("value", ""), p, headers)
        return back(path, f"produced to {name}-{part} at offset {off}")

    # -- login -----------------------------------------------------------------------------
    async def login_form(request: Request) -> Response:
        return templates.TemplateResponse(request, "login.html", {"title": "Log in", "error": "",
                                                                  "next": request.query_params.get("next", "/"),
                                                                  "target": console.target, "user": ""})

    async def login(request: Request) -> Response:
        form = await request.form()
        user, password = str(form.get("user", "")), str(form.get("password", ""))
        nxt = str(form.get("next", "/"))
        if not nxt.startswith("/") or nxt.startswith("//"):
            nxt = "/"
        client = ClusterClient(console.target, user, password, zk=console.zk)
        try:
            await run_in_threadpool(client.check_login)
        except LoginError as e:
            client.close()
            log.warning("console login refused for user %r", user)
            return templates.TemplateResponse(request, "login.html", {"title": "Log in", "error": str(e),
                                                                      "next": nxt, "target": console.target,
                                                                      "user": user}, status_code=401)
        token, _ = console.open_session(user, client)
        console.warm(client)
        log.info("console login: user %r", user)
        response = RedirectResponse(nxt, 303)
        _set_cookie(response, token, console.https)
        return response

    async def logout(request: Request) -> Response:
        s = console.sessions.pop(request.cookies.get(COOKIE, ""), None)
        if s is not None and s.client is not console._shared:
            s.client.close()
        response = RedirectResponse("/login" if console.target.needs_login else "/", 303)
        response.delete_cookie(COOKIE)
        return response

    async def not_found(request: Request, exc: Exception) -> Response:
        return HTMLResponse(f"<h1>Not found</h1><p>{request.url.path} is not a page of the console.</p>"
                            "<p><a href='/'>The cluster</a></p>", 404)

    handlers: dict[str, Handler] = {
        "overview": overview, "brokers": brokers, "topics": topics, "topic": topic, "messages": messages,
        "groups": groups, "group": group, "transactions": transactions, "acls": acls, "schemas": schemas,
        "timeline": timeline,
    }
    routes: list[Any] = [Route(p.path, page(handlers[p.name]), name=p.name) for p in PAGES]
    routes += [
        Route("/topics", page(change(create_topic)), methods=["POST"]),
        Route("/topics/{name}", page(change(topic_change)), methods=["POST"]),
        Route("/topics/{name}/messages", page(change(produce)), methods=["POST"]),
        Route("/topics/{name}/messages/scan", page(scan_stream)),
        Route("/acls", page(change(acl_change)), methods=["POST"]),
        Route("/users", page(change(user_change)), methods=["POST"]),
        Route("/quotas", page(change(quota_change)), methods=["POST"]),
        Route("/groups/{group_id}/reset", page(group_dry_run)),
        Route("/groups/{group_id}", page(change(group_change)), methods=["POST"]),
        Route("/login", login_form), Route("/login", login, methods=["POST"]), Route("/logout", logout),
        Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
    ]
    return Starlette(routes=routes, exception_handlers={404: not_found})


def _set_cookie(response: Response, token: str, https: bool) -> None:
    response.set_cookie(COOKIE, token, httponly=True, samesite="strict", secure=https)


def _sse(event: str, data: dict[str, Any]) -> str:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n"


def _render_results(state: msgs.ScanProgress, req: msgs.ScanRequest, registry: Registry | None) -> str:
    decode = registry.decode if registry is not None else None
    rows = [{"partition": f.partition, "offset": f.offset, "time": msgs.iso(f.timestamp),
             "key": msgs.render_value(f.key, msgs.Format.TEXT) if f.key is not None else "",
             "value": msgs.render_value(f.value, req.fmt, decode),
             "headers": ", ".join(f"{k}={(v or b'').decode('utf-8', 'replace')}" for k, v in f.headers)}
            for f in state.results]
    return templates.get_template("_results.html").render(rows=rows, state=state, req=req)


def _sparkline(history: list[tuple[int, int]], width: int = 320, height: int = 48) -> str:
    """An SVG polyline of lag over time (an empty string with fewer than two samples)."""
    if len(history) < 2:
        return ""
    t0, t1 = history[0][0], history[-1][0]
    hi = max(v for _, v in history) or 1
    pts = " ".join(f"{(t - t0) / max(1, t1 - t0) * width:.1f},{height - v / hi * (height - 4) - 2:.1f}"
                   for t, v in history)
    return (f'<svg class="spark" width="{width}" height="{height}" viewBox="0 0 {width} {height}">'
            f'<polyline fill="none" stroke="#2563eb" stroke-width="2" points="{pts}"/></svg>')


#: the choices of the ACL form (Kafka's names; the cluster resource is always "kafka-cluster")
ACL_CHOICES = {
    "resource_type": ("TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID"),
    "operation": ("ALL", "READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE", "CLUSTER_ACTION",
                  "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE"),
    "permission": ("ALLOW", "DENY"),
    "pattern": ("LITERAL", "PREFIXED"),
}


def acl_of_form(f: dict[str, str]) -> AclRow:
    """The ACL a form names, checked before anything is sent: Kafka's names only, a principal
    `User:name`, the cluster resource named kafka-cluster."""
    values = {k: f.get(k, "").strip() for k in ("principal", "host", "operation", "permission", "resource_type",
                                                 "name", "pattern")}
    for key, allowed in ACL_CHOICES.items():
        if values[key] not in allowed:
            raise ConsoleError(f"the {key.replace('_', ' ')} must be one of {', '.join(allowed)}, got {values[key]!r}")
    kind, sep, who = values["principal"].partition(":")
    if not sep or kind != "User" or not who:
        raise ConsoleError(f"a principal is User:name, got {values['principal']!r}")
    if values["resource_type"] == "CLUSTER":
        values["name"] = "kafka-cluster"
    if not values["name"]:
        raise ConsoleError("the resource needs a name (* for every one)")
    return AclRow(values["principal"], values["host"] or "*", values["operation"], values["permission"],
                  values["resource_type"], values["name"], values["pattern"])


def _int(text: str, what: str, lo: int) -> int:
    try:
        v = int(text.strip())
    except ValueError:
        raise ConsoleError(f"the {what} must be a whole number, got {text!r}") from None
    if v < lo:
        raise ConsoleError(f"the {what} must be at least {lo}, got {v}")
    return v


def _kv(line: str) -> tuple[str, str]:
    k, eq, v = line.partition("=")
    if not eq or not k.strip():
        raise ConsoleError(f"a config is key=value, got {line!r}")
    return k.strip(), v.strip()


def _reset_value(mode: ResetMode, text: str) -> int | None:
    """The reset's value from the form: an offset, a shift, a date-time or a duration."""
    if mode is ResetMode.TO_OFFSET or mode is ResetMode.SHIFT_BY:
        try:
            return int(text)
        except ValueError:
            raise ConsoleError(f"--{mode.value} needs a whole number, got {text!r}") from None
    if mode is ResetMode.TO_DATETIME:
        ms = parse_datetime_ms(text)
        if ms > time.time() * 1000:
            raise ConsoleError(f"{text} is in the future: no offset is that recent")
        return ms
    if mode is ResetMode.BY_DURATION:
        return int(time.time() * 1000) - parse_duration_ms(text)
    return None
