#!/usr/bin/env bash
# GPU job: studies/plain_control/run.sh (does the plain pass read a script as its plain run does).
bash studies/plain_control/run.sh
