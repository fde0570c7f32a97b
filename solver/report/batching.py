"""The batching a plan's figures assume, in the words every report prints: TPOT and
TTFT differ by it (isolated leaves the prompts' work out of TPOT), so no report may
leave it unsaid."""

from __future__ import annotations

from solver.catalog import Engine

MEANING = {
    "continuous": "prompts prefilled in chunks inside the decode steps, so TPOT carries their work and TTFT the load",
    "isolated": "each prompt and each decode step alone (the seed's figures): TPOT without the prompts' work",
}


def batching_origin(batching: str, engine: Engine | None, *, traffic: bool = False) -> str:
    """Where the mode came from: the engine's default, the spec, or the traffic model
    ("" where no engine was resolved: a spec no device can run)."""
    if traffic:
        return "the traffic screen and simulator schedule iteration by iteration, as vLLM V1 does"
    if engine is None:
        return ""
    if batching == engine.batching:
        hint = "; workload.batching: isolated gives the seed's figures" if batching == "continuous" else ""
        return f"{engine.display_name}'s default{hint}"
    usual = "continuously" if engine.batching == "continuous" else "each prompt alone"
    return f"workload.batching; {engine.display_name} batches {usual} by default"


def batching_line(batching: str, engine: Engine | None, *, traffic: bool = False, disaggregated: bool = False) -> str:
    """One line: the mode, what it means, where it came from."""
    return "batching: " + batching_text(batching, engine, traffic=traffic, disaggregated=disaggregated)


def batching_text(batching: str, engine: Engine | None, *, traffic: bool = False, disaggregated: bool = False) -> str:
    """batching_line without its label, for a report's table of labelled rows."""
    notes = [batching_origin(batching, engine, traffic=traffic)]
    if disaggregated:
        notes.append("a disaggregated plan's decode pool mixes no prompts into its steps")
    said = "; ".join(n for n in notes if n)
    return f"{batching} — {MEANING.get(batching, batching)}" + (f" ({said})" if said else "")
