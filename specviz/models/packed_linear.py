"""CPU weight layout for decoding: each Linear gets MKL's pre-packed GEMM for multi-token passes.

Why (measured on this project's 2-core x86 CPU, SmolLM2-135M in fp32, KV cache of 200 tokens):
PyTorch's default `F.linear` for a handful of rows (2 < m <= 9, the size of a verify pass)
takes a GEMM path that re-packs the whole weight matrix on every call, so verifying 5 tokens
cost 1.93x a one-token step (v = 1.93), against the ~1.1 a memory-bound pass should cost. With
the weights packed once at load time (`mkl._mkl_reorder_linear_weight`, the same kernels
TorchInductor uses for frozen CPU models) the same pass costs v = 1.32, and one-token steps keep
the GEMV path on a column-major copy of the weight (slightly faster than row-major). Logits agree
with the default layout to about 4e-5 (different summation order), argmax unchanged.

Both lanes of a race and transformers' own `generate()` use the same packed modules, so every
comparison stays like for like. Where MKL is missing (ARM, macOS), `pack_linears` changes nothing.
The packed copy doubles the memory of the linear layers; the state dict is unchanged.
"""
from __future__ import annotations

import torch
from torch import nn

BATCH_HINT = 8   # the row count MKL tunes its packing for; any row count works with the result


def mkl_packing_available() -> bool:
    """True when this torch build has MKL's packed GEMM (x86 builds with MKL)."""
    return torch.backends.mkl.is_available() and hasattr(torch.ops.mkl, "_mkl_linear")


class PackedLinear(nn.Module):
    """A drop-in `nn.Linear` (same `weight`/`bias` names, inference only) with a packed copy.

    Rows m == 1 go through GEMV on the column-major weight; m > 1 through the packed GEMM.
    """

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None = None):
        super().__init__()
        out_features, in_features = weight.shape
        self.in_features, self.out_features = in_features, out_features
        # Column-major storage of the same (out, in) matrix: F.linear then runs x @ W^T on a
        # contiguous W^T, the fast GEMV for one row.
        self.weight = nn.Parameter(weight.detach().t().contiguous().t(), requires_grad=False)
        self.bias = None if bias is None else nn.Parameter(bias.detach(), requires_grad=False)
        self.packed = torch.ops.mkl._mkl_reorder_linear_weight(weight.detach().contiguous().float(), BATCH_HINT)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if torch.compiler.is_compiling():
            # The fast path (torch.compile) lowers its own linears; MKL's packed op has no lowering.
            return nn.functional.linear(x, self.weight.contiguous(), self.bias)
        rows = x.numel() // self.in_features
        if rows <= 1:
            return nn.functional.linear(x, self.weight, self.bias)
        flat = x.reshape(rows, self.in_features)
        out = torch.ops.mkl._mkl_linear(flat, self.packed, self.weight, self.bias, rows)
        return out.view(*x.shape[:-1], self.out_features)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, packed for MKL"


def pack_linears(model: nn.Module) -> int:
    """Swap every fp32 `nn.Linear` of a CPU model for a `PackedLinear`, in place; return how many.

    Tied weights (an output head sharing the embedding matrix) get their own packed copy;
    the embedding keeps its matrix. Does nothing off the CPU, for other dtypes, or without MKL.
    """
    if not mkl_packing_available():
        return 0
    swapped = 0
    with torch.no_grad():
        for parent in list(model.modules()):
            for name, child in list(parent.named_children()):
                if (type(child) is nn.Linear and child.weight.device.type == "cpu"
                        and child.weight.dtype == torch.float32):
                    setattr(parent, name, PackedLinear(child.weight, child.bias))
                    swapped += 1
    return swapped
