"""What every stage shares, and nothing else: errors and exit codes, the names the launcher and the
timer agree on (env vars, NVTX naming, file formats), atomic JSON files, ncu's units, and interval
arithmetic. It imports nothing from nsightwrap's other packages."""
