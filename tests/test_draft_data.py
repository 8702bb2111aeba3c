"""The SmolLM2 draft's data stages across work folders (`train-models --also-work-dir`): a second
folder leaves out the prompts the first planned, and the train stage reads both folders' shards."""
import json

import pytest

from specviz.training.distill_data import build_prompts
from specviz.training.smollm2_draft import seen_prompts, shard_split


def test_a_second_work_folder_leaves_out_the_prompts_the_first_planned(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    for folder, questions in ((first, ["Tell me about owls.", "What is rust?"]),
                              (second, ["What is rust?", "Name three rivers in Spain."])):
        folder.mkdir()
        (folder / "questions.json").write_text(json.dumps(questions))   # self-instruct done: no model needed
    lines = []
    planned = build_prompts(first, None, None, 0, lines.append)
    seen = seen_prompts([first])
    assert seen == {s.text for s in planned} and "Tell me about owls." in seen
    again = build_prompts(second, None, None, 0, lines.append, seed=1, seen=seen)
    texts = {s.text for s in again}
    assert not texts & seen
    # the templated requests and the shared question were planned by the first folder: one new request is left
    assert {s.text for s in again if s.kind == "chat"} == {"Name three rivers in Spain."}
    # the cached mix is the filtered one: a resumed data stage plans the same prompts
    assert {s.text for s in build_prompts(second, None, None, 0, lines.append, seed=1)} == texts
    assert not any("planned by another work folder too" in line for line in lines)


def test_the_mix_keeps_its_proportions_over_what_is_new_and_a_stale_cache_is_reported(tmp_path):
    from specviz.training.draft_prompts import mix

    code, prose = [f"def f{i}():" for i in range(100)], [f"Prose {i}." for i in range(100)]
    chat = [f"Question {i}?" for i in range(40)]
    first = mix(chat, code, prose, seed=0)
    seen = {s.text for s in first if s.kind != "chat"}               # the first folder took 60% of code and prose
    second = mix(chat[:20] + [f"New question {i}?" for i in range(20)], code, prose, seed=1, seen=seen)
    kinds = {k: [s.text for s in second if s.kind == k] for k in ("chat", "code", "prose")}
    assert not set(kinds["code"] + kinds["prose"]) & seen
    n_chat = len(kinds["chat"])
    assert len(kinds["code"]) == min(n_chat * 6 // 10, 100 - sum(s.kind == "code" for s in first))
    assert len(kinds["prose"]) == min(n_chat * 4 // 10, 100 - sum(s.kind == "prose" for s in first))

    folder = tmp_path / "w"
    folder.mkdir()
    (folder / "questions.json").write_text(json.dumps(["What is rust?"]))
    lines = []
    cached = build_prompts(folder, None, None, 0, lines.append)          # made without the other folder
    build_prompts(folder, None, None, 0, lines.append, seen={cached[0].text})
    assert any("1 of this folder's cached prompts were planned by another work folder" in l for l in lines)


def test_other_work_folders_are_checked_before_anything_runs(tmp_path):
    import pytest

    from specviz.training.smollm2_draft import other_folders

    work, ok, empty = tmp_path / "work", tmp_path / "ok", tmp_path / "empty"
    for folder in (work, ok, empty):
        (folder / "onpolicy").mkdir(parents=True)
    (ok / "prompts.json").write_text("[]")
    (ok / "onpolicy" / "shard-0000.npz").write_bytes(b"")
    assert other_folders(work, [ok, tmp_path / "ok" / ".." / "ok", work], "onpolicy") == [ok.resolve()]
    assert other_folders(work, [ok], "prompts.json") == [ok.resolve()]
    with pytest.raises(RuntimeError, match="no onpolicy there"):
        other_folders(work, [empty], "onpolicy")
    with pytest.raises(RuntimeError, match="no prompts.json there"):
        other_folders(work, [tmp_path / "typo"], "prompts.json")


def test_shards_of_several_work_folders_split_by_their_store_names(tmp_path):
    from specviz.training.shard_store import is_validation, sitting_id, store_name

    folders = [tmp_path / "a", tmp_path / "b"]
    for folder, count in zip(folders, (60, 40)):
        (folder / "onpolicy").mkdir(parents=True)
        (folder / "prompts.json").write_text(json.dumps([["chat", folder.name]]))
        for i in range(count):
            (folder / "onpolicy" / f"shard-{i:04d}.npz").write_bytes(b"")
    train, val = shard_split(folders[0], [folders[1]])
    assert len(train) + len(val) == 100 and not set(train) & set(val) and val
    for path in train + val:
        name = store_name(sitting_id(path.parent.parent), int(path.stem.split("-")[1]))
        assert is_validation(name) == (path in val)          # the store's split: the same in every sitting


def test_shards_say_how_the_target_ran_and_older_shards_read_as_fp32(tmp_path):
    import numpy as np

    from specviz.training.distill_data import save_shard
    from specviz.training.onpolicy import Record
    from specviz.training.smollm2_draft import precisions, shard_tally

    record = Record([1, 2], [3, 4], np.zeros((2, 4), np.uint16), np.zeros((2, 4), np.float16), 0.0)
    save_shard(tmp_path / "shard-0001.npz", [record], "chat", "bf16")
    save_shard(tmp_path / "shard-0002.npz", [record], "chat")
    older = {k: v for k, v in np.load(tmp_path / "shard-0002.npz").items() if k != "precision"}
    np.savez(tmp_path / "shard-0003.npz", **older)                  # written before shards named their precision
    _, found = shard_tally(sorted(tmp_path.glob("shard-*.npz")))
    assert found == {"bf16": 1, "fp32": 2}
    assert precisions({"shard_precisions": found}) == "bf16 autocast: 1 shard, fp32: 2 shards"


def test_generate_shards_writes_the_precision_it_is_given(tmp_path, monkeypatch):
    import numpy as np

    from specviz.training import distill_data
    from specviz.training.draft_prompts import PromptSpec
    from specviz.training.onpolicy import Record
    from specviz.training.smollm2_draft import shard_tally

    class Tokenizer:
        eos_token_id = 0

        def __call__(self, text, add_special_tokens=False):
            return {"input_ids": [1, 2, 3]}

    def fake_records(model, ids, max_new_tokens, temperature, eos, pad, seed=0):
        return [Record(p, [4, 0], np.zeros((2, 4), np.uint16), np.zeros((2, 4), np.float16), temperature) for p in ids]

    monkeypatch.setattr(distill_data, "generate_records", fake_records)
    specs = [PromptSpec("code", f"def f{i}():") for i in range(4)]
    paths = distill_data.generate_shards(tmp_path, None, Tokenizer(), specs, 2, 8, 60.0, lambda line: None,
                                         passes=[0.0], precision="bf16")
    assert paths and shard_tally(paths)[1] == {"bf16": len(paths)}


# Requests that the benchmark's prompt files come close to, and why each is still there. The templated
# requests are the record of what the shipped drafts were trained on, so a template is not deleted after
# the fact; instead the overlap is listed here and said next to the figures (benchmarks/README.md).
KNOWN_NEAR_DUPLICATES = {
    # unseen-prompts.json (figures only) and a code task of the first template family, trained on since
    # the H100 stage: the figures are given with and without that prompt.
    "Write a Python function that counts the vowels in a string.",
    # heldout-prompts.json (the tuning set: it chooses drafts and k, and reports no figure)
    "Write a Python function that checks whether a string is a palindrome.",
    "List the planets of the solar system in order from the Sun.",
    "Write a JavaScript function that removes duplicates from an array.",   # the first family's "... from a list"
}


def test_no_benchmark_prompt_is_a_templated_training_request_beyond_the_listed_ones():
    import difflib
    from pathlib import Path

    from specviz.training.draft_prompts import template_requests

    root = Path(__file__).resolve().parent.parent
    templates = [t.lower() for t in template_requests()]
    close = {prompt["text"] for name in ("unseen-prompts.json", "heldout-prompts.json")
             for prompt in json.loads((root / "benchmarks" / name).read_text())
             if difflib.get_close_matches(prompt["text"].lower(), templates, n=1, cutoff=0.78)}
    assert close == KNOWN_NEAR_DUPLICATES


def test_a_plan_holds_no_benchmark_prompt_even_a_templated_one():
    from specviz.training.draft_prompts import evaluation_texts, mix, template_requests

    evaluation = evaluation_texts()
    assert len(evaluation) >= 30                         # heldout, unseen and the race's prompts were read
    palindrome = "Write a Python function that checks whether a string is a palindrome."
    assert palindrome in template_requests()             # the template stays: the record of earlier data
    code = ["def f():", "Continue:  write a python function that checks whether a STRING is a palindrome. Then"]
    plan = mix([palindrome, "What is rust?"], code, ["Prose."], seed=0)
    texts = {s.text for s in plan}
    assert palindrome not in texts and code[1] not in texts          # whitespace and case aside, inside a text too
    assert "What is rust?" in texts and "def f():" in texts
    assert not any(t.lower() in evaluation for t in texts)
    assert palindrome in {s.text for s in mix([palindrome], [], [], evaluation=[])}   # an empty list leaves all


def test_two_parts_share_one_plan_and_together_write_every_shard_once(tmp_path, monkeypatch):
    import numpy as np

    from specviz.training import distill_data
    from specviz.training.draft_prompts import PromptSpec
    from specviz.training.onpolicy import Record

    class Tokenizer:
        eos_token_id = 0

        def __call__(self, text, add_special_tokens=False):
            return {"input_ids": [1, 2, 3]}

    seeds = []

    def fake_records(model, ids, max_new_tokens, temperature, eos, pad, seed=0):
        seeds.append(seed)
        return [Record(p, [4, 0], np.zeros((2, 4), np.uint16), np.zeros((2, 4), np.float16), temperature) for p in ids]

    monkeypatch.setattr(distill_data, "generate_records", fake_records)
    specs = [PromptSpec("code", f"def f{i}():") for i in range(10)]
    plan = distill_data.plan_shards(specs, 2, seed=5)
    first = distill_data.generate_shards(tmp_path, None, Tokenizer(), specs, 2, 8, 60.0, lambda line: None,
                                         seed=5, part=(0, 2))
    assert [p.name for p in first] == [f"shard-{i:04d}.npz" for i in range(0, len(plan), 2)]
    both = distill_data.generate_shards(tmp_path, None, Tokenizer(), specs, 2, 8, 60.0, lambda line: None,
                                        seed=5, part=(1, 2))
    assert [p.name for p in both] == [f"shard-{i:04d}.npz" for i in range(len(plan))]
    # each shard drawn once, with the seed a single process gives it
    assert sorted(seeds) == [5 + i for i in range(len(plan))]


@pytest.mark.parametrize("text", ["1", "a/b", "2/2", "-1/3", "0/0"])
def test_a_malformed_gen_part_is_one_line(text):
    from specviz.cli.train import gen_part
    from specviz.errors import ConfigError

    with pytest.raises(ConfigError, match="--gen-part"):
        gen_part(text)
    assert gen_part("1/3") == (1, 3)


def test_chat_requests_are_told_apart_by_source_and_split_so_in_the_agreement_table():
    import numpy as np

    from specviz.training import everyday_requests, task_requests
    from specviz.training.distill import Sequence
    from specviz.training.draft_prompts import request_source, template_requests
    from tests.helpers import load_script

    everyday, task, first = everyday_requests.requests()[0], task_requests.requests()[0], template_requests()[0]
    families = [set(everyday_requests.requests()), set(task_requests.requests()),
                set(template_requests()) - set(everyday_requests.requests()) - set(task_requests.requests())]
    assert sum(map(len, families)) == len(set(template_requests())) == len(template_requests())   # none shared
    assert template_requests()[-len(families[1]):] == task_requests.requests()    # the newest family goes last
    assert [request_source(t) for t in (everyday, task, first, "Can you help me plan a party?")] == \
        ["everyday", "tasks", "templated", "self-instruct"]
    script = load_script("draft_agreement")

    def seq(prompt):
        return Sequence(np.array(prompt + [9, 9]), len(prompt), np.zeros((2, 1), np.int64), np.zeros((2, 1), np.float32))

    rows = {"chat T=0": [seq([1, 2]), seq([3]), seq([4, 4])], "code T=0": [seq([1, 2])]}
    split = script.split_by_source(rows, {(1, 2): "everyday", (3,): "self-instruct"})
    assert {k: len(v) for k, v in split.items()} == {"chat/everyday T=0": 1, "chat/self-instruct T=0": 1,
                                                     "chat/unknown T=0": 1, "code T=0": 1}
    assert [script.group_of(k) for k in split] == ["chat T=0", "chat T=0", "chat T=0", "code T=0"]
