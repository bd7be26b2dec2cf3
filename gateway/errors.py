"""The one shape of an error meant for the user: a message, an HTTP status and a stable code.

Every room's user-facing error class carries two class attributes, `http_status` and `code`
(ingest.IngestError, retrieval.RetrievalError, runtimes.profile_spec.ProfileError define them
themselves: those rooms never import gateway). The web maps any such error to
{"error": {"code", "message"}} with its status in one place (gateway/web/errors.py), and the CLI
to `Error: message` with exit status 1 in one place (gateway/cli/root.py). An exception without
them is a bug: a 500 / a traceback, never dressed up as the user's mistake.
"""

from __future__ import annotations


class GatewayError(ValueError):
    """Base of the gateway's own user-facing errors (bad input, a missing run, a bad gate file)."""

    http_status = 400
    code = "invalid_request"


def is_user_error(exc: BaseException) -> bool:
    """Whether `exc` follows the protocol above (its message is written for the user)."""
    return isinstance(getattr(type(exc), "http_status", None), int) and isinstance(
        getattr(type(exc), "code", None), str)
