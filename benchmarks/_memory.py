"""Peak resident memory of a call, sampled from a background thread (CPU) or from the CUDA
allocator (GPU)."""

from __future__ import annotations

import threading
import time

import psutil
import torch


def peak_extra_memory(fn, device: str = "cpu", interval: float = 0.002):
    """Run ``fn()``; return (result, seconds, peak extra bytes above the memory in use before)."""
    if device.startswith("cuda"):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        start = time.perf_counter()
        result = fn()
        torch.cuda.synchronize()
        return result, time.perf_counter() - start, torch.cuda.max_memory_allocated() - before
    process = psutil.Process()
    before = process.memory_info().rss
    peak = [before]
    done = threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], process.memory_info().rss)
            time.sleep(interval)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    start = time.perf_counter()
    result = fn()
    elapsed = time.perf_counter() - start
    done.set()
    thread.join()
    peak[0] = max(peak[0], process.memory_info().rss)
    return result, elapsed, peak[0] - before
