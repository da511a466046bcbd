#!/usr/bin/env bash
# Interleaved A/B of `npm run bench:bridge`: A is another build's dist/, B this one's (build first).
#   bash bench/bridge-ab.sh /path/to/other/dist      (order A B B A, at 100 Hz and at 1,000 Hz)
set -euo pipefail
base="${1:?usage: bench/bridge-ab.sh /path/to/other/dist}"
cd "$(dirname "$0")/.."
run() {
  local which=$1 bin
  shift
  if [ "$which" = A ]; then bin="$base/bench/bridge.js"; else bin=dist/bench/bridge.js; fi
  timeout 150 node "$bin" "$@" 2>/dev/null | grep '^| drain\|^| steady\|^| idle' | sed "s/^/$which $* /"
}
for rate in "--tick-hz 100 --per-tick 1000" "--tick-hz 1000 --per-tick 100"; do
  # shellcheck disable=SC2086
  { run A $rate; run B $rate; run B $rate; run A $rate; }
done
