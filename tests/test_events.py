"""Events add up: per round and in total, and the streamed pieces are the output text."""
import json

import pytest

from specviz import SpecConfig, speculate
from specviz.engine import to_dict
from specviz.engine.loop.detokenize import IncrementalDetokenizer

from .helpers import PROMPTS

CONFIGS = [
    SpecConfig(k=4, max_new_tokens=60),
    SpecConfig(k=3, max_new_tokens=60, temperature=1.0, seed=5),
    SpecConfig(k=5, max_new_tokens=60, temperature=0.8, top_p=0.9, seed=2, adaptive_k=True),
    SpecConfig(k=4, max_new_tokens=60, drafter="prompt_lookup"),
    SpecConfig(k=6, max_new_tokens=7),   # max_new_tokens cuts a round short
]


def rounds_of(events):
    """Group events by round: {round: [events]} (done excluded)."""
    out = {}
    for e in events:
        if e.kind != "done":
            out.setdefault(e.round, []).append(e)
    return out


@pytest.mark.parametrize("cfg", CONFIGS)
def test_round_and_total_invariants(pair, cfg):
    for prompt in PROMPTS:
        events = list(speculate(pair, prompt, cfg))
        done = events[-1]
        assert done.kind == "done" and sum(e.kind == "done" for e in events) == 1
        tokens = drafted = accepted = 0
        for r, evs in rounds_of(events).items():
            kinds = [e.kind for e in evs]
            assert kinds[0] == "drafted" and kinds[-1] == "round_end"
            d, end = evs[0], evs[-1]
            acc = kinds.count("accepted")
            rej = [e for e in evs if e.kind == "rejected"]
            emitted = acc + kinds.count("resampled") + kinds.count("bonus")
            # drafted = accepted + rejected + discarded
            assert end.drafted == len(d.token_ids) == acc + len(rej) + (rej[0].discarded if rej else end.drafted - acc)
            assert end.emitted == emitted and end.accepted == acc
            assert kinds.count("resampled") == len(rej) and kinds.count("bonus") + len(rej) <= 1
            # Accepted drafts are the leading drafts, in order.
            assert [e.token_id for e in evs if e.kind == "accepted"] == d.token_ids[:acc]
            tokens, drafted, accepted = tokens + emitted, drafted + end.drafted, accepted + acc
            assert (end.total_tokens, end.total_drafted, end.total_accepted) == (tokens, drafted, accepted)
        s, t = done.stats, done.stats.tally
        assert t.rounds == len(rounds_of(events)) and t.tokens == tokens == len(done.token_ids)
        assert t.drafted == drafted and t.accepted == accepted
        assert s.target_forwards == t.rounds
        n_rej = sum(e.kind == "rejected" for e in events)
        assert s.acceptance_rate == (accepted / (accepted + n_rej) if accepted + n_rej else None)
        pieces = "".join(e.piece for e in events if e.kind in ("accepted", "resampled", "bonus"))
        assert pieces == done.text
        full = pair.tokenizer.decode(done.token_ids, skip_special_tokens=True)
        # Only an unfinished character at the very end (invalid bytes from a tiny random model) is held back.
        assert full.startswith(done.text) and set(full[len(done.text):]) <= {"\ufffd"}
        assert len(done.token_ids) <= cfg.max_new_tokens
        json.dumps([to_dict(e) for e in events])    # every event is JSON-able


def test_incremental_detokenizer_keeps_characters_whole(pair):
    text = "naïve café — 数据 😀 done\n\tend"
    ids = pair.tokenizer(text, add_special_tokens=False)["input_ids"]
    assert len(ids) > len(text.split())          # multi-byte characters span several tokens
    detok = IncrementalDetokenizer(pair.tokenizer)
    pieces = [detok.push(i) for i in ids]
    assert "".join(pieces) == text
    assert not any("\ufffd" in p for p in pieces)


def test_stop_string_and_reason(pair):
    free = list(speculate(pair, PROMPTS[0], SpecConfig(max_new_tokens=60)))[-1]
    stop = free.text[10:13]
    done = list(speculate(pair, PROMPTS[0], SpecConfig(max_new_tokens=60, stop_strings=(stop,))))[-1]
    assert done.stop_reason == "stop_string"
    assert stop in done.text and free.text.startswith(done.text)
    assert stop not in done.text[:-1] or done.text.index(stop) + len(stop) > len(done.text) - 8


