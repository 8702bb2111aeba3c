"""A QR code of the class link, as an SVG the projector shows beside the link (the room scans it).

A small encoder of QR Code Model 2 (ISO/IEC 18004): byte mode, error correction level L (a screen is
read cleanly; L keeps a 560-character class link at 81x81 modules, version 16), the smallest version
that holds the text. The steps follow the standard's order: the bit stream (mode, length, bytes,
terminator, pad codewords), Reed-Solomon error correction over GF(256) per block and the blocks
interleaved, the function patterns (finders, separators, timing, alignment, version and format
information), the data placed in the standard's two-column zigzag, and the mask of the eight with the
lowest penalty (the standard's four rules). The table of blocks is the standard's (codewords of error
correction per block, and blocks, for each version at level L). Output: SVG of one path (no text of the
link enters it, only numbers), or None for a text too long for any version.
"""
from __future__ import annotations

from functools import lru_cache

# Level L, versions 1..40: error correction codewords per block, and the number of blocks (ISO 18004 Table 9).
EC_PER_BLOCK = (7, 10, 15, 20, 26, 18, 20, 24, 30, 18, 20, 24, 26, 30, 22, 24, 28, 30, 28, 28,
                28, 28, 30, 30, 26, 28, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30)
BLOCKS = (1, 1, 1, 1, 1, 2, 2, 2, 2, 4, 4, 4, 4, 4, 6, 6, 6, 6, 7, 8,
          8, 9, 9, 10, 12, 12, 12, 13, 14, 15, 16, 17, 18, 19, 19, 20, 21, 22, 24, 25)
LEVEL_L = 0b01           # the format information's two bits for level L
QUIET = 4                # light modules around the symbol, as the standard asks

# GF(256) with the standard's polynomial x^8 + x^4 + x^3 + x^2 + 1: exp and log tables of alpha = 2.
_EXP, _LOG = [0] * 512, [0] * 256
_x = 1
for _i in range(255):
    _EXP[_i], _LOG[_x] = _x, _i
    _x = (_x << 1) ^ (0x11D if _x & 0x80 else 0)
for _i in range(255, 512):
    _EXP[_i] = _EXP[_i - 255]


def _mul(a: int, b: int) -> int:
    return 0 if a == 0 or b == 0 else _EXP[_LOG[a] + _LOG[b]]


def ec_codewords(data: list[int], n: int) -> list[int]:
    """The n Reed-Solomon codewords of `data`: the remainder of data(x) x^n divided by the generator
    g(x) = (x - a^0)(x - a^1)...(x - a^(n-1))."""
    gen = [1]
    for i in range(n):                      # multiply by (x - a^i); minus is plus in GF(2^8)
        gen = [a ^ _mul(b, _EXP[i]) for a, b in zip(gen + [0], [0] + gen)]
    rest = list(data) + [0] * n
    for i in range(len(data)):              # long division; gen[0] is 1
        c = rest[i]
        if c:
            for j in range(1, n + 1):
                rest[i + j] ^= _mul(gen[j], c)
    return rest[len(data):]


def size_of(version: int) -> int:
    return 17 + 4 * version


