"""The p-and-q picture every judged position carries: the most likely tokens of p and of q with both
probabilities, the overlap sum min(p, q) over the whole vocabulary, the draft and the emitted token
always among them; computed in the round's one read and carried through a saved trace."""
import torch

from specviz import SpecConfig, speculate
from specviz.engine.loop.acceptance import TOP_PICTURE, verify
from specviz.engine.loop.events import from_dict, to_dict
from specviz.engine.loop.sampling import make_generator, warp

JUDGED = ("accepted", "rejected", "resampled", "bonus")


def _round(seed: int, k: int = 4, vocab: int = 40, temperature: float = 1.0):
    torch.manual_seed(seed)
    target_logits = torch.randn(k + 1, vocab) * 2
    draft_logits = torch.randn(k, vocab) * 2
    cfg = SpecConfig(k=k, temperature=temperature)
    q = warp(draft_logits, cfg)
    drafts = torch.multinomial(q, 1, generator=make_generator("cpu", seed)).squeeze(1) if temperature else q.argmax(-1)
    return drafts, q, target_logits, cfg


def test_overlap_is_the_sum_of_min_p_q_and_the_rows_hold_both_tops():
    for seed in range(6):
        drafts, q, logits, cfg = _round(seed)
        v = verify(drafts, q, logits, cfg, make_generator("cpu", seed))
        p = warp(logits, cfg)
        expected = torch.minimum(p[:4], q).sum(-1)
        assert torch.allclose(torch.tensor(v.pictures.overlap, dtype=torch.float64), expected.double(), atol=1e-6)
        # Each judged node's picture (a chain's node i at row i), and the bonus row's when all four were kept.
        rows = [v.pictures.node(i, v.tokens[i], v.p[i], v.q[i], emits=v.corrected and i == v.judged[-1])
                for i in v.judged]
        if not v.corrected:
            rows.append(v.pictures.row(4))
        for i, row in enumerate(rows):
            ids = {t for t, _, _ in row}
            assert set(torch.topk(p[i], TOP_PICTURE).indices.tolist()) <= ids
            if i < 4:
                assert set(torch.topk(q[i], TOP_PICTURE).indices.tolist()) <= ids
                assert drafts[i].item() in ids
            for t, pr, qr in row:
                assert abs(pr - p[i, t].item()) < 1e-6
                assert (qr is None) == (i == 4) and (qr is None or abs(qr - q[i, t].item()) < 1e-6)
            probs = [pr for _, pr, _ in row]
            assert probs == sorted(probs, reverse=True)
        assert v.next_token in {t for t, _, _ in rows[-1]}


def test_the_overlap_is_the_exact_rules_acceptance_chance():
    # sum_x q(x) min(1, p(x)/q(x)) = sum_x min(p(x), q(x)): the overlap the picture shades is the
    # probability a draft drawn from q is kept, checked here by drawing many drafts.
    drafts, q, logits, cfg = _round(3, k=1, vocab=12)
    p = warp(logits, cfg)[0]
    v = verify(drafts, q, logits, cfg, make_generator("cpu", 0))
    gen = make_generator("cpu", 1)
    xs = torch.multinomial(q[0], 20000, replacement=True, generator=gen)
    kept = (torch.rand(20000, generator=gen) < torch.clamp(p[xs] / q[0, xs], max=1.0)).float().mean().item()
    assert abs(kept - v.pictures.overlap[0]) < 0.015


def test_events_carry_the_picture_through_a_saved_trace(pair):
    seen = set()
    for temperature in (0.0, 1.0):
        for event in speculate(pair, "hello", SpecConfig(k=3, temperature=temperature, max_new_tokens=12, seed=1)):
            if event.kind not in JUDGED:
                continue
            seen.add(event.kind)
            ids = [t for t, *_ in event.picture]
            assert event.token_id in ids
            entry = event.picture[ids.index(event.token_id)]
            assert abs(entry[2] - event.p) < 1e-6
            if event.kind in ("accepted", "rejected"):
                assert abs(entry[3] - event.q) < 1e-6 and 0.0 <= event.overlap <= 1.0
            if event.kind == "bonus":
                assert event.overlap is None and all(q is None for *_, q in event.picture)
            again = from_dict(to_dict(event))
            assert again == event
    assert {"accepted", "bonus"} <= seen
