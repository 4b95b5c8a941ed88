#!/usr/bin/env bash
# Pack a run directory to come back from the GPU machine: the nsys export's GPU_METRICS cut to the
# clocks (GPC, SYS), the SQLite exports and ncu reports gzipped (nsightwrap reads .gz as they are),
# the .nsys-rep files dropped.   bash scripts/gpu/compact_run.sh RUN_DIR
set -u
d=${1:?RUN_DIR}
sq="$d/nsys/report.sqlite"
if [ -f "$sq" ]; then
  python3 - "$sq" <<'PY'
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
try:
    ids = [r[0] for r in con.execute("SELECT DISTINCT metricId FROM TARGET_INFO_GPU_METRICS WHERE metricName LIKE 'GPC Clock%' OR metricName LIKE 'SYS Clock%'")]
    n = con.execute("SELECT COUNT(*) FROM GPU_METRICS").fetchone()[0]
    con.execute(f"DELETE FROM GPU_METRICS WHERE metricId NOT IN ({','.join(map(str, ids)) or -1})")
    con.commit(); con.execute("VACUUM")
    print(sys.argv[1], "GPU_METRICS rows", n, "kept", con.execute("SELECT COUNT(*) FROM GPU_METRICS").fetchone()[0])
except sqlite3.Error as exc:
    print(sys.argv[1], "no GPU metrics:", exc)
PY
  gzip -9 "$sq"
fi
for r in "$d"/*/report.ncu-rep; do [ -f "$r" ] && gzip -9 "$r"; done
[ -f "$d/plain/clock.sqlite" ] && gzip -9 "$d/plain/clock.sqlite"
find "$d" -name '*.nsys-rep' -delete
exit 0
