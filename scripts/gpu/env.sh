# Source this on a bare GPU machine, from the repository root, before running nsightwrap there:
#   . scripts/gpu/env.sh
# It installs the wheels and Debian packages brought along in .whl/ and .debs/ (the machine has no
# network; see docs/development.md), puts the checkout on PYTHONPATH, and puts nsys on PATH with
# the libdw it needs to import its own captures.
set -u
site=/tmp/nsightwrap-site
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" .whl/*.whl \
    || echo "env.sh: installing .whl/*.whl failed" >&2
fi
if [ -n "${NSIGHTWRAP_EXTRA_WHEELS:-}" ] && [ -d "$NSIGHTWRAP_EXTRA_WHEELS" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" "$NSIGHTWRAP_EXTRA_WHEELS"/*.whl \
    || echo "env.sh: installing $NSIGHTWRAP_EXTRA_WHEELS failed" >&2
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
