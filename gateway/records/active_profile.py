"""The active deployment profile of one gateway, switched atomically like index versions.

data_dir/profiles/ACTIVE names a frozen, content-addressed copy of the profile; history.json is the
activation stack that rollback pops. No pointer: the built-in default profile is active. This is
gateway state (which chain serves), so it lives here and reuses the index's crash-safe pointer;
runtimes/ only parses and checks profiles.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypedDict, cast

from gateway.records.db import utcnow
from retrieval.pointer import atomic_write_bytes, read_pointer, write_pointer
from runtimes.profiles import (
    BUILTIN_DIR,
    Profile,
    ProfileError,
    builtin_default_profile,
    load_profile,
    parse_profile,
)


def _safe(name: str) -> str:
    return "".join(c if (c.isascii() and c.isalnum()) or c in "._-" else "_" for c in name)[:64] or "profile"


class Activation(TypedDict):
    """One entry of the activation stack (profiles/history.json): the stored file, its profile's name, when."""

    file: str
    name: str
    activated_at: str


class ActiveProfile:
    """The active profile of one gateway: data_dir/profiles/ACTIVE names a stored, frozen copy.

    Activating stores the profile text (and its rollback profile's) under a content-addressed
    name, pushes it on a history stack, then replaces the pointer atomically. With no pointer the
    built-in default is active. Rollback pops the stack, as index versions roll back.
    """

    def __init__(self, data_dir: str | Path) -> None:
        self.dir = Path(data_dir) / "profiles"
        self.pointer = self.dir / "ACTIVE"
        self.history_file = self.dir / "history.json"

    def _store(self, profile: Profile, freeze_rollback: bool = True) -> str:
        """Copy the profile (and, one level deep, its rollback) into the store; returns its name."""
        stem = f"{_safe(profile.name)}-{profile.content_hash[:12]}"
        base = profile.base_dir or profile.path.parent
        meta: dict[str, str] = {"name": profile.name, "source": str(profile.path),
                                "base_dir": "" if profile.builtin else str(base.resolve()),
                                "rollback_file": ""}
        if profile.rollback and freeze_rollback:
            try:
                meta["rollback_file"] = self._store(profile.load_rollback(), freeze_rollback=False)
            except ProfileError:
                pass  # stored unfrozen: doctor reports the missing rollback at gate 3
        target = self.dir / f"{stem}.toml"
        if freeze_rollback or not target.exists():
            atomic_write_bytes(target.with_suffix(".json"), json.dumps(meta, indent=2).encode())
        if not target.exists():
            atomic_write_bytes(target, profile.text.encode("utf-8"))
        return target.name

    def _load_stored(self, file_name: str) -> Profile:
        target = self.dir / file_name
        meta_path = target.with_suffix(".json")
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ProfileError(f"stored profile {target} has no readable {meta_path.name}: {exc}") from exc
        text = target.read_text(encoding="utf-8")
        if not meta.get("base_dir"):  # a built-in profile: resolve as one
            profile = parse_profile(text, BUILTIN_DIR / Path(meta["source"]).name)
        else:
            profile = load_profile(target, base_dir=meta["base_dir"])
        if meta.get("rollback_file"):
            frozen = self.dir / meta["rollback_file"]
            try:
                rb_meta = json.loads(frozen.with_suffix(".json").read_text(encoding="utf-8"))
            except (OSError, ValueError):
                rb_meta = {"base_dir": str(frozen.parent)}  # gate 3 will say what is wrong with it
            if rb_meta.get("base_dir"):
                profile.rollback_file, profile.rollback_base_dir = frozen, Path(rb_meta["base_dir"])
            else:  # a built-in profile: the code holds it
                profile.rollback_file = BUILTIN_DIR / Path(rb_meta["source"]).name
        return profile

    def _read_history(self) -> list[Activation]:
        try:
            data = json.loads(self.history_file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            raise ProfileError(f"{self.history_file}: unreadable: {exc}") from exc
        return cast("list[Activation]", data) if isinstance(data, list) else []  # as _commit wrote it

    def active_file(self) -> str:
        try:
            return read_pointer(self.pointer) or ""
        except UnicodeDecodeError:  # written before names were kept ASCII
            return self.pointer.read_text(encoding="utf-8").strip()

    def current(self) -> Profile:
        name = self.active_file()
        return self._load_stored(name) if name else builtin_default_profile()

    def history(self) -> list[Activation]:
        """Activation stack, oldest first; the last entry is the active one."""
        stack = self._read_history()
        active = self.active_file()
        if stack and stack[-1]["file"] != active:  # a crash between the two writes: the pointer wins
            files = [e["file"] for e in stack]
            if active in files:  # entries above it were never committed
                stack = stack[: len(files) - files[::-1].index(active)]
            elif active:
                stack.append({"file": active, "name": "?", "activated_at": ""})
            else:
                stack = []
        return stack

    def _commit(self, stack: list[Activation]) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(self.history_file, json.dumps(stack, indent=2).encode())
        if stack:
            write_pointer(self.pointer, stack[-1]["file"])
        elif self.pointer.exists():
            self.pointer.unlink()

    @contextmanager
    def _exclusive(self) -> Iterator[None]:
        """One switch at a time across processes (CLI and server may both switch)."""
        import fcntl

        self.dir.mkdir(parents=True, exist_ok=True)
        with open(self.dir / ".lock", "a") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def activate(self, path: str | Path) -> Profile:
        profile = load_profile(path)
        with self._exclusive():
            file_name = self._store(profile)
            stack = self.history()
            stack.append({"file": file_name, "name": profile.name,
                          "activated_at": utcnow()})
            self._commit(stack)
        return self._load_stored(file_name)

    def rollback(self) -> Profile:
        """Re-activate the previously active profile (the built-in default below the first)."""
        with self._exclusive():
            stack = self.history()
            if not stack:
                raise ProfileError("nothing to roll back: the built-in default profile is active")
            stack.pop()
            self._commit(stack)
        return self.current()


def resolve_profile(data_dir: str | Path, override_path: str = "") -> Profile:
    """The profile in force: runtime.profile from settings wins, else the activated one."""
    if override_path:
        return load_profile(override_path)
    return ActiveProfile(data_dir).current()
