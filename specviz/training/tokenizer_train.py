"""Byte-level BPE tokenizer for the bundled pair, trained with `tokenizers` on the corpus.

Byte-level means every string is encodable (no unknown token) and decoding is lossless.
The result is a `PreTrainedTokenizerFast` that `AutoTokenizer.from_pretrained(dir)` loads,
with <|bos|> prepended to every encoded text and <|eos|>/<|pad|> set.
"""
from __future__ import annotations

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import PreTrainedTokenizerFast

PAD, BOS, EOS = "<|pad|>", "<|bos|>", "<|eos|>"


def train_tokenizer(texts: list[str], vocab_size: int = 4096) -> PreTrainedTokenizerFast:
    """Train a byte-level BPE with vocab_size entries (special tokens included) on texts."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=[PAD, BOS, EOS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer)
    bos_id = tok.token_to_id(BOS)
    # Every encoded text starts with BOS, as every training document does.
    tok.post_processor = processors.TemplateProcessing(
        single=f"{BOS} $A", pair=f"{BOS} $A {BOS} $B", special_tokens=[(BOS, bos_id)]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=BOS, eos_token=EOS, pad_token=PAD, clean_up_tokenization_spaces=False
    )
