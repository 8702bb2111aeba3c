"""The real pair (SmolLM2-135M-Instruct + the shipped draft): exactness, text and chat on real weights.

These need the fetched target (`python -m specviz fetch`): conftest.py's `real_pair` fixture fetches
it under SPECVIZ_REQUIRE_REAL_PAIR=1 (as CI does) and skips the tests elsewhere.
"""
from __future__ import annotations

import pytest

from specviz import SpecConfig, decode_baseline, speculate
from specviz.bench.runner import hf_generate
from specviz.engine.loop.detokenize import IncrementalDetokenizer
from specviz.models.chat import chat_ids

pytestmark = pytest.mark.slow    # SmolLM2-135M in fp32

# Chat and code, as people use the pair; each long enough for many rejections.
PROMPTS = [
    ("chat", "List five tips for staying focused while studying."),
    ("chat", "Write a short, polite email asking a colleague to review my report."),
    ("code", "def merge_sort(items):\n    \"\"\"Sort a list with merge sort.\"\"\""),
]
MULTIBYTE = "Café crème, naïve façade — 日本語のテキスト, 中文, 한국어; emoji 🎉👩‍💻🇫🇷 ok."


def _ids(pair, kind: str, text: str) -> list[int]:
    return chat_ids(pair.tokenizer, text) if kind == "chat" else pair.tokenizer(text)["input_ids"]


@pytest.mark.parametrize("kind,text", PROMPTS, ids=[f"{k}{i}" for i, (k, _) in enumerate(PROMPTS)])
def test_greedy_speculative_is_token_identical_to_generate(real_pair, kind, text):
    ids = _ids(real_pair, kind, text)
    cfg = SpecConfig(k=2, max_new_tokens=64)
    done = list(speculate(real_pair, ids, cfg))[-1]
    ref = hf_generate(real_pair, ids, cfg)
    # generate() keeps the EOS it stopped on; the engine keeps it too (Done.token_ids), so compare as is.
    assert list(done.token_ids) == ref
    stats = done.stats
    assert stats.tally.rejected > 0, "the draft must be wrong sometimes, or this checks nothing about the correction"
    base = list(decode_baseline(real_pair, ids, cfg))[-1]
    assert list(base.token_ids) == ref


def test_multibyte_text_streams_whole_characters_on_the_real_tokenizer(real_pair):
    tok = real_pair.tokenizer
    ids = tok(MULTIBYTE, add_special_tokens=False)["input_ids"]
    # Byte-level BPE splits some characters over several tokens: a token-by-token decode shows U+FFFD.
    assert any("\ufffd" in tok.decode([i]) for i in ids), "no split character: the text tests nothing"
    detok = IncrementalDetokenizer(tok)
    pieces = [detok.push(i) for i in ids]
    assert "".join(pieces) == MULTIBYTE
    assert all("\ufffd" not in p for p in pieces)
    held = sum(1 for p in pieces if p == "")
    assert held > 0, "a split character must be held back until it is whole"


def test_multibyte_output_through_the_engine(real_pair):
    """The engine's streamed pieces on a reply that copies multi-byte text: whole characters, same text."""
    ids = chat_ids(real_pair.tokenizer, f"Repeat this line exactly, nothing else:\n{MULTIBYTE}")
    events = list(speculate(real_pair, ids, SpecConfig(k=2, max_new_tokens=60)))
    done = events[-1]
    pieces = [e.piece for e in events if e.kind in ("accepted", "resampled", "bonus")]
    assert "".join(pieces) == done.text
    assert all("\ufffd" not in p for p in pieces)
    assert done.text == real_pair.tokenizer.decode(done.token_ids, skip_special_tokens=True)
    assert sum(ord(c) > 0x2FFF for c in done.text) >= 5, f"reply has too little multi-byte text: {done.text!r}"


def test_chat_reply_ends_at_the_templates_eos(real_pair):
    tok = real_pair.tokenizer
    ids = chat_ids(tok, "What is the capital of France? Answer in one word.")
    assert "<|im_start|>user" in tok.decode(ids) and tok.decode(ids).rstrip().endswith("<|im_start|>assistant")
    for lane in (speculate, decode_baseline):
        done = list(lane(real_pair, ids, SpecConfig(k=2, max_new_tokens=40)))[-1]
        assert done.stop_reason == "eos"
        assert done.token_ids[-1] in real_pair.eos_token_ids
        assert tok.convert_ids_to_tokens(done.token_ids[-1]) == "<|im_end|>"
        assert "Paris" in done.text and "<|im_end|>" not in done.text


def test_the_shipped_draft_stays_on_graphs_with_its_minus_inf_outside_its_head(real_pair):
    """The shipped draft's head covers 8192 tokens and gives -inf elsewhere, by design: the graph
    path's replay check (the eager stand-in here) must keep both models on graphs, tokens equal."""
    from specviz.runtime import graph_model
    ids = chat_ids(real_pair.tokenizer, PROMPTS[0][1])
    try:
        eager = speculate(real_pair, ids, SpecConfig(k=3, max_new_tokens=24, cuda_graphs=False))
        graphs = speculate(real_pair, ids, SpecConfig(k=3, max_new_tokens=24, cuda_graphs=True))
        eager, graphs = list(eager)[-1], list(graphs)[-1]
        assert graphs.stats.decode_path == "eager replay" and graphs.stats.draft_path == "eager replay"
        assert graphs.token_ids == eager.token_ids
        assert graph_model.POOL.distrusted(real_pair.draft) is None
    finally:
        for model in (real_pair.target, real_pair.draft):
            graph_model.POOL.forget(model)
