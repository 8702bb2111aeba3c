"""The plain draft's distillation loss (distill.loss_and_metrics), checked term by term on a tiny draft."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from transformers import LlamaConfig, LlamaForCausalLM

from specviz.training.distill import Sequence, collate, loss_and_metrics, make_draft

VOCAB, HEAD = 32, 16


@pytest.fixture(scope="module")
def draft():
    torch.manual_seed(0)
    target = LlamaForCausalLM(LlamaConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                          num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=64,
                                          tie_word_embeddings=False))
    return make_draft(target, [0], list(range(HEAD)), "test/target").eval()


def batch():
    """One sequence, 3 generated positions; the target's top-2 at each: the second position's argmax (20)
    lies outside the draft's 16-token head."""
    top_ids = np.array([[5, 6], [20, 7], [9, 1]])
    probs = np.array([[0.6, 0.4], [0.7, 0.3], [0.5, 0.5]])
    seq = Sequence(np.array([3, 5, 20, 9]), 1, top_ids, np.log(probs).astype(np.float32))
    sub_index = torch.tensor([i if i < HEAD else -1 for i in range(VOCAB)])
    return collate([seq], sub_index), top_ids, probs


@pytest.mark.parametrize("w", [0.0, 0.5, 1.0])
def test_argmax_weight_mixes_the_distribution_and_the_argmax_cross_entropies(draft, w):
    (ids, mask, rows, cols, teacher), top_ids, probs = batch()
    with torch.no_grad():
        loss, metrics = loss_and_metrics(draft, ids, mask, rows, cols, teacher, mixed=False, argmax_weight=w)
        hidden = draft.model(input_ids=ids, attention_mask=mask).last_hidden_state[rows, cols]
        logq = F.log_softmax(draft.lm_head.subset_logits(hidden).float(), -1).numpy()   # (3, HEAD)
    # by hand: tokens outside the head contribute nothing (the draft cannot propose them)
    lq = np.array([[logq[i, t] if t < HEAD else 0.0 for t in row] for i, row in enumerate(top_ids)])
    soft = -(probs * lq).sum(-1).mean()
    hard = -lq[:, 0].mean()
    assert loss.item() == pytest.approx((1 - w) * soft + w * hard, rel=1e-5)
    assert metrics["tokens"] == 3


def test_agreement_by_confidence_splits_validate_figure(draft):
    """The bins of the target's top-1 probability hold every generated position once (p = 1 in the last), and
    their positions-weighted agreement is validate()'s greedy agreement."""
    from specviz.training.distill import agreement_by_confidence, validate
    rng = np.random.default_rng(3)
    sub_index = torch.tensor([i if i < HEAD else -1 for i in range(VOCAB)])
    seqs = []
    for n in (5, 9, 14):
        top1 = rng.uniform(0.05, 1.0, n)
        top1[0] = 1.0                                          # a sure position lands in the last bin
        top_ids = np.stack([rng.integers(0, VOCAB, n), rng.integers(0, VOCAB, n)], 1)
        probs = np.stack([top1, 1 - top1 + 1e-6], 1)
        seqs.append(Sequence(rng.integers(0, VOCAB, n + 2), 2, top_ids, np.log(probs).astype(np.float32)))
    # the target's argmax is the draft's own at every other position (head index = token id here): agreement
    # then lies strictly between 0 and 1 in the bins, so a wrong mask cannot pass as 0 == 0
    from specviz.training.distill import head_log_probs
    for s in seqs:
        ids, mask, rows, cols, _ = collate([s], sub_index)
        s.top_ids[::2, 0] = head_log_probs(draft, ids, mask, rows, cols, mixed=False).argmax(-1).numpy()[::2]
    bins = agreement_by_confidence(draft, seqs, sub_index, [0.0, 0.5, 0.9, 1.0])
    p = np.concatenate([np.exp(s.top_logp[:, 0]) for s in seqs])       # as collate reads them
    assert [b["positions"] for b in bins] == [int((p < 0.5).sum()), int(((p >= 0.5) & (p < 0.9)).sum()),
                                              int((p >= 0.9).sum())]
    assert sum(b["positions"] for b in bins) == len(p) == 28 and bins[-1]["positions"] >= 3
    assert any(0 < b["greedy_agreement"] < 1 for b in bins if b["positions"])
    pooled = sum(b["positions"] * b["greedy_agreement"] for b in bins if b["positions"]) / len(p)
    assert pooled >= 0.5                                        # the planted half, at least
    with pytest.raises(ValueError, match="from 0 to 1"):
        agreement_by_confidence(draft, seqs, sub_index, [0.5, 1.0])
    assert pooled == pytest.approx(validate(draft, seqs, sub_index)["greedy_agreement"], abs=1e-6)
    assert all(b["agreed"] == round(b["positions"] * (b["greedy_agreement"] or 0)) for b in bins)
    assert sum(b["agreed"] for b in bins) / len(p) == pytest.approx(pooled, abs=1e-12)    # what draft_agreement.py pools
