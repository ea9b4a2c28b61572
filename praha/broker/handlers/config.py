"""DescribeConfigs: a topic's, this broker's or its loggers' configs, as Kafka reports them.

1. Read what ZooKeeper holds (off the event loop): the topic's overrides
   (`/config/topics/<t>`), this broker's dynamic configs (`/config/brokers/<id>`) and the
   cluster-wide ones (`/config/brokers/<default>`).
2. Resolve each config through its layers (`praha.config.resolve_topic_config`): topic
   override, dynamic broker, dynamic default, `server.properties`, Kafka's default; the
   first is reported with its source, the rest as synonyms when asked.
3. Broker resources: every setting this broker has, read-only unless Kafka can change it
   dynamically; the resource name must be this broker's id (or empty: the cluster-wide
   dynamic defaults), as Kafka requires. Broker loggers: the Python loggers' levels, by
   Kafka's level names, set with IncrementalAlterConfigs.
Unknown topics get UNKNOWN_TOPIC_OR_PARTITION, unknown resource types INVALID_REQUEST.

AlterConfigs (the whole override set replaced) and IncrementalAlterConfigs (SET, DELETE,
APPEND, SUBTRACT per key) go through `praha.zk.admin_zk.alter_config`, the same checks and
the same znodes and change notices as `praha configs`; `validate_only` checks and writes
nothing. A resource's keys are checked before anything of it is written; each resource is
answered on its own (INVALID_CONFIG naming the key, UNKNOWN_TOPIC_OR_PARTITION, ...).
"""
from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from praha.config import (
    BROKER_CONFIG_BY_NAME,
    DYNAMIC_BROKER_KEYS,
    TOPIC_CONFIG_BY_NAME,
    TOPIC_CONFIG_DEFS,
    ConfigSource,
    ConfigType,
    ResolvedValue,
    resolve_topic_config,
)
from praha.config.describe import resolve_broker_config
from praha.config.group_defs import GROUP_CONFIG_DEFS, int_broker_settings, validate_group_config
from praha.errors import ErrorCode, PrahaError
from praha.protocol.framing import DecodedRequest
from praha.protocol.messages.gen.admin import (
    AlterConfigsRequest,
    AlterConfigsResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)
from praha.security.acl import AclOperation
from praha.zk.admin_zk import BROKERS, GROUPS, TOPICS, alter_config, read_config

if TYPE_CHECKING:
    from praha.broker.handlers.broker_api import Broker

RESOURCE_TOPIC, RESOURCE_BROKER, RESOURCE_BROKER_LOGGER, RESOURCE_GROUP = 2, 4, 8, 32
DEFAULT_ENTITY = "<default>"

_Result = DescribeConfigsResponse.DescribeConfigsResult
_Entry = _Result.DescribeConfigsResourceResult
_Syn = _Entry.DescribeConfigsSynonym

#: broker settings whose values must not be shown (Kafka's PASSWORD type)
_SENSITIVE_SUFFIXES = (".password", "sasl.jaas.config", "ssl.keystore.key", "zookeeper.digest")


OP_SET, OP_DELETE, OP_APPEND, OP_SUBTRACT = 0, 1, 2, 3
#: Kafka's (log4j's) level names and the Python logging levels they set
LOG_LEVELS = {"ALL": 1, "TRACE": 5, "DEBUG": logging.DEBUG, "INFO": logging.INFO, "WARN": logging.WARNING,
              "ERROR": logging.ERROR, "FATAL": logging.CRITICAL, "OFF": logging.CRITICAL + 10}
_LEVEL_NAMES = {v: k for k, v in LOG_LEVELS.items()}
ROOT_LOGGER = "root"
log = logging.getLogger(__name__)


