"""From a resolved spec to the proven-optimal plan: shapes, candidates, the CP-SAT model, frontiers, fleets."""
