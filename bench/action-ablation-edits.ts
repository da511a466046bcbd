// The steps bench/action-ablation.ts takes out of POST /action, one at a time: each is a text edit of the
// compiled gateway in dist/ (so the production code carries no bench switch), or a change of Node
// flags. test/bench/ablation-edits.test.ts checks that every edit still applies to the build, so
// the accounting cannot quietly stop measuring a step when the code under it changes.
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { GATEWAY_NODE_FLAGS } from '../gateway/node-flags.js';

export interface Edit {
  file: string;
  find: string;
  replace: string;
}

export interface Ablation {
  name: string;
  step: string;
  /** removed: B lacks the step (A − B is its cost); doubled: B does it twice, added: B does it and A does not (B − A is its cost) */
  how: 'removed' | 'doubled' | 'added' | 'flags';
  edits: Edit[];
  nodeFlags?: string[];
}

const SERVER = 'gateway/http/server.js';
const REPLY = 'gateway/http/reply.js';
const EXCHANGE = 'gateway/http/exchange.js';
const ENTRY_BATCH = 'gateway/actions/entry-batch.js';
const ACTION = 'gateway/routes/action.js';
const INTAKE = 'gateway/actions/intake.js';
const LOG = 'gateway/actions/action-log.js';
const REDIS = 'runtime/redis.js';

