#!/usr/bin/env bash
# Installs the Debian packages a job needs when they are missing.
#   ensure-system-packages.sh start   the demo: redis-server
#   ensure-system-packages.sh test    the test suite: redis-server and the real peers the tests talk to
#   ensure-system-packages.sh bench   the benchmarks: redis-server and wrk (a C load generator)
#   ensure-system-packages.sh package the bridge's Debian package: dpkg-deb
# As root it uses apt-get; otherwise it stops and says what to install.
set -euo pipefail
job=${1:-start}

# command on PATH -> Debian package that provides it
declare -A need=([redis-server]=redis-server)
if [ "$job" = package ]; then
  need=([dpkg-deb]=dpkg)
fi
if [ "$job" = test ]; then
  need+=([redis-cli]=redis-tools) # redis-cli --cluster create joins the tests' Redis Cluster
  need+=([ss]=iproute2)         # the workers test sees which processes listen on the gateway's port
  need+=([ip]=iproute2)         # the mDNS test runs a bridge in a network namespace of its own
  need+=([curl]=curl)           # the npm start test pastes the walk-through's curl commands into bash
  need+=([oscdump]=liblo-tools) # an independent OSC decoder for the bridge tests
  need+=([systemd-analyze]=systemd) # verify and security-rate the unit files
  need+=([python3]=python3)     # the fake NOTIFY_SOCKET of the sd_notify tests
  need+=([chromium]=chromium)   # the admin page's end-to-end tests (driven by playwright-core; never a downloaded browser)
  need+=([promtool]=prometheus) # promtool check metrics on both /metrics outputs
  need+=([dpkg-deb]=dpkg)       # the bridge's Debian package is built, installed into a scratch root and removed
  need+=([faketime]=faketime)   # a gateway or a bridge whose host clock is seconds off
  need+=([strace]=strace)       # holds Redis's fsyncs: a Redis on a slow disk, killed under load
  need+=([nginx]=nginx)         # deploy/nginx/audience-control.conf in front of two gateways, over TLS
  need+=([haproxy]=haproxy)     # deploy/haproxy/audience-control.cfg, the same
  need+=([podman]=podman)       # deploy/Containerfile built and run as a pod
  need+=([runc]=runc)           # podman's runtime here (crun refuses this host's hybrid cgroups)
  need+=([catatonit]=catatonit) # the pause process of a pod's infra container
  need+=([perf]=linux-perf)     # bench:lab -- live-perf's sampler, checked against a real process
  need+=([olad]=ola)            # a real lighting desk (olad, ola_streaming_client) sending sACN to the bridge, and the rig receiving its DMX
  need+=([tshark]=tshark)       # Wireshark's dissectors decode the bridge's sACN and Art-Net frames
fi
if [ "$job" = bench ]; then
  need+=([redis-cli]=redis-tools) # the scaling bench starts a Redis Cluster
  need+=([wrk]=wrk)             # saturates a server from one core, where autocannon cannot
  need+=([perf]=linux-perf)     # bench:lab -- live-perf samples each server, native code and the kernel included
fi

missing=()
for cmd in "${!need[@]}"; do
  command -v "$cmd" >/dev/null 2>&1 || missing+=("${need[$cmd]}")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "audience-control: missing system packages: ${missing[*]}" >&2
  echo "Install them (Debian: sudo apt-get install ${missing[*]}) and run this again." >&2
  exit 1
fi
echo "audience-control: installing ${missing[*]} with apt-get" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
