"""The acceptance rules (engine/loop/rules.py) against closed forms on hand-made distributions, and
their one-position output laws by Monte Carlo (vectorized, no model): the exact rule and the
sample match reproduce p (chi-square passes), the lossy rules visibly do not (p < 1e-6)."""
from __future__ import annotations

import math
import re

import pytest
import torch

from specviz.engine.analysis.lossless import chi_square_pvalue
from specviz.engine.loop.rules import FAMILIES, get_rule, output_distribution, simulate
from specviz.errors import ConfigError

P = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64)
Q = torch.tensor([0.2, 0.2, 0.6], dtype=torch.float64)
X = torch.arange(3)


def accept(name: str) -> list[float]:
    return get_rule(name).accept_prob(P.expand(3, 3), Q.expand(3, 3), X).tolist()


def test_exact_rule_closed_form():
    assert accept("exact") == pytest.approx([1.0, 1.0, 0.2 / 0.6])
    assert float(get_rule("exact").expected_acceptance(P, Q)) == pytest.approx(0.2 + 0.2 + 0.2)


def test_sample_match_keeps_x_with_probability_p_of_x():
    assert accept("sample_match") == pytest.approx([0.5, 0.3, 0.2])
    assert float(get_rule("sample_match").expected_acceptance(P, Q)) == pytest.approx(0.5 * 0.2 + 0.3 * 0.2 + 0.2 * 0.6)


def test_greedy_match_keeps_only_the_argmax():
    assert accept("greedy_match") == [1.0, 0.0, 0.0]
    assert float(get_rule("greedy_match").expected_acceptance(P, Q)) == pytest.approx(0.2)


def test_typical_threshold():
    entropy = -sum(v * math.log(v) for v in P.tolist())          # 1.0297 nats
    rule = get_rule("typical")                                    # vLLM's defaults
    assert (rule.epsilon, rule.delta) == (0.09, 0.3)
    assert float(rule.threshold(P)) == pytest.approx(min(0.09, 0.3 * math.exp(-entropy)))
    assert accept("typical") == [1.0, 1.0, 1.0]                   # every p(x) > 0.09
    assert float(rule.expected_acceptance(P, Q)) == pytest.approx(1.0)
    strict = get_rule("typical(epsilon=0.25, delta=1)")           # threshold min(0.25, 0.357) = 0.25
    assert strict.name == "typical(epsilon=0.25,delta=1)"
    assert accept(strict.name) == [1.0, 1.0, 0.0]
    assert float(strict.expected_acceptance(P, Q)) == pytest.approx(0.4)


def test_ensemble_judges_against_the_mixture():
    v = 0.5 * P + 0.5 * Q                                         # [0.35, 0.25, 0.40]
    assert accept("ensemble(w=0.5)") == pytest.approx([1.0, 1.0, 0.4 / 0.6])
    assert float(get_rule("ensemble(w=0.5)").expected_acceptance(P, Q)) == pytest.approx(float(torch.minimum(v, Q).sum()))


def test_output_laws_in_closed_form():
    assert output_distribution(get_rule("exact"), P, Q).tolist() == pytest.approx(P.tolist())
    assert output_distribution(get_rule("sample_match"), P, Q).tolist() == pytest.approx(P.tolist())
    assert output_distribution(get_rule("greedy_match"), P, Q).tolist() == pytest.approx([1.0, 0.0, 0.0])
    assert output_distribution(get_rule("typical"), P, Q).tolist() == pytest.approx(Q.tolist())
    strict = get_rule("typical(epsilon=0.25,delta=1)")            # q a + (1 - E) p
    assert output_distribution(strict, P, Q).tolist() == pytest.approx([0.2 + 0.6 * 0.5, 0.2 + 0.6 * 0.3, 0.6 * 0.2])
    v = 0.3 * P + 0.7 * Q
    assert output_distribution(get_rule("ensemble(w=0.3)"), P, Q).tolist() == pytest.approx(v.tolist())


@pytest.mark.parametrize("name", ["exact", "sample_match", "greedy_match", "typical", "ensemble"])
def test_expected_acceptance_is_the_q_weighted_accept_prob(name):
    gen = torch.Generator().manual_seed(3)
    p = torch.softmax(torch.randn(8, generator=gen, dtype=torch.float64) * 2, -1)
    q = torch.softmax(torch.randn(8, generator=gen, dtype=torch.float64) * 2, -1)
    rule, x = get_rule(name), torch.arange(8)
    a = rule.accept_prob(p.expand(8, 8), q.expand(8, 8), x)
    assert float((q * a).sum()) == pytest.approx(float(rule.expected_acceptance(p, q)))
    out = output_distribution(rule, p, q)
    assert float(out.sum()) == pytest.approx(1.0)
    if rule.lossless:
        assert out.tolist() == pytest.approx(p.tolist())


N = 200_000


@pytest.mark.parametrize("name", ["exact", "block", "sample_match"])
def test_lossless_rules_reproduce_p(name):
    rule = get_rule(name)
    tokens, kept = simulate(rule, P, Q, N, torch.Generator().manual_seed(7))
    counts = torch.bincount(tokens, minlength=3).tolist()
    assert chi_square_pvalue(counts, P.tolist()) > 1e-3
    expected = float(rule.expected_acceptance(P, Q))
    assert float(kept.double().mean()) == pytest.approx(expected, abs=5 * math.sqrt(expected * (1 - expected) / N))


