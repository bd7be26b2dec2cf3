"""Quoted passages without the PDF's wrapped line ends (issue 48, item 8b).

A card quotes its passage with line breaks kept (lists, pin maps and shell sessions are lines), so the
PDF's printed line ends made a quote ragged on a phone. The library core now joins the breaks that
only wrap a sentence (gateway.answer.reflow) where a citation is made, so the API, the page and /v1
quote the same text: the cited sentences, the passage and the spans that point into it. Unit cases on
text shaped like the sample manuals', then the real pipeline on the sample index.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from gateway.answer.citations import resolve
from gateway.answer.extractive import extractive_answer
from gateway.answer.reflow import reflow, unwrap_words
from gateway.config import Settings
from gateway.services import Services
from retrieval.types import Hit

PROSE = ("1. SAFETY\nLaser Safety\nThis machine belongs to Laser Class 1, according to EN\n60825 standard.\n"
         "Do not:\n• Disassemble the machine nor remove the cover when the\nmachine is plugged in;\n"
         "• Try to defeat the door interlocks;\n• Stare too long into the laser beam while the machine is\n"
         "running;")
PINOUT = ("2.4.1. Peripheral Pinout\nBlack (a) → ACTUATOR_POWER-\nRed (b) → ACTUATOR_POWER+\n"
          "Yellow (c) → HALL_EFFECT_V+\nWhite (d) → HALL_EFFECT_V-")
SHELL = ("The moving the actuator in the forward direction can be achieved by the following\ncommand.\n"
         "shell>fwd\nDEBUG: fwd command\nDEBUG: PIS_Extend called\nshell>")
COMMANDS = ("Please follow the commands below which are tested on Linux Ubuntu version 22.04 today.\n"
            "# git clone https://github.com/NOAA-PMEL/EDD-LCP_PistonDriver.git\n# cd EDD-LCP_PistonDriver\n"
            "# git checkout master_gcc")


def _hit(text: str, n: int = 1) -> Hit:
    return Hit(chunk_id=f"c{n}", manual="m.pdf", title="Laser Manual", manual_sha256="ab" * 32, page=3,
               heading="", text=text, score=1.0, dense_rank=n, lexical_rank=n, dense_score=0.5)


def test_wrapped_lines_join_and_list_items_stay_lines() -> None:
    text, _ = reflow(PROSE)
    assert text.split("\n") == [
        "1. SAFETY", "Laser Safety", "This machine belongs to Laser Class 1, according to EN 60825 standard.",
        "Do not:", "• Disassemble the machine nor remove the cover when the machine is plugged in;",
        "• Try to defeat the door interlocks;", "• Stare too long into the laser beam while the machine is running;"]


@pytest.mark.parametrize("text", [PINOUT, SHELL.split("\n", 2)[2], COMMANDS.split("\n", 1)[1],
                                  "0x00 to 0x07\n0xF0 to 0xF7", "Paper\nCardboard\nMDF\nPlywood",
                                  "First paragraph ends here without a stop\n\nsecond paragraph"])
def test_lines_that_mean_something_are_kept(text: str) -> None:
    assert reflow(text)[0] == text


def test_broken_words_are_whole_again() -> None:
    wide = "The cable from the adapter plugs into the ten pin female con-\nnector J5 on the board."
    assert reflow(wide)[0] == "The cable from the adapter plugs into the ten pin female connector J5 on the board."
    assert unwrap_words("female con-\nnector") == "female connector"
    assert unwrap_words("the Raspberry-\nPi board") == "the Raspberry-Pi board"
    assert unwrap_words("控制板通过\n串口连接") == "控制板通过串口连接"  # no space between Chinese characters
    wrapped = ["控制板通过串口与电脑连接，波特率为\n115200，数据位为八位。",
               "控制板通过串口与电脑连接，然后\n打开终端软件查看调试输出。"]
    assert [reflow(text)[0] for text in wrapped] == [text.replace("\n", "") for text in wrapped]
    steps = "第一步\n第二步\n控制板通过串口与电脑连接，然后打开终端"  # short lines: a list
    assert reflow(steps)[0] == steps


def test_spans_follow_the_text() -> None:
    text, where = reflow(PROSE)
    start = PROSE.index("This machine")
    end = PROSE.index("standard.") + len("standard.")
    assert text[where[start]:where[end]] == "This machine belongs to Laser Class 1, according to EN 60825 standard."
    assert len(where) == len(PROSE) + 1 and where[-1] == len(text)


def test_a_citation_quotes_the_reflowed_passage() -> None:
    hits = [_hit(PROSE.split("\n", 2)[2]),
            _hit("The cable plugs into the ten pin female con-\nnector J5 on the piston board.", 2)]
    answer = "The machine is Laser Class 1 according to EN 60825 [1]. The cable plugs into connector J5 [2]."
    citations, _ = resolve(answer, hits)
    first, second = citations
    assert first.sentences == ["This machine belongs to Laser Class 1, according to EN 60825 standard."]
    assert second.sentences == ["The cable plugs into the ten pin female connector J5 on the piston board."]
    for c in citations:
        assert [c.passage[s:e] for s, e in c.spans] == c.sentences
    evidence = extractive_answer("Which connector does the cable plug into?", hits[1:])
    assert evidence == "The cable plugs into the ten pin female connector J5 on the piston board. [1]"


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory, sample_data_dir: Path, embedder: Any) -> Services:
    data = tmp_path_factory.mktemp("reflow") / "data"
    shutil.copytree(sample_data_dir, data, ignore=shutil.ignore_patterns("gateway.db*"))
    settings = Settings(data_dir=data)
    settings.answer.mode = "extractive"
    return Services(settings, embedder=embedder)


def test_the_pipelines_quotes_have_no_wrapped_line_ends(gw: Services) -> None:
    """lcp-01 quotes the piston board's power paragraph, whose PDF lines end mid-sentence ("... LM61460"
    + "(TI) input voltage range ...")."""
    result = gw.answer("What supply voltage range can the LCP piston board take?")
    assert result.outcome == "evidence_only"
    quoted = [s for c in result.citations for s in c.sentences]
    assert any("LM61460 (TI) input voltage range from 3V to 36V" in s for s in quoted), quoted
    raw = {p["chunk_id"]: p["text"] for p in result.passages}
    for c in result.citations:
        assert [c.passage[s:e] for s, e in c.spans] == c.sentences
        assert c.passage.count("\n") < raw[c.chunk_id].count("\n"), c.passage
        assert c.to_dict()["passage"] == c.passage


def test_a_comment_wrapped_over_slash_lines_is_joined() -> None:
    """A manual that writes its instructions as "// " comments wraps a sentence over several of them
    (eval/zh-dev's quick start): the sentence reads whole, its "// " continuation markers gone; a line of
    code between comments, or a comment that ends a sentence, keeps its break."""
    text = ("// 熟悉Vivado 和Xilinx FPGA 使用的用户应该了解，bitstream 文件烧录到FPGA 中\n"
            "// 去之后FPGA 不能掉电，因为一旦掉电之后FPGA 烧录的内容即丢失，需要重新使用\n"
            "// Vivado 的Hardware Manager 进行烧录方能使用。\nmake bit\n// 运行该命令将生成文件。\n// 下一步")
    joined, where = reflow(text)
    assert "烧录到FPGA 中去之后FPGA 不能掉电" in joined
    assert "需要重新使用Vivado 的Hardware Manager" in joined
    assert "方能使用。\nmake bit\n// 运行该命令将生成文件。\n// 下一步" in joined
    assert len(where) == len(text) + 1 and joined[where[text.index("去之后")]] == "去"
    # the one-line form the extractive answer quotes
    assert "烧录到FPGA 中去之后FPGA" in unwrap_words(text)
    english = ("// This command builds the bitstream for the board and writes the\n"
               "// result into the obj folder of the project.\n// Next step")
    assert reflow(english)[0] == ("// This command builds the bitstream for the board and writes the result into "
                                  "the obj folder of the project.\n// Next step")
