// Teams: the owners of layouts, API keys and (later) administrators.
import { randomBytes } from 'node:crypto';
import type { RedisClient } from '../../runtime/redis.js';
import { AppError } from '../errors.js';
import type { RedisKeys } from './keys.js';

export interface Team {
  teamId: string;
  name: string;
  createdAt: number;
}

export class TeamStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
  ) {}

  /** One HSET on the registry ({teams}): nothing to half-make. */
  async create(name: string, now = Date.now()): Promise<Team> {
    const trimmed = name.trim();
    if (!trimmed || trimmed.length > 200) throw new AppError('invalid_argument', 'team name must be 1 to 200 characters');
    const team: Team = { teamId: `team_${randomBytes(6).toString('hex')}`, name: trimmed, createdAt: now };
    await this.redis.hset(this.keys.teams(), team.teamId, JSON.stringify({ name: team.name, createdAt: team.createdAt }));
    return team;
  }

  async get(teamId: string): Promise<Team | null> {
    const raw = await this.redis.hget(this.keys.teams(), teamId);
    if (raw === null) return null;
    const t = JSON.parse(raw) as { name: string; createdAt: number };
    return { teamId, name: t.name, createdAt: t.createdAt };
  }

  /** The team, or team_not_found. */
  async require(teamId: string): Promise<Team> {
    const team = await this.get(teamId);
    if (!team) throw new AppError('team_not_found', `no team ${JSON.stringify(teamId)}`);
    return team;
  }

  async list(): Promise<Team[]> {
    const all = await this.redis.hgetall(this.keys.teams());
    return Object.entries(all)
      .map(([teamId, raw]) => ({ teamId, ...(JSON.parse(raw) as { name: string; createdAt: number }) }))
      .sort((a, b) => a.createdAt - b.createdAt);
  }
}
