"""Chunking: page-aware, heading-aware, size-bounded, stable; on the real manuals and on made-up ones."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from ingest import Chunk, ChunkParams, PageText, ParsedManual, ParseLimits, chunk_manual, parse_pdf

SAMPLES = Path(__file__).resolve().parent.parent / "sample_manuals"
SHA = "ab" * 32


def squash(text: str) -> str:
    return " ".join(text.split())


def manual(*pages: str, without: list[int] | None = None) -> ParsedManual:
    return ParsedManual(sha256=SHA, file_name="x.pdf", title="X", page_count=len(pages), size_bytes=1,
                        pages=[PageText(n, t) for n, t in enumerate(pages, 1)],
                        pages_without_text=without or [])


def containing(chunks: list[Chunk], phrase: str) -> Chunk:
    found = [c for c in chunks if phrase in c.text]
    assert found, f"no chunk contains {phrase!r}"
    return found[0]


@pytest.fixture(scope="module")
def parsed() -> list[ParsedManual]:
    return [parse_pdf(path, ParseLimits()) for path in sorted(SAMPLES.glob("*.pdf"))]


PARAMS = [ChunkParams(), ChunkParams(max_chars=300, overlap_chars=60, min_chars=40),
          ChunkParams(max_chars=1500, overlap_chars=0, min_chars=200)]


@pytest.mark.parametrize("params", PARAMS, ids=lambda p: f"max{p.max_chars}")
def test_real_manual_chunks_stay_on_their_page_and_in_size(parsed: list[ParsedManual],
                                                           params: ChunkParams) -> None:
    for manual_ in parsed:
        chunks = chunk_manual(manual_, params)
        pages = {p.number: squash(p.text) for p in manual_.pages}
        assert chunks
        for chunk in chunks:
            assert chunk.page in pages and chunk.page not in manual_.pages_without_text
            assert squash(chunk.text) in pages[chunk.page], chunk.chunk_id
            assert 0 < len(chunk.text) <= params.max_chars
            assert chunk.manual_sha256 == manual_.sha256
        assert [c.ordinal for c in chunks] == list(range(len(chunks)))
        assert [c.page for c in chunks] == sorted(c.page for c in chunks)
        assert len({c.chunk_id for c in chunks}) == len(chunks)
        for chunk in chunks:
            n = sum(1 for c in chunks if c.page == chunk.page and c.ordinal < chunk.ordinal)
            assert chunk.chunk_id == f"{manual_.sha256[:12]}-p{chunk.page:04d}-{n:03d}"


def test_real_manual_headings(parsed: list[ParsedManual]) -> None:
    noaa = next(m for m in parsed if m.file_name.startswith("noaa"))
    chunks = chunk_manual(noaa, ChunkParams())
    assert containing(chunks, "There are two LEDs").heading == "2.2. LEDs"
    assert containing(chunks, "minimum requirement for compiling").heading == "4.1. Installation"
    # running header "Piston-board – user manual" is neither a heading nor chunk text
    assert not any("user manual" in c.heading.lower() for c in chunks)
    assert not any(c.text.startswith("Piston-board – user manual") for c in chunks)
    assert sum(1 for c in chunks if c.heading) >= 0.9 * len(chunks)


def test_chunking_is_stable(parsed: list[ParsedManual]) -> None:
    for manual_ in parsed:
        assert chunk_manual(manual_, ChunkParams()) == chunk_manual(manual_, ChunkParams())


SYNTHETIC = (
    "1 Introduction\n"
    "This manual describes the XR-200 pump. Read it fully before installing or using the pump.\n"
    "2 Safety\n"
    "WARNING\n"
    "Disconnect mains power before opening the housing. Capacitors can hold a charge for minutes.",

    "and must be discharged with an insulated tool before any work on the control board starts.\n"
    "3.2 Wiring\n"
    "Connect the L, N and PE terminals as shown in the diagram below. Use 1.5 mm2 copper wire.\n"
    "TECHNICAL SPECIFICATIONS\n"
    "Supply voltage 230 V AC, 50 Hz. Rated power 750 W. Protection class IP44. Weight 12 kg.",

    "Maintenance Schedule\n"
    "Clean the intake filter every 200 operating hours and replace it once a year.\n"
    "1. Remove the four cover screws.\n"
    "2. Lift the cover off the housing.\n"
    "3. Pull out the filter cartridge.\n"
    "Replacing the seal\n"
    "The shaft seal wears with use. Order part 40-113 and fit it with the lip facing the pump side.",
)


def test_headings_detected_and_carried_across_pages() -> None:
    chunks = chunk_manual(manual(*SYNTHETIC), ChunkParams(max_chars=900, overlap_chars=100, min_chars=10))
    assert containing(chunks, "This manual describes").heading == "1 Introduction"
    assert containing(chunks, "Disconnect mains power").heading == "2 Safety"  # WARNING is no heading
    carried = containing(chunks, "discharged with an insulated tool")
    assert carried.page == 2 and carried.heading == "2 Safety"
    assert containing(chunks, "Connect the L, N and PE").heading == "3.2 Wiring"
    assert containing(chunks, "Supply voltage 230 V").heading == "TECHNICAL SPECIFICATIONS"
    steps = containing(chunks, "Remove the four cover screws")
    assert steps.heading == "Maintenance Schedule"  # numbered steps are not headings
    assert containing(chunks, "The shaft seal wears").heading == "Replacing the seal"
    assert all(c.heading != "WARNING" for c in chunks)


def test_heading_line_stays_in_text_verbatim() -> None:
    chunks = chunk_manual(manual(*SYNTHETIC), ChunkParams(max_chars=900, overlap_chars=100, min_chars=10))
    wiring = containing(chunks, "Connect the L, N and PE")
    assert wiring.text.startswith("3.2 Wiring\nConnect the L, N and PE")


def test_tiny_fragments_merge_on_the_same_page() -> None:
    params = ChunkParams(max_chars=900, overlap_chars=100, min_chars=80)
    chunks = chunk_manual(manual(*SYNTHETIC), params)
    for chunk in chunks:
        alone = sum(1 for c in chunks if c.page == chunk.page) == 1
        assert len(chunk.text) >= params.min_chars or alone, chunk
    assert {c.page for c in chunks} == {1, 2, 3}


def test_long_text_splits_at_sentences_with_overlap() -> None:
    sentences = [f"Step {i} tightens bolt number {i} to the specified torque of {i + 20} Nm." for i in range(60)]
    page = " ".join(sentences)
    params = ChunkParams(max_chars=400, overlap_chars=120, min_chars=40)
    chunks = chunk_manual(manual(page), params)
    assert len(chunks) > 5
    for chunk in chunks:
        assert len(chunk.text) <= 400
        assert chunk.text.startswith("Step ") and chunk.text.endswith("Nm."), chunk.text
    for before, after in zip(chunks, chunks[1:], strict=False):
        first_sentence = after.text.split(". ")[0] + "."
        assert first_sentence in before.text  # the overlap repeats the previous chunk's last sentence
    for sentence in sentences:  # nothing is lost
        assert any(sentence in c.text for c in chunks), sentence


def test_text_without_any_break_is_cut_at_words() -> None:
    words = [f"w{i:04d}" for i in range(900)]
    chunks = chunk_manual(manual(" ".join(words)), ChunkParams(max_chars=200, overlap_chars=30, min_chars=20))
    for chunk in chunks:
        assert len(chunk.text) <= 200
        assert all(re.fullmatch(r"w\d{4}", w) for w in chunk.text.split()), chunk.text
    assert {w for c in chunks for w in c.text.split()} == set(words)


def test_pages_without_text_are_skipped() -> None:
    chunks = chunk_manual(manual(SYNTHETIC[0], "12", SYNTHETIC[2], without=[2]), ChunkParams())
    assert {c.page for c in chunks} == {1, 3}


def test_running_headers_and_footers_are_left_out() -> None:
    parts = ["Impeller", "Shaft Seal", "Bearings", "Motor", "Control Board", "Housing"]
    body = ("{part} Check\nInspect the {low} for wear, cracks and corrosion at every service interval "
            "of {n}00 hours, and replace it when in doubt.")
    pages = [f"ACME XR-200 Service Manual\n{body.format(part=part, low=part.lower(), n=n)}\nPage {n} of 6"
             for n, part in enumerate(parts, 1)]
    chunks = chunk_manual(manual(*pages), ChunkParams())
    assert len(chunks) == 6
    for chunk, part in zip(chunks, parts, strict=True):
        assert "ACME" not in chunk.text and "Page " not in chunk.text, chunk.text
        assert chunk.heading == f"{part} Check"


def test_a_letterhead_of_several_lines_and_its_page_number_are_left_out() -> None:
    """The JieLi updater guide (eval/zh-dev2) prints copyright, address, phone and web site, then the page
    number, above every page: lines beyond the first three were quoted as evidence ("网站：www.zh-jieli.com
    1 强制升级工具 4.0 ..."). A row repeated near the foot of many pages (a bill of materials) stays."""
    head = "版权所有，侵权必究\n地址：珠海市某路 107号\n电话：0756-0000000 传真：0756-0000001\n网站：www.example.com"
    steps = ["双击盘符里的 pkgman.bat 文件，按照步骤安装即可，安装完成后重新插入工具。",
             "点击添加新的虚拟串口，新建成功后左侧会多出一个虚拟串口，选择它查看信息。",
             "选择想要绑定的物理设备的 ID 后点击绑定，绑定成功后再次选择虚拟串口确认。",
             "编辑下载目录里的 isd_config.ini 文件，修改 DOWNLOAD_MODEL 为 SERIAL 并保存。",
             "双击下载目录的 download.bat 文件即可进行串口升级，升级时不要拔出工具。"]
    bom = "105 Screw M3 x 25mm 2"
    parts = ["Impeller housing", "Shaft seal kit", "Motor bracket", "Cable gland", "Front cover", "Hinge pin",
             "Gear wheel", "Spacer ring", "Base plate", "Tension spring", "Idler pulley", "Belt clamp",
             "Bearing block", "Cable chain", "Fan duct"]
    pages = [f"{head}\n{n}\n{step}\n{bom}\n" + "\n".join(parts[3 * (n - 1) + i] for i in range(3))
             for n, step in enumerate(steps, 1)]
    chunks = chunk_manual(manual(*pages), ChunkParams())
    for chunk in chunks:
        assert "网站" not in chunk.text and "电话" not in chunk.text, chunk.text
        assert not any(line.strip().isdigit() for line in chunk.text.split("\n")), chunk.text
    for n, step in enumerate(steps, 1):
        assert containing(chunks, step).page == n
        assert any(bom in c.text for c in chunks if c.page == n)  # a repeated row, not running text


def test_identical_pages_are_not_mistaken_for_furniture() -> None:
    page = "Torque Table\nM6 bolts: 10 Nm. M8 bolts: 25 Nm. M10 bolts: 49 Nm. Use a calibrated wrench."
    chunks = chunk_manual(manual(page, page, page, page), ChunkParams())
    assert [c.page for c in chunks] == [1, 2, 3, 4]
    assert all("M8 bolts: 25 Nm" in c.text for c in chunks)


def test_bad_params_are_refused() -> None:
    with pytest.raises(ValueError):
        chunk_manual(manual("text " * 50), ChunkParams(max_chars=200, overlap_chars=150, min_chars=10))


def test_invariants_hold_on_random_pages() -> None:
    """Seeded fuzz: odd line lengths, blank lines, headings, huge tokens; chunks stay on page and in size."""
    rng = random.Random(11)
    vocab = ["pump", "valve", "Set", "the", "3.2", "WARNING", "Torque:", "M8", "25 Nm.", "(see", "fig. 4)",
             "—", "•", "x" * 120, "Maintenance", "Schedule", "end.", "a", "?", "2.", "Wiring"]
    for _ in range(40):
        pages = []
        for _page in range(rng.randint(1, 5)):
            lines = [" ".join(rng.choice(vocab) for _ in range(rng.randint(0, 18)))
                     for _ in range(rng.randint(1, 40))]
            pages.append("\n".join(lines).strip() or "filler text for an otherwise empty page")
        parsed = manual(*pages)
        for params in PARAMS:
            chunks = chunk_manual(parsed, params)
            assert chunk_manual(parsed, params) == chunks
            for chunk in chunks:
                assert 0 < len(chunk.text) <= params.max_chars
                assert squash(chunk.text) in squash(pages[chunk.page - 1])


LEGAL = ("AC63N All information provided in this document is subject to legal disclaimers © JL.V. 2022. "
         "All rights reserved.")


def test_a_long_running_footer_is_left_out_but_quoted_once() -> None:
    """Issue 47: a running footer over 100 characters stayed in every page's chunks (10 of 11 pages of
    a Chinese FAQ) and made whole chunks of its own; the text layer may also set it before the page's
    last paragraph. Its first page keeps it (a warning printed on every page is still found once)."""
    assert len(LEGAL) > 100
    steps = ["安装工具链", "连接升级工具", "进入下载模式", "下载程序", "重新上电", "检查串口打印"]
    fixes = ["更新工具链", "更换 USB 线", "短按升级按钮", "检查跳线帽", "测量供电电压", "重启串口软件"]
    pages = []
    for n, (step, fix) in enumerate(zip(steps, fixes, strict=True), 1):
        body = f"{n}、{step}：按照说明操作开发板，并确认指示灯的状态是否正确，然后继续下一步的操作。"
        tail = f"{n}）、如果仍然失败，请{fix}后再试一次，并记录串口输出的信息。"
        # the footer ends the page, or comes before its last paragraph (pypdf's order on some pages)
        pages.append(f"{body}\n{LEGAL}\nUser manual {n}of8\n{tail}" if n % 2 else
                     f"{body}\n{tail}\n{LEGAL}\nUser manual {n}of8")
    pages += [f"{LEGAL}\nUser manual 7of8", f"{LEGAL}\nUser manual 8of8"]  # figure pages: only the footer
    chunks = chunk_manual(manual(*pages), ChunkParams())
    with_footer = [c.page for c in chunks if "legal disclaimers" in c.text]
    assert with_footer == [1], [(c.page, c.text) for c in chunks]
    assert {c.page for c in chunks} == {1, 2, 3, 4, 5, 6}  # the footer-only pages give no chunk
    for n, step in enumerate(steps, 1):  # the page's own text stays, both sides of a footer
        assert any(step in c.text and c.page == n for c in chunks)
        assert any(fixes[n - 1] in c.text and c.page == n for c in chunks)


def test_a_long_line_repeated_inside_pages_is_body() -> None:
    warning = ("WARNING: disconnect the mains plug before you open the housing; the capacitors stay charged "
               "for several minutes after the unit is switched off.")
    assert len(warning) > 100
    pages = [f"Step {n}\nLoosen the {n} screws of the cover plate and lift it.\n{warning}\n"
             f"Set the cover aside on a clean cloth.\nCheck the seal for cracks.\nPage {n} of 5" for n in range(1, 6)]
    chunks = chunk_manual(manual(*pages), ChunkParams())
    assert sorted({c.page for c in chunks if "capacitors stay charged" in c.text}) == [1, 2, 3, 4, 5]
