"""One measurement for the page's line and the k advice: a preset that gives no `acceptance` in spaces.yaml
takes its draft's expect.json pooled over chat and code (accepted / judged summed over the kinds), the a
the k advice then assumes; a figure written in spaces.yaml still wins, and a draft with no current file
gives none (the preset's own k is offered then)."""
from __future__ import annotations

import pytest
import yaml

from specviz import paths
from specviz.models.expect import held_out_acceptance, pooled_acceptance, read_expect, write_expect
from specviz.models.presets import get_preset, parse_presets
from specviz.paths import MODELS
from tests.helpers import tiny_preset
from tests.test_pair_expect import a_record, draft_copy  # noqa: F401 - a fixture

SMOLLM2_DRAFT = "assets/models/smollm2-draft"


@pytest.mark.parametrize("key, folder, draft, figure", [
    ("smollm2", "smollm2-draft", SMOLLM2_DRAFT, 0.51),    # the figure spaces.yaml used to hard-code
    ("bundled", "draft", "bundled", 0.74),                 # it hard-coded 0.78, another measurement
])
def test_each_shipped_pairs_k_advice_assumes_its_drafts_pooled_acceptance_written_nowhere_else(
        key, folder, draft, figure):
    record = read_expect(MODELS / folder)
    kinds = record["kinds"].values()
    pooled = sum(f["accepted"] for f in kinds) / sum(f["judged"] for f in kinds)
    assert get_preset(key).acceptance == pytest.approx(pooled, abs=1e-12)
    assert round(pooled, 2) == figure
    listed = [p for tier in yaml.safe_load(paths.SPACES_YAML.read_text())["tiers"].values()
              for p in tier.get("presets", []) if p.get("draft") == draft]
    assert listed and all("acceptance" not in p for p in listed)


def test_spaces_yaml_s_own_figure_wins_and_a_hub_draft_has_none():
    item = {"key": "s", "label": "s", "target": "HuggingFaceTB/SmolLM2-135M-Instruct", "k": 3}
    read = parse_presets([{**item, "draft": SMOLLM2_DRAFT}], "t")["s"].acceptance
    assert read == pytest.approx(pooled_acceptance(read_expect(MODELS / "smollm2-draft")))
    assert parse_presets([{**item, "draft": SMOLLM2_DRAFT, "acceptance": 0.3}], "t")["s"].acceptance == 0.3
    assert parse_presets([{**item, "draft": "HuggingFaceTB/SmolLM2-135M"}], "t")["s"].acceptance is None


def test_the_pool_is_accepted_over_judged_across_kinds_and_none_without_current_counts(tiny_dirs, draft_copy):
    preset = tiny_preset({"target": tiny_dirs["target"], "cut": str(draft_copy)})
    assert held_out_acceptance(preset) is None                                   # no expect.json
    write_expect(draft_copy, a_record(draft_copy))                               # 100/195 chat, 160/180 code
    assert held_out_acceptance(preset) == pytest.approx(260 / 375)
    write_expect(draft_copy, a_record(draft_copy, kinds={"code": {"acceptance": 0.7}}))    # no counts
    assert held_out_acceptance(preset) is None
    write_expect(draft_copy, a_record(draft_copy, draft_fingerprint="0123456789ab"))       # stale
    assert held_out_acceptance(preset) is None


def _advised(preset):
    """An advisor holding settled figures for `preset` (a quiet machine's, hand-made): its advice is given."""
    from specviz.app.advisor import Advisor
    from specviz.engine.analysis.calibrate import MachineCosts
    from specviz.engine.analysis.cost_model import CostModel
    from tests.helpers import steady
    costs = MachineCosts(plain_s=1.0, draft_s=0.04, pass_s={1: 1.0, **{n: 1.0 for n in range(2, 10)}},
                         round_draft_s={k: 0.04 * k for k in range(1, 9)})
    model = CostModel((preset.key, "cpu", "eager", "here"))
    model.seed(steady(costs))
    advisor = Advisor(None, None, (1, 8), enabled=True)
    advisor._readvise(preset, model)
    assert advisor.advice[preset.key].k is not None
    return advisor


def test_the_k_note_and_explain_say_their_a_is_the_lines_kinds_pooled():
    """The line above the race gives one acceptance per kind (chat and code); the k note under the slider and
    Explain's "this machine's figures" assume one a, those kinds pooled. Each says so, so a newcomer does not
    read a third measurement beside the line's two; a single-kind draft's a is the line's own figure."""
    from specviz.view.tabs.explain import machine_figures
    smollm2, bundled = get_preset("smollm2"), get_preset("bundled")
    pooled = "on unseen prompts: the line above the race's chat and code figures pooled"
    advisor = _advised(smollm2)
    assert f"assuming the draft's acceptance a = {smollm2.acceptance:.2f} ({pooled})" in advisor.k_note(smollm2)
    *_, note = machine_figures(advisor, {smollm2.key: smollm2}, smollm2.key)
    assert f"a = {smollm2.acceptance:.2f} assumed (its draft's acceptance {pooled})" in __import__("html").unescape(note)
    one = "on unseen code prompts: the line above the race's figure"
    assert f"assuming the draft's acceptance a = {bundled.acceptance:.2f} ({one})" in _advised(bundled).k_note(bundled)


def test_a_preset_s_own_acceptance_is_named_as_spaces_yaml_s():
    from specviz.app.pair_expect import assumed_a_words
    item = {"key": "s", "label": "s", "target": "HuggingFaceTB/SmolLM2-135M-Instruct", "k": 3, "draft": SMOLLM2_DRAFT}
    assert "spaces.yaml" in assumed_a_words(parse_presets([{**item, "acceptance": 0.3}], "t")["s"])
    assert "pooled" in assumed_a_words(parse_presets([item], "t")["s"])
