"""The SmolLM2 draft's data stages across work folders (`train-models --also-work-dir`): a second
folder leaves out the prompts the first planned, and the train stage reads both folders' shards."""
import json

from specviz.training.distill import split_shards
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
    assert any("already decoded in another work folder" in l for l in lines)
    # the cached mix is the filtered one: a resumed data stage plans the same prompts
    assert {s.text for s in build_prompts(second, None, None, 0, lines.append, seed=1)} == texts


def test_shards_of_several_work_folders_split_each_by_its_own_indices(tmp_path):
    folders = [tmp_path / "a", tmp_path / "b"]
    for folder, count in zip(folders, (5, 3)):
        (folder / "onpolicy").mkdir(parents=True)
        for i in range(count):
            (folder / "onpolicy" / f"shard-{i:04d}.npz").write_bytes(b"")
    train, val = shard_split(folders[0], [folders[1]])
    alone = [split_shards(sorted((f / "onpolicy").glob("shard-*.npz"))) for f in folders]
    assert train == alone[0][0] + alone[1][0] and val == alone[0][1] + alone[1][1]
    assert len(val) == 2 and len(train) == 6                  # index 0 of each folder is held out


def test_shards_say_how_the_target_ran_and_older_shards_read_as_fp32(tmp_path):
    import numpy as np

    from specviz.training.distill_data import save_shard
    from specviz.training.onpolicy import Record
    from specviz.training.smollm2_draft import precisions, shard_precisions

    record = Record([1, 2], [3, 4], np.zeros((2, 4), np.uint16), np.zeros((2, 4), np.float16), 0.0)
    save_shard(tmp_path / "shard-0001.npz", [record], "chat", "bf16")
    save_shard(tmp_path / "shard-0002.npz", [record], "chat")
    older = {k: v for k, v in np.load(tmp_path / "shard-0002.npz").items() if k != "precision"}
    np.savez(tmp_path / "shard-0003.npz", **older)                  # written before shards named their precision
    found = shard_precisions(sorted(tmp_path.glob("shard-*.npz")))
    assert found == {"bf16": 1, "fp32": 2}
    assert precisions({"shard_precisions": found}) == "bf16 autocast: 1 shard, fp32: 2 shards"
