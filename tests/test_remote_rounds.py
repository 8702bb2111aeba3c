"""A server's per-step counts turn into token fates exactly as the rule says, and never invent what is missing."""
import pytest

from specviz.remote.rounds import ServerRound, ServerToken, assign_fates


def fates_of(n, accepted, drafted):
    pieces = [f"t{i}" for i in range(n)]
    return assign_fates(pieces, list(range(n)), [-0.1] * n, accepted, drafted)


def test_first_token_then_accepted_drafts_then_the_targets_own():
    f = fates_of(9, [2, 3, 0], [3, 3, 3])
    assert f.why is None
    assert [t.fate for t in f.tokens] == ["first", "accepted", "accepted", "correction",
                                          "accepted", "accepted", "accepted", "bonus", "correction"]
    assert [t.round for t in f.tokens] == [None, 1, 1, 1, 2, 2, 2, 2, 3]
    assert [len(r.tokens) for r in f.rounds] == [3, 4, 1]
    assert [r.rejected for r in f.rounds] == [1, 0, 3]


def test_a_last_step_cut_short_keeps_its_counts():
    f = fates_of(7, [3, 3], [3, 3])          # room for 1 + 4 + 4 = 9 tokens, 7 sent: the second step cut
    assert f.why is None and [t.fate for t in f.tokens][-2:] == ["accepted", "accepted"]
    assert len(f.rounds[1].tokens) == 2 and f.rounds[1].accepted == 3


def test_tokens_from_unrecorded_steps_get_no_fate():
    f = fates_of(20, [1, 0], [2, 2])          # n-gram: steps that proposed nothing leave no record
    assert f.why and "did not record" in f.why
    assert {t.fate for t in f.tokens} == {"unexplained"} and f.rounds == ()


def test_no_counts_and_too_few_tokens_are_said():
    assert "per-request-spec-decode-metrics" in fates_of(3, None, None).why
    assert "sent 2" in fates_of(2, [3, 3], [3, 3]).why


def test_records_refuse_to_be_inconsistent():
    with pytest.raises(ValueError):
        ServerRound(1, drafted=2, accepted=3)
    with pytest.raises(ValueError):
        ServerRound(1, drafted=3, accepted=1, tokens=tuple(ServerToken(i, "x", i, 0.0, "accepted", 1) for i in range(3)))
    with pytest.raises(ValueError):
        ServerToken(0, "x", 0, 0.0, "rejected")