/** Every step of /action above the bare reply that can be taken out alone. */
export const ABLATIONS: Ablation[] = [
  {
    name: 'framing-check',
    step: 'duplicate Content-Length check: one req.forEach pass over every header (which also captures the route\'s), against a getHeader per captured header',
    how: 'removed',
    edits: [{ file: SERVER, find: 'const contentLengths = this.readHeaders(req, route, wanted, headers);', replace: 'for (const h of wanted) headers[h] = req.getHeader(h); const contentLengths = 0;' }],
  },
  {
    name: 'request-id',
    step: 'request id: read x-request-id, check it, or make one',
    how: 'removed',
    edits: [{ file: SERVER, find: 'const id = given && REQUEST_ID.test(given) ? given : requestId();', replace: "const id = 'r';" }],
  },
  {
    name: 'header-capture',
    step: 'header reads: a fresh 13-header record per request, one getHeader per captured header (6 for /action)',
    how: 'doubled',
    edits: [{ file: SERVER, find: 'const headers = new CapturedHeaders();', replace: 'const headers0 = new CapturedHeaders(); for (const h of wanted) headers0[h] = req.getHeader(h); const headers = new CapturedHeaders();' }],
  },
  {
    name: 'token-cache',
    step: 'token: Bearer parse and verified-token cache lookup (LRU get, fingerprint)',
    how: 'removed',
    edits: [{ file: ACTION, find: 'claims = d.tokens.verify(bearerToken(head.headers.authorization));', replace: 'claims = globalThis.__claims ?? d.tokens.verify(bearerToken(head.headers.authorization)); if (!(claims instanceof Promise)) globalThis.__claims = claims;' }],
  },
  {
    name: 'json-parse',
    step: 'body to text and JSON.parse (with the UTF-8 check)',
    how: 'doubled',
    edits: [{ file: ACTION, find: 'body = parseJson(raw);', replace: 'parseJson(raw); body = parseJson(raw);' }],
  },
  {
    name: 'schema',
    step: 'schema check of the body (ajv)',
    how: 'removed',
    edits: [{ file: ACTION, find: 'if (!validateActionRequest(body, WHOLE_DOCUMENT))', replace: 'if (false)' }],
  },
  {
    name: 'value',
    step: 'value check against the control (ajv per type, options)',
    how: 'removed',
    edits: [{ file: INTAKE, find: 'const { control, value } = checkAction(layout, body);', replace: 'const control = layout.controls.get(body.lid), value = body.value ?? null;' }],
  },
  {
    name: 'uuid',
    step: 'entry id (writeEntryId: a v4 UUID from a random pool, written into the entry)',
    how: 'removed',
    edits: [{ file: ENTRY_BATCH, find: 'writeEntryId(buf, at);', replace: 'buf.fill(0x30, at, at + 36);' }],
  },
  {
    name: 'encode',
    step: 'entry encoding (written in place from parts made once per control, and the value\'s JSON.stringify)',
    how: 'doubled',
    edits: [
      {
        file: ENTRY_BATCH,
        find: '    addAction(layoutId, control, value, ts) {',
        replace: '    addAction(layoutId, control, value, ts) { this.addActionOnce(layoutId, control, value, ts); this.end = this.starts.pop(); this.texts.pop(); this.addActionOnce(layoutId, control, value, ts); }\n    addActionOnce(layoutId, control, value, ts) {',
      },
    ],
  },
  {
    name: 'redis',
    step: "batching and the Lua call's share (Redis's answer, ioredis, the socket)",
    how: 'removed',
    edits: [{ file: LOG, find: 'this.send(layoutId, entries, i, to, waiters.length <= MAX_BATCH ? waiters : waiters.slice(i, to));', replace: 'for (const w of waiters.slice(i, to)) w.stored();' }],
  },
  {
    name: 'metrics',
    step: 'metrics: the per-request observe (route, status, duration) and the action counter',
    how: 'removed',
    edits: [
      { file: EXCHANGE, find: 'this.hooks.observe?.(this.route.pattern, reply.status, (performance.now() - this.started) / 1000, code);', replace: '' },
      { file: ACTION, find: "(this.acceptedSeries ??= this.metrics.action(this.type, 'accepted')).inc();", replace: '' },
    ],
  },
  {
    name: 'cors',
    step: 'CORS reply headers (2 headers)',
    how: 'removed',
    edits: [{ file: EXCHANGE, find: 'this.extra = route.replyHeaders ? route.replyHeaders(this) : NO_HEADERS;', replace: 'this.extra = NO_HEADERS;' }],
  },
  {
    name: 'reply-body',
    step: 'reply body: JSON.stringify of {success: true} per request, put back (the 200 body is encoded once)',
    how: 'added',
    edits: [{ file: REPLY, find: 'res.end(reply.json, close);', replace: 'res.end(JSON.stringify(reply.body), close);' }],
  },
  {
    name: 'reply-head',
    step: 'reply head: status line, CORS headers and content type as four calls into uWS, put back (one write made once)',
    how: 'added',
    edits: [{ file: REPLY, find: 'const head = headOf(reply, common);', replace: 'const head = undefined;' }],
  },
  {
    name: 'auto-pipelining',
    step: "ioredis's auto-pipelining (a Pipeline per event-loop turn) for the group commit's one call a turn",
    how: 'added',
    edits: [{ file: REDIS, find: 'enableAutoPipelining: false,', replace: 'enableAutoPipelining: true,' }],
  },
  {
    name: 'single-threaded-gc',
    step: '--single-threaded-gc (the unit) against V8\'s GC helper threads (parallel scavenge, concurrent marking)',
    how: 'flags',
    edits: [],
    nodeFlags: GATEWAY_NODE_FLAGS.filter((f) => f !== '--single-threaded-gc'),
  },
  {
    name: 'gc',
    step: 'young-generation GC: semi-space 8 MB (the unit) against 64 MB',
    how: 'flags',
    edits: [],
    nodeFlags: [...GATEWAY_NODE_FLAGS.filter((f) => !f.startsWith('--max-semi-space-size')), '--max-semi-space-size=64'],
  },
];

const LIVE_FRAMES = 'gateway/live/action-frames.js';

/**
 * The socket action's steps above its transport (bench/live-action-ablation.ts), each build taking
 * out one more: what each build's CPU per action lacks against the one before it is that step's cost.
 */
