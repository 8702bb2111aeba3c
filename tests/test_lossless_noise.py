"""The lossless check's noise figure is the exact expected total variation at every sample count
(De Moivre's mean absolute deviation), never above 1; its verdict reads as one line."""
import pytest
import torch

from specviz.engine.analysis.lossless import expected_tv_noise


@pytest.mark.parametrize("vocab", [3, 50])
@pytest.mark.parametrize("n", [1, 2, 5, 25, 300])
def test_noise_matches_simulation_at_small_counts(vocab, n):
    torch.manual_seed(vocab * 1000 + n)
    p = torch.distributions.Dirichlet(torch.full((vocab,), 0.3)).sample().double()
    freq = torch.distributions.Multinomial(n, probs=p).sample((20_000,)) / n
    simulated = 0.5 * (freq - p).abs().sum(-1).mean().item()
    assert expected_tv_noise(p, n) == pytest.approx(simulated, abs=0.01)


@pytest.mark.parametrize("n", [1, 25, 50, 2000])
def test_noise_never_exceeds_one_over_a_large_vocabulary(n):
    """The issue's case: 25 samples over a 49k vocabulary gave 'noise alone gives about 1.432'."""
    torch.manual_seed(0)
    p = torch.softmax(torch.randn(49_152, dtype=torch.float64) * 2, 0)
    assert 0.0 < expected_tv_noise(p, n) <= 1.0


def test_noise_of_a_certain_token_is_zero():
    p = torch.zeros(10, dtype=torch.float64)
    p[3] = 1.0
    assert expected_tv_noise(p, 7) == 0.0


def test_verdict_is_one_plain_line():
    from specviz.engine.analysis.lossless import verdict_line
    assert verdict_line(0.43).startswith("Verdict: consistent with the target's distribution: p = 0.430")
    assert "not consistent" in verdict_line(1e-5)


def test_the_draft_contrast_claims_only_what_the_numbers_show():
    """'the output follows p' only once the verdict is in and consistent, and only where the draft is
    clearly farther from p than sampling noise (it was once said on every streamed update, p-value 0.004
    included, and on a pair whose draft was as close to p as the noise)."""
    from specviz.engine.analysis.lossless import draft_contrast as _draft_contrast
    claim = "the output follows p"
    assert claim in _draft_contrast(0.40, 0.05, consistent=True, final=True)
    assert claim not in _draft_contrast(0.40, 0.05, consistent=True, final=False)      # streaming
    assert claim not in _draft_contrast(0.40, 0.05, consistent=False, final=True)      # the check failed
    close = _draft_contrast(0.081, 0.072, consistent=True, final=True)                 # draft within the noise
    assert claim not in close and "cannot show the difference" in close


def test_the_samples_that_would_separate_the_draft_from_the_noise():
    """A teacher's first click (300 samples) read "this run cannot show the difference; more samples would":
    true, and of no use without a number. The check names the smallest multiple of the slider's step at which
    the draft's distance exceeds twice the expected noise, or says that the page's maximum is not enough."""
    from specviz.engine.analysis.lossless import samples_to_separate
    torch.manual_seed(1)
    p = torch.softmax(torch.randn(5_000, dtype=torch.float64) * 3, 0)
    d = 2 * expected_tv_noise(p, 300) * 0.6                 # a draft a little closer than twice the noise at 300
    n = samples_to_separate(p, d, step=50, most=100_000)
    assert n % 50 == 0 and n > 300
    assert 2 * expected_tv_noise(p, n) < d <= 2 * expected_tv_noise(p, n - 50)
    assert samples_to_separate(p, d, step=50, most=n - 50) is None          # not within the page's range
    assert samples_to_separate(p, 0.0, step=50, most=2000) is None          # a draft equal to p: never


