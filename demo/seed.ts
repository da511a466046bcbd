// The demo's data: a team, a layout with every control type and a crowd (aggregates, cues, zones)
// on two pages, an API key and an administrator. A key's secret is stored nowhere in Redis, so the
// demo keeps the key it made, with the administrator's password, in a file of its own
// (var/demo.json, readable by its owner only): a second start on the same Redis reuses them, and the
// tokens already handed out keep working.
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { generatePassword } from '../gateway/admin/passwords.js';
import type { Stores } from '../gateway/store/stores.js';
import { DEMO_LAYOUT_FILE, DEMO_LAYOUT_ID } from '../schemas/demo-layout.js';
const DEMO_TEAM_NAME = 'Demo team';
const DEMO_KEY_NAME = 'demo walk-through';
export const DEMO_ADMIN_EMAIL = 'admin@demo.example';

export interface DemoSeed {
  teamId: string;
  layoutId: string;
  apiKey: string;
  keyId: string;
  /** the demo administrator's password */
  adminPassword: string;
  /** true when this start created the team and layout */
  created: boolean;
  /** true when the key and password are the previous start's (its tokens keep working) */
  reused: boolean;
}

/** What the demo keeps between starts, for the Redis it was made on. */
interface Saved {
  redis: string;
  keyId: string;
  apiKey: string;
  adminPassword: string;
}

function readSaved(file: string, redis: string): Saved | null {
  try {
    const s = JSON.parse(readFileSync(file, 'utf8')) as Partial<Saved>;
    return s.redis === redis && typeof s.keyId === 'string' && typeof s.apiKey === 'string' && typeof s.adminPassword === 'string' ? (s as Saved) : null;
  } catch {
    return null; // none yet, or not ours: the demo makes new ones
  }
}

/**
 * Seeds the demo on first start; on a later start against the same Redis (`redis` names it: URL
 * without password, and prefix), reuses the team, layout, key and password when Redis still has
 * them. `file` is where the key's secret and the password are kept.
 */
export async function seedDemo(stores: Stores, file: string, redis: string): Promise<DemoSeed> {
  let team = (await stores.teams.list()).find((t) => t.name === DEMO_TEAM_NAME);
  const created = !team;
  if (!team) {
    team = await stores.teams.create(DEMO_TEAM_NAME);
    await stores.layouts.import(team.teamId, JSON.parse(readFileSync(DEMO_LAYOUT_FILE, 'utf8')));
  }
  const saved = readSaved(file, redis);
  const keys = await stores.apiKeys.listByTeam(team.teamId);
  const kept = saved && keys.find((k) => k.keyId === saved.keyId && k.revokedAt === null);
  const admin = await stores.admins.get(DEMO_ADMIN_EMAIL);
  if (kept && admin) return { teamId: team.teamId, layoutId: DEMO_LAYOUT_ID, apiKey: saved.apiKey, keyId: saved.keyId, adminPassword: saved.adminPassword, created, reused: true };
  for (const k of keys) if (k.name === DEMO_KEY_NAME && k.revokedAt === null) await stores.apiKeys.revoke(k.keyId);
  const key = await stores.apiKeys.create(team.teamId, { name: DEMO_KEY_NAME });
  const adminPassword = generatePassword();
  if (admin) await stores.admins.resetPassword(DEMO_ADMIN_EMAIL, adminPassword);
  else await stores.admins.create(team.teamId, DEMO_ADMIN_EMAIL, adminPassword);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify({ redis, keyId: key.keyId, apiKey: key.apiKey, adminPassword } satisfies Saved)}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return { teamId: team.teamId, layoutId: DEMO_LAYOUT_ID, apiKey: key.apiKey, keyId: key.keyId, adminPassword, created, reused: false };
}