export const LIVE_ABLATIONS: Ablation[] = [
  {
    name: 'same-entry',
    step: "the entry's making: every action appended as one constant text (no id, JSON or time made per action; still written into the call's bytes)",
    how: 'removed',
    edits: [
      {
        file: INTAKE,
        find: 'd.actions.appendAction(layout.layoutId, control, value, at, waiter)',
        replace: `d.actions.appendFor(layout.layoutId, '{"v":1,"id":"0b7a6d1e-3c1f-4c39-9d7e-5a1f7f3b2c10","layoutId":"demo","lid":2,"address":"/002","type":"Slider","value":0.5,"ts":1764400000000}', waiter)`,
      },
    ],
  },
  {
    name: 'one-entry-a-call',
    step: "each entry's argument as well: a call carries its batch's first entry only (one argument, one XADD) and its answer stands for every action of the batch",
    how: 'removed',
    edits: [
      { file: LOG, find: 'to - from, entries.bytes(from, to)', replace: '1, entries.bytes(from, from + 1)' },
      { file: LOG, find: 'appended.charCodeAt(i) === 0x31', replace: 'appended.charCodeAt(0) === 0x31' },
    ],
  },
  {
    name: 'no-redis',
    step: "the Lua call as well: each batch answered on the next turn as if stored (ioredis's encoding and write, Redis's reply)",
    how: 'removed',
    edits: [
      {
        file: LOG,
        find: "const call = runScriptOnBulk(this.redis, 'appendActions', [this.keys.actions(layoutId)], [this.trim.maxLen, this.minId(), ACTION_FIELD], ",
        replace: "const call = new Promise((r) => setImmediate(() => r(['1'.repeat(to - from), '']))); void (",
      },
    ],
  },
  {
    name: 'ack-in-handler',
    step: "the group commit and the answers' queue as well: the ack sent from the frame's handler once every check passed",
    how: 'removed',
    edits: [
      { file: INTAKE, find: 'return d.actions.', replace: 'return waiter.stored(); d.actions.' },
      { file: LIVE_FRAMES, find: 'this.answers.push(this.ws, this.data, ackFrame(this.ref));', replace: 'this.ws.send(ackFrame(this.ref));' },
    ],
  },
  {
    name: 'parse-and-ack',
    step: "the checks as well (schema, layout, budget, the control's value): the frame parsed and acked with its ref, the floor's job in the gateway's socket",
    how: 'removed',
    edits: [{ file: LIVE_FRAMES, find: 'frame = JSON.parse(decoder.decode(message));', replace: 'frame = JSON.parse(decoder.decode(message)); ws.send(`{"op":"ack","ref":${JSON.stringify(String(frame.ref))}}`); return;' }],
  },
];

/** The live ablations are cumulative: each build has the edits of those before it, and its own. */
export function cumulative(list: readonly Ablation[]): Ablation[] {
  return list.map((a, i) => ({ ...a, edits: list.slice(0, i + 1).flatMap((x) => x.edits) }));
}

/**
 * A copy of `dist`'s gateway under `root` with the ablation's edits; returns its gateway/main.js.
 * Throws when an edit no longer applies.
 */
export function ablatedCopy(dist: string, root: string, a: Ablation): string {
  rmSync(root, { recursive: true, force: true });
  mkdirSync(root, { recursive: true });
  for (const dir of ['gateway', 'runtime', 'schemas']) cpSync(join(dist, dir), join(root, 'dist', dir), { recursive: true });
  for (const e of a.edits) writeFileSync(join(root, 'dist', e.file), editedText(join(root, 'dist'), a, e));
  return join(root, 'dist', 'gateway', 'main.js');
}

/** The text of `dist`'s file with the edit made; throws, naming the step, when its text is not there exactly once. */
export function editedText(dist: string, a: Ablation, e: Edit): string {
  const text = readFileSync(join(dist, e.file), 'utf8');
  const at = text.indexOf(e.find);
  if (at < 0 || text.indexOf(e.find, at + 1) >= 0) throw new Error(`ablation ${a.name}: "${e.find}" is not in ${e.file} exactly once; update bench/action-ablation-edits.ts`);
  return text.replace(e.find, e.replace);
}