def test_the_contrast_names_those_samples():
    from specviz.engine.analysis.lossless import draft_contrast as _draft_contrast
    close = _draft_contrast(0.081, 0.072, consistent=True, final=True, needed=950)
    assert "cannot show the difference" in close and "about 950 samples would" in close
    far = _draft_contrast(0.081, 0.072, consistent=True, final=True, needed=None, most=1200)
    assert "more than the 1200 this server runs for this prompt" in far and "lower temperature" in far
    same = _draft_contrast(0.0, 0.072, consistent=True, final=True, needed=None)
    assert "exactly the target's distribution" in same and "would be needed" not in same


def test_the_named_samples_stay_within_what_the_server_runs_for_the_prompt():
    """A long prompt's samples are capped by the token budget below the slider's 2000: the advice must not
    name a count the next run would refuse."""
    from collections import Counter
    from specviz.engine.analysis.lossless import LosslessResult
    from specviz.view.tabs.lossless import _lossless_summary
    torch.manual_seed(3)
    p = torch.softmax(torch.randn(50, dtype=torch.float64) * 3, 0)
    q = p.clone()
    q[torch.argmax(p)] -= 0.05
    q[torch.argmin(p)] += 0.05                           # 0.05 away: beyond 300 samples' reach
    counts = Counter(torch.multinomial(p, 300, replacement=True).tolist())
    r = LosslessResult(counts, p, q, 1.0)
    free = _lossless_summary(r, most=100_000)
    n = int(__import__("re").search(r"about (\d+) samples would", free).group(1))
    capped = _lossless_summary(r, most=n - 50)
    assert f"more than the {n - 50} this server runs" in capped and "samples would" not in capped


def test_a_greedy_setting_is_checked_at_the_temperature_that_shows_the_contrast(pair):
    """Greedy output is one token, so the check samples; at T = 1 the page's first click (SmolLM2, its prime
    example, 300 samples) could not tell the draft from the target (0.081 apart, noise 0.072: 1450 samples
    needed), at T = 0.7 300 suffice. The result names the temperature it ran at."""
    from specviz.engine.loop.config import SpecConfig
    from specviz.engine.analysis.lossless import GREEDY_CHECK_TEMPERATURE, lossless_check
    *_, last = lossless_check(pair, "def add(a, b):", SpecConfig(k=2, temperature=0.0), samples=4, report_every=2)
    assert GREEDY_CHECK_TEMPERATURE == 0.7 and last.temperature == 0.7 and last.samples == 4
    *_, own = lossless_check(pair, "def add(a, b):", SpecConfig(k=2, temperature=1.3), samples=2)
    assert own.temperature == 1.3                          # a temperature the visitor set is kept


def test_the_lossless_exercise_gives_the_tabs_verdict(tiny_dirs):
    # Exercise 4 read "0.226 away (noise alone gives about 0.198)" with no verdict: it opens with the
    # Lossless tab's own verdict line for the same samples, reads the distance against the noise, and
    # gives the tab's own sentence on the draft's distance.
    from tests.helpers import app_with
    from specviz.app.workshop import BY_KEY
    import html
    from specviz.app.settings import MAX_SAMPLES, SAMPLES_STEP
    from specviz.engine.analysis.lossless import draft_contrast, samples_to_separate, verdict_line
    from specviz.view.tabs.lossless import _lossless_summary
    from specviz.models.presets import Preset
    preset = Preset("tiny", "tiny", tiny_dirs["target"], tiny_dirs["cut"], 4, ("def add(a, b):\n    return",))
    app = app_with({"tiny": preset})
    out = BY_KEY["lossless"].run(app)
    result = out.chart[1][0]
    assert out.why.startswith(verdict_line(result.p_value()))
    assert f"about {result.tv_noise():.3f} away by chance alone" in out.why
    needed = samples_to_separate(result.p, result.tv_draft(), SAMPLES_STEP, MAX_SAMPLES)
    contrast = draft_contrast(result.tv_draft(), result.tv_noise(), result.consistent(), final=True,
                              needed=needed, most=MAX_SAMPLES)
    assert contrast in out.why and html.escape(contrast) in _lossless_summary(result)   # the tab's own sentence
