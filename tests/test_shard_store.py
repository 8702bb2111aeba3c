"""The committed on-policy store (training/shard_store.py, accumulate.py, teacher_forcing.py): compact
shards keep token ids and provenance, names stay unique across sittings, keeping is idempotent, the
split is stable, and teacher forcing restores the distributions generate_records recorded."""
import json

import numpy as np
import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from specviz.errors import ConfigError
from specviz.training import accumulate, shard_store
from specviz.training.distill_data import save_shard
from specviz.training.onpolicy import Record, generate_records
from specviz.training.teacher_forcing import restore

VOCAB = 300
SITTING = {"sitting": "", "seed": 3, "max_new_tokens": 12, "target": "test/target", "target_weights": "abc",
           "machine": "test", "device": "cpu", "code": "test", "work_dir": "w"}


def tiny_target() -> LlamaForCausalLM:
    """A random Llama whose distributions are peaked enough to have clear top tokens."""
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                         initializer_range=0.2, tie_word_embeddings=False)
    return LlamaForCausalLM(config).eval()


def records(seed: int, n: int = 3, vocab: int = 49152) -> list[Record]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        g = int(rng.integers(2, 9))
        out.append(Record(rng.integers(0, vocab, int(rng.integers(3, 7))).tolist(), rng.integers(0, vocab, g).tolist(),
                          rng.integers(0, vocab, (g, 32)).astype(np.uint16), rng.normal(size=(g, 32)).astype(np.float16),
                          0.7))
    return out


def work_folder(root, name: str, prompts: str, shards: dict[int, list[Record]]):
    folder = root / name
    (folder / "onpolicy").mkdir(parents=True)
    (folder / "prompts.json").write_text(prompts)
    for index, recs in shards.items():
        save_shard(folder / "onpolicy" / f"shard-{index:04d}.npz", recs, "chat", "bf16")
    return folder


def test_a_compact_shard_keeps_the_tokens_and_the_provenance_in_a_few_bytes_a_token(tmp_path):
    folder = work_folder(tmp_path, "w", '[["chat", "hi"]]', {7: records(0, n=40)})
    sitting = dict(SITTING, sitting=shard_store.sitting_id(folder))
    name, arrays = shard_store.compact(folder / "onpolicy" / "shard-0007.npz", sitting, 7)
    path = shard_store.write(tmp_path / "store", name, arrays)
    assert name == f"{sitting['sitting']}-0007" and path.name == f"{name}.npz"
    back = shard_store.read(path)
    with np.load(folder / "onpolicy" / "shard-0007.npz") as full:
        for key in ("prompt_lens", "gen_lens", "prompts", "generated"):
            assert np.array_equal(back[key], full[key])
    prov = back["provenance"]
    assert prov["kind"] == "chat" and prov["temperature"] == 0.7 and prov["precision"] == "bf16"
    assert prov["shard_seed"] == 3 + 7 and prov["target_weights"] == "abc" and prov["max_new_tokens"] == 12
    assert prov["tokens"] == int(back["gen_lens"].sum()) and prov["sequences"] == 40 and prov["created"]
    # random ids are the worst case for compression: still about 2 bytes a token, prompts included
    tokens = int(back["gen_lens"].sum() + back["prompt_lens"].sum())
    assert path.stat().st_size < 2.5 * tokens + 1500
    assert path.stat().st_size * 10 < (folder / "onpolicy" / "shard-0007.npz").stat().st_size   # no top-32
    # a shard written before shards named their precision reads as fp32
    older = {k: v for k, v in np.load(folder / "onpolicy" / "shard-0007.npz").items() if k != "precision"}
    np.savez(folder / "onpolicy" / "shard-0008.npz", **older)
    assert json.loads(str(shard_store.compact(folder / "onpolicy" / "shard-0008.npz", sitting, 8)[1]["provenance"]))[
        "precision"] == "fp32"


def test_names_stay_unique_across_sittings_and_keeping_twice_adds_nothing(tmp_path):
    store = tmp_path / "store"
    first = work_folder(tmp_path, "first", '[["chat", "a"]]', {0: records(1), 1: records(2)})
    second = work_folder(tmp_path, "second", '[["chat", "b"]]', {0: records(3)})   # restarts at shard-0000
    (first / "onpolicy" / "shard-0002.tmp.npz").write_bytes(b"being written")    # not a shard yet
    lines = []
    for folder, count in ((first, 2), (second, 1)):
        sitting = dict(SITTING, sitting=shard_store.sitting_id(folder))
        assert accumulate.keep_folder(folder, store, sitting, lines.append) == {"kept": count, "already": 0}
    names = [p.stem for p in shard_store.shards(store)]
    assert len(names) == 3 and len(set(n.split("-")[0] for n in names)) == 2
    again = accumulate.keep_folder(first, store, dict(SITTING, sitting=shard_store.sitting_id(first)), lines.append)
    assert again == {"kept": 0, "already": 2} and len(shard_store.shards(store)) == 3
    # the same name with other tokens is refused, not overwritten
    save_shard(first / "onpolicy" / "shard-0001.npz", records(9), "chat")
    with pytest.raises(ConfigError, match="holds other tokens"):
        accumulate.keep_folder(first, store, dict(SITTING, sitting=shard_store.sitting_id(first)), lines.append)


