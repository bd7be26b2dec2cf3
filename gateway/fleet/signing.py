"""Ed25519 signing keys for index archives: make, list, share and trust them.

A key's id is the first 16 hex digits of the sha256 of its raw 32-byte public key, so the id in an
archive names exactly one key and cannot be chosen by whoever made the file. Private keys never
leave `signing/` (mode 0600, directory 0700); what travels is the public key file (JSON with the
key, its id and a name), which an operator installs on each gateway with `manualqa signing trust`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from gateway.fleet import FleetError
from gateway.stamps import utcnow
from retrieval.pointer import atomic_write_bytes

PUBLIC_TYPE = "manualqa-ed25519-public-key"
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_ID_RE = re.compile(r"^[0-9a-f]{16}$")
_MAX_KEY_FILE = 64 * 1024

__all__ = ["PUBLIC_TYPE", "create_key", "export_public", "export_refusal", "key_id", "list_keys", "private_key",
           "signing_dir", "trust", "trusted_dir", "untrust", "verify_signature"]


def signing_dir(data_dir: Path) -> Path:
    return Path(data_dir) / "signing"


def trusted_dir(data_dir: Path) -> Path:
    return signing_dir(data_dir) / "trusted"


def _raw(public: Ed25519PublicKey) -> bytes:
    return public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def key_id(public: Ed25519PublicKey) -> str:
    """The id archives name their signer by: derived from the key, so it cannot be forged."""
    return hashlib.sha256(_raw(public)).hexdigest()[:16]


def _write_private(path: Path, data: bytes, mode: int) -> None:
    """Write a new file with `mode` from its first byte (never readable by others, not even briefly)."""
    atomic_write_bytes(path, data, mode)


def _public_doc(public: Ed25519PublicKey, name: str, created_at: str) -> dict[str, str]:
    return {"type": PUBLIC_TYPE, "id": key_id(public), "name": name, "created_at": created_at,
            "public_key": base64.b64encode(_raw(public)).decode("ascii")}


def _doc_bytes(doc: Mapping[str, object]) -> bytes:
    return (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode("utf-8")


def _parse_public(data: bytes, source: str, fallback_name: str) -> tuple[Ed25519PublicKey, dict[str, Any]]:
    """A public key file: our JSON form, or a PEM SubjectPublicKeyInfo holding an Ed25519 key."""
    text = data.decode("utf-8", errors="replace").strip()
    if text.startswith("-----BEGIN PUBLIC KEY-----"):
        try:
            public = serialization.load_pem_public_key(data)
        except ValueError as exc:
            raise FleetError(f"{source}: not a readable PEM public key ({exc})") from exc
        if not isinstance(public, Ed25519PublicKey):
            raise FleetError(f"{source}: the PEM key is not an Ed25519 key")
        name = fallback_name if _NAME_RE.match(fallback_name) else "imported"
        return public, _public_doc(public, name, utcnow())
    try:
        doc = json.loads(text)
        if not isinstance(doc, dict) or doc.get("type") != PUBLIC_TYPE:
            raise ValueError(f"not a {PUBLIC_TYPE} file")
        raw = base64.b64decode(str(doc["public_key"]), validate=True)
        public = Ed25519PublicKey.from_public_bytes(raw)
    except (ValueError, KeyError, TypeError) as exc:
        raise FleetError(f"{source}: not a manualqa public key file ({exc}); "
                         "make one with `manualqa signing export-public ID`") from exc
    real = key_id(public)
    if doc.get("id") not in (None, real):
        raise FleetError(f"{source}: the file says key id {doc.get('id')} but its key has id {real}")
    name = str(doc.get("name") or "")
    if not _NAME_RE.match(name):
        name = fallback_name if _NAME_RE.match(fallback_name) else "imported"
    return public, _public_doc(public, name, str(doc.get("created_at") or utcnow()))


def _read_key_file(path: Path) -> bytes:
    try:
        if path.stat().st_size > _MAX_KEY_FILE:
            raise FleetError(f"{path}: too large for a key file")
        return path.read_bytes()
    except OSError as exc:
        raise FleetError(f"cannot read key file {path}: {exc.strerror or exc}") from exc


def _docs(directory: Path) -> list[dict[str, Any]]:
    docs = []
    if directory.is_dir():
        for path in sorted(directory.glob("*.pub")):
            try:
                public, doc = _parse_public(_read_key_file(path), str(path), path.stem)
            except FleetError:
                continue  # a damaged file is not a usable key; list_keys must not fail on it
            if key_id(public) == path.stem:
                docs.append(doc)
    return docs


def create_key(data_dir: Path, name: str) -> dict[str, Any]:
    """A new signing key pair under `signing/`; returns its public description (id, name, ...)."""
    if not _NAME_RE.match(name or ""):
        raise FleetError(f"key name {name!r}: use 1-64 letters, digits, '.', '_' or '-'")
    if any(d["name"] == name for d in _docs(signing_dir(data_dir))):
        raise FleetError(f"a signing key named {name!r} already exists (see `manualqa signing list`)")
    directory = signing_dir(data_dir)
    directory.mkdir(parents=True, exist_ok=True)
    os.chmod(directory, 0o700)
    private = Ed25519PrivateKey.generate()
    doc = _public_doc(private.public_key(), name, utcnow())
    pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    _write_private(directory / f"{doc['id']}.key", pem, 0o600)
    _write_private(directory / f"{doc['id']}.pub", _doc_bytes(doc), 0o644)
    return {k: v for k, v in doc.items() if k != "type"}


def list_keys(data_dir: Path) -> list[dict[str, Any]]:
    """This gateway's own keys (`private`: it can sign) and the keys it trusts, one row per id."""
    rows: dict[str, dict[str, Any]] = {}
    for doc in _docs(signing_dir(data_dir)):
        if (signing_dir(data_dir) / f"{doc['id']}.key").is_file():
            rows[doc["id"]] = {"id": doc["id"], "name": doc["name"], "created_at": doc["created_at"],
                               "private": True, "trusted": False}
    for doc in _docs(trusted_dir(data_dir)):
        row = rows.setdefault(doc["id"], {"id": doc["id"], "name": doc["name"], "created_at": doc["created_at"],
                                          "private": False, "trusted": False})
        row["trusted"] = True
    return sorted(rows.values(), key=lambda r: (str(r["created_at"]), r["id"]))


