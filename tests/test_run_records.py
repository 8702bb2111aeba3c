"""How a lane ran, as records that check themselves (app/run_records.py): the decode path and a tree
lane's per-choice rows read from the engine's form and written back unchanged, a value no engine
writes refused, and a saved trace's damaged record refused before anything is drawn from it."""
import json
from collections import Counter

import pytest

from specviz.app.run_records import ChoiceRow, DecodePath, as_dicts, choice_rows
from specviz.engine import SpecConfig, race
from specviz.engine.loop.events import to_dict
from specviz.engine.metrics.measures import ChoiceTally
from specviz.view.trace_read import TraceRefused, read

# Every form the runtime writes (runtime/cached_model.py, graph_capture.py, static_model.py), fallbacks
# whose reasons hold parentheses of their own among them.
WRITTEN = ["eager", "CUDA graphs", "torch.compile", "eager replay",
           "eager (graph capture failed: RuntimeError: operation not permitted)",
           "eager (a replay differed from the eager step (K/V entries differ by 0.25))",
           "eager (out of device memory for a graph cache)"]


@pytest.mark.parametrize("text", WRITTEN)
def test_a_decode_path_reads_and_writes_the_engines_text(text):
    path = DecodePath.parse(text)
    assert str(path) == text and DecodePath.parse(str(path)) == path
    assert bool(path.fell_back) == text.startswith("eager (") and path.plain_eager == (text == "eager")


def test_a_decode_path_no_engine_writes_cannot_be_built():
    assert DecodePath.parse(None) == DecodePath.parse("") == DecodePath("eager")     # a stats record before the field
    for bad in ("warp drive", "Eager", "CUDA graphs (why)"):
        with pytest.raises(ValueError):
            DecodePath.parse(bad)
    with pytest.raises(ValueError):
        DecodePath("CUDA graphs", "only eager falls back")
    with pytest.raises(ValueError):
        DecodePath.parse(3)


def _tally() -> ChoiceTally:
    return ChoiceTally(judged=Counter({(1, 0): 10, (1, 1): 4, (2, 0): 6}), accepted=Counter({(1, 0): 6, (1, 1): 1}))


def test_choice_rows_round_trip_the_engines_rows_and_their_json():
    rows = _tally().rows()
    records = choice_rows(json.loads(json.dumps(rows)))
    assert as_dicts(records) == rows                               # the trace's form, unchanged
    assert [(r.depth, r.choice, r.accepted, r.judged) for r in records] == [(1, 0, 6, 10), (1, 1, 1, 4), (2, 0, 0, 6)]
    assert records[1].rate == 0.25 and choice_rows(None) == choice_rows([]) == ()


@pytest.mark.parametrize("change", [dict(accepted=11), dict(depth=0), dict(choice=-1), dict(judged=0, accepted=0),
                                    dict(accepted=True), dict(depth=1.0), dict(rate=0.5)])
def test_a_choice_row_no_engine_writes_cannot_be_built(change):
    row = {**_tally().rows()[0], **change}
    with pytest.raises(ValueError):
        ChoiceRow.from_dict(row)


def test_rows_are_one_per_depth_and_choice_and_whole():
    row = _tally().rows()[0]
    with pytest.raises(ValueError):
        choice_rows([row, row])
    with pytest.raises(ValueError):
        choice_rows([{k: v for k, v in row.items() if k != "judged"}])


@pytest.fixture(scope="module")
def tree_trace(pair) -> dict:
    """A tree race on the tiny pair, saved as the page saves it (the fields trace_read needs)."""
    cfg = SpecConfig(k=2, tree=(2, 1), max_new_tokens=12)
    events = [to_dict(e) for e in race(pair, "def add(a, b):", cfg)]
    return {"specviz_trace": 2, "prompt": "def add(a, b):", "config": cfg.to_dict(), "events": events}


def _spec_done(trace: dict) -> dict:
    return next(e for e in trace["events"] if e["kind"] == "done" and e["lane"] == "spec")


def test_a_tree_races_trace_keeps_its_rows_and_loads_back(tree_trace):
    rows = _spec_done(tree_trace)["stats"]["by_choice"]
    assert rows and as_dicts(choice_rows(rows)) == rows
    recorded = read(json.dumps(tree_trace))
    done = next(e for e in recorded.events if e.kind == "done" and e.lane == "spec")
    assert as_dicts(choice_rows(done.stats.by_choice)) == rows
    assert DecodePath.parse(done.stats.decode_path).plain_eager


@pytest.mark.parametrize("damage", ["row", "path"])
def test_a_trace_with_a_damaged_run_record_is_refused(tree_trace, damage):
    trace = json.loads(json.dumps(tree_trace))
    stats = _spec_done(trace)["stats"]
    if damage == "row":
        stats["by_choice"][0]["accepted"] = stats["by_choice"][0]["judged"] + 1
    else:
        stats["decode_path"] = "warp drive"
    with pytest.raises(TraceRefused, match="record of how its spec lane ran is damaged"):
        read(json.dumps(trace))
