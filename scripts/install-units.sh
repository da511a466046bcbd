#!/usr/bin/env bash
# Installs the systemd units with the Node.js the project was installed with (the `node` on PATH,
# or NODE=/path/to/node), so the services run on the same Node as the build and the tests.
#   scripts/install-units.sh [TARGET_DIR]      (default /etc/systemd/system; then systemctl daemon-reload)
#   NODE=/opt/node-22/bin/node scripts/install-units.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
node="${NODE:-$(command -v node)}"
target="${1:-/etc/systemd/system}"
[ -x "$node" ] || { echo "install-units: $node is not an executable Node.js" >&2; exit 2; }
"$node" -e 'const [maj] = process.versions.node.split("."); if (![20, 22, 24].includes(Number(maj))) { console.error(`install-units: Node ${process.versions.node} is not supported (20, 22 or 24)`); process.exit(2); }'
mkdir -p "$target"
for unit in audience-bridge.service audience-gateway.service; do
  sed "s|/usr/bin/node |$node |g" "$root/systemd/$unit" > "$target/$unit"
  echo "install-units: $target/$unit runs $node ($("$node" --version))"
done
