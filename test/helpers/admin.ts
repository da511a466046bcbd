// An administrator session against a test gateway, as a script would hold it: cookie + CSRF token.
import type { TestGateway } from './gateway.js';
import { call, type JsonResponse } from './gateway.js';

export interface AdminClient {
  cookie: string;
  csrf: string;
  req(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<JsonResponse>;
}

export function login(t: Pick<TestGateway, 'url'>, email: string, password: string, headers: Record<string, string> = {}): Promise<JsonResponse> {
  return call(`${t.url}/admin/api/login`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ email, password }) });
}

export async function signIn(t: Pick<TestGateway, 'url'>, email: string, password: string): Promise<AdminClient> {
  const r = await login(t, email, password);
  if (r.status !== 200) throw new Error(`login: ${r.status} ${JSON.stringify(r.body)}`);
  const cookie = (r.headers.get('set-cookie') ?? '').split(';')[0]!;
  const client: AdminClient = {
    cookie,
    csrf: r.body.csrfToken as string,
    req: (method, path, body, headers = {}) =>
      call(`${t.url}${path}`, {
        method,
        headers: { cookie: client.cookie, 'x-csrf-token': client.csrf, ...(body !== undefined && { 'content-type': 'application/json' }), ...headers },
        ...(body !== undefined && { body: JSON.stringify(body) }),
      }),
  };
  return client;
}
