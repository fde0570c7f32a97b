"""The ranges a catalog figure must lie in, stated once: the catalog files
(`catalogs/*.yaml`), their cached copy (catalog/cache.py) and a spec's overrides of
the same figure (`overrides:`, `ownership:`) are all checked against these, so
nothing a cache entry or an override holds can reach the physics that a catalog file
could not. The ranges lie beyond anything a real deployment reaches; they stop unit
slips and nonsense (a price of 1e308 that overflows the solver's integer costs)."""

from __future__ import annotations

from solver.catalog.types import Bound

MEMORY_BYTES = Bound(1e6, 1e15, quantity="bytes", shown="1 MB to 1,000 TB (1e6 to 1e15 bytes)")
BANDWIDTH = Bound(1e9, 1e15, quantity="bytes_per_s", shown="1 GB/s to 1,000 TB/s (1e9 to 1e15 bytes/s)")
FLOPS = Bound(1e9, 1e18, quantity="flop_per_s", shown="1 GFLOP/s to 1 EFLOP/s (1e9 to 1e18 FLOP/s)")
PARAMS = Bound(1e6, 1e13, shown="1e6 to 1e13 (a million to ten trillion)")
KERNEL_SHARE = Bound(0.01, 1.5)
SHARE = Bound(0.001, 1)
MATMUL_SHARE = Bound(0.001, 1.5)
"""Measured matmuls over the datasheet's dense peak: a GeForce card's peak is quoted at its
rated boost clock, and the card runs its matmuls faster than that (devices.yaml rtx-3090)."""
BOARD_POWER_W = Bound(1, 100_000, shown="1 W to 100 kW")

GPU_HOUR_USD = Bound(0.001, 1000, shown="$0.001 to $1,000 per GPU-hour")
INSTANCE_HOUR_USD = Bound(0.001, 100_000, shown="$0.001 to $100,000 per instance-hour")
GPU_PURCHASE_USD = Bound(1, 1e7, shown="$1 to $10,000,000")
LIFE_YEARS = Bound(0.1, 30, shown="0.1 to 30 years")
UTILISATION = Bound(0.01, 1)
PUE = Bound(1, 5)
USD_PER_KWH = Bound(0, 10, shown="$0 to $10 per kWh")
HOSTING_USD = Bound(0, 100_000, shown="$0 to $100,000 per kW-month")
