// The V8 heap settings the gateway runs with. Measured with 100,000 live tokens cached (bench):
// resident memory 198 MiB with V8's defaults, 126 MiB with these, at the same /action throughput
// within this machine's run-to-run noise. A young generation of 2 x 4 MB (default up to 2 x 16)
// and an old generation allowed to grow 25 % over its live size before the next full collection
// (default: up to 4x) keep garbage from piling up between collections.
// The shebang of main.ts, the systemd unit's ExecStart and the bench all use this list; a test
// checks the first two.
export const GATEWAY_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=4', '--heap-growing-percent=25'];
