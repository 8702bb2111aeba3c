"""Host-to-device copies that do not stop the host: the runtime's one way to put host values on a device.

A copy from ordinary (pageable) host memory to a CUDA device first waits for the stream's queued
work to finish: the host stops there until the device is idle, a sync each time a feed's tokens go
down. From pinned (page-locked) memory with `non_blocking=True` the copy is queued like a kernel and
the host goes on (PyTorch's CUDA notes, "pinned memory buffers"). tests/test_syncs.py counts these.
"""
from __future__ import annotations

import torch


def to_device(values: torch.Tensor, device: torch.device) -> torch.Tensor:
    """A host tensor on `device` without a host sync: on CUDA it is staged in pinned memory and copied
    with non_blocking, so the host queues the copy behind the device's work and goes on (a copy from
    pageable memory first waits for the stream to drain: a sync a feed). PyTorch's pinned allocator
    keeps the staging block until the copy has run, so reusing it early is impossible."""
    if device.type == "cuda":
        return values.pin_memory().to(device, non_blocking=True)
    return values.to(device)
