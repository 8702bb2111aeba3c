"""Bad settings, bad prompts, bad models and cancellation: clear errors, nothing lost."""
import json
import threading

import pytest
import torch

from specviz import ConfigError, LoadError, SpecConfig, load_pair, speculate
from specviz.models.loading import load_model, make_pair
from specviz.training.tokenizer_train import train_tokenizer


def test_prompt_longer_than_the_model_reads(pair):
    with pytest.raises(ConfigError, match="tokens long"):
        speculate(pair, "x = 1\n" * 400, SpecConfig())


def test_generation_stops_at_the_position_limit(pair):
    ids = pair.tokenizer("x = 1\n" * 30)["input_ids"]
    ids = (ids * 10)[: pair.max_positions - 5]
    done = list(speculate(pair, ids, SpecConfig(max_new_tokens=50, k=4)))[-1]
    assert done.stop_reason in ("length_limit", "eos") and len(ids) + len(done.token_ids) <= pair.max_positions


def test_model_drafter_needs_a_draft(tiny_dirs):
    only_target = load_pair(tiny_dirs["target"], None, device="cpu")
    with pytest.raises(ConfigError, match="prompt_lookup"):
        speculate(only_target, "def f():", SpecConfig(drafter="model"))
    assert list(speculate(only_target, "def f():", SpecConfig(drafter="prompt_lookup", max_new_tokens=5)))[-1].kind == "done"


def test_missing_folder_and_unreachable_hub_id(tmp_path):
    with pytest.raises(LoadError, match="no model folder"):
        load_pair(str(tmp_path / "nope"), None)
    with pytest.raises(LoadError, match="could not be reached"):
        load_pair("specviz-test/surely-not-cached-model", None)
    with pytest.raises(LoadError, match="neither a local folder nor a Hugging Face Hub id"):
        load_pair("not a/valid/id!", None)


@pytest.mark.slow    # about 8 s loading a non-causal model
def test_not_a_causal_lm(tmp_path):
    from transformers import BertConfig, BertModel
    BertModel(BertConfig(vocab_size=50, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=8)).save_pretrained(tmp_path / "bert")
    cfg = json.loads((tmp_path / "bert" / "config.json").read_text())
    cfg["model_type"] = "resnet"   # a vision config: no causal-LM class exists for it
    (tmp_path / "bert" / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(LoadError):
        load_model(str(tmp_path / "bert"), torch.device("cpu"), torch.float32)


def test_mismatched_tokenizers(tiny_dirs, tmp_path):
    other = train_tokenizer(["completely different text " * 50, "more words here " * 40], vocab_size=280)
    other.save_pretrained(tmp_path / "other")
    from transformers import LlamaForCausalLM
    LlamaForCausalLM.from_pretrained(tiny_dirs["random"]).save_pretrained(tmp_path / "other")
    with pytest.raises(LoadError, match="tokenizers of .* differ"):
        load_pair(tiny_dirs["target"], str(tmp_path / "other"), device="cpu")


def test_closing_the_generator_stops_the_work(pair):
    calls = {"n": 0}
    original = pair.target.forward
    def counting(*args, **kwargs):
        calls["n"] += 1
        return original(*args, **kwargs)
    pair.target.forward = counting
    try:
        gen = speculate(pair, "def f(x):", SpecConfig(k=2, max_new_tokens=200))
        for event in gen:
            if event.kind == "round_end" and event.round == 2:
                break
        gen.close()
        assert calls["n"] == 2         # two rounds, two target passes, nothing after the close
    finally:
        pair.target.forward = original


def test_cancel_event_ends_with_done(pair):
    cancel = threading.Event()
    events = []
    for event in speculate(pair, "def f(x):", SpecConfig(k=2, max_new_tokens=200), cancel=cancel):
        events.append(event)
        if event.kind == "round_end" and event.round == 3:
            cancel.set()
    assert events[-1].kind == "done" and events[-1].stop_reason == "cancelled"
    assert events[-1].stats.tally.rounds == 3


def test_vocab_padding_rows_are_ignored(tiny_dirs):
    """A draft with extra (padding) output rows still pairs with its target, on the shared part."""
    from transformers import AutoTokenizer, LlamaForCausalLM
    tok = AutoTokenizer.from_pretrained(tiny_dirs["target"])
    target = LlamaForCausalLM.from_pretrained(tiny_dirs["target"]).eval()
    padded = LlamaForCausalLM.from_pretrained(tiny_dirs["cut"]).eval()
    padded.resize_token_embeddings(len(tok) + 16)
    p = make_pair(target, padded, tok, min(len(tok), len(tok) + 16))
    ids = tok("def add(a, b):")["input_ids"]
    ref = target.generate(torch.tensor([ids]), do_sample=False, max_new_tokens=20)[0, len(ids):].tolist()
    assert list(speculate(p, ids, SpecConfig(max_new_tokens=20)))[-1].token_ids == ref


@pytest.mark.parametrize("message, says", [
    ("You are trying to access a gated repo.\nMake sure to have access to it", "gated repository"),
    ("owner/nope is not a local folder and is not a valid model identifier listed on "
     "'https://huggingface.co/models'", "no such public repository"),
    ("401 Client Error: Unauthorized for url", "no such public repository"),
    ("We couldn't connect to 'https://huggingface.co' to load the files", "could not be reached"),
])
def test_hub_failures_say_which(message, says):
    """Gated, missing (or private) and unreachable are three different answers, each said as such."""
    from specviz.models.loading import _explain
    text = _explain("owner/model", "model", OSError(message))
    assert says in text and "owner/model" in text and "\n" not in text
