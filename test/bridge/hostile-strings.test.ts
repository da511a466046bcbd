// Every String edge case sent through the gateway is either refused with 400 invalid_value or
// reaches the display byte for byte; none may stop the bridge. The display's bytes are read here
// by hand (OSC 1.0 strings: UTF-8, NUL-terminated, padded to 4), not by the library that wrote them.
import { describe, expect, it } from 'vitest';
import { useBridgeWithSink } from '../helpers/bridge.js';
import { eventually, postAction, useGatewayWithToken } from '../helpers/gateway.js';
import { useRedis } from '../helpers/redis.js';

const redis = useRedis();
const g = useGatewayWithToken(() => redis.get().server.url);
const b = useBridgeWithSink(() => redis.get().server.url, () => ({ prefix: g.t.config.redisPrefix, layoutId: g.t.layoutId }));

/** The OSC string starting at `at`: its bytes and where the next field starts. */
function oscString(b: Buffer, at: number): { bytes: Buffer; next: number } {
  const end = b.indexOf(0, at);
  return { bytes: b.subarray(at, end), next: (end + 4) & ~3 };
}

/** The single string argument of a raw `,s` message, as bytes. */
function stringArgument(raw: Buffer): Buffer {
  const address = oscString(raw, 0);
  const tags = oscString(raw, address.next);
  expect(tags.bytes.toString('latin1')).toBe(',s');
  return oscString(raw, tags.next).bytes;
}

/** The body as JSON text, so escapes such as \u0000 and lone \ud800 travel exactly as written. */
const body = (jsonString: string) => `{"layoutId":"${g.t.layoutId}","lid":5,"type":"String","value":${jsonString}}`;

describe('String values through gateway and bridge', () => {
  it.each([
    ['a NUL inside', '"hi\\u0000there"'],
    ['a NUL alone', '"\\u0000"'],
    ['a lone high surrogate', '"a\\ud800b"'],
    ['a lone low surrogate', '"\\udc00"'],
    ['a high surrogate at the end', '"ab\\ud83d"'],
    ['a reversed surrogate pair', '"\\ude00\\ud83d"'],
    ['1,025 characters', JSON.stringify('x'.repeat(1025))],
    ['1,025 four-byte characters', JSON.stringify('😀'.repeat(1025))],
  ])('refuses %s with 400 invalid_value', async (_what, json) => {
    const r = await postAction(g.t, g.token, body(json));
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('invalid_value');
  });

  const delivered: [string, string][] = [
    ['the empty string', ''],
    ['1,024 four-byte characters', '😀'.repeat(1024)],
    ['1,024 two-byte characters', 'é'.repeat(1024)],
    ['1,024 ASCII characters', 'x'.repeat(1024)],
    ['C0 controls and DEL', '\u0001\u0009\u000a\u001f\u007f'],
    ['a byte-order mark', '\ufeffBOM'],
    ['noncharacters', '\ufffe\uffff\u{10ffff}'],
    ['line and paragraph separators', 'a\u2028b\u2029c'],
    ['combining marks', 'e\u0301\u0308'],
    ['a ZWJ family emoji', '👩‍👩‍👧‍👦'],
    ['right-to-left override', '\u202eabc'],
    ['JSON and OSC metacharacters', '"\\/ ,#bundle /001 *?[]{}'],
    ['a replacement character typed as such', '\ufffd'],
  ];
  it.each(delivered)('delivers %s byte for byte', async (_what, value) => {
    const before = b.sink.messages.length;
    const r = await postAction(g.t, g.token, body(JSON.stringify(value)));
    expect(r.status).toBe(200);
    await eventually(() => b.sink.messages.length > before, 3000);
    const raw = b.sink.messages[before]!.raw;
    expect(stringArgument(raw).equals(Buffer.from(value, 'utf8'))).toBe(true);
  });

  it('left the bridge running and dead-lettered nothing', () => {
    expect(b.bridge.counters.layout(g.t.layoutId).deadLettered).toBe(0);
    expect(b.bridge.counters.layout(g.t.layoutId).read).toBe(delivered.length);
  });
});
