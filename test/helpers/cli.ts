// Runs the built audiencectl as a user would (npm test builds first).
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const CLI = fileURLToPath(new URL('../../dist/gateway/cli/main.js', import.meta.url));

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
  json: any;
}

export function audiencectl(env: Record<string, string> & { REDIS_URL: string; REDIS_PREFIX: string }, ...args: string[]): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { env: { ...process.env, ...env } }, (err, stdout, stderr) => {
      let json: unknown = null;
      try {
        json = JSON.parse(stdout);
      } catch {
        /* not JSON output */
      }
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr, json });
    });
  });
}

/** audiencectl with --json; its JSON answer, or an error naming the command and what it printed. */
export async function audiencectlJson(env: Record<string, string> & { REDIS_URL: string; REDIS_PREFIX: string }, ...args: string[]): Promise<any> {
  const r = await audiencectl(env, ...args, '--json');
  if (r.code !== 0) throw new Error(`audiencectl ${args.join(' ')}: exit ${r.code}: ${r.stderr}${r.stdout}`);
  return r.json;
}
