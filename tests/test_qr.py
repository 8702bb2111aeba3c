"""The class link's QR code (view/qr_svg.py) against the standard's own numbers and an independent encoder.

Capacities of all 40 versions at level L (ISO/IEC 18004's table), the Reed-Solomon codewords of the
standard's worked example and their syndromes, the format and version information as the standard
tabulates them, read back from where the symbol holds them, and whole symbols equal, module for
module, to those another encoder (node-qrcode) drew of the same text with the same mask."""
from __future__ import annotations

import hashlib

from specviz.view import qr_svg
from specviz.view.form import link_qr

# Byte-mode characters a level-L symbol of each version holds (ISO/IEC 18004, Table 7).
BYTES_L = [17, 32, 53, 78, 106, 134, 154, 192, 230, 271, 321, 367, 425, 458, 520, 586, 644, 718, 792, 858,
           929, 1003, 1091, 1171, 1273, 1367, 1465, 1528, 1628, 1732, 1840, 1952, 2068, 2188, 2303, 2431, 2563,
           2699, 2809, 2953]
# The format information of level L with masks 0-7 (ISO/IEC 18004, Annex C), most significant bit first.
FORMAT_L = ["111011111000100", "111001011110011", "111110110101010", "111100010011101",
            "110011000101111", "110001100011000", "110110001000001", "110100101110110"]