class ConfigApis:
    def __init__(self, broker: Broker):
        self.broker = broker

    async def handle_describe_configs(self, req: DecodedRequest) -> DescribeConfigsResponse:
        r = req.body(DescribeConfigsRequest)
        v = req.api_version
        synonyms = bool(r.include_synonyms) if v >= 1 else False
        docs = bool(r.include_documentation) if v >= 3 else False
        results = []
        for res in r.resources or []:
            keys = None if res.configuration_keys is None else set(res.configuration_keys)
            refused = self._refusal(req, res.resource_type, res.resource_name, AclOperation.DESCRIBE_CONFIGS)
            if refused is not None:
                results.append(_Result(error_code=int(refused), error_message=None, resource_type=res.resource_type,
                                       resource_name=res.resource_name, configs=[]))
                continue
            try:
                entries = await self._describe(res.resource_type, res.resource_name, keys, synonyms, docs)
                results.append(_Result(error_code=0, error_message=None, resource_type=res.resource_type,
                                       resource_name=res.resource_name, configs=entries))
            except PrahaError as e:
                results.append(_Result(error_code=int(e.code), error_message=str(e), resource_type=res.resource_type,
                                       resource_name=res.resource_name, configs=[]))
        return DescribeConfigsResponse(throttle_time_ms=0, results=results)

    def _refusal(self, req: DecodedRequest, rtype: int, name: str, op: AclOperation) -> ErrorCode | None:
        """Kafka's check: topics on the topic, broker configs on the cluster."""
        authz = self.broker.authz
        if rtype == RESOURCE_TOPIC:
            return None if authz.topic_allowed(req, op, name) else ErrorCode.TOPIC_AUTHORIZATION_FAILED
        if rtype == RESOURCE_GROUP:
            return None if authz.group_allowed(req, op, name) else ErrorCode.GROUP_AUTHORIZATION_FAILED
        return None if authz.cluster_allowed(req, op) else ErrorCode.CLUSTER_AUTHORIZATION_FAILED

    async def _describe(self, rtype: int, name: str, keys: set[str] | None, synonyms: bool, docs: bool) -> list[_Entry]:
        if rtype == RESOURCE_TOPIC:
            return await self._topic(name, keys, synonyms, docs)
        if rtype == RESOURCE_BROKER:
            return await self._broker(name, keys, synonyms, docs)
        if rtype == RESOURCE_BROKER_LOGGER:
            return self._loggers(name, keys)
        if rtype == RESOURCE_GROUP:
            return await self._group(name, keys, synonyms, docs)
        raise PrahaError(f"unsupported resource type {rtype}", ErrorCode.INVALID_REQUEST)

    async def _zk_layers(self, topic: str | None) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
        def read() -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
            store = self.broker.zk_store()
            override: dict[str, str] = {}
            if topic is not None:
                configs, bad = store.get_topic_configs([topic])
                if topic in bad:
                    raise PrahaError(f"the config of topic '{topic}' in ZooKeeper is unreadable: {bad[topic]}")
                override = configs.get(topic, {})
            return (override, read_config(store, BROKERS, str(self.broker.broker_id)),
                    read_config(store, BROKERS, DEFAULT_ENTITY))
        return await asyncio.get_running_loop().run_in_executor(None, read)

    async def _topic(self, topic: str, keys: set[str] | None, synonyms: bool, docs: bool) -> list[_Entry]:
        if not self.broker.metadata_cache.contains_topic(topic):
            raise PrahaError(f"Topic '{topic}' does not exist.", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        override, dyn, dyn_default = await self._zk_layers(topic)
        # only the dynamic broker configs praha applies are in effect (the log defaults it reloads)
        dyn = {k: v for k, v in dyn.items() if k in DYNAMIC_BROKER_KEYS}
        dyn_default = {k: v for k, v in dyn_default.items() if k in DYNAMIC_BROKER_KEYS}
        static = self.broker.config.static_values()
        out = []
        for d in TOPIC_CONFIG_DEFS:
            if keys is not None and d.name not in keys:
                continue
            layers = resolve_topic_config(d, override, dyn, dyn_default, static)
            out.append(_entry(d.name, layers[0], False, synonyms, layers, d.type, d.doc if docs else None))
        return out

    async def _broker(self, name: str, keys: set[str] | None, synonyms: bool, docs: bool) -> list[_Entry]:
        if name not in ("", str(self.broker.broker_id)):
            raise PrahaError(f"Unexpected broker id, expected {self.broker.broker_id} or empty string, "
                             f"but received {name}", ErrorCode.INVALID_REQUEST)
        _, dyn, dyn_default = await self._zk_layers(None)
        cfg = self.broker.config
        static = cfg.static_values()
        out = []
        in_effect = {d.name: cfg.value_of(d.name) for d in BROKER_CONFIG_BY_NAME.values()}
        for key in sorted({*BROKER_CONFIG_BY_NAME, *cfg.unknown}):
            if keys is not None and key not in keys:
                continue
            d = BROKER_CONFIG_BY_NAME.get(key)
            if d is None:  # a key the table does not define, as server.properties gave it
                layers = [ResolvedValue(key, cfg.unknown[key], ConfigSource.STATIC_BROKER_CONFIG)] if name else []
            else:
                layers = resolve_broker_config(key, bool(name), dyn, dyn_default, static, in_effect)
            if not layers:
                continue  # `<default>` lists only what is set cluster-wide
            out.append(_entry(key, layers[0], key not in DYNAMIC_BROKER_KEYS, synonyms, layers,
                              d.type if d is not None else ConfigType.STRING, d.doc if docs and d else None))
        return out

    def _group_bounds(self) -> dict[str, int]:
        """The broker settings a GROUP config falls back to and is bounded by."""
        return {n: int(self.broker.config.value_of(n) or 0) for n in int_broker_settings()}

    async def _group(self, group: str, keys: set[str] | None, synonyms: bool, docs: bool) -> list[_Entry]:
        """A group's settings: its override (GROUP_CONFIG), else the broker's (DEFAULT_CONFIG)."""
        if not group:
            raise PrahaError("Group name must not be empty", ErrorCode.INVALID_REQUEST)
        override = await asyncio.get_running_loop().run_in_executor(
            None, lambda: read_config(self.broker.zk_store(), GROUPS, group))
        out = []
        for d in GROUP_CONFIG_DEFS:
            if keys is not None and d.name not in keys:
                continue
            layers = [ResolvedValue(d.name, override[d.name], ConfigSource.GROUP_CONFIG)] if d.name in override else []
            layers.append(ResolvedValue(d.broker_default, str(self.broker.config.value_of(d.broker_default)),
                                        ConfigSource.DEFAULT_CONFIG))
            top = layers[0] if d.name in override else ResolvedValue(d.name, layers[0].value,
                                                                     ConfigSource.DEFAULT_CONFIG)
            out.append(_entry(d.name, top, False, synonyms, layers, ConfigType.INT if d.is_int else ConfigType.STRING,
                              d.doc if docs else None))
        return out

    # ------------------------------------------------------------ AlterConfigs
    async def handle_alter_configs(self, req: DecodedRequest) -> AlterConfigsResponse:
        r = req.body(AlterConfigsRequest)
        asked = [(res.resource_type, res.resource_name, [(c.name, OP_SET, c.value) for c in (res.configs or [])])
                 for res in r.resources or []]
        cls = AlterConfigsResponse.AlterConfigsResourceResponse
        return AlterConfigsResponse(throttle_time_ms=0, responses=[
            cls(error_code=int(code), error_message=message, resource_type=rtype, resource_name=name)
            for rtype, name, code, message in await self._alter_all(req, asked, True, bool(r.validate_only))])

    async def handle_incremental_alter_configs(self, req: DecodedRequest) -> IncrementalAlterConfigsResponse:
        r = req.body(IncrementalAlterConfigsRequest)
        asked = [(res.resource_type, res.resource_name,
                  [(c.name, c.config_operation, c.value) for c in (res.configs or [])])
                 for res in r.resources or []]
        cls = IncrementalAlterConfigsResponse.AlterConfigsResourceResponse
        return IncrementalAlterConfigsResponse(throttle_time_ms=0, responses=[
            cls(error_code=int(code), error_message=message, resource_type=rtype, resource_name=name)
            for rtype, name, code, message in await self._alter_all(req, asked, False, bool(r.validate_only))])

    async def _alter_all(self, req: DecodedRequest, asked: list[tuple[int, str, list[tuple[str, int, str | None]]]],
                         replace: bool, validate_only: bool) -> list[tuple[int, str, int, str | None]]:
        """Each resource of an (Incremental)AlterConfigs request altered and answered on its own:
        (resource type, name, error code, message)."""
        out: list[tuple[int, str, int, str | None]] = []
        for rtype, name, changes in asked:
            refused = self._refusal(req, rtype, name, AclOperation.ALTER_CONFIGS)
            if refused is not None:
                out.append((rtype, name, int(refused), None))
                continue
            code, message = await self._alter(rtype, name, changes, replace, validate_only)
            out.append((rtype, name, int(code), message))
        return out

    async def _alter(self, rtype: int, name: str, changes: list[tuple[str, int, str | None]], replace: bool,
                     validate_only: bool) -> tuple[ErrorCode, str | None]:
        if rtype == RESOURCE_BROKER_LOGGER:
            return self._alter_loggers(name, changes, validate_only)
        if rtype == RESOURCE_TOPIC:
            entity = TOPICS
        elif rtype == RESOURCE_BROKER:
            entity, name = BROKERS, name or DEFAULT_ENTITY
        elif rtype == RESOURCE_GROUP:
            entity = GROUPS
        else:
            return ErrorCode.INVALID_REQUEST, f"unsupported resource type {rtype}"
        keys = [k for k, _, _ in changes]
        if len(set(keys)) != len(keys):
            dup = sorted({k for k in keys if keys.count(k) > 1})
            return ErrorCode.INVALID_REQUEST, f"Error due to duplicate config keys: {', '.join(dup)}"

        bounds = self._group_bounds()

        def run() -> None:
            store = self.broker.zk_store()
            current = {} if replace else read_config(store, entity, name)
            add, delete = _apply_ops(entity, current, changes)
            if entity == GROUPS:  # the whole set after the change, against this broker's bounds (Kafka's checks)
                after = {**({} if replace else {k: v for k, v in current.items() if k not in delete}), **add}
                validate_group_config(after, bounds)
            alter_config(store, entity, name, add, [k for k in delete if k in current], replace=replace,
                         validate_only=validate_only)
        try:
            await asyncio.get_running_loop().run_in_executor(None, run)
        except PrahaError as e:
            return e.code, str(e)
        return ErrorCode.NONE, None

    def _loggers(self, name: str, keys: set[str] | None) -> list[_Entry]:
        if name != str(self.broker.broker_id):
            raise PrahaError(f"Unexpected broker id, expected {self.broker.broker_id}, but received {name}",
                             ErrorCode.INVALID_REQUEST)
        out = []
        for n in _logger_names():
            if keys is not None and n not in keys:
                continue
            effective = (logging.getLogger() if n == ROOT_LOGGER else logging.getLogger(n)).getEffectiveLevel()
            level = _LEVEL_NAMES.get(effective) or logging.getLevelName(effective)
            value = ResolvedValue(n, level, ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG)
            out.append(_entry(n, value, False, False, [value], ConfigType.STRING, None))
        return out


    def _alter_loggers(self, name: str, changes: list[tuple[str, int, str | None]], validate_only: bool
                       ) -> tuple[ErrorCode, str | None]:
        """This broker's loggers' levels (kafka-configs --entity-type broker-loggers): SET a
        level by Kafka's name, DELETE to follow the parent again; checked whole first, with
        Kafka's refusals, and not kept across a restart (as Kafka's)."""
        if name != str(self.broker.broker_id):
            return (ErrorCode.INVALID_REQUEST,
                    f"Unexpected broker id, expected {self.broker.broker_id}, but received {name}")
        try:
            levels = plan_logger_levels(changes, set(_logger_names()))
        except PrahaError as e:
            return e.code, str(e)
        if not validate_only:
            for logger, level in levels.items():
                (logging.getLogger() if logger == ROOT_LOGGER else logging.getLogger(logger)).setLevel(level)
            log.info("broker loggers: %d levels changed (%s)", len(levels),
                     ", ".join(f"{k}={_LEVEL_NAMES.get(v, 'parent')}" for k, v in sorted(levels.items())))
        return ErrorCode.NONE, None


def _logger_names() -> list[str]:
    """The loggers a broker reports: the root and praha's own."""
    return [ROOT_LOGGER, *sorted(n for n in logging.Logger.manager.loggerDict if n.startswith("praha"))]


def plan_logger_levels(changes: list[tuple[str, int, str | None]], existing: set[str]) -> dict[str, int]:
    """IncrementalAlterConfigs of broker loggers → {logger: Python level (NOTSET: follow the
    parent)}; Kafka's refusals for an unknown logger or level, the root's deletion, APPEND and
    SUBTRACT."""
    out: dict[str, int] = {}
    for logger, op, value in changes:
        if op in (OP_APPEND, OP_SUBTRACT):
            raise PrahaError(f"{'APPEND' if op == OP_APPEND else 'SUBTRACT'} operation is not allowed for the "
                             "BROKER_LOGGER resource", ErrorCode.INVALID_REQUEST)
        if logger not in existing:
            raise PrahaError(f"Logger {logger} does not exist!", ErrorCode.INVALID_CONFIG)
        if op == OP_DELETE:
            if logger == ROOT_LOGGER:
                raise PrahaError(f"Removing the log level of the {ROOT_LOGGER} logger is not allowed",
                                 ErrorCode.INVALID_REQUEST)
            out[logger] = logging.NOTSET
        elif value not in LOG_LEVELS:
            raise PrahaError(f"Cannot set the log level of {logger} to {value} as it is not a supported log level. "
                             f"Valid log4j levels are {', '.join(sorted(LOG_LEVELS))}", ErrorCode.INVALID_CONFIG)
        else:
            out[logger] = LOG_LEVELS[value]
    return out


def _apply_ops(entity: str, current: dict[str, str], changes: list[tuple[str, int, str | None]]
               ) -> tuple[dict[str, str], list[str]]:
    """IncrementalAlterConfigs' operations as (values to set, keys to delete). APPEND and
    SUBTRACT work on list configs only, as in Kafka."""
    add: dict[str, str] = {}
    delete: list[str] = []
    for key, op, value in changes:
        if op == OP_SET:
            if value is None:
                raise PrahaError(f"Null value not supported for : {key}", ErrorCode.INVALID_REQUEST)
            add[key] = value
        elif op == OP_DELETE:
            delete.append(key)
        elif op in (OP_APPEND, OP_SUBTRACT):
            d = TOPIC_CONFIG_BY_NAME.get(key) if entity == TOPICS else None
            if d is None or d.type != ConfigType.LIST:
                raise PrahaError(f"Config value append is not allowed for config key: {key}", ErrorCode.INVALID_CONFIG)
            have = [v for v in current.get(key, d.default or "").split(",") if v]
            given = [v.strip() for v in (value or "").split(",") if v.strip()]
            items = (have + [v for v in given if v not in have] if op == OP_APPEND
                     else [v for v in have if v not in given])
            add[key] = ",".join(items)
        else:
            raise PrahaError(f"unknown config operation {op} for {key}", ErrorCode.INVALID_REQUEST)
    return add, delete


def _entry(name: str, top: ResolvedValue, read_only: bool, synonyms: bool, layers: list[ResolvedValue],
           type_: ConfigType, doc: str | None) -> _Entry:
    d = BROKER_CONFIG_BY_NAME.get(name)
    sensitive = name.endswith(_SENSITIVE_SUFFIXES) or (d is not None and d.sensitive)
    return _Entry(
        name=name, value=None if sensitive else top.value, read_only=read_only, config_source=int(top.source),
        is_default=top.source == ConfigSource.DEFAULT_CONFIG, is_sensitive=sensitive,
        synonyms=[_Syn(name=s.name, value=None if sensitive else s.value, source=int(s.source)) for s in layers]
        if synonyms else [],
        config_type=int(type_), documentation=doc)
