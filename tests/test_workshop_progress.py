"""The workshop's progress kept in the browser (view/tabs/workshop.py): what comes back from the
client's storage is shown only where it has the shape `run` writes, and a reload shows it again."""
from __future__ import annotations

from specviz.app.workshop import EXERCISES
from specviz.view.tabs.workshop import kept, restore

DONE = {"prediction": 1.5, "shown": "1.8× <b>", "value": 1.8, "why": "the target checked it", "ran": "tiny",
        "verdict": "close"}


def test_stored_progress_keeps_known_exercises_with_the_expected_fields_only():
    first, second = EXERCISES[0].key, EXERCISES[1].key
    stored = {first: DONE, second: {**DONE, "shown": {"html": "<script>"}}, "nope": DONE}
    assert kept(stored) == {first: DONE}
    assert kept({first: {**DONE, "prediction": True}}) == {}
    assert kept("not a dict") == {} and kept(None) == {}


def test_a_reload_ticks_the_done_exercises_and_shows_the_open_one_s_answer_escaped():
    first = EXERCISES[0].key
    pick, question, number, choice, result, plot = restore(first, {first: DONE})
    labels = dict((key, label) for label, key in pick.choices)
    assert labels[first].endswith("✓") and not labels[EXERCISES[1].key].endswith("✓")
    assert "1.8× &lt;b&gt;" in result and "<b>" not in result and number.value == "1.5"
    _, _, _, _, fresh, _ = restore(first, {})
    assert fresh == ""


def test_the_lesson_plan_is_the_docs_file_and_ships_with_a_wheel():
    from pathlib import Path

    from specviz.view.tabs.workshop import lesson_plan
    root = Path(__file__).resolve().parent.parent
    assert lesson_plan() == (root / "docs" / "workshop.md").read_text(encoding="utf-8")
    assert '"docs/workshop.md"' in (root / "setup.py").read_text(encoding="utf-8")


def test_the_prose_counts_the_exercises_there_are():
    # The tab's intro counts them itself; the README and the page's guide say the number in words.
    import re
    from pathlib import Path
    from specviz.view.tabs.workshop import NUMBER_WORDS
    word = NUMBER_WORDS[len(EXERCISES)].lower()
    for doc, pattern in (("README.md", r"\((\w+) prediction-first exercises\)"),
                         ("docs/page.md", r"\*\*Workshop\.\*\* (\w+) exercises")):
        said = re.search(pattern, (Path(__file__).resolve().parent.parent / doc).read_text(encoding="utf-8"))
        assert said and said.group(1).lower() == word, f"{doc} counts the workshop's exercises wrong"


def test_exercise_two_names_the_prompt_it_decodes_in_its_question_escaped(tiny_dirs):
    from dataclasses import replace

    from specviz.app.state import AppState
    from specviz.models.presets import Preset
    from specviz.app.workshop import BY_KEY
    from specviz.view.tabs.workshop import question_html, show
    preset = Preset("tiny", "tiny pair", tiny_dirs["target"], tiny_dirs["cut"], 3,
                    ("def add(a, b):", "x = '<b>&'\nprint(x)"))
    app = AppState(presets={"tiny": preset}, device="cpu")
    passes = BY_KEY["passes"]
    assert passes is EXERCISES[1] and passes.prompt(app) == "x = '<b>&'\nprint(x)"    # the run's own prompt
    html = question_html(passes, app)
    assert "the prompt below" in html and "x = &#x27;&lt;b&gt;&amp;&#x27;\nprint(x)</pre>" in html and "<b>" not in html
    assert show("passes", {}, app)[0] == html
    app.pairs.presets["tiny"] = replace(preset, examples=("only one",))
    assert "only one</pre>" in question_html(passes, app)
    assert "ws-prompt" not in question_html(EXERCISES[0], app)      # a question with no prompt of its own
