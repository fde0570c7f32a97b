"""Why the plan: binding targets, sensitivity, runners-up, exclusions, conflicts."""
