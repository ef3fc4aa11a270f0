"""QR codes of survey and invitation links, as SVG or PNG bytes (segno: pure Python, ISO/IEC 18004).

Error correction level M (15% of the code can be damaged), at least 4 modules of quiet zone,
dark on white: what phone cameras read best from paper and screens alike.
"""

from __future__ import annotations

import io

import segno

QR_FORMATS = ("svg", "png")
PNG_SCALE = 8
SVG_SCALE = 4
MAX_LINK = 2048


def _code(link: str) -> segno.QRCode:
    """Return the QR code of ``link``; raise ValueError for an empty or overlong one."""
    if not link or len(link) > MAX_LINK:
        raise ValueError(f"a QR code holds a link of 1 to {MAX_LINK} characters")
    return segno.make_qr(link, error="m", boost_error=False)


def qr_svg(link: str, *, title: str | None = None) -> bytes:
    """Return an SVG image (UTF-8) of the QR code of ``link``, titled for screen readers.

    It has a viewBox in modules (so it scales sharply to any print size) and a default size
    of SVG_SCALE pixels a module.
    """
    code, out = _code(link), io.BytesIO()
    code.save(out, kind="svg", border=4, dark="#000", light="#fff", xmldecl=True, svgns=True,
              title=title or link, svgclass=None, lineclass=None, omitsize=True, encoding="utf-8")
    side = code.symbol_size(border=4)[0] * SVG_SCALE
    return out.getvalue().replace(b"<svg ", f'<svg width="{side}" height="{side}" role="img" '.encode(), 1)


def qr_png(link: str, *, scale: int = PNG_SCALE) -> bytes:
    """Return a PNG image of the QR code of ``link``, ``scale`` pixels a module."""
    out = io.BytesIO()
    _code(link).save(out, kind="png", scale=scale, border=4, dark="black", light="white")
    return out.getvalue()


def qr_image(link: str, kind: str) -> bytes:
    """Return the QR code of ``link`` as ``kind`` ("svg" or "png")."""
    if kind not in QR_FORMATS:
        raise ValueError(f"a QR code is written as {' or '.join(QR_FORMATS)}, not {kind!r}")
    return qr_svg(link) if kind == "svg" else qr_png(link)
