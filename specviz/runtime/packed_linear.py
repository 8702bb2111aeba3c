"""CPU weight layout for decoding: each Linear gets a pre-packed weight for multi-token passes, and
the kernels a decode step and a verify pass run are the ones that timed fastest on this machine.

Why: PyTorch's default `F.linear` for a handful of rows (2 < m <= 9, the size of a verify pass)
takes a GEMM path that re-packs the whole weight matrix on every call, so a verify pass costs far
more than the ~1.1 plain steps a memory-bound pass should. With the weights packed once at load
time (`mkl._mkl_reorder_linear_weight`, the same kernels TorchInductor uses for frozen CPU models)
the pass gets close to that, and one-token steps keep the GEMV path on a column-major copy of the
weight. Logits agree with the default layout to about 4e-5 (different summation order), argmax
unchanged.

Which kernel is fastest depends on the CPU: MKL's packed GEMM wins on some x86 hosts and loses on
others to oneDNN's linear on a weight reordered once (`mkldnn._reorder_linear_weight`, what
TorchInductor freezes to where MKL is absent); the timings per host are in
benchmarks/cpu-verify-profile-epyc.json and benchmarks/history/. So `pack_linears` times both
at load through the model's own forward, with the threads it will decode with, and keeps, per row
count, the faster one (`Kernels`): one row by GEMV or oneDNN, more rows by MKL's packed GEMM or
oneDNN. Only one packed copy is kept, so the pair (oneDNN for one row, MKL for more) is not
offered. The whole forward is timed, not the linears alone, which misled on a small model.

Both lanes of a race and transformers' own `generate()` use the same packed modules, so every
comparison stays like for like. Where MKL is missing (ARM, macOS), `pack_linears` changes nothing.
The packed copy doubles the memory of the linear layers; the state dict is unchanged.
"""
from __future__ import annotations

import statistics
import threading
import time
from dataclasses import dataclass

import torch
from torch import nn

BATCH_HINT = 8   # the row count MKL and oneDNN tune their packing for; any row count works with the result
TIMED_ROWS = 4                 # a verify pass at k = 3 (the presets' usual k), timed against one row
TIMED_REPEATS = 3              # model forwards timed per kernel and row count (median), after one warm-up

ONE_ROW = ("gemv", "onednn")   # kernels for a one-token step
MANY_ROWS = ("mkl", "onednn")  # kernels for a pass over 2 or more tokens


def mkl_packing_available() -> bool:
    """True when this torch build has MKL's packed GEMM (x86 builds with MKL)."""
    return torch.backends.mkl.is_available() and hasattr(torch.ops.mkl, "_mkl_linear")


def onednn_available() -> bool:
    """True when this torch build has oneDNN's linear on a reordered weight (x86 builds)."""
    return (torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_linear_pointwise")
            and hasattr(torch.ops.mkldnn, "_reorder_linear_weight"))


def _pack(weight: torch.Tensor, kernel: str) -> torch.Tensor:
    """`weight` (out, in) packed once for `kernel`'s multi-row GEMM."""
    dense = weight.detach().contiguous().float()
    if kernel == "mkl":
        return torch.ops.mkl._mkl_reorder_linear_weight(dense, BATCH_HINT)
    return torch.ops.mkldnn._reorder_linear_weight(dense, BATCH_HINT)


def _linear(x: torch.Tensor, weight: torch.Tensor, packed: torch.Tensor | None, bias: torch.Tensor | None,
            kernel: str) -> torch.Tensor:
    """x (rows, in) -> (rows, out) with `kernel`: "gemv" (F.linear on the column-major weight), "mkl"
    (MKL's packed GEMM) or "onednn" (oneDNN's linear on its reordered weight)."""
    if kernel == "gemv":
        return nn.functional.linear(x, weight, bias)
    if kernel == "mkl":
        return torch.ops.mkl._mkl_linear(x, packed, weight, bias, x.shape[0])
    return torch.ops.mkldnn._linear_pointwise(x, packed, bias, "none", [], "")