def test_the_validation_split_depends_on_the_name_alone():
    names = [shard_store.store_name(f"{s:010x}", i) for s in range(40) for i in range(50)]
    held = [n for n in names if shard_store.is_validation(n)]
    assert 0.03 < len(held) / len(names) < 0.07
    assert held == [n for n in names if shard_store.is_validation(n)]     # no state: the same answer every time


def test_sitting_provenance_is_written_once_and_says_where_its_settings_came_from(tmp_path):
    folder = work_folder(tmp_path, "w", "[]", {})
    record = accumulate.sitting_record(folder, {"seed": 1, "max_new_tokens": 160}, "t/t", None, None,
                                       from_data_stage=False)
    assert record["seed"] == 1 and "keep stage" in record["settings_from"] and record["sitting"] == shard_store.sitting_id(folder)
    assert record["target_weights"].startswith("unknown") and record["code"]
    again = accumulate.sitting_record(folder, {"seed": 99}, "t/t", None, "cuda", from_data_stage=True)
    assert again == record                                            # the first record stands
    with pytest.raises(ConfigError, match="no prompts.json"):
        shard_store.sitting_id(tmp_path)


def generated_shard(model, folder, temperature: float, seed: int):
    """A full shard written by generate_records itself, from prompts of different lengths."""
    rng = np.random.default_rng(seed)
    prompts = [rng.integers(1, VOCAB, int(n)).tolist() for n in (3, 9, 5, 12, 1)]
    recs = generate_records(model, prompts, 10, temperature, {0}, 0, keep=32, seed=seed)
    save_shard(folder / "onpolicy" / f"shard-{seed:04d}.npz", recs, "code")
    return recs


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_restore_recomputes_what_generate_records_recorded(tmp_path, temperature):
    model = tiny_target()
    folder = work_folder(tmp_path, "w", "[]", {})
    recs = generated_shard(model, folder, temperature, seed=5)
    name, arrays = shard_store.compact(folder / "onpolicy" / "shard-0005.npz", dict(SITTING, sitting="s"), 5)
    full, check = restore(shard_store.write(tmp_path / "store", name, arrays), model, batch=2)
    recorded_ids = np.concatenate([r.top_ids for r in recs])
    recorded = np.concatenate([r.top_logp for r in recs]).astype(np.float32)
    got = full["top_logp"].astype(np.float32)
    assert full["top_ids"].shape == recorded_ids.shape == (check["positions"], 32)
    # log-probs within 1e-3 beyond float16's own storage step at that magnitude
    step = np.spacing(np.abs(recorded).astype(np.float16)).astype(np.float32)
    assert np.all(np.abs(got - recorded) <= 1e-3 + step)
    # the same top tokens wherever the recorded neighbours are more than a tolerance apart
    gaps = recorded[:, :-1] - recorded[:, 1:]
    clear = np.ones_like(recorded, dtype=bool)
    clear[:, :-1] &= gaps > 1e-2
    clear[:, 1:] &= gaps > 1e-2
    clear[:, -1] = False                      # the 33rd token was never recorded
    assert clear.mean() > 0.5
    assert np.array_equal(full["top_ids"][clear], recorded_ids[clear])
    assert full["kind"] == "code" and full["temperature"] == temperature and full["restored_from"] == name
    if temperature == 0:
        assert check["argmax_matches"] == check["positions"]       # greedy tokens are the target's argmax