def alignment_centres(version: int) -> list[int]:
    """Rows (and columns) of the alignment patterns' centres: 6, then evenly spaced (an even step) up to
    size - 7; version 32's step is the standard's exception."""
    if version == 1:
        return []
    n, last = version // 7 + 2, size_of(version) - 7
    step = 26 if version == 32 else -(-(last - 6) // (2 * (n - 1))) * 2
    return [6] + [last - step * i for i in range(n - 2, -1, -1)]


def _bch(value: int, poly: int, bits: int) -> int:
    """`value` followed by its BCH remainder of `bits` bits under generator `poly`."""
    rest = value << bits
    for shift in range(rest.bit_length() - 1, bits - 1, -1):
        if rest >> shift & 1:
            rest ^= poly << (shift - bits)
    return value << bits | rest


class _Grid:
    """The symbol under construction: dark modules, and which modules belong to function patterns."""

    def __init__(self, version: int):
        self.version, self.size = version, size_of(version)
        self.dark = [[False] * self.size for _ in range(self.size)]
        self.fixed = [[False] * self.size for _ in range(self.size)]

    def set(self, x: int, y: int, dark: bool) -> None:
        self.dark[y][x], self.fixed[y][x] = dark, True

    def functions(self) -> None:
        s = self.size
        for cx, cy in ((3, 3), (s - 4, 3), (3, s - 4)):           # finders with their light separators
            for dy in range(-4, 5):
                for dx in range(-4, 5):
                    x, y = cx + dx, cy + dy
                    if 0 <= x < s and 0 <= y < s:
                        ring = max(abs(dx), abs(dy))
                        self.set(x, y, ring not in (2, 4))
        for i in range(8, s - 8):                                   # timing patterns
            self.set(i, 6, i % 2 == 0)
            self.set(6, i, i % 2 == 0)
        centres = alignment_centres(self.version)
        for cy in centres:
            for cx in centres:
                if (cx, cy) in ((6, 6), (6, s - 7), (s - 7, 6)):    # under a finder
                    continue
                for dy in range(-2, 3):
                    for dx in range(-2, 3):
                        self.set(cx + dx, cy + dy, max(abs(dx), abs(dy)) != 1)
        if self.version >= 7:                                       # version information, twice
            bits = _bch(self.version, 0x1F25, 12)
            for i in range(18):
                dark, a, b = bool(bits >> i & 1), s - 11 + i % 3, i // 3
                self.set(a, b, dark)
                self.set(b, a, dark)
        self.format(0)                                              # reserved now, drawn for each mask

    def format(self, mask: int) -> None:
        """The format information (level and mask, BCH-protected, XOR 0x5412) in its two places, and
        the dark module beside the lower-left finder. Bit i (0: least significant) goes, first, down
        column 8 (rows 0-5, 7, 8) then left along row 8 (columns 7, 5-0, the timing column skipped);
        again, along row 8 from the right edge (bits 0-7) and up column 8 from the bottom (bits 8-14)."""
        s, bits = self.size, _bch(LEVEL_L << 3 | mask, 0x537, 10) ^ 0x5412
        first = [(8, 0), (8, 1), (8, 2), (8, 3), (8, 4), (8, 5), (8, 7), (8, 8),
                 (7, 8), (5, 8), (4, 8), (3, 8), (2, 8), (1, 8), (0, 8)]
        second = [(s - 1 - i, 8) for i in range(8)] + [(8, s - 15 + i) for i in range(8, 15)]
        for i in range(15):
            dark = bool(bits >> i & 1)
            self.set(*first[i], dark)
            self.set(*second[i], dark)
        self.set(8, s - 8, True)

    def place(self, codewords: list[int]) -> None:
        """The codewords' bits, most significant first, up and down two-column strips from the right
        (the vertical timing column skipped); left-over modules stay light."""
        s, bit = self.size, 0
        bits = [c >> (7 - i) & 1 for c in codewords for i in range(8)]
        right, strip = s - 1, 0
        while right > 0:
            if right == 6:
                right = 5
            rows = range(s - 1, -1, -1) if strip % 2 == 0 else range(s)
            for y in rows:
                for x in (right, right - 1):
                    if not self.fixed[y][x]:
                        self.dark[y][x] = bit < len(bits) and bits[bit] == 1
                        bit += 1
            right, strip = right - 2, strip + 1

    def free(self) -> int:
        return sum(not f for row in self.fixed for f in row)


MASKS = (lambda y, x: (y + x) % 2 == 0, lambda y, x: y % 2 == 0, lambda y, x: x % 3 == 0,
         lambda y, x: (y + x) % 3 == 0, lambda y, x: (y // 2 + x // 3) % 2 == 0,
         lambda y, x: y * x % 2 + y * x % 3 == 0, lambda y, x: (y * x % 2 + y * x % 3) % 2 == 0,
         lambda y, x: ((y + x) % 2 + y * x % 3) % 2 == 0)


@lru_cache(maxsize=None)
def capacity(version: int) -> int:
    """Data codewords of a version at level L: its codewords less the error correction's."""
    grid = _Grid(version)
    grid.functions()
    return grid.free() // 8 - EC_PER_BLOCK[version - 1] * BLOCKS[version - 1]


def _stream(data: bytes, version: int, room: int) -> list[int] | None:
    """Byte mode: mode 0100, the count (8 bits to version 9, 16 after), the bytes, up to four zero bits,
    zeros to a whole codeword, then the pad codewords 0xEC 0x11 in turn; None if it does not fit."""
    count_bits = 8 if version < 10 else 16
    if len(data) >= 1 << count_bits:
        return None
    bits = "0100" + format(len(data), f"0{count_bits}b") + "".join(format(b, "08b") for b in data)
    if len(bits) > room * 8:
        return None
    bits += "0" * min(4, room * 8 - len(bits))
    bits += "0" * (-len(bits) % 8)
    words = [int(bits[i:i + 8], 2) for i in range(0, len(bits), 8)]
    return words + [(0xEC, 0x11)[i % 2] for i in range(room - len(words))]


def _interleave(words: list[int], version: int) -> list[int]:
    """Split into the version's blocks (the shorter first, one data codeword less), add each block's
    error correction, and take the data codewords column by column, then the error correction's."""
    n, ec = BLOCKS[version - 1], EC_PER_BLOCK[version - 1]
    short, longer = divmod(len(words), n)
    blocks, at = [], 0
    for i in range(n):
        length = short + (1 if i >= n - longer else 0)
        blocks.append(words[at:at + length])
        at += length
    out = [b[i] for i in range(short + 1) for b in blocks if i < len(b)]
    eccs = [ec_codewords(b, ec) for b in blocks]
    return out + [e[i] for i in range(ec) for e in eccs]


def penalty(dark: list[list[bool]]) -> int:
    """The standard's four penalty rules: runs of five or more alike (3, +1 each beyond), 2x2 blocks alike
    (3 each), finder-like 1:1:3:1:1 with four light modules on one side (40 each), and the dark share's
    distance from half (10 per whole 5%)."""
    s, score = len(dark), 0
    lines = [row for row in dark] + [[dark[y][x] for y in range(s)] for x in range(s)]
    finder = ([1, 0, 1, 1, 1, 0, 1, 0, 0, 0, 0], [0, 0, 0, 0, 1, 0, 1, 1, 1, 0, 1])
    for line in lines:
        run = 1
        for i in range(1, s + 1):
            if i < s and line[i] == line[i - 1]:
                run += 1
                continue
            if run >= 5:
                score += 3 + run - 5
            run = 1
        values = [int(v) for v in line]
        score += 40 * sum(values[i:i + 11] in finder for i in range(s - 10))
    score += 3 * sum(dark[y][x] == dark[y][x + 1] == dark[y + 1][x] == dark[y + 1][x + 1]
                     for y in range(s - 1) for x in range(s - 1))
    # k: the dark share's distance from 50% in 5% steps beyond the first (45-55%: 0), ceil(|share - 50| / 5) - 1
    total = s * s
    k = max(0, -(-abs(2 * sum(map(sum, dark)) - total) * 10 // total) - 1)
    return score + 10 * k


def matrix(text: str, mask: int | None = None) -> list[list[bool]] | None:
    """The QR symbol of `text` (UTF-8, byte mode, level L): rows of dark (True) and light modules, at
    the smallest version that holds it, with `mask` (0-7) or the one of lowest penalty; None if too long."""
    data = text.encode("utf-8")
    for version in range(1, 41):
        room = capacity(version)
        words = _stream(data, version, room)
        if words is not None:
            break
    else:
        return None
    grid = _Grid(version)
    grid.functions()
    grid.place(_interleave(words, version))
    best = None
    for m in range(8) if mask is None else (mask,):
        trial = _Grid(version)
        trial.dark = [[d != (not f and MASKS[m](y, x)) for x, (d, f) in enumerate(zip(row, fixed))]
                      for y, (row, fixed) in enumerate(zip(grid.dark, grid.fixed))]
        trial.fixed = grid.fixed
        trial.format(m)
        score = penalty(trial.dark) if mask is None else 0
        if best is None or score < best[0]:
            best = (score, trial.dark)
    return best[1]


def svg(text: str, module_px: int = 4) -> str | None:
    """The QR symbol of `text` as SVG (one path, dark on white, QUIET modules of margin), or None if the
    text is too long for a QR code."""
    dark = matrix(text)
    if dark is None:
        return None
    n = len(dark) + 2 * QUIET
    path = []
    for y, row in enumerate(dark):
        x = 0
        while x < len(row):
            if row[x]:
                start = x
                while x < len(row) and row[x]:
                    x += 1
                path.append(f"M{start + QUIET} {y + QUIET}h{x - start}v1h-{x - start}z")
            else:
                x += 1
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="qr" viewBox="0 0 {n} {n}" width="{n * module_px}" '
            f'height="{n * module_px}" shape-rendering="crispEdges" role="img" aria-label="QR code of the link">'
            f'<rect width="{n}" height="{n}" fill="#fff"/><path fill="#000" d="{"".join(path)}"/></svg>')