@dataclass(frozen=True)
class Kernels:
    one_row: str = "gemv"        # ONE_ROW
    many_rows: str = "mkl"       # MANY_ROWS; one packed copy: "onednn" for one row means "onednn" here
    timed_ms: tuple = ()         # ((kernel, rows, ms for the timed weights), ...): what chose them

    def describe(self) -> str:
        name = {"gemv": "GEMV", "mkl": "MKL packed GEMM", "onednn": "oneDNN"}
        text = f"{name[self.one_row]} for one token, {name[self.many_rows]} for more"
        if self.timed_ms:
            text += " (timed here: " + ", ".join(f"{name[k]} {rows} row{'s' if rows > 1 else ''} {ms:.1f} ms"
                                                  for k, rows, ms in self.timed_ms) + ")"
        return text


class PackedLinear(nn.Module):
    """A drop-in `nn.Linear` (same `weight`/`bias` names, inference only) with a packed copy.

    Rows m == 1 go through `kernels.one_row`, m > 1 through `kernels.many_rows` (module docstring).
    """

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None = None, kernels: Kernels = Kernels()):
        super().__init__()
        out_features, in_features = weight.shape
        self.in_features, self.out_features = in_features, out_features
        # Column-major storage of the same (out, in) matrix: F.linear then runs x @ W^T on a
        # contiguous W^T, the fast GEMV for one row.
        self.weight = nn.Parameter(weight.detach().t().contiguous().t(), requires_grad=False)
        self.bias = None if bias is None else nn.Parameter(bias.detach(), requires_grad=False)
        self.kernels = kernels
        self.packed = _pack(weight, kernels.many_rows)

    def use(self, kernels: Kernels) -> None:
        """Run with `kernels` from now on, packing the weight anew where the multi-row kernel changes."""
        if kernels.many_rows != self.kernels.many_rows:
            self.packed = None                                 # one packed copy at a time
            self.packed = _pack(self.weight, kernels.many_rows)
        self.kernels = kernels

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if torch.compiler.is_compiling():
            # The fast path (torch.compile) lowers its own linears; the packed ops have no lowering.
            return nn.functional.linear(x, self.weight.contiguous(), self.bias)
        rows = x.numel() // self.in_features
        kernel = self.kernels.one_row if rows <= 1 else self.kernels.many_rows
        out = _linear(x.reshape(rows, self.in_features), self.weight, self.packed, self.bias, kernel)
        return out.view(*x.shape[:-1], self.out_features)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, {self.kernels.describe()}"


def _linears(model: nn.Module) -> list[tuple[nn.Module, str, nn.Linear]]:
    return [(parent, name, child) for parent in list(model.modules()) for name, child in list(parent.named_children())
            if type(child) is nn.Linear and child.weight.device.type == "cpu" and child.weight.dtype == torch.float32]


def decide(ms: dict[tuple[str, int], float]) -> Kernels:
    """The kernels to keep from timed model passes: ms[(kernel, rows)] for ("gemv", 1), ("onednn", 1),
    ("mkl", TIMED_ROWS) and ("onednn", TIMED_ROWS). The fastest for one row (the plain lane's step: the
    baseline must be the fastest plain decoding here) and for a verify pass; one packed copy only, so
    where oneDNN wins one row and MKL more, the better of the two pairs that need one, by their sum."""
    one = min(ONE_ROW, key=lambda k: ms[(k, 1)])
    many = min(MANY_ROWS, key=lambda k: ms[(k, TIMED_ROWS)])
    if one == "onednn" and many == "mkl":
        one, many = min([("gemv", "mkl"), ("onednn", "onednn")], key=lambda p: ms[(p[0], 1)] + ms[(p[1], TIMED_ROWS)])
    return Kernels(one, many, tuple((k, r, t) for (k, r), t in sorted(ms.items(), key=lambda i: (i[0][1], i[0][0]))))


