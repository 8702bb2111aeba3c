"""The line under the pair menu, as text and HTML: chat first, then code, the speedups when measured, its
source named, everything escaped, nothing for a pair without current figures (browser:
tests/test_browser_expect.py)."""
from __future__ import annotations

from dataclasses import replace

from specviz.app.pair_expect import expected, sentence, source
from specviz.models.expect import write_expect
from specviz.models.presets import get_preset
from specviz.view.expect_line import expect_html
from tests.helpers import tiny_preset
from tests.test_pair_expect import a_record, draft_copy  # noqa: F401 - a fixture

XSS = '<img src=x onerror=alert(1)>"\'><script>alert(2)</script>'


def test_the_sentence_gives_chat_first_then_code_and_the_speedups_when_measured(draft_copy):
    record = a_record(draft_copy)
    assert sentence(record) == ("On prompts it never saw, this pair accepts 51% of drafts on chat and 89% on "
                                "code (k = 3, greedy).")
    record["kinds"]["chat"]["speedup"], record["kinds"]["code"]["speedup"] = 1.3, 2.054
    assert sentence(record).endswith("Speed against plain decoding, on the machine its source names: 1.30× on chat "
                                     "and 2.05× on code.")
    bundled = a_record(draft_copy, pair="bundled", k=4, kinds={"code": {"acceptance": 0.79}})
    assert sentence(bundled) == ("On code prompts it never saw, this pair accepts 79% of drafts (k = 4, greedy); its "
                                 "target writes Python only, so there is no chat figure.")


def test_the_line_is_escaped_carries_its_figures_and_names_its_source(draft_copy):
    preset = tiny_preset({"target": "t", "cut": str(draft_copy)}, key="tiny")
    write_expect(draft_copy, a_record(draft_copy, command=f"python x.py {XSS}", machine=XSS))
    html = expect_html(preset)
    assert "<script>" not in html and "<img" not in html and "&lt;script&gt;" in html
    assert 'data-pair="tiny"' in html and 'data-chat="0.5120"' in html and 'data-code="0.8890"' in html
    assert "<details" in html and "source" in html and "p.json" in html and "2026-11-29" in html
    assert "8 chat and 8 code prompts" in source(expected(preset), preset)[0]


def test_a_pair_without_current_figures_shows_nothing(tiny_dirs, draft_copy):
    assert expect_html(tiny_preset(tiny_dirs)) == ""                        # no expect.json
    hub = replace(get_preset("smollm2"), draft="HuggingFaceTB/SmolLM2-135M-Instruct")
    assert expect_html(hub) == "" and expect_html(None) == ""
    write_expect(draft_copy, a_record(draft_copy, draft_fingerprint="0123456789ab"))
    assert expect_html(tiny_preset({"target": "t", "cut": str(draft_copy)})) == ""


def test_both_shipped_pairs_show_their_line():
    smollm2, bundled = expect_html(get_preset("smollm2")), expect_html(get_preset("bundled"))
    assert "on chat and" in smollm2 and 'data-chat="' in smollm2
    assert "Python only" in bundled and 'data-chat="' not in bundled and 'data-code="' in bundled



def test_the_race_shows_the_line_and_it_follows_every_change_of_the_pair(tiny_dirs, draft_copy):
    """The line sits in the race tab (beside the race on every screen, never in the settings a phone folds
    away), starts with the pair the page opens on and is rewritten on each change of the pair menu."""
    from specviz.view.ui import build_demo
    from tests.helpers import app_with
    write_expect(draft_copy, a_record(draft_copy))
    measured = tiny_preset({"target": tiny_dirs["target"], "cut": str(draft_copy)}, key="tiny")
    plain = tiny_preset(tiny_dirs, key="plain")
    demo = build_demo(app_with({"tiny": measured, "plain": plain}))
    lines = [b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "pair-expect"]
    menu = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "preset")
    assert len(lines) == 1 and lines[0].value == expect_html(measured) != ""          # one copy, one wording
    settings = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "settings")
    race = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "race-tab")

    def inside(block, box) -> bool:
        while block is not None and block is not box:
            block = block.parent
        return block is box
    assert inside(lines[0], race) and not inside(lines[0], settings)
    following = [fn for fn in demo.fns.values() if lines[0] in fn.outputs
                 and any(target == menu._id and event == "change" for target, event in fn.targets)]
    assert len(following) == 1
    assert following[0].fn("plain") == ""                  # a pair without figures: nothing
    assert following[0].fn("tiny") == expect_html(measured)
