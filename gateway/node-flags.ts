// The V8 heap settings the gateway runs with. Measured with 100,000 live tokens cached: resident
// memory 198 MiB with V8's defaults, 133 MiB with these. An old generation allowed to grow 25 %
// over its live size before the next full collection (V8 lets it grow up to 4x) keeps the
// garbage of the tokens' first verification from piling up; a young generation of 2 x 8 MB
// (default up to 2 x 16) trims the rest. 2 x 4 MB gave 126 MiB but cost the hot path 12 to 14 %
// more CPU in two of three interleaved wrk pairs; 2 x 8 MB: 0 and 9 % in two pairs (noise here).
// --single-threaded-gc: V8's GC helper threads (parallel scavenging, concurrent marking) compete
// with the main thread when the process has a core to itself, as each of GATEWAY_WORKERS should;
// without them the half-load p99 was 10.6 ms instead of 22 to 24 (a GC trace probe since removed from the tree, ABBA, 2026-11-22) at
// the same CPU per request (the action ablation bench, since removed: 0.0 µs, pairs 0.2, -0.2, -0.1).
// The shebang of main.ts, the systemd unit's ExecStart and the bench all use this list; a test
// checks the first two.
export const GATEWAY_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=8', '--heap-growing-percent=25', '--single-threaded-gc'];