def forward_seconds(model: nn.Module, rows: int, repeats: int = TIMED_REPEATS) -> float:
    """Median seconds of the model's own forward over `rows` tokens (no cache), after one warm-up: every
    op of a step, not the linears alone (timed alone, oneDNN's one-row kernel looked 11% faster on the
    bundled target's linears, yet its whole step ran 24% slower)."""
    ids = torch.arange(1, rows + 1).unsqueeze(0)          # any in-vocabulary ids: the cost depends on the count
    times = []
    with torch.inference_mode():
        for _ in range(repeats + 1):
            start = time.perf_counter()
            model(input_ids=ids, use_cache=False)
            times.append(time.perf_counter() - start)
    return statistics.median(times[1:])


def measure_kernels(model: nn.Module, modules: list["PackedLinear"], forward=forward_seconds) -> dict:
    """ms[(kernel, rows)] of the model's forward with each kernel, one packed copy at a time."""
    ms = {}
    for packing, one_row in (("mkl", "gemv"), ("onednn", "onednn")):
        for m in modules:
            m.use(Kernels(one_row, packing))
        ms[(one_row, 1)] = 1e3 * forward(model, 1)
        ms[(packing, TIMED_ROWS)] = 1e3 * forward(model, TIMED_ROWS)
    return ms


_chosen: dict[tuple, Kernels] = {}     # torch's threads and the linears' shapes -> the kernels timed for them
# Pairs load in visitors' threads, outside the decoding slot: two loads of the same shapes at once must not
# both time (each beside the other, so noisily) and keep different choices.
_choosing = threading.Lock()


def pack_linears(model: nn.Module, choose: bool = True) -> int:
    """Swap every fp32 `nn.Linear` of a CPU model for a `PackedLinear`, in place; return how many.

    `choose`: time the model's forward with each kernel first (`measure_kernels`, `decide`), once per
    thread count and set of weight shapes in this process: a second load of a model (another app, a pair
    evicted and loaded again) must not choose differently on a busy moment, or the two would round their
    logits differently (a seeded sampled race would no longer repeat token for token). Without oneDNN,
    or where timing fails (a model whose forward needs more than token ids), and with `choose` off (batched
    data generation), MKL's pair (GEMV, packed GEMM). The choice is kept as `model.linear_kernels`.
    Tied weights (an output head sharing the embedding matrix) get their own packed copy;
    the embedding keeps its matrix. Does nothing off the CPU, for other dtypes, or without MKL.
    """
    if not mkl_packing_available():
        return 0
    found = _linears(model)
    if not found:
        return 0
    if not (choose and onednn_available()):
        _swap(model, found, Kernels())
        return len(found)
    key = (torch.get_num_threads(), tuple(tuple(child.weight.shape) for _, _, child in found))
    with _choosing:
        if key in _chosen:
            _swap(model, found, _chosen[key])              # packed once, with the kernels already chosen
            return len(found)
        modules = _swap(model, found, Kernels())
        try:
            _chosen[key] = decide(measure_kernels(model, modules))
        except Exception:   # noqa: BLE001 - a forward that needs more than ids, a refusing oneDNN: MKL's pair
            _chosen[key] = Kernels()
        for m in modules:
            m.use(_chosen[key])
        model.linear_kernels = _chosen[key]
    return len(found)


def _swap(model: nn.Module, found: list, kernels: Kernels) -> list[PackedLinear]:
    """Replace each found `nn.Linear` by a `PackedLinear` running `kernels`, recorded on the model."""
    with torch.no_grad():
        modules = [PackedLinear(child.weight, child.bias, kernels) for _, _, child in found]
        for (parent, name, _), packed in zip(found, modules):
            setattr(parent, name, packed)
    model.linear_kernels = kernels
    return modules
