// Every String edge case sent through the gateway is either refused with 400 invalid_value or
// reaches the display byte for byte, less its control, bidi and zero-width characters (which no
// String keeps, whatever its control's moderation); none may stop the bridge. The display's bytes are read here
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

  const delivered: [string, string, string][] = [
    ['the empty string', '', ''],
    ['1,024 four-byte characters', '😀'.repeat(1024), '😀'.repeat(1024)],
    ['1,024 two-byte characters', 'é'.repeat(1024), 'é'.repeat(1024)],
    ['1,024 ASCII characters', 'x'.repeat(1024), 'x'.repeat(1024)],
    ['noncharacters', '\ufffe\uffff\u{10ffff}', '\ufffe\uffff\u{10ffff}'],
    ['combining marks', 'e\u0301\u0308', 'e\u0301\u0308'],
    ['JSON and OSC metacharacters', '"\\/ ,#bundle /001 *?[]{}', '"\\/ ,#bundle /001 *?[]{}'],
    ['a replacement character typed as such', '\ufffd', '\ufffd'],
    ['C0 controls and DEL', 'a\u0001\u0009b\u000a\u001f\u007fc', 'a b c'],
    ['C1 controls', 'a\u0085b\u009bc', 'a bc'],
    ['a byte-order mark', '\ufeffBOM', 'BOM'],
    ['line and paragraph separators', 'a\u2028b\u2029c', 'a b c'],
    ['a ZWJ family emoji', '👩‍👩‍👧‍👦', '👩👩👧👦'],
    ['right-to-left override', '\u202eabc', 'abc'],
    ['bidi isolates and marks', '\u2067x\u2069\u200fy\u061c', 'xy'],
    ['zero-width space and word joiner', 'f\u200bu\u2060n', 'fun'],
  ];
  it.each(delivered)('delivers %s byte for byte, less control, bidi and zero-width characters', async (_what, value, shown) => {
    const before = b.sink.messages.length;
    const r = await postAction(g.t, g.token, body(JSON.stringify(value)));
    expect(r.status).toBe(200);
    await eventually(() => b.sink.messages.length > before);
    const raw = b.sink.messages[before]!.raw;
    expect(stringArgument(raw).toString('utf8')).toBe(shown);
    expect(stringArgument(raw).equals(Buffer.from(shown, 'utf8'))).toBe(true);
  });

  it('left the bridge running and dead-lettered nothing', () => {
    expect(b.bridge.counters.layout(g.t.layoutId).deadLettered).toBe(0);
    expect(b.bridge.counters.layout(g.t.layoutId).read).toBe(delivered.length);
  });
});
