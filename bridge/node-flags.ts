// The V8 heap setting the bridge runs with: an old generation of at least 96 MB before V8 starts a
// full collection (V8 keeps a configured initial size as the floor of its limit: "allow V8 to skip
// full GCs below that threshold", heap.cc). With V8's default the limit follows the small live
// heap of an idle bridge, so draining a backlog starts incremental marking at once, and while it
// marks, each young collection copies and promotes what it would otherwise drop: 125 to 170 ms of
// GC a 200,000-entry drain, pauses up to 9 ms, tick lateness p99 3.3 to 11.5 ms. With this flag:
// 17 to 26 ms, pauses of at most 1.3 ms, p99 0.61 to 1.39 ms for a bridge that was running, 1.74
// to 2.60 just after a start (bench -- bridge, its drain written from another process, 2026-11-23;
// 64 MB was not enough). On Node 22 the same: a warm drain's p99 0.91 ms against 2.94, GC 14 ms
// against 118. The shebang of main.ts, the systemd unit's ExecStart and the benches use this list;
// a test checks the first two, and what the flag does to a heap that grows as in a drain.
//
// And `--single-threaded-gc`: V8 collects on the event loop's thread alone. Without it V8 hands part
// of each young collection to its helper threads and the event loop waits for them to finish; the
// bridge keeps those helpers off the send path's CPU (thread-priority.ts), where whatever else runs
// may delay them. In bench -- bridge (Redis and the UDP sink on the helpers' CPU, 2026-11-24) young
// collections took up to 42 ms at 100 Hz and 31 ms at 1,000 Hz without it, at most 2.1 ms with it
// (and the helpers at the normal policy), over 8 and 3 drains each. The gateway runs with it too.
export const BRIDGE_NODE_FLAGS: readonly string[] = ['--initial-heap-size=96', '--single-threaded-gc'];
