"""Tools: declaring them, registering them and running a round of calls."""
