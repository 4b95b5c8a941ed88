"""Microbenchmarks of the GPU's ceilings (bandwidth, latency, compute), run with nsightwrap's timer.

Runs inside a process with torch; imports ``core`` and ``timer`` only.
"""
