"""What the registry knows, rebuilt from `_schemas` record by record (`apply`), and the
decisions taken on it without I/O: what a registration or a delete writes, what a read
answers. Every broker holds one; only the primary's decisions are written."""
from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace

from praha.registry import errors
from praha.registry.errors import RegistryError
from praha.registry.model import (
    DEFAULT_COMPATIBILITY,
    DEFAULT_MODE,
    Compatibility,
    Mode,
    Reference,
    SchemaType,
    SchemaVersion,
)
from praha.registry.records import Key, KeyType, config_value, decode_schema_value, mode_value, schema_value
from praha.registry.rules import Parsed, ResolvedReference, canonical, compatibility_problems, parse

log = logging.getLogger(__name__)
MAX_VERSION = 2**31 - 1
LATEST = -1

#: one write: a key and its value (None: a tombstone)
Write = tuple[bytes, bytes | None]


def parse_version(text: str | int) -> int:
    """`latest` / -1 → LATEST, 1..2^31-1 → itself; anything else → 42202."""
    s = str(text).strip()
    if s.lower() == "latest" or s == "-1":
        return LATEST
    try:
        v = int(s)
    except ValueError:
        raise errors.invalid_version(s) from None
    if not 1 <= v <= MAX_VERSION:
        raise errors.invalid_version(s)
    return v


@dataclass(frozen=True)
class Registration:
    """What registering a schema under a subject comes to: an existing version (nothing to
    write) or a new one still needing an id when `new_id` is true."""

    version: SchemaVersion
    new_id: bool
    written: bool


