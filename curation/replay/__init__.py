"""The ACL 2026 memory-management experiment (RegAgent), replayed through memoryadmin's own services.

world      the synthetic task stream and the initial memory, per seed (pure)
agent      the stand-in RegAgent, replaceable by `--agent module:factory` (pure)
policies   the paper's policies as product configuration: admission policies, sweeps, settings (pure)
stats      mean and sd, the error-inheritance slope, running success (pure)
report     the table, the JSON and the SVG plot (pure)
run        one run of one policy and seed through the services, retrieval and sweeps (an entry point,
           like a management command: it calls services, selectors and sweeps, never the reverse)
"""
