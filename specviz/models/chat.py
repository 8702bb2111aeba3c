"""A user message in a model's chat template, as token ids ready for the reply (one definition)."""
from __future__ import annotations

from ..errors import ConfigError


def chat_ids(tokenizer, message: str, model_name: str = "this model") -> list[int]:
    """The message as the user's turn, then the assistant's opening; a one-line ConfigError
    for a model with no chat template (a code model continues raw text instead)."""
    if not getattr(tokenizer, "chat_template", None):
        raise ConfigError(f"{model_name} has no chat template: send the prompt as raw text (chat off, --no-chat)")
    return tokenizer.apply_chat_template([{"role": "user", "content": message}], add_generation_prompt=True,
                                         tokenize=True, return_dict=False)
