"""Hypothesis strategies for the machines' own tests (event strategies are the kit's)."""

from __future__ import annotations

from hypothesis import strategies as st

from agentfsm.states import InputPolicy, LoopState

policies = st.sampled_from(list(InputPolicy))
loop_outcomes = st.sampled_from([None, *LoopState])
