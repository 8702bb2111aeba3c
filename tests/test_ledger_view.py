"""The race's time box: styled by what the verdict is (a loss or a stop never as a success), with both
lanes' time split and a, c, v beside the break-even a; all escaped. The cause is in the status above."""
from specviz.engine.analysis.ledger import build
from specviz.engine.metrics.measures import LaneTally
from specviz.view.ledger_view import ledger_html

SPEC = LaneTally(rounds=10, drafted=40, accepted=12, rejected=8, tokens=22, full_rounds=10, full_round_tokens=22,
                 draft_s=0.8, verify_s=1.3, target_s=1.2, accept_s=0.1, elapsed_s=2.4)
PLAIN = LaneTally(tokens=22, target_s=1.5, accept_s=0.05, elapsed_s=1.7)


def test_a_slower_race_is_drawn_as_a_loss():
    led = build(SPEC, PLAIN)
    assert led.verdict == "slower"
    out = ledger_html(led)
    assert 'data-verdict="slower"' in out and "verdict-slower" in out and "✓" not in out
    assert "▼ Slower" in out and "Where each lane's time went" in out
    assert led.cause.split(":")[1][:30] not in out        # said once, under the verdict (view/handlers.py)
    for words in ("draft steps", "target passes", "acceptance and sampling", "everything else", "break-even a"):
        assert words in out


def test_a_stopped_race_is_neither_success_nor_failure():
    out = ledger_html(build(SPEC, PLAIN), stopped=True)
    assert 'data-verdict="stopped"' in out and "verdict-stopped" in out and "✓" not in out and "■ Stopped" in out


def test_the_gpu_path_and_its_one_time_capture_are_said():
    from types import SimpleNamespace

    from specviz.view.ledger_view import path_line
    first = SimpleNamespace(done={"spec": SimpleNamespace(decode_path="CUDA graphs", capture_s=2.5),
                                  "base": SimpleNamespace(decode_path="CUDA graphs", capture_s=0.7)})
    line = path_line(first)
    assert line.startswith("Decode path: CUDA graphs, captured in 3.2 s") and "one-time" in line
    later = SimpleNamespace(done={"spec": SimpleNamespace(decode_path="CUDA graphs", capture_s=0.0)})
    assert "no capture cost" in path_line(later)
    closed = SimpleNamespace(done={"spec": SimpleNamespace(decode_path="eager (graph capture failed: RuntimeError: x)",
                                                           capture_s=0.4)})
    assert path_line(closed) == "Decode path: eager (graph capture failed: RuntimeError: x)."
    eager = SimpleNamespace(done={"spec": SimpleNamespace(decode_path="eager", capture_s=0.0)})
    assert path_line(eager) == ""
    lean = SimpleNamespace(done={"spec": SimpleNamespace(decode_path="eager", capture_s=0.0,
                                                         draft_path="lean eager, int8 weights"),
                                 "base": SimpleNamespace(decode_path="eager", capture_s=0.0, draft_path="")})
    # The page says what the lean path is, not its internal name.
    assert path_line(lean).startswith("Draft steps: a short loop over the draft's own layers with 8-bit integer "
                                      "(int8) weights, instead of transformers' forward")
    assert "lean eager" not in path_line(lean)
    fp32 = SimpleNamespace(done={"spec": SimpleNamespace(decode_path="eager", draft_path="lean eager, fp32 weights")})
    assert "with 32-bit float (fp32) weights, instead of transformers' forward." in path_line(fp32)
    # How the format was chosen is the lane's record: timed here, or set by the developer override.
    timed = SimpleNamespace(done={"spec": SimpleNamespace(draft_path="lean eager, int8 weights",
                                                          draft_format_by="chosen by timing on this machine")})
    assert "(the weights' format chosen by timing on this machine)" in path_line(timed)
    forced = SimpleNamespace(done={"spec": SimpleNamespace(draft_path="lean eager, int8 weights",
                                                           draft_format_by="set by SPECVIZ_DRAFT_STEP=int8")})
    assert "(the weights' format set by SPECVIZ_DRAFT_STEP=int8)" in path_line(forced)
    assert "timing" not in path_line(forced)
    out = ledger_html(build(SPEC, PLAIN), path=line)
    assert 'class="decode-path"' in out and "captured in 3.2 s" in out
    assert 'class="decode-path"' not in ledger_html(build(SPEC, PLAIN))
