"""bronze.event, as torch.mps.event: Event(enable_timing=False) with record,
wait, query, synchronize and elapsed_time (milliseconds)."""

from ._C import Event

__all__ = ["Event"]
