"""Incremental detokenization: token ids in, text pieces out, each character once and whole.

A character can span several byte-level tokens, and some tokenizers change how a token
reads depending on its neighbours (leading spaces). Like vLLM's detokenizer, we decode a
short window that starts a few tokens back and emit only the new suffix, holding it back
while it ends in an incomplete character (U+FFFD). The emitted pieces concatenate to the
output text.
"""
from __future__ import annotations


class IncrementalDetokenizer:
    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.ids: list[int] = []
        self.prefix_offset = 0   # window start: tokens before it are settled
        self.read_offset = 0     # tokens up to here have been turned into emitted text
        self.text = ""

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
        """A token decoded on its own (for drafts, which are not output yet)."""
        return self._decode([token_id])
