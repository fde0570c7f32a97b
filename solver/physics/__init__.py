"""The four physical limits, one module each: memory (capacity), decode (bandwidth),
prefill (compute) and interconnect; validity says which splits are possible at all."""
