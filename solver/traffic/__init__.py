"""The traffic stage: between physics and optimise; requests over time, served by
replicas. The physics prices one engine iteration; simulate.py schedules requests
iteration by iteration, as a continuous-batching engine does, and measures what each
request saw (time to first token, time per output token, end to end) and how busy and
queued each replica was."""
