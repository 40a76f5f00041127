"""Serving runs: over the A2A protocol, and as OpenTelemetry spans.

`agentfsm.serve.a2a` serves an agent to other agents; `agentfsm.serve.otel` traces it. Each
needs its extra (``agentfsm[a2a]``, ``agentfsm[otel]``), so this package imports neither:
``import agentfsm`` never needs an extra.
"""