def test_the_train_stage_restores_store_shards_no_work_folder_has(tmp_path):
    model = tiny_target()
    store, lines = tmp_path / "store", []
    elsewhere = work_folder(tmp_path, "elsewhere", '[["code", "x"]]', {})
    for seed in range(4):
        generated_shard(model, elsewhere, 0.0, seed)
    sitting = dict(SITTING, sitting=shard_store.sitting_id(elsewhere))
    accumulate.keep_folder(elsewhere, store, sitting, lines.append)
    here = work_folder(tmp_path, "here", '[["code", "y"]]', {})
    generated_shard(model, here, 1.0, 0)                                # this sitting's own shard
    train, val, used = accumulate.gather([here], store, model, lines.append, here / "restored")
    assert len(train) + len(val) == 5 and used["restored"] == 4 and used["shards"] == 4
    assert sorted(p.name for p in (here / "restored").iterdir()) == sorted(f"{p.stem}.npz" for p in shard_store.shards(store))
    assert all(shard_store.is_validation(p.stem) for p in val if p.parent.name == "restored")
    assert used["sittings"] == [sitting["sitting"]] and used["train_tokens"] + used["validation_tokens"] > 0
    assert sum("restored" in line for line in lines) == 4
    # a second run reads the restored files instead of teacher forcing again; the folder that wrote the
    # shards restores none (its own full shards are the same data)
    again = accumulate.gather([here], store, model, lines.append, here / "restored")
    assert again[0] == train and sum("restored" in line for line in lines) == 4
    assert accumulate.gather([elsewhere], store, model, lines.append, elsewhere / "restored")[2]["restored"] == 0
    line = accumulate.store_summary_line(used)
    assert "1 sitting" in line and "4 restored" in line and str(store) in line


def test_data_status_counts_by_kind_and_temperature_and_prices_the_rest(tmp_path, capsys):
    from specviz.cli import main

    folder = work_folder(tmp_path, "w", '[["chat", "q"]]', {0: records(1), 1: records(2)})
    store = tmp_path / "store"
    assert main(["train-models", "--pair", "smollm2", "--stage", "keep", "--work-dir", str(folder),
                 "--keep-dir", str(store), "--seed", "1"]) == 0
    kept = capsys.readouterr().out
    assert "keep: 2 shards" in kept
    assert json.loads((folder / "sitting.json").read_text())["seed"] == 1
    tokens = sum(shard_store.provenance(p)["tokens"] for p in shard_store.shards(store))
    assert main(["train-models", "--pair", "smollm2", "--stage", "data-status", "--keep-dir", str(store),
                 "--goal-tokens", str(tokens + 7200), "--gen-rate", "2"]) == 0
    out = capsys.readouterr().out
    assert f"2 shards, 6 sequences, {tokens:,} target-written tokens" in out
    assert "chat    0.7       2          6" in out and "1.0 hours at 2 tokens/s" in out
    assert main(["train-models", "--pair", "smollm2", "--stage", "keep", "--work-dir", str(tmp_path / "nothing"),
                 "--keep-dir", str(store)]) == 2
    assert "no on-policy shards there" in capsys.readouterr().err


def test_the_store_stays_out_of_the_wheel_and_the_sdist():
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    store = str(shard_store.DEFAULT_STORE)
    assert store.split("/")[0] == "data"
    directives = [line.split() for line in (root / "MANIFEST.in").read_text().splitlines() if not line.startswith("#")]
    assert not [words for words in directives if any(w.startswith("data") for w in words[1:])]
    assert not [words for words in directives if words[:2] in (["graft", "."], ["recursive-include", "."])]
    setup = (root / "setup.py").read_text()
    assert '"data' not in setup
    assert "setuptools_scm" not in (root / "pyproject.toml").read_text().replace("-", "_")


@pytest.mark.slow     # loads SmolLM2 and decodes on it (~10-20 s on 2 busy cores)
def test_restore_on_the_real_target_gives_back_its_recorded_distributions(smollm2_fetched, tmp_path):
    from specviz.models.chat import chat_ids
    from specviz.training.smollm2_draft import load_target

    _, tokenizer, target = load_target("cpu")
    prompts = [chat_ids(tokenizer, text) for text in ("Name a colour.", "Why is the sky blue?",
                                                      "Write a haiku about tea.")]
    eos = tokenizer.eos_token_id
    for temperature in (0.0, 1.0):
        recs = generate_records(target, prompts, 16, temperature, {eos}, eos, seed=2)
        folder = tmp_path / f"t{temperature:g}"
        (folder / "onpolicy").mkdir(parents=True)
        save_shard(folder / "onpolicy" / "shard-0000.npz", recs, "chat")
        name, arrays = shard_store.compact(folder / "onpolicy" / "shard-0000.npz", dict(SITTING, sitting="s"), 0)
        full, check = restore(shard_store.write(tmp_path / "store", f"{name}-{temperature:g}", arrays), target)
        recorded = np.concatenate([r.top_logp for r in recs]).astype(np.float32)
        step = np.spacing(np.abs(recorded).astype(np.float16)).astype(np.float32)
        assert np.all(np.abs(full["top_logp"].astype(np.float32) - recorded) <= 1e-3 + step)
        recorded_ids = np.concatenate([r.top_ids for r in recs])
        clear = recorded[:, 0] - recorded[:, 1] > 1e-2
        assert np.array_equal(full["top_ids"][clear, 0], recorded_ids[clear, 0])
        if temperature == 0:
            assert check["argmax_matches"] == check["positions"]