@pytest.mark.parametrize("lane", ["spec", "base"])
def test_eos_stops_and_is_kept_in_ids(pair, lane):
    """EOS is forced: the pair's EOS set is made to hold the 6th token greedy decoding writes,
    so both lanes must stop right after its first occurrence and keep it as the last token."""
    from dataclasses import replace

    from specviz import decode_baseline
    run = speculate if lane == "spec" else decode_baseline
    free = list(run(pair, PROMPTS[1], SpecConfig(k=4, max_new_tokens=40)))[-1]
    eos = free.token_ids[5]
    first = free.token_ids.index(eos)
    done = list(run(replace(pair, eos_token_ids=frozenset({eos})), PROMPTS[1], SpecConfig(k=4, max_new_tokens=40)))[-1]
    assert done.stop_reason == "eos"
    assert done.token_ids == free.token_ids[:first + 1]


@pytest.mark.parametrize("cfg", [SpecConfig(k=4, max_new_tokens=40), SpecConfig(k=3, max_new_tokens=40, temperature=1.0)])
def test_one_host_read_per_round(pair, cfg, monkeypatch):
    """The loop reads the device once a round (the verdict); nothing else syncs (CUDA-relevant)."""
    import torch
    gen = speculate(pair, PROMPTS[0], cfg)
    reads = {"n": 0}
    for name in ("tolist", "item", "cpu", "numpy"):
        original = getattr(torch.Tensor, name)
        def counted(self, *a, _original=original, **kw):
            reads["n"] += 1
            return _original(self, *a, **kw)
        monkeypatch.setattr(torch.Tensor, name, counted)
    events = list(gen)
    monkeypatch.undo()
    assert reads["n"] == events[-1].stats.tally.rounds


class ScalarReads:
    """Counts what the dispatcher sees as a device-to-host scalar read: `.item()`, `int(t)`,
    `if t:` and indexing with a 0-dim tensor all become `aten._local_scalar_dense` (a sync on CUDA)."""

    def __enter__(self):
        from torch.utils._python_dispatch import TorchDispatchMode
        counter = self

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                if func.overloadpacket.__name__ == "_local_scalar_dense":
                    counter.n += 1
                return func(*args, **(kwargs or {}))
        self.n, self.mode = 0, Mode()
        self.mode.__enter__()
        return self

    def __exit__(self, *exc):
        self.mode.__exit__(*exc)


@pytest.mark.parametrize("lane", ["spec", "base"])
@pytest.mark.parametrize("temperature", [0.0, 0.8])
def test_no_scalar_reads_in_either_lane(pair, lane, temperature):
    """Beyond the one packed `.tolist()` per round (counted above), neither lane reads a scalar
    from the device: the dispatcher sees no `_local_scalar_dense` in a whole run."""
    import torch

    from specviz import decode_baseline
    run = speculate if lane == "spec" else decode_baseline
    cfg = SpecConfig(k=4, max_new_tokens=30, temperature=temperature, seed=1)
    with ScalarReads() as reads:
        done = list(run(pair, PROMPTS[0], cfg))[-1]
    assert len(done.token_ids) == 30
    with ScalarReads() as probe:                  # the counter itself works
        torch.ones(2)[torch.tensor(1)].item()
    assert probe.n >= 1
    assert reads.n == 0


def test_events_are_keyword_only_and_check_themselves():
    import pytest

    from specviz.engine.loop.events import Accepted, Drafted, TargetToken
    good = dict(round=1, position=0, token_id=5, piece="a", p=0.3, q=0.5, accept_prob=0.6, u=0.2, rule="ratio", index=0)
    assert Accepted(**good).p == 0.3
    with pytest.raises(TypeError):
        Accepted(1, 0, 5, "a", 0.3, 0.5, 0.6, 0.2, "ratio", 0)          # positional: refused
    for bad in ({"p": 1.5}, {"q": float("nan")}, {"u": -0.2}, {"position": -1}, {"round": 1.0}, {"lane": "x"},
                {"t": -1.0}):
        with pytest.raises(ValueError):
            Accepted(**{**good, **bad})
    with pytest.raises(ValueError):
        Drafted(round=1, token_ids=[1], pieces=["a"], q=[1.2])
    with pytest.raises(ValueError):
        TargetToken(index=0, token_id=-3, piece="a", p=0.5)


def _stats():
    from specviz.engine.metrics.measures import LaneStats
    return LaneStats.from_dict({})


