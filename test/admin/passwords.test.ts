// Administrator passwords: scrypt hashes that verify their password only, and the hash an unknown
// email's sign-in is checked against, which no password matches and which costs what a known
// account's check costs (so a sign-in's time does not tell whether the email exists).
import { describe, expect, it } from 'vitest';
import { hashPassword, unmatchableHash, verifyPassword } from '../../gateway/admin/passwords.js';

async function ms(check: () => Promise<boolean>): Promise<number> {
  const t = performance.now();
  await check();
  return performance.now() - t;
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

describe('administrator passwords', () => {
  it('verify the password they were made from, and no other', async () => {
    const stored = await hashPassword('correct horse battery');
    expect(await verifyPassword('correct horse battery', stored)).toBe(true);
    expect(await verifyPassword('correct horse batterY', stored)).toBe(false);
    expect(await verifyPassword('x', 'not a hash')).toBe(false);
  });

  it('check an unknown email against a hash no password matches, at the cost of a real check', async () => {
    const real = await hashPassword('correct horse battery');
    const none = unmatchableHash();
    expect(none.split('$').slice(0, 4)).toEqual(real.split('$').slice(0, 4)); // the same scrypt cost
    expect(none).not.toBe(unmatchableHash());
    for (const guess of ['', 'correct horse battery', 'unknown']) expect(await verifyPassword(guess, none)).toBe(false);
    const [known, unknown]: [number[], number[]] = [[], []];
    for (let i = 0; i < 3; i++) {
      known.push(await ms(() => verifyPassword('wrong', real)));
      unknown.push(await ms(() => verifyPassword('wrong', none)));
    }
    expect(median(unknown) / median(known), `known ${known.map(Math.round).join(', ')} ms, unknown ${unknown.map(Math.round).join(', ')} ms`).toBeGreaterThan(0.5);
  });
});
