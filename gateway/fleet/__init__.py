"""Shipping one index version to a fleet of gateways as a single signed file (issue 12).

A gateway that built and checked a version exports it (``archive.export_version``): the version
directory, the original PDFs it cites and a manifest of checksums, signed with an Ed25519 key
(``signing``). Another gateway imports it (``archive.import_archive``) only if the signer is one of
its trusted keys, every checksum holds and the embedding model is the one it runs; the version lands
inactive, so QA can replay it before `manualqa index activate`. Any OTA tool (RAUC, Mender,
SWUpdate) can carry the file: it is self-checking, so the transport need not be trusted.

Layout under the data directory::

    signing/<id>.key           private keys (PKCS#8 PEM, mode 0600; directory 0700)
    signing/<id>.pub           their public halves (JSON, what `signing export-public` prints)
    signing/trusted/<id>.pub   public keys whose archives this gateway accepts
"""

from __future__ import annotations

from gateway.errors import GatewayError


class FleetError(GatewayError):
    """A key or an archive that cannot be used; the message says what is wrong with it."""

    http_status = 400
    code = "fleet_error"


__all__ = ["FleetError"]