INCONSISTENT = [
    # A tree whose second child of the root claims to be the draft's first choice (its parents say second).
    ("Drafted", dict(round=1, token_ids=[1, 2, 3], pieces=["a", "b", "c"], q=[0.5, 0.3, 0.4], parents=[-1, -1, 0],
                     depths=[1, 1, 2], choices=[0, 0, 0]), "choice 0 of parent -1"),
    ("Drafted", dict(round=1, token_ids=[1, 2], pieces=["a", "b"], q=[0.5, 0.3], parents=[-1, 0], depths=[1, 2],
                     choices=[0, 1]), "choice 1 of parent 0"),
    # A draw that would have rejected what the record says was kept, and the other way round.
    ("Accepted", dict(round=1, position=0, token_id=5, piece="a", p=0.3, q=0.5, accept_prob=0.6, u=0.7,
                      rule="ratio", index=0), "would have rejected"),
    ("Rejected", dict(round=1, position=0, token_id=5, piece="a", p=0.3, q=0.5, accept_prob=0.6, u=0.2,
                      rule="ratio", discarded=0), "would have kept"),
    ("Accepted", dict(round=1, position=0, token_id=5, piece="a", p=0.3, q=0.5, accept_prob=0.6, u=0.2,
                      rule="ratio", index=0, node=1), "node and its choice"),
    # The block rule: a kept draft past the kept prefix; a rejected one that is not the first past it; the
    # last kept draft's own draw failing its joint test.
    ("Accepted", dict(round=1, position=2, token_id=5, piece="a", p=0.3, q=0.5, accept_prob=0.6, u=0.2,
                      rule="block", index=0, kept=2, weight=0.5), "kept prefix of 2"),
    ("Rejected", dict(round=1, position=3, token_id=5, piece="a", p=0.3, q=0.5, accept_prob=0.6, u=0.7,
                      rule="block", discarded=0, kept=2, weight=0.5), "kept prefix of 2"),
    ("Accepted", dict(round=1, position=1, token_id=5, piece="a", p=0.3, q=0.5, accept_prob=0.6, u=0.7,
                      rule="block", index=0, kept=2, weight=0.5), "would have rejected"),
    # A round with more accepted than drafted, more emitted than one past the accepted, totals below it.
    ("RoundEnd", dict(round=1, drafted=2, accepted=3, emitted=4, draft_s=0, verify_s=0, bookkeeping_s=0,
                      total_tokens=4, total_drafted=2, total_accepted=3, text="", k_next=4, full=True), "accepted"),
    ("RoundEnd", dict(round=1, drafted=4, accepted=2, emitted=4, draft_s=0, verify_s=0, bookkeeping_s=0,
                      total_tokens=4, total_drafted=4, total_accepted=2, text="", k_next=4, full=True), "emitted"),
    ("RoundEnd", dict(round=2, drafted=4, accepted=2, emitted=3, draft_s=0, verify_s=0, bookkeeping_s=0,
                      total_tokens=3, total_drafted=3, total_accepted=2, text="", k_next=4, full=True), "totals"),
    ("RoundEnd", dict(round=1, drafted=4, accepted=2, emitted=3, draft_s=0, verify_s=0, bookkeeping_s=0,
                      total_tokens=3, total_drafted=4, total_accepted=2, text="", k_next=4, full=False,
                      unjudged=3), "unjudged"),
    # A made-up stop reason.
    ("Done", dict(text="", token_ids=[], stop_reason="bored", stats=None), "stop_reason"),
]


@pytest.mark.parametrize("kind, fields, words", INCONSISTENT, ids=[f"{k}-{w}" for k, _, w in INCONSISTENT])
def test_an_inconsistent_record_is_refused_where_it_is_built(kind, fields, words):
    from specviz.engine.loop import events
    if kind == "Done":
        fields = {**fields, "stats": _stats()}
    with pytest.raises(ValueError, match=words):
        getattr(events, kind)(**fields)


def test_the_consistent_neighbours_of_those_records_are_built():
    from specviz.engine.loop.events import Accepted, Done, Drafted, Rejected, RoundEnd
    Drafted(round=1, token_ids=[1, 2, 3], pieces=["a", "b", "c"], q=[0.5, 0.3, 0.4], parents=[-1, -1, 0],
            depths=[1, 1, 2], choices=[0, 1, 0])
    verdict = dict(round=1, position=0, token_id=5, piece="a", p=0.3, q=0.5, accept_prob=0.6, rule="ratio")
    Accepted(**verdict, u=0.2, index=0, node=1, choice=0)
    Accepted(**verdict, u=None, index=0)                     # greedy: no draw
    Rejected(**verdict, u=0.6, discarded=2)                  # u = accept_prob rejects (kept iff u < it)
    # block: a draft inside the kept prefix is kept though its own draw missed; the last kept one's passed
    block = dict(verdict, rule="block", weight=0.5, kept=2)
    Accepted(**{**block, "position": 0}, u=0.9, index=0)
    Accepted(**{**block, "position": 1}, u=0.2, index=1)
    Rejected(**{**block, "position": 2}, u=0.7, discarded=1)
    RoundEnd(round=1, drafted=4, accepted=4, emitted=5, draft_s=0, verify_s=0, bookkeeping_s=0, total_tokens=5,
             total_drafted=4, total_accepted=4, text="", k_next=4, full=True)
    for reason in ("max_tokens", "eos", "stop_string", "cancelled", "length_limit"):
        Done(text="", token_ids=[], stop_reason=reason, stats=_stats())