def _own(data_dir: Path, key: str | None) -> dict[str, Any]:
    own = [r for r in list_keys(data_dir) if r["private"]]
    if key is None:
        if len(own) == 1:
            return own[0]
        if not own:
            raise FleetError("no signing key on this gateway: make one with `manualqa signing create NAME`")
        raise FleetError(f"several signing keys ({', '.join(r['id'] + ' ' + r['name'] for r in own)}): "
                         "choose one with --key")
    found = [r for r in own if key in (r["id"], r["name"])]
    if not found:
        raise FleetError(f"no signing key {key!r} on this gateway (see `manualqa signing list`)")
    return found[0]


def export_refusal(data_dir: Path, key: str | None = None) -> str | None:
    """Why an export signed with `key` (the only key when None) would be refused now, as the export's own
    error says it ("no signing key on this gateway: ..."); None when this gateway would sign it."""
    try:
        _own(data_dir, key)
    except FleetError as exc:
        return str(exc)
    return None


def export_public(data_dir: Path, key: str) -> bytes:
    """The public key file of one of this gateway's keys (id or name): what other gateways trust."""
    row = _own(data_dir, key)
    return (signing_dir(data_dir) / f"{row['id']}.pub").read_bytes()


def private_key(data_dir: Path, key: str | None = None) -> tuple[str, Ed25519PrivateKey]:
    """(id, key) of the signing key named by id or name (the only one when None)."""
    row = _own(data_dir, key)
    path = signing_dir(data_dir) / f"{row['id']}.key"
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        raise FleetError(f"private key {path} is readable by others (mode {mode:04o}); `chmod 600` it first")
    try:
        private = serialization.load_pem_private_key(_read_key_file(path), password=None)
    except (ValueError, TypeError) as exc:
        raise FleetError(f"private key {path} cannot be read ({exc})") from exc
    if not isinstance(private, Ed25519PrivateKey) or key_id(private.public_key()) != row["id"]:
        raise FleetError(f"private key {path} does not belong to key id {row['id']}")
    return row["id"], private


def trust(data_dir: Path, path: Path) -> dict[str, Any]:
    """Accept archives signed by the key in `path` (a file from `signing export-public`, or PEM)."""
    path = Path(path)
    public, doc = _parse_public(_read_key_file(path), str(path), path.stem.split(".")[0])
    directory = trusted_dir(data_dir)
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / f"{doc['id']}.pub"
    already = target.is_file()
    if not already:
        _write_private(target, _doc_bytes(doc), 0o644)
    return {"id": doc["id"], "name": doc["name"], "already_trusted": already}


def untrust(data_dir: Path, key: str) -> dict[str, Any]:
    """Stop accepting archives signed by `key` (id or name); archives already imported stay."""
    found = [d for d in _docs(trusted_dir(data_dir)) if key in (d["id"], d["name"])]
    if not found:
        raise FleetError(f"key {key!r} is not trusted on this gateway (see `manualqa signing list`)")
    for doc in found:
        (trusted_dir(data_dir) / f"{doc['id']}.pub").unlink()
    return {"removed": [d["id"] for d in found]}


def verify_signature(data_dir: Path, signer: str, message: bytes, signature: bytes) -> None:
    """Raise FleetError unless `signature` over `message` is by the trusted key with id `signer`."""
    if not _ID_RE.match(signer or ""):
        raise FleetError(f"archive names no valid signing key id ({signer!r})")
    path = trusted_dir(data_dir) / f"{signer}.pub"
    if not path.is_file():
        raise FleetError(f"archive is signed by key {signer}, which this gateway does not trust; "
                         "if it should, install its public key with `manualqa signing trust PUBFILE`")
    public, _ = _parse_public(_read_key_file(path), str(path), signer)
    if key_id(public) != signer:
        raise FleetError(f"trusted key file {path} holds key {key_id(public)}, not {signer}")
    try:
        public.verify(signature, message)
    except InvalidSignature as exc:
        raise FleetError(f"archive signature does not verify with trusted key {signer}: "
                         "MANIFEST.json was altered after signing, or the signature is damaged") from exc
