"""PDFs written by hand for tests: exact bytes, so a test controls every object (test-only)."""

from __future__ import annotations

import re
import zlib
from pathlib import Path

from bench.scans import pdf_bytes


def write_pdf(objects: list[bytes]) -> bytes:
    """A PDF of numbered `objects` (object 1 is the catalog) with a correct xref table."""
    return pdf_bytes(objects, b"%PDF-1.4\n")


def stream(data: bytes, compress: bool = False) -> bytes:
    """A stream object's body (dictionary + data), Flate-compressed if asked."""
    if compress:
        data = zlib.compress(data, 9)
    flt = b"/Filter /FlateDecode " if compress else b""
    return b"<< " + flt + b"/Length " + str(len(data)).encode() + b" >>\nstream\n" + data + b"\nendstream"


def tiny_pdf(content: bytes, compress: bool = False) -> bytes:
    """A one-page PDF around `content` (the page's content stream), in Helvetica."""
    return write_pdf([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        stream(content, compress),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ])


def text_page(lines: list[str], size: int = 16) -> bytes:
    """A born-digital one-page PDF with `lines` in Helvetica (a real text layer)."""
    body = b" ".join(b"(" + line.encode() + b") '" for line in lines)
    return tiny_pdf(b"BT /F1 %d Tf 72 700 Td %d TL " % (size, size + 8) + body + b" ET")


def image_xobject(width: int, height: int, data: bytes) -> bytes:
    """An 8-bit grey image XObject claiming `width` x `height` over Flate `data` (true or not)."""
    head = (f"<< /Type /XObject /Subtype /Image /Width {width} /Height {height} /ColorSpace /DeviceGray "
            f"/BitsPerComponent 8 /Filter /FlateDecode /Length {len(data)} >>\nstream\n")
    return head.encode() + data + b"\nendstream"


def scanned_pdf(folder: Path, name: str, pages: list[list[str]], hostile: dict[int, bytes] | None = None,
                dpi: int = 150) -> Path:
    """An image-only PDF (a "scan"): page i is poppler's raster at `dpi` of a text page of pages[i]
    (bench.scans); hostile: {page index: image XObject} put in place of those pages' images."""
    from bench.scans import image_page, image_pdf, rasterise

    rendered, sizes = [], []
    for number, lines in enumerate(pages):
        source = folder / f".{name}-{number}.pdf"
        source.write_bytes(text_page(lines))
        raster = rasterise(source, dpi)[0]
        rendered.append(image_page(raster, dpi))
        sizes.append((raster[0], raster[1]))
    path = folder / name
    path.write_bytes(image_pdf(rendered, sizes, extra=hostile))
    return path


_CJK_RUN = re.compile(r"[\u2100-\u214f\u3000-\u303f\u3400-\u9fff\uff00-\uffef]+")


def _line_ops(text: str, y: int, size: int) -> bytes:
    """One line at height y: CJK runs in STSong-Light (UCS-2, not embedded, as many Chinese manuals
    ship it), the rest in Helvetica with WinAnsi (so "ä", "ö", "ü", "ß" are real characters)."""
    out = [b"BT %d %d Td " % (72, y)]
    pos = 0
    runs = []
    for m in _CJK_RUN.finditer(text):
        if m.start() > pos:
            runs.append((text[pos:m.start()], False))
        runs.append((m.group(), True))
        pos = m.end()
    if pos < len(text):
        runs.append((text[pos:], False))
    for run, cjk in runs:
        if cjk:
            out.append(b"/F2 %d Tf <" % size + run.encode("utf-16-be").hex().upper().encode() + b"> Tj ")
        else:
            esc = run.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
            out.append(b"/F1 %d Tf (" % size + esc.encode("cp1252") + b") Tj ")
    out.append(b"ET\n")
    return b"".join(out)


def multilingual_pdf(pages: list[list[str]], size: int = 11) -> bytes:
    """A born-digital PDF, one list of lines per page, in Chinese and any Western European language."""
    n = len(pages)
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(n)).encode()
    fonts = 3 + 2 * n
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % n]
    for i, lines in enumerate(pages):
        content = b"".join(_line_ops(line, 760 - 18 * k, size) for k, line in enumerate(lines))
        objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
                       b"/Resources << /Font << /F1 %d 0 R /F2 %d 0 R >> >> >>" % (4 + 2 * i, fonts, fonts + 1))
        objects.append(stream(content))
    objects += [
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
        b"<< /Type /Font /Subtype /Type0 /BaseFont /STSong-Light /Encoding /UniGB-UCS2-H "
        b"/DescendantFonts [%d 0 R] >>" % (fonts + 2),
        b"<< /Type /Font /Subtype /CIDFontType0 /BaseFont /STSong-Light "
        b"/CIDSystemInfo << /Registry (Adobe) /Ordering (GB1) /Supplement 2 >> /FontDescriptor %d 0 R >>"
        % (fonts + 3),
        b"<< /Type /FontDescriptor /FontName /STSong-Light /Flags 6 /FontBBox [-25 -254 1000 880] "
        b"/ItalicAngle 0 /Ascent 880 /Descent -120 /CapHeight 880 /StemV 93 >>",
    ]
    return write_pdf(objects)


def glued_content(sentences: list[str], step: int = -120) -> bytes:
    """A page's content stream: each sentence a line whose words are set apart by a kerning step, never by a space."""
    lines = []
    for n, sentence in enumerate(sentences):
        words = b" ".join(b"(" + w.encode("cp1252") + b") %d" % step for w in sentence.split())
        lines.append(b"BT /F1 11 Tf 40 %d Td [" % (700 - 20 * n) + words + b"] TJ ET ")
    return b"".join(lines)


def glued_pdf(sentences: list[str], step: int = -120) -> bytes:
    """One page of glued lines (glued_content)."""
    return tiny_pdf(glued_content(sentences, step))


def pages_pdf(contents: list[bytes]) -> bytes:
    """A PDF of one page per content stream, in Helvetica (so a test can glue a page other than the first)."""
    first = 3 + len(contents)  # the font's object: after the catalog, the page tree and the content streams
    kids = b" ".join(b"%d 0 R" % (first + 1 + n) for n in range(len(contents)))
    return write_pdf([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % len(contents),
        *(stream(content) for content in contents),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        *(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
          b"/Resources << /Font << /F1 %d 0 R >> >> >>" % (3 + n, first) for n in range(len(contents))),
    ])
