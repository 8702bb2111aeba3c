"""A user message in a model's chat template, as token ids ready for the reply (one definition)."""
from __future__ import annotations


def chat_ids(tokenizer, message: str) -> list[int]:
    return tokenizer.apply_chat_template([{"role": "user", "content": message}], add_generation_prompt=True,
                                         tokenize=True, return_dict=False)
