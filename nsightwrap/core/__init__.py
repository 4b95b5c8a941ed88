"""What every stage shares, and nothing else: errors and exit codes, the names the launcher and the
timer agree on (env vars, NVTX naming, file formats), atomic JSON files, ncu's units, interval
arithmetic, and the run directory read back (``rundir``: its layout, its manifest, the merged
manifest). It imports nothing from nsightwrap's other packages."""
