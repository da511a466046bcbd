#!/usr/bin/env bash
# The quick gate before a commit: typecheck and lint (the tests run with npm test).
set -euo pipefail
cd "$(dirname "$0")/.."
npm run --silent typecheck
npm run --silent lint
