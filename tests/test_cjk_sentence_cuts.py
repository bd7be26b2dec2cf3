"""Where a Chinese sentence is cut without a full stop: a numbered title on its own line, a list item.

Chinese titles end with no mark, so the sentence cut ran the body before a title into it and the title into
the body after it: eval/zh-dev3's FlashCube guide was quoted as "8.2 烧录界面每个烧录选项名称最大支持 10 个字符
分区表中每个分区的 name 字段长度不能超过 10 个字符 8.3 晶振类型默认设定 BLFlashCube 工具的晶振类型无法修改 ..."
for a question about the crystal's frequency.
"""

from __future__ import annotations

from dataclasses import replace

from gateway.answer.extractive import EVIDENCE, extractive_answer
from ingest.text.sentences import sentence_spans
from retrieval.types import Hit

PAGE = ("压缩烧写可以极大的提升烧写速度。 8.2 烧录界面每个烧录选项名称最大支持 10 个字符\n"
        "分区表中每个分区的 name 字段长度不能超过 10 个字符\n8.3 晶振类型默认设定\n"
        "BLFlashCube 工具的晶振类型无法修改，当前是设置的默认值。其中 BL602 为 40M，BL702 为 32M。\n"
        "第九章 常见问题\n串口打不开时，请先检查驱动。")


def split(text: str) -> list[str]:
    return [text[s:e] for s, e in sentence_spans(text)]


def test_a_numbered_title_line_stands_apart_from_the_body_around_it() -> None:
    assert split(PAGE) == [
        "压缩烧写可以极大的提升烧写速度。", "8.2 烧录界面每个烧录选项名称最大支持 10 个字符",
        "分区表中每个分区的 name 字段长度不能超过 10 个字符", "8.3 晶振类型默认设定",
        "BLFlashCube 工具的晶振类型无法修改，当前是设置的默认值。", "其中 BL602 为 40M，BL702 为 32M。",
        "第九章 常见问题", "串口打不开时，请先检查驱动。"]


def test_what_is_not_a_title_line_is_not_cut() -> None:
    # a wrapped line that opens with a number, a step "1、", a value with a Latin unit, a line with a comma
    assert split("最大负载为\n2.5 千克的物体。") == ["最大负载为\n2.5 千克的物体。"]
    assert split("电源电压\n3.3 V 供电即可") == ["电源电压\n3.3 V 供电即可"]
    assert split("先断电\n2.1 节所述，再接线") == ["先断电\n2.1 节所述，再接线"]
    assert split("See section\n3.2 Wiring for the pins.") == ["See section\n3.2 Wiring for the pins."]


def test_the_evidence_quotes_the_sentence_without_the_titles() -> None:
    hit = Hit(chunk_id="c0", manual="fc.pdf", title="FlashCube 使用说明", manual_sha256="0" * 64, page=47,
              heading="8 注意事项", text=PAGE, score=1.0, dense_rank=1, lexical_rank=1, dense_score=0.5)
    question = "BL602 的晶振频率能在 FlashCube 里改吗？默认是多少？"
    answer = extractive_answer(question, [hit], replace(EVIDENCE, weights={}))
    assert "晶振类型无法修改" in answer and "40M" in answer
    assert "8.3" not in answer and "10 个字符" not in answer


def test_each_chinese_list_item_starts_a_sentence() -> None:
    # eval/zh-dev2's upgrade-tool FAQ: "(4)灯的状态说明\n1、工具一来上电，红灯和绿灯同时闪一下。" was quoted with
    # its heading; a step list ran into one "sentence"
    text = "操作如下\n1、打开软件\n2、点击下载\n（3）重新上电\n(4)安装驱动\n⑤ 完成"
    assert split(text) == ["操作如下", "1、打开软件", "2、点击下载", "（3）重新上电", "(4)安装驱动", "⑤ 完成"]
    assert split("Then do this:\n(2) remove the cover") == ["Then do this:\n(2) remove the cover"]
    # an FAQ's answer "1）、" stays with its question line
    faq = "8、下载代码之后，打印没有\n1）、这是因为需要重新上电。"
    assert split(faq) == [faq]
    assert split("电压为\n12、24 或 48 V") == ["电压为\n12、24 或 48 V"]