def test_a_new_sitting_leaves_out_the_prompts_the_store_holds(tmp_path):
    from specviz.training.distill_data import build_prompts

    class Tokenizer:        # ids from characters; the chat template wraps them in 1 ... 2
        chat_template = "stub"

        def apply_chat_template(self, messages, **kw):
            return [1] + [ord(c) for c in messages[0]["content"]] + [2]

        def __call__(self, text, add_special_tokens=False):
            return {"input_ids": [ord(c) for c in text]}

    tok = Tokenizer()
    old = work_folder(tmp_path, "old", "[]", {})
    done = Record(tok.apply_chat_template([{"content": "What is rust?"}]), [5, 6],
                  np.zeros((2, 32), np.uint16), np.zeros((2, 32), np.float16), 0.0)
    save_shard(old / "onpolicy" / "shard-0000.npz", [done], "chat")
    store = tmp_path / "store"
    accumulate.keep_folder(old, store, dict(SITTING, sitting=shard_store.sitting_id(old)), lambda line: None)
    stored = accumulate.stored_prompts(store)
    assert stored == {tuple(done.prompt_ids)}

    new = tmp_path / "new"
    new.mkdir()
    (new / "questions.json").write_text(json.dumps(["Tell me about owls.", "What is rust?"]))
    lines = []
    chat = {s.text for s in build_prompts(new, None, tok, 0, lines.append, stored=stored) if s.kind == "chat"}
    assert "Tell me about owls." in chat and "What is rust?" not in chat
    assert any("1 of the candidates are in the store already" in line for line in lines)


def test_the_data_stage_keeps_each_new_shard_with_its_sittings_provenance(tmp_path, monkeypatch):
    from specviz.runtime import packed_linear
    from specviz.training import distill_data, smollm2_draft

    class Tokenizer:
        eos_token_id = 0
        chat_template = "stub"

        def apply_chat_template(self, messages, **kw):
            return [1] + [ord(c) for c in messages[0]["content"]] + [2]

        def __call__(self, text, add_special_tokens=False):
            return {"input_ids": [ord(c) % 1000 + 3 for c in text]}

    def fake_records(model, ids, max_new_tokens, temperature, eos, pad, seed=0):
        return [Record(p, [4, 5, 0], np.zeros((3, 32), np.uint16), np.zeros((3, 32), np.float16), temperature)
                for p in ids]

    monkeypatch.setattr(smollm2_draft, "load_target", lambda device: (None, Tokenizer(), None))
    monkeypatch.setattr(packed_linear, "mkl_packing_available", lambda: False)
    monkeypatch.setattr(distill_data, "generate_records", fake_records)
    work, store = tmp_path / "work", tmp_path / "store"
    work.mkdir()
    (work / "questions.json").write_text(json.dumps([f"Question number {i}?" for i in range(30)]))
    recipe = smollm2_draft.DraftRecipe(seed=5, gen_batch=64, max_new_tokens=3, passes=[0.0])
    smollm2_draft.prepare_data(work, recipe, "cpu", lambda line: None, store=store)
    made = shard_store.work_shards(work)
    kept = shard_store.shards(store)
    assert made and len(kept) == len(made)
    sitting = json.loads((work / "sitting.json").read_text())
    assert sitting["seed"] == 5 and sitting["settings_from"] == "the data stage" and sitting["device"] == "cpu"
    prov = shard_store.provenance(kept[-1])
    index = int(kept[-1].stem.split("-")[1])
    assert prov["sitting"] == sitting["sitting"] and prov["shard_seed"] == 5 + index and prov["max_new_tokens"] == 3
    # a resumed data stage finds everything kept already
    smollm2_draft.prepare_data(work, recipe, "cpu", lambda line: None, store=store)
    assert shard_store.shards(store) == kept


def test_a_shard_kept_meanwhile_by_another_process_of_the_sitting_is_not_an_error(tmp_path):
    store = tmp_path / "store"
    folder = work_folder(tmp_path, "w", '[["chat", "a"]]', {0: records(1)})
    sitting = dict(SITTING, sitting=shard_store.sitting_id(folder))
    late = accumulate.Keeper(store, sitting)          # read the store before the other process wrote
    accumulate.keep_folder(folder, store, sitting, lambda line: None)
    assert late.keep(folder / "onpolicy" / "shard-0000.npz") is None
    assert len(shard_store.shards(store)) == 1
