"""Scanned copies of PDFs: every page rasterised (poppler's pdftoppm) into an image-only PDF.

A "scan" here is what a flatbed and a scan-to-PDF button make: one greyscale image per page, no text
layer. bench/experiments/ocr_eval.py makes scanned copies of the eval manuals with it, and the OCR
tests make their scanned pages with it (from a page of known text). Pure Python besides pdftoppm: the
image-only PDF is written by hand (Flate-compressed DeviceGray images).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import zlib
from pathlib import Path

Raster = tuple[int, int, bytes]  # width, height (pixels), 8-bit grey rows


def read_pgm(data: bytes) -> Raster:
    """A binary PGM (P5, maxval 255) as (width, height, pixels)."""
    fields: list[bytes] = []
    pos = 0
    while len(fields) < 4:
        while data[pos:pos + 1].isspace():
            pos += 1
        if data[pos:pos + 1] == b"#":
            pos = data.index(b"\n", pos) + 1
            continue
        end = pos
        while not data[end:end + 1].isspace():
            end += 1
        fields.append(data[pos:end])
        pos = end
    if fields[0] != b"P5" or int(fields[3]) != 255:
        raise ValueError("not an 8-bit binary PGM")
    width, height = int(fields[1]), int(fields[2])
    start = pos + 1
    return width, height, data[start:start + width * height]


def rasterise(pdf: Path, dpi: int, first: int | None = None, last: int | None = None) -> list[Raster]:
    """Pages of `pdf` as grey rasters at `dpi` (all pages, or first..last)."""
    exe = shutil.which("pdftoppm")
    if exe is None:
        raise RuntimeError("pdftoppm is not installed (Debian: apt-get install poppler-utils)")
    with tempfile.TemporaryDirectory(prefix="manualqa-scan-") as tmp:
        command = [exe, "-r", str(dpi), "-gray"]
        if first is not None:
            command += ["-f", str(first)]
        if last is not None:
            command += ["-l", str(last)]
        subprocess.run([*command, str(pdf), str(Path(tmp) / "p")], check=True, capture_output=True)
        return [read_pgm(path.read_bytes()) for path in sorted(Path(tmp).glob("p*.pgm"))]


def image_page(raster: Raster, dpi: int) -> tuple[float, float, bytes]:
    """(width pt, height pt, Flate-compressed pixels) of one page image."""
    width, height, pixels = raster
    return width * 72.0 / dpi, height * 72.0 / dpi, zlib.compress(pixels, 6)


def image_pdf(pages: list[tuple[float, float, bytes]], sizes: list[tuple[int, int]],
              extra: dict[int, bytes] | None = None) -> bytes:
    """An image-only PDF: page i shows image i (sizes[i] = its pixels) over the whole page.

    extra: {page index: an image XObject's whole dictionary+stream} that replaces that page's image
    (a hostile image for the tests: huge dimensions, a corrupt stream).
    """
    objects: list[bytes] = [b"<< /Type /Catalog /Pages 2 0 R >>", b""]
    kids = []
    for i, ((w_pt, h_pt, data), (w_px, h_px)) in enumerate(zip(pages, sizes, strict=True)):
        page_no = len(objects) + 1
        kids.append(f"{page_no} 0 R")
        content = f"q {w_pt:.2f} 0 0 {h_pt:.2f} 0 0 cm /Im0 Do Q".encode()
        objects.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {w_pt:.2f} {h_pt:.2f}] "
                       f"/Contents {page_no + 1} 0 R "
                       f"/Resources << /XObject << /Im0 {page_no + 2} 0 R >> >> >>".encode())
        objects.append(b"<< /Length " + str(len(content)).encode() + b" >>\nstream\n" + content + b"\nendstream")
        if extra and i in extra:
            objects.append(extra[i])
        else:
            objects.append(f"<< /Type /XObject /Subtype /Image /Width {w_px} /Height {h_px} /ColorSpace /DeviceGray "
                           f"/BitsPerComponent 8 /Filter /FlateDecode /Length {len(data)} >>\nstream\n".encode()
                           + data + b"\nendstream")
    objects[1] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {len(kids)} >>".encode()
    return pdf_bytes(objects)


def pdf_bytes(objects: list[bytes], header: bytes = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n") -> bytes:
    """A PDF of numbered `objects` (object 1 is the catalog) with a correct xref table."""
    out = bytearray(header)
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def scanned_copy(pdf: Path, out: Path, dpi: int, batch: int = 8) -> int:
    """Write an image-only copy of `pdf` at `dpi` to `out`; returns its page count.

    Pages are rasterised a few at a time and kept compressed, so a long manual at 300 dpi does not
    hold every raw page in memory."""
    from pypdf import PdfReader

    count = len(PdfReader(str(pdf)).pages)
    pages: list[tuple[float, float, bytes]] = []
    sizes: list[tuple[int, int]] = []
    for first in range(1, count + 1, batch):
        for raster in rasterise(pdf, dpi, first, min(count, first + batch - 1)):
            pages.append(image_page(raster, dpi))
            sizes.append((raster[0], raster[1]))
    out.write_bytes(image_pdf(pages, sizes))
    return count