@pytest.mark.parametrize("name", ["typical(epsilon=0.25,delta=1)", "ensemble(w=0.5)", "greedy_match", "typical"])
def test_lossy_rules_do_not(name):
    rule = get_rule(name)
    tokens, kept = simulate(rule, P, Q, N, torch.Generator().manual_seed(11))
    counts = torch.bincount(tokens, minlength=3).tolist()
    assert chi_square_pvalue(counts, P.tolist()) < 1e-6                  # visibly not p ...
    law = output_distribution(rule, P, Q).tolist()
    assert chi_square_pvalue(counts, law) > 1e-3                          # ... but the law computed above
    expected = float(rule.expected_acceptance(P, Q))
    assert float(kept.double().mean()) == pytest.approx(expected, abs=5 * math.sqrt(max(expected * (1 - expected), 1e-9) / N) + 1e-9)


def test_names_parse_and_fail_clearly():
    assert set(FAMILIES) == {"exact", "block", "sample_match", "greedy_match", "typical", "ensemble"}
    assert get_rule("ensemble").name == "ensemble(w=0.5)"
    assert get_rule(" ensemble( w = 0.25 ) ").name == "ensemble(w=0.25)"
    assert get_rule("exact").lossless and get_rule("sample_match").lossless and get_rule("block").lossless
    assert not any(get_rule(n).lossless for n in ("greedy_match", "typical", "ensemble"))
    for bad in ["", "ratio", "exact(w=1)", "ensemble(w=1)", "ensemble(w=0)", "ensemble(w=x)", "typical(alpha=0.3)",
                "typical(epsilon=nan)", None, 3]:
        with pytest.raises(ConfigError):
            get_rule(bad)


# --- through the engine, with the tiny models of conftest.py --------------------------------------

def verdicts(events):
    return [e for e in events if e.kind in ("accepted", "rejected")]


def test_the_engine_names_a_non_default_rule_everywhere(pair):
    from specviz.engine.loop.config import SpecConfig
    from specviz.engine.loop.speculative import speculate
    from specviz.engine.analysis.token_kinds import acceptance_by_kind
    from tests.helpers import PROMPTS

    events = list(speculate(pair, PROMPTS[0], SpecConfig(k=3, temperature=1.0, max_new_tokens=24, seed=1, rule="typical")))
    name = "typical(epsilon=0.09,delta=0.3)"
    assert verdicts(events) and all(e.rule == name and e.accept_prob in (0.0, 1.0) for e in verdicts(events))
    done = events[-1]
    assert done.stats.rule == name and done.stats.rule_lossless is False
    rows = acceptance_by_kind(events, pair.tokenizer)
    assert sum(r["judged"] for r in rows) == len(verdicts(events))
    assert sum(r["accepted"] for r in rows) == sum(e.kind == "accepted" for e in events)

    matched = list(speculate(pair, PROMPTS[1], SpecConfig(k=3, temperature=1.0, max_new_tokens=16, rule="sample_match")))
    assert all(e.rule == "sample_match" and e.accept_prob == pytest.approx(e.p, abs=1e-6) for e in verdicts(matched))
    assert matched[-1].stats.rule == "sample_match" and matched[-1].stats.rule_lossless is True

    mixed = list(speculate(pair, PROMPTS[2], SpecConfig(k=3, temperature=1.0, max_new_tokens=16, rule="ensemble(w=0.25)")))
    for e in verdicts(mixed):
        assert e.rule == "ensemble(w=0.25)"
        assert e.accept_prob == pytest.approx(min(1.0, (0.25 * e.p + 0.75 * e.q) / e.q), abs=1e-5)


def test_the_exact_rule_stays_the_default(pair):
    from specviz.engine.loop.config import SpecConfig
    from specviz.engine.loop.speculative import speculate
    from tests.helpers import PROMPTS

    assert SpecConfig().rule == "exact"
    events = list(speculate(pair, PROMPTS[0], SpecConfig(k=3, temperature=1.0, max_new_tokens=12)))
    assert all(e.rule == "ratio" for e in verdicts(events))
    assert events[-1].stats.rule == "exact" and events[-1].stats.rule_lossless is True
    greedy = list(speculate(pair, PROMPTS[0], SpecConfig(k=3, max_new_tokens=12)))
    assert all(e.rule == "argmax" for e in verdicts(greedy))


def test_config_checks_the_rule():
    from specviz.engine.loop.config import SpecConfig

    assert SpecConfig(temperature=1.0, rule="ensemble").rule == "ensemble(w=0.5)"
    for bad in [dict(temperature=1.0, rule="nope"), dict(temperature=0.0, rule="typical"),
                dict(temperature=1.0, rule="typical", forced_acceptance=0.5), dict(temperature=1.0, rule=None)]:
        with pytest.raises(ConfigError) as refused:
            SpecConfig(**bad)
        # the rule's own refusals name the field, so the page and a share link say it in their words
        assert refused.value.field == (None if "forced_acceptance" in bad else "rule")


def test_every_registered_rule_has_its_colour_pattern_and_shown_instance():
    """The rules tab draws one bar per registered rule from its registry entry: a rule without a
    colour would have no bar, and the instance the tab races must parse back to the same family."""
    from specviz.engine.loop.rules import REGISTRY
    for family, entry in REGISTRY.items():
        assert entry.cls.family == family
        assert re.fullmatch(r"#[0-9a-f]{6}", entry.colour), family
        assert entry.pattern in ("", "/", "\\", "x", "-", "|", "+", "."), family
        assert get_rule(entry.shown).family == family
    assert len({e.colour for e in REGISTRY.values()}) == len(REGISTRY)       # each bar its own colour
