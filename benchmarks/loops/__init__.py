"""The same agent loop written in each framework, for bench_overhead and bench_concurrency.

Every implementation runs the workload of `workload`: a scripted model with zero latency that
asks for one round of three tool calls per iteration for ``n - 1`` iterations and then
answers with a final text; three no-op tools whose arguments are validated against the same
JSON Schema; one event listener that is told of every step. Each module exposes a factory
that returns a runner; a runner performs one whole run of ``n`` iterations.
"""
