"""Confluent's Schema Registry errors: an HTTP status and a JSON `error_code` / `message`."""
from __future__ import annotations

from praha.errors import ErrorCode, PrahaError


class RegistryError(PrahaError):
    """An answer the registry gives as Confluent's does: `status` is the HTTP status,
    `error_code` Confluent's code (40401, 42201, ...)."""

    def __init__(self, status: int, error_code: int, message: str):
        super().__init__(message, ErrorCode.INVALID_REQUEST)
        self.status = status
        self.error_code = error_code
        self.message = message

    def body(self) -> dict[str, object]:
        return {"error_code": self.error_code, "message": self.message}


def subject_not_found(subject: str) -> RegistryError:
    return RegistryError(404, 40401, f"Subject '{subject}' not found.")


def version_not_found(subject: str, version: object) -> RegistryError:
    return RegistryError(404, 40402, f"Version {version} not found.")


def schema_not_found(detail: str = "Schema not found") -> RegistryError:
    return RegistryError(404, 40403, detail)


def subject_soft_deleted(subject: str) -> RegistryError:
    return RegistryError(404, 40404, f"Subject '{subject}' was soft deleted.Set permanent=true to delete permanently")


def subject_not_soft_deleted(subject: str) -> RegistryError:
    return RegistryError(404, 40405, f"Subject '{subject}' was not deleted first before being permanently deleted")


def version_soft_deleted(subject: str, version: int) -> RegistryError:
    return RegistryError(404, 40406, f"Subject '{subject}' Version {version} was soft deleted.Set permanent=true to "
                                     "delete permanently")


def version_not_soft_deleted(subject: str, version: int) -> RegistryError:
    return RegistryError(404, 40407, f"Subject '{subject}' Version {version} was not deleted first before being "
                                     "permanently deleted")


def subject_config_not_found(subject: str) -> RegistryError:
    return RegistryError(404, 40408, f"Subject '{subject}' does not have subject-level compatibility configured")


def subject_mode_not_found(subject: str) -> RegistryError:
    return RegistryError(404, 40409, f"Subject '{subject}' does not have subject-level mode configured")


def incompatible(messages: list[str]) -> RegistryError:
    return RegistryError(409, 409, "Schema being registered is incompatible with an earlier schema for subject; "
                                   "details: " + "; ".join(messages))


def invalid_schema(detail: str) -> RegistryError:
    return RegistryError(422, 42201, f"Invalid schema: {detail}")


def invalid_version(version: str) -> RegistryError:
    return RegistryError(422, 42202, f"The specified version '{version}' is not a valid version id. Allowed values "
                                     "are between [1, 2^31-1] and the string \"latest\"")


def invalid_compatibility(level: object) -> RegistryError:
    return RegistryError(422, 42203, f"Invalid compatibility level: {level}. Valid values are NONE, BACKWARD, "
                                     "BACKWARD_TRANSITIVE, FORWARD, FORWARD_TRANSITIVE, FULL, FULL_TRANSITIVE")


def invalid_mode(mode: object) -> RegistryError:
    return RegistryError(422, 42204, f"Invalid mode: {mode}. Valid values are READWRITE, READONLY, "
                                     "READONLY_OVERRIDE, IMPORT")


def not_permitted(detail: str) -> RegistryError:
    return RegistryError(422, 42205, detail)


def reference_exists(detail: str) -> RegistryError:
    return RegistryError(422, 42206, detail)


def bad_request(detail: str) -> RegistryError:
    """A body that is not JSON, or not the object the route takes (Confluent's rest layer: 400)."""
    return RegistryError(400, 400, detail)


def unauthorized() -> RegistryError:
    return RegistryError(401, 401, "Unauthorized")


def forbidden(user: str, action: str) -> RegistryError:
    return RegistryError(403, 40301, f"User {user} is not authorized to {action}")


def store_error(detail: str) -> RegistryError:
    return RegistryError(500, 50001, f"Error in the backend data store - {detail}")


def store_timeout(detail: str) -> RegistryError:
    return RegistryError(500, 50002, f"Operation timed out - {detail}")


def forwarding_error(detail: str) -> RegistryError:
    return RegistryError(500, 50003, f"Error while forwarding the request to the primary: {detail}")
