#!/usr/bin/env bash
# GPU job: studies/cover_probe/run.sh (which coverage-pass NVTX filters ncu honours).
bash studies/cover_probe/run.sh
