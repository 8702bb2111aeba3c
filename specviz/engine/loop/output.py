"""The committed sequence of one lane: prompt + generated ids, the streamed text, stop rules.

Speculative and plain decoding share it, so both stop by the same rules: EOS (the EOS
token is kept in the ids, not in the text), a stop string (stop after the token that
completes it; the text keeps it, as transformers does), max_new_tokens, or the models'
position limit.
"""
from __future__ import annotations

from ...errors import ConfigError
from .config import SpecConfig
from .detokenize import IncrementalDetokenizer
from ...runtime.pair import ModelPair


# One message for every front end: a chat pair is asked a question, a raw one continues text.
EMPTY_PROMPT = "the prompt is empty: type a question or some text to continue"


def encode_prompt(pair: ModelPair, prompt: str | list[int], check_length: bool = True) -> list[int]:
    """Prompt text or token ids -> token ids, validated against the pair (`check_length=False`: the
    caller applies its own, smaller limit, and its message)."""
    if isinstance(prompt, str):
        if not prompt.strip():
            raise ConfigError(EMPTY_PROMPT)
        ids = list(pair.tokenizer(prompt)["input_ids"])
    else:
        ids = list(prompt)
        if any(isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < pair.vocab_size for i in ids):
            raise ConfigError(f"prompt token ids must be whole numbers in 0..{pair.vocab_size - 1}")
    if not ids:
        raise ConfigError(EMPTY_PROMPT)
    if check_length and len(ids) > pair.max_prompt_tokens:
        raise ConfigError(f"the prompt is {len(ids):,} tokens long; {pair.target_name} reads at most "
                          f"{pair.max_positions:,} tokens including its output")
    return ids


class Output:
    def __init__(self, pair: ModelPair, prompt_ids: list[int], cfg: SpecConfig):
        self.ids = list(prompt_ids)
        self.prompt_len = len(prompt_ids)
        self.detok = IncrementalDetokenizer(pair.tokenizer)
        self.eos = pair.eos_token_ids
        self.stop_strings = cfg.stop_strings
        self.max_new = cfg.max_new_tokens
        self.max_len = pair.max_positions
        self.stop_reason: str | None = None

    @property
    def generated(self) -> list[int]:
        return self.ids[self.prompt_len:]

    @property
    def n_generated(self) -> int:
        return len(self.ids) - self.prompt_len

    @property
    def remaining(self) -> int:
        """Tokens that may still be added before a length rule stops the lane."""
        return min(self.max_new - self.n_generated, self.max_len - len(self.ids))

    @property
    def text(self) -> str:
        return self.detok.text

    def append(self, token_id: int) -> str:
        """Commit one token; return its text piece and set stop_reason if a rule fires."""
        self.ids.append(token_id)
        piece = self.detok.push(token_id)
        if token_id in self.eos:
            self.stop_reason = "eos"
        elif piece and any(s in self.detok.text[-(len(piece) + len(s) - 1):] for s in self.stop_strings):
            self.stop_reason = "stop_string"
        elif self.n_generated >= self.max_new:
            self.stop_reason = "max_tokens"
        elif len(self.ids) >= self.max_len:
            self.stop_reason = "length_limit"
        return piece
