// The demo's data: a team, a layout with all six control types on two pages, and an API key.
// The key's secret is never stored, so each start revokes the previous demo key and issues a new one.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generatePassword } from '../admin/passwords.js';
import type { Stores } from '../store/stores.js';

export const DEMO_LAYOUT_FILE = join(dirname(fileURLToPath(import.meta.url)), 'demo-layout.json');
export const DEMO_LAYOUT_ID = 'demo-show';
const DEMO_TEAM_NAME = 'Demo team';
const DEMO_KEY_NAME = 'demo walk-through';
export const DEMO_ADMIN_EMAIL = 'admin@demo.example';

export interface DemoSeed {
  teamId: string;
  layoutId: string;
  apiKey: string;
  keyId: string;
  /** the demo administrator's password for this start */
  adminPassword: string;
  /** true when this start created the team and layout */
  created: boolean;
}

export async function seedDemo(stores: Stores): Promise<DemoSeed> {
  let team = (await stores.teams.list()).find((t) => t.name === DEMO_TEAM_NAME);
  const created = !team;
  if (!team) {
    team = await stores.teams.create(DEMO_TEAM_NAME);
    await stores.layouts.import(team.teamId, JSON.parse(readFileSync(DEMO_LAYOUT_FILE, 'utf8')));
  }
  for (const k of await stores.apiKeys.listByTeam(team.teamId)) {
    if (k.name === DEMO_KEY_NAME && k.revokedAt === null) await stores.apiKeys.revoke(k.keyId);
  }
  const key = await stores.apiKeys.create(team.teamId, { name: DEMO_KEY_NAME });
  const adminPassword = generatePassword();
  if (await stores.admins.get(DEMO_ADMIN_EMAIL)) await stores.admins.resetPassword(DEMO_ADMIN_EMAIL, adminPassword);
  else await stores.admins.create(team.teamId, DEMO_ADMIN_EMAIL, adminPassword);
  return { teamId: team.teamId, layoutId: DEMO_LAYOUT_ID, apiKey: key.apiKey, keyId: key.keyId, adminPassword, created };
}
