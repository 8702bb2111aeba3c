"""The p-and-q picture of every judged node and every emitting row, computed in the round's one read.

For a node i judged at row r (its parent's: p there, q_i the distribution it was drawn from): the
union of the TOP_PICTURE most likely tokens of p_r and of q_i as (id, p_r(id), q_i(id)), most likely
under p first, with the draft always among them; and overlap_i = sum_x min(p_r(x), q_i(x)) over the
whole vocabulary: the chance the exact rule keeps a draft x ~ q_i (1 - total variation), so
1 - overlap_i is the mass of the residual max(0, p - q_i) a correction is drawn from. A row that emits
a bonus has p only (q None: no draft competed for it). The token a row emits is added to the picture
of the last node judged there (a correction) or to the row's own (a bonus).
"""
from __future__ import annotations

import torch

TOP_PICTURE = 8   # most likely tokens of p and of q reported per judged node (the p-and-q picture)


def pack_pictures(p: torch.Tensor, q: torch.Tensor, p_at: torch.Tensor, rows: torch.Tensor | None,
                  candidates: torch.Tensor) -> torch.Tensor:
    """What the pictures need, flat (float64): p (R, V) at every row, q (n, V) and p_at (n, V) (p at each
    node's row) of every node, `rows` (n,) each node's row (None: a chain, node i at row i), and each
    row's candidate (R,) (the correction or bonus it would emit)."""
    n, t = q.size(0), min(TOP_PICTURE, p.size(-1))
    cand = candidates.view(-1, 1)
    p_ids = torch.topk(p, t, dim=-1).indices                      # (R, t)
    parts = [p_ids, p.gather(1, p_ids), p.gather(1, cand)]
    if n:
        node_p_ids = p_ids[:n] if rows is None else p_ids.index_select(0, rows)
        node_cand = cand[:n] if rows is None else cand.index_select(0, rows)
        q_ids = torch.topk(q, t, dim=-1).indices                  # (n, t)
        parts += [q.gather(1, node_p_ids), q_ids, p_at.gather(1, q_ids), q.gather(1, q_ids),
                  torch.minimum(p_at, q).sum(-1, keepdim=True), q.gather(1, node_cand)]
    return torch.cat([part.double().reshape(-1) for part in parts])


class Pictures:
    """The read values of `pack_pictures`, turned into a node's or a row's picture on demand (only
    the judged nodes and the emitting row are ever built)."""

    def __init__(self, values: list[float], at: int, proposal, t: int, candidates: list[int]):
        """values[at:]: what `pack_pictures` packed, as read."""
        n, rows = proposal.size, proposal.size + 1
        self.parents, self.t, self.candidates = proposal.parents, t, candidates

        def take(count):
            nonlocal at
            at += count
            return values[at - count: at]
        self.p_ids, self.p_at_p, self.p_at_cand = take(rows * t), take(rows * t), take(rows)
        self.q_at_p, self.q_ids, self.p_at_q, self.q_at_q = take(n * t), take(n * t), take(n * t), take(n * t)
        self.overlap, self.q_at_cand = take(n), take(n)

    def node(self, i: int, token: int, p_x: float, q_x: float, emits: bool) -> list[tuple[int, float, float | None]]:
        """Node i's picture; `emits`: the correction its row emits is shown in it too."""
        t, row = self.t, self.parents[i] + 1
        entries: dict[int, tuple[float, float | None]] = {}
        for j in range(t):
            entries[int(self.p_ids[row * t + j])] = (self.p_at_p[row * t + j], self.q_at_p[i * t + j])
        for j in range(t):
            entries.setdefault(int(self.q_ids[i * t + j]), (self.p_at_q[i * t + j], self.q_at_q[i * t + j]))
        entries.setdefault(token, (p_x, q_x))
        if emits:
            entries.setdefault(self.candidates[row], (self.p_at_cand[row], self.q_at_cand[i]))
        return _ordered(entries)

    def row(self, row: int) -> list[tuple[int, float, float | None]]:
        """A bonus row's picture: p's most likely tokens and the bonus, no q."""
        t = self.t
        entries = {int(self.p_ids[row * t + j]): (self.p_at_p[row * t + j], None) for j in range(t)}
        entries.setdefault(self.candidates[row], (self.p_at_cand[row], None))
        return _ordered(entries)


def _ordered(entries: dict) -> list[tuple[int, float, float | None]]:
    return sorted(((tok, pr, qr) for tok, (pr, qr) in entries.items()), key=lambda e: (-e[1], -(e[2] or 0.0)))
