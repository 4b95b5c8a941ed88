# Source this on a bare GPU machine, from the repository root, before running nsightwrap there:
#   . scripts/gpu/env.sh
# It installs the wheels and Debian packages brought along in .whl/ (or packed with other wheel
# folders into .wheels.tar.xz by scripts/gpu/pack_wheels.py) and .debs/ (the machine has no
# network; see docs/development.md), puts the checkout on PYTHONPATH, and puts nsys on PATH with
# the libdw it needs to import its own captures. NSIGHTWRAP_SITE and NSIGHTWRAP_WHEELS_DIR move
# its two folders under /tmp.
set -u
site=${NSIGHTWRAP_SITE:-/tmp/nsightwrap-site}
wheels=.
# .wheels.tar.xz (scripts/gpu/pack_wheels.py) holds .whl/ and other wheel folders in less room.
if [ -f .wheels.tar.xz ]; then
  wheels=${NSIGHTWRAP_WHEELS_DIR:-/tmp/nsightwrap-wheels}
  mkdir -p "$wheels" && tar -C "$wheels" -xJf .wheels.tar.xz || echo "env.sh: unpacking .wheels.tar.xz failed" >&2
fi
if [ -d "$wheels/.whl" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" "$wheels"/.whl/*.whl \
    || echo "env.sh: installing .whl/*.whl failed" >&2
fi
extra=${NSIGHTWRAP_EXTRA_WHEELS:-}
[ -n "$extra" ] && [ ! -d "$extra" ] && [ -d "$wheels/$extra" ] && extra="$wheels/$extra"
if [ -n "$extra" ] && [ -d "$extra" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" "$extra"/*.whl \
    || echo "env.sh: installing $extra failed" >&2
fi
export PYTHONPATH="$site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
if ls .debs/libdw1_*.deb >/dev/null 2>&1; then
  mkdir -p /tmp/dw && dpkg -x .debs/libdw1_*.deb /tmp/dw
  export LD_LIBRARY_PATH="/tmp/dw/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
for d in /opt/nvidia/nsight-compute/*/host/target-linux-x64; do
  [ -x "$d/nsys" ] && export PATH="$PATH:$d"
done
export PYTHONUNBUFFERED=1