class RegistryState:
    def __init__(self) -> None:
        self.versions: dict[str, dict[int, SchemaVersion]] = {}
        self.by_id: dict[int, SchemaVersion] = {}
        self.configs: dict[str | None, Compatibility] = {}
        self.modes: dict[str | None, Mode] = {}
        self.max_id = 0
        self._forms: dict[tuple[SchemaType, tuple[Reference, ...], bool, str], int] = {}
        self.applied = 0

    # ------------------------------------------------------------------ applying records
    def apply(self, raw_key: bytes | None, raw_value: bytes | None) -> None:
        key = Key.decode(raw_key) if raw_key is not None else None
        if key is None:
            return
        self.applied += 1
        try:
            if key.keytype is KeyType.SCHEMA and key.subject is not None and key.version is not None:
                self._apply_schema(key.subject, key.version, raw_value)
            elif key.keytype is KeyType.CONFIG:
                if raw_value is None:
                    self.configs.pop(key.subject, None)
                else:
                    level = json.loads(raw_value).get("compatibilityLevel")
                    if level:
                        self.configs[key.subject] = Compatibility(level)
            elif key.keytype is KeyType.MODE:
                if raw_value is None:
                    self.modes.pop(key.subject, None)
                else:
                    self.modes[key.subject] = Mode(json.loads(raw_value)["mode"])
        except (ValueError, KeyError, TypeError) as e:
            log.warning("skipping an unreadable _schemas record %r: %s", raw_key, e)

    def _apply_schema(self, subject: str, version: int, raw_value: bytes | None) -> None:
        versions = self.versions.setdefault(subject, {})
        if raw_value is None:
            gone = versions.pop(version, None)
            if not versions:
                self.versions.pop(subject, None)
            if gone is not None and not any(v.id == gone.id for vs in self.versions.values() for v in vs.values()):
                self.by_id.pop(gone.id, None)
            return
        v = decode_schema_value(raw_value)
        versions[version] = v
        self.max_id = max(self.max_id, v.id)
        if v.id not in self.by_id:
            self.by_id[v.id] = v
            self._index(v)

    def _index(self, v: SchemaVersion) -> None:
        try:
            parsed = self.parse(v.schema_type, v.schema, v.references)
        except RegistryError as e:
            log.warning("schema id %d does not parse here (%s); it is served but not matched", v.id, e.message)
            return
        for normalize in (False, True):
            self._forms.setdefault((v.schema_type, v.references, normalize, canonical(parsed, normalize)), v.id)

    # ------------------------------------------------------------------ reads
    def compatibility(self, subject: str | None) -> Compatibility:
        if subject is not None and subject in self.configs:
            return self.configs[subject]
        return self.configs.get(None, DEFAULT_COMPATIBILITY)

    def mode(self, subject: str | None) -> Mode:
        if subject is not None and subject in self.modes:
            return self.modes[subject]
        return self.modes.get(None, DEFAULT_MODE)

    def subjects(self, deleted: bool = False, prefix: str = "") -> list[str]:
        return sorted(s for s, vs in self.versions.items()
                      if s.startswith(prefix) and (deleted or any(not v.deleted for v in vs.values())))

    def live_versions(self, subject: str, deleted: bool = False) -> list[SchemaVersion]:
        vs = self.versions.get(subject)
        if not vs:
            raise errors.subject_not_found(subject)
        out = [vs[n] for n in sorted(vs) if deleted or not vs[n].deleted]
        if not out:
            raise errors.subject_not_found(subject)
        return out

    def get_version(self, subject: str, version: int, deleted: bool = False) -> SchemaVersion:
        vs = self.live_versions(subject, deleted=True)
        if version == LATEST:
            live = [v for v in vs if deleted or not v.deleted]
            if not live:
                raise errors.subject_not_found(subject)
            return live[-1]
        found = next((v for v in vs if v.version == version), None)
        if found is None or (found.deleted and not deleted):
            raise errors.version_not_found(subject, version)
        return found

    def schema_by_id(self, schema_id: int) -> SchemaVersion:
        v = self.by_id.get(schema_id)
        if v is None:
            raise errors.schema_not_found()
        return v

    def uses_of(self, schema_id: int, deleted: bool = False) -> list[SchemaVersion]:
        return [v for s in sorted(self.versions) for _, v in sorted(self.versions[s].items())
                if v.id == schema_id and (deleted or not v.deleted)]

    def referenced_by(self, subject: str, version: int) -> list[int]:
        return sorted({v.id for vs in self.versions.values() for v in vs.values() if not v.deleted
                       and any(r.subject == subject and r.version == version for r in v.references)})

    def resolve(self, references: Sequence[Reference], depth: int = 0) -> list[ResolvedReference]:
        """The referenced schemas, each one's own references before it; 42201 if one is missing."""
        out: list[ResolvedReference] = []
        if depth > 32:
            raise errors.invalid_schema("references nest too deep (a cycle?)")
        for ref in references:
            try:
                target = self.get_version(ref.subject, ref.version)
            except RegistryError:
                raise errors.invalid_schema(f"reference {ref.name!r} to subject {ref.subject!r} version "
                                            f"{ref.version} does not exist") from None
            for r in self.resolve(target.references, depth + 1):
                if r not in out:
                    out.append(r)
            out.append(ResolvedReference(ref.name, target.schema_type, target.schema))
        return out

    def parse(self, schema_type: SchemaType, text: str, references: Sequence[Reference]) -> Parsed:
        return parse(schema_type, text, self.resolve(references))

    def lookup(self, subject: str, parsed: Parsed, schema_type: SchemaType, references: tuple[Reference, ...],
               normalize: bool, deleted: bool = False) -> SchemaVersion | None:
        """The subject's version holding this schema (the newest), if any."""
        schema_id = self._forms.get((schema_type, references, normalize, canonical(parsed, normalize)))
        if schema_id is None:
            return None
        found = [v for v in self.versions.get(subject, {}).values() if v.id == schema_id and (deleted or not v.deleted)]
        return max(found, key=lambda v: v.version) if found else None

    def parsed_history(self, subject: str) -> list[Parsed]:
        """The subject's live versions, parsed, oldest first (what compatibility is checked against)."""
        try:
            vs = self.live_versions(subject)
        except RegistryError:
            return []
        return [self.parse(v.schema_type, v.schema, v.references) for v in vs]

    # ------------------------------------------------------------------ decisions
    def check_writable(self, subject: str | None) -> None:
        if not self.mode(subject).writable:
            raise errors.not_permitted(f"Subject {subject} is in read-only mode" if subject
                                       else "The registry is in read-only mode")

    def plan_registration(self, subject: str, schema_type: SchemaType, text: str, references: tuple[Reference, ...],
                          normalize: bool, wanted_id: int | None = None, wanted_version: int | None = None
                          ) -> Registration:
        """Validate, deduplicate and check compatibility; the new version (id 0 when one must
        be allocated) or the one that already holds this schema."""
        self.check_writable(subject)
        parsed = self.parse(schema_type, text, references)
        existing = self.lookup(subject, parsed, schema_type, references, normalize)
        if existing is not None and wanted_id in (None, existing.id):
            return Registration(existing, new_id=False, written=False)
        if wanted_id is not None and self.mode(subject) is not Mode.IMPORT:
            raise errors.not_permitted("Registering a schema with a given id needs IMPORT mode")
        problems = compatibility_problems(self.compatibility(subject), parsed, self.parsed_history(subject))
        if problems:
            raise errors.incompatible(problems)
        form = (schema_type, references, normalize, canonical(parsed, normalize))
        same_id = self._forms.get(form)
        if wanted_id is not None:
            taken = self.by_id.get(wanted_id)
            if taken is not None and same_id != wanted_id:
                raise errors.RegistryError(422, 42207, f"Schema id {wanted_id} is taken by another schema")
            same_id = wanted_id
        versions = self.versions.get(subject, {})
        version = wanted_version or (max(versions) + 1 if versions else 1)
        if version in versions and not versions[version].deleted:
            raise errors.RegistryError(422, 42202, f"Version {version} of subject {subject} exists")
        text_out = parsed.normalized() if normalize else text
        new = SchemaVersion(subject, version, same_id or 0, schema_type, text_out, references)
        return Registration(new, new_id=same_id is None, written=True)

    def plan_delete_subject(self, subject: str, permanent: bool) -> tuple[list[int], list[Write]]:
        self.check_writable(subject)
        vs = self.versions.get(subject)
        if not vs:
            raise errors.subject_not_found(subject)
        live = [v for _, v in sorted(vs.items()) if not v.deleted]
        for v in live:
            self._refuse_if_referenced(v)
        if permanent:
            if live:
                raise errors.subject_not_soft_deleted(subject)
            writes: list[Write] = [(Key(KeyType.SCHEMA, subject, v.version).encode(), None) for v in vs.values()]
            writes += [(Key(KeyType.CONFIG, subject).encode(), None)] if subject in self.configs else []
            writes += [(Key(KeyType.MODE, subject).encode(), None)] if subject in self.modes else []
            return sorted(vs), writes
        if not live:
            raise errors.subject_soft_deleted(subject)
        return [v.version for v in live], [
            (Key(KeyType.SCHEMA, subject, v.version).encode(), schema_value(replace(v, deleted=True))) for v in live]

    def plan_delete_version(self, subject: str, version: int, permanent: bool) -> tuple[int, list[Write]]:
        self.check_writable(subject)
        # `latest`: the newest live version (a soft delete), the newest of all (a permanent one)
        target = self.get_version(subject, version, deleted=permanent or version != LATEST)
        if not permanent and target.deleted:
            raise errors.version_soft_deleted(subject, target.version)
        if permanent and not target.deleted:
            raise errors.version_not_soft_deleted(subject, target.version)
        self._refuse_if_referenced(target)
        key = Key(KeyType.SCHEMA, subject, target.version).encode()
        return target.version, [(key, None if permanent else schema_value(replace(target, deleted=True)))]

    def _refuse_if_referenced(self, v: SchemaVersion) -> None:
        users = self.referenced_by(v.subject, v.version)
        if users:
            raise errors.reference_exists(f"One or more references exist to the schema {{subject={v.subject}, "
                                          f"version={v.version}}}: schema ids {users}")

    @staticmethod
    def config_write(subject: str | None, level: Compatibility | None) -> Write:
        return (Key(KeyType.CONFIG, subject).encode(), config_value(level) if level is not None else None)

    @staticmethod
    def mode_write(subject: str | None, mode: Mode | None) -> Write:
        return (Key(KeyType.MODE, subject).encode(), mode_value(mode) if mode is not None else None)

    @staticmethod
    def schema_write(v: SchemaVersion) -> Write:
        return (Key(KeyType.SCHEMA, v.subject, v.version).encode(), schema_value(v))
