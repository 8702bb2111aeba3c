"""Incremental detokenization: token ids in, text pieces out, each character once and whole.

A character can span several byte-level tokens, and some tokenizers change how a token
reads depending on its neighbours (leading spaces). Like vLLM's detokenizer, we decode a
short window that starts a few tokens back and emit only the new suffix, holding it back
while it ends in an incomplete character (U+FFFD). The emitted pieces concatenate to the
output text.

Shown, a token is made visible by `visible` (the one mapping the panes, step mode, plot axes and
tooltips use): space as ·, newline as ⏎, tab as →, any other control or invisible character as
its escape (\r, \x1b, \u200b); and a token that holds only part of a multi-byte character
(`piece_of`) reads as its bytes, <0xE2>, never as U+FFFD.
"""
from __future__ import annotations

import codecs
import re
import unicodedata

_GLYPHS = {" ": "·", "\n": "⏎", "\t": "→"}
_HEX_TOKEN = re.compile(r"^<0x([0-9A-Fa-f]{2})>$")


def visible(text: str) -> str:
    """Text with every whitespace and control character drawn: ' ' -> ·, newline -> ⏎, tab -> →,
    other control, format or separator characters -> their escape (\\r, \\x00, \\u200b)."""
    out = []
    for ch in text:
        if ch in _GLYPHS:
            out.append(_GLYPHS[ch])
        elif ch == "\r":
            out.append("\\r")
        elif unicodedata.category(ch) in ("Cc", "Cf", "Zs", "Zl", "Zp", "Cs"):
            out.append(f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out)


def _hex_bytes(err: UnicodeDecodeError):
    return "".join(f"<0x{b:02X}>" for b in err.object[err.start:err.end]), err.end


codecs.register_error("specviz-hex", _hex_bytes)


def _byte_decoder() -> dict[str, int]:
    """GPT-2's byte-level BPE alphabet read backwards: each printable stand-in -> its byte."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), 256))
    stand_in, n = list(keep), 0
    for b in range(256):
        if b not in keep:
            keep.append(b)
            stand_in.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(keep, stand_in)}


_BYTES = _byte_decoder()


def token_bytes(tokenizer, token_id: int) -> bytes | None:
    """The raw bytes a token stands for (byte-level BPE or <0xNN> byte-fallback tokens), or None."""
    token = tokenizer.convert_ids_to_tokens(int(token_id))
    if not isinstance(token, str):
        return None
    hexed = _HEX_TOKEN.match(token)
    if hexed:
        return bytes([int(hexed.group(1), 16)])
    if token and all(ch in _BYTES for ch in token):
        return bytes(_BYTES[ch] for ch in token)
    return None


def token_text(tokenizer, token_id: int) -> str:
    """A token decoded on its own; a part of a multi-byte character reads as its bytes (<0xE2>)."""
    text = tokenizer.decode([int(token_id)], skip_special_tokens=True, clean_up_tokenization_spaces=False)
    if "\ufffd" in text:
        raw = token_bytes(tokenizer, token_id)
        if raw is not None and "\ufffd".encode() not in raw:
            return raw.decode("utf-8", errors="specviz-hex")
    return text


class IncrementalDetokenizer:
    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.ids: list[int] = []
        self.prefix_offset = 0   # window start: tokens before it are settled
        self.read_offset = 0     # tokens up to here have been turned into emitted text
        self.text = ""
        self._pieces: dict[int, str] = {}   # piece_of's answers: a token's piece does not change

    def _decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=True, clean_up_tokenization_spaces=False)

    def push(self, token_id: int) -> str:
        """Add one generated token; return the text it completes ("" while a character is split)."""
        self.ids.append(token_id)
        before = self._decode(self.ids[self.prefix_offset : self.read_offset])
        after = self._decode(self.ids[self.prefix_offset :])
        if len(after) <= len(before) or after.endswith("\ufffd"):
            return ""
        piece = after[len(before):]
        self.prefix_offset, self.read_offset = self.read_offset, len(self.ids)
        self.text += piece
        return piece

    def piece_of(self, token_id: int) -> str:
        """A token decoded on its own (for drafts, which are not output yet): a part of a
        multi-byte character reads as its bytes, <0xE2>, not U+FFFD. Decoded once a token id and
        run: a round's events name its drafts, residual tops and pictures' tokens again and again."""
        piece = self._pieces.get(token_id)
        if piece is None:
            piece = self._pieces[token_id] = token_text(self.tokenizer, token_id)
        return piece
