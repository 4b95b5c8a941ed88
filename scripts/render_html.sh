#!/usr/bin/env bash
# Render an nsightwrap HTML report to a PNG with headless Chromium, to look at it.
#   usage: scripts/render_html.sh REPORT.html [OUT.png] [WIDTHxHEIGHT]
# Needs chromium (Debian/Ubuntu: apt-get install -y chromium). The report is self-contained:
# the flags below turn off every network feature, and the page must still render completely.
set -euo pipefail
html=${1:?usage: scripts/render_html.sh REPORT.html [OUT.png] [WIDTHxHEIGHT]}
out=${2:-${html%.html}.png}
size=${3:-1400,2400}
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$browser" ]; then
  echo "chromium not found: apt-get install -y chromium" >&2
  exit 2
fi
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
"$browser" --headless --no-sandbox --disable-gpu --disable-background-networking \
  --disable-component-update --disable-sync --no-first-run --user-data-dir="$profile" \
  --screenshot="$out" --window-size="${size/x/,}" "file://$(realpath "$html")" 2>/dev/null
echo "$out"