def test_every_versions_capacity_is_the_standards():
    held = []
    for version in range(1, 41):
        count_bits = 8 if version < 10 else 16
        held.append((qr_svg.capacity(version) * 8 - 4 - count_bits) // 8)
    assert held == BYTES_L


def test_reed_solomon_of_the_standards_example_and_its_syndromes_vanish():
    # ISO/IEC 18004 Annex I: "01234567", version 1-M: its 16 data codewords and 10 error correction codewords
    data = [16, 32, 12, 86, 97, 128, 236, 17, 236, 17, 236, 17, 236, 17, 236, 17]
    assert qr_svg.ec_codewords(data, 10) == [165, 36, 212, 193, 237, 54, 199, 135, 44, 85]
    for n in (7, 18, 30):                        # any length: the codeword is divisible by g(x)
        word = data + qr_svg.ec_codewords(data, n)
        for i in range(n):                       # c(a^i) = 0 for the generator's n roots (Horner)
            value = 0
            for c in word:
                value = qr_svg._mul(value, qr_svg._EXP[i]) ^ c
            assert value == 0


def _bits(dark, cells) -> str:
    return "".join("1" if dark[y][x] else "0" for x, y in cells)


def test_the_format_and_version_information_read_back_as_the_standard_tabulates_them():
    for text, version in (("https://example.org/", 2), ("x" * 250, 10)):
        for mask in range(8):
            dark = qr_svg.matrix(text, mask)
            s = len(dark)
            assert s == qr_svg.size_of(version)
            first = [(8, 0), (8, 1), (8, 2), (8, 3), (8, 4), (8, 5), (8, 7), (8, 8),
                     (7, 8), (5, 8), (4, 8), (3, 8), (2, 8), (1, 8), (0, 8)]
            second = [(s - 1 - i, 8) for i in range(8)] + [(8, s - 15 + i) for i in range(8, 15)]
            assert _bits(dark, first[::-1]) == _bits(dark, second[::-1]) == FORMAT_L[mask]
            assert dark[s - 8][8]                                           # the dark module
            if version >= 7:        # version 10: 001010010011010011 (Annex D), twice
                cells = [(s - 11 + i % 3, i // 3) for i in range(18)]
                assert _bits(dark, cells[::-1]) == _bits(dark, [(y, x) for x, y in cells][::-1]) == "001010010011010011"
    # the finders' corners and the timing pattern
    dark = qr_svg.matrix("https://example.org/")
    for x, y in ((0, 0), (6, 6), (len(dark) - 1, 0), (0, len(dark) - 1)):
        assert dark[y][x]
    assert [dark[6][x] for x in range(8, len(dark) - 8)] == [x % 2 == 0 for x in range(8, len(dark) - 8)]


def _digest(dark) -> str:
    return hashlib.sha256("\n".join("".join("1" if d else "0" for d in row) for row in dark).encode()).hexdigest()


# Symbols another encoder drew: node-qrcode 1.5.4 (`QRCode.create([{data: Buffer.from(text, "utf8"), mode:
# "byte"}], {errorCorrectionLevel: "L", maskPattern: mask})`, its rows of modules without the quiet zone),
# hashed as `_digest` does: versions 2, 7 (version information), 10, 16 (a class link), 32 (the alignment
# patterns' exception) and 40, every mask, a text of multi-byte characters.
CLASS_LINK = "https://example.org/?" + "prompt=" + "a%20" * 132 + "&k=4"        # 560 characters, as a class link
OTHER = {("https://example.org/", 0): "cde7c6fd9ec6874c32af0d947780905cb6ed7667acc4741befa595a3e581c554",
         ("https://example.org/", 1): "d32828e27681b5ade40fd70a15ecbe63f899b5b493bdeb20ef92ed525daad458",
         ("https://example.org/", 2): "870ec82c974e9ae8a20dafd19acfbd2337e911d43abba18d99bce04913f179d0",
         ("https://example.org/", 3): "2b90fc01059570cd6c990bfd9131afe688d05500a2e8910c7d1f784c4d98d9fb",
         ("https://example.org/", 4): "8b2e4361b3ca9b8fcc73e2a2fa1671068b443cd12485fedb42142f9ca01bef63",
         ("https://example.org/", 5): "686e6c48ffeebaccc9e9e0a541a165017933b1d9204851e31130a27fda860108",
         ("https://example.org/", 6): "84148de0515ed8a149048cad81b4ac4f3456d9e212881220d847be44b975bdc7",
         ("https://example.org/", 7): "392fd8972526c0a54279161f1aba0666047ff3f729ab5c60a866bec145b3cb63",
         ("y" * 150, 1): "a1d74f2e3e53257d050f71e97e9bfcb1af383961d687582c4986ec43e91c1da1",
         ("x" * 250, 3): "bf6b7796a80c85b2eadc3d4727d659f76510637ce9c47a2c1b34ef29a541e409",
         (CLASS_LINK, 5): "4105f07a9c5ada77956e7430de30171119775cd481e455dd4ca130e9512d6458",
         ("héllo wörld — ☃", 6): "fef3709623ead23380036ea079e4e4ff441053c3947b3250280fa9a40fbdd1e4",
         ("z" * 1900, 2): "74e7afb873d0e16160e32125964493f23f220458c124d73de02c6c88fd95886b",
         ("w" * 2953, 7): "1e21c944c6a984de598c2e59f6929ba33772a10949441ab075bc1ffadee8febc"}


def test_whole_symbols_equal_another_encoders_module_for_module():
    for (text, mask), digest in OTHER.items():
        assert _digest(qr_svg.matrix(text, mask)) == digest, (text[:40], mask)


def test_a_class_link_is_a_version_16_symbol_in_svg_without_its_text():
    url = CLASS_LINK
    assert len(url) == 560
    drawn = qr_svg.svg(url)
    size = qr_svg.size_of(16) + 2 * qr_svg.QUIET
    assert drawn.startswith("<svg") and f'viewBox="0 0 {size} {size}"' in drawn
    assert "example" not in drawn and "prompt" not in drawn                       # numbers only
    assert qr_svg.svg("x" * 2954) is None and qr_svg.svg("x" * 2953) is not None
    assert "Scan" in link_qr(url) and link_qr("") == "" and "too long" in link_qr("https://" + "x" * 3000)
    assert "<svg" not in link_qr("javascript:alert(1)")
