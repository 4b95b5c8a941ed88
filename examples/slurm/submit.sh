#!/bin/bash
# Submit the shards of SCRIPT.py as a job array and a merge that waits for all of them:
#   bash examples/slurm/submit.sh examples/sweep_shapes.py --quick
set -euo pipefail
here=$(dirname "$0")
mkdir -p runs
jid=$(sbatch --parsable "$here/profile_array.sbatch" "$@")
jid=${jid%%;*}  # --parsable prints "jobid" or "jobid;cluster"
# afterany: the merge runs when every task has ended, failed ones too (afterok would skip it).
sbatch --dependency="afterany:$jid" "$here/merge.sbatch" "$jid"
echo "shards: job $jid; merged run: runs/$jid/merged"
