// The gateway's fifth step: the HTTP server and its routes (the REST API, the OpenAPI and AsyncAPI
// documents, the schemas, the team page and its API, the audience page). It listens only once the
// live channel is mounted beside them (listen, the step after).
import type { Logger } from '../../runtime/log.js';
import { adminApiRoutes } from '../admin/api.js';
import { lightApiRoutes } from '../admin/light-api.js';
import { moderationApiRoutes } from '../admin/moderation-api.js';
import { adminPageRoutes } from '../admin/page.js';
import { recordApiRoute } from '../admin/record-api.js';
import type { GatewayConfig } from '../config.js';
import { HttpServer } from '../http/server.js';
import type { GatewayMetrics } from '../metrics.js';
import { clientSchemaModules, playPageRoutes } from '../play/page.js';
import { actionRoutes } from '../routes/action.js';
import { fallbackRoutes } from '../routes/fallback.js';
import { layoutRoute } from '../routes/layout.js';
import { asyncApiRoute, openApiRoute } from '../routes/openapi.js';
import { schemaRoutes } from '../routes/schemas.js';
import { tokenRoute } from '../routes/token.js';
import type { Services } from './services.js';

export function httpServer(config: GatewayConfig, s: Services, metrics: GatewayMetrics, log: Logger, now: () => number): HttpServer {
  const server = new HttpServer({
    maxBodyBytes: config.maxBodyBytes,
    now,
    onError: (e, head) => log.error({ err: e, requestId: head.id }, 'unexpected error'),
    observe: (route, status, seconds, code) => metrics.observeRequest(route, status, seconds, code),
  });
  const { deps, admin } = s;
  server.mount(layoutRoute(deps)).mount(tokenRoute(deps)).mount(openApiRoute()).mount(asyncApiRoute()).mount(schemaRoutes(clientSchemaModules()));
  for (const r of [...actionRoutes(deps, s.intake), ...adminApiRoutes(admin), ...lightApiRoutes(admin), ...moderationApiRoutes(admin, s.moderationAdmin), recordApiRoute(admin), ...adminPageRoutes(), ...playPageRoutes()]) server.mount(r);
  return server;
}

/** Listens, with 405 (and Allow) on the known paths' other methods and 404 elsewhere mounted last; the port it listens on. */
export function listen(server: HttpServer, config: GatewayConfig): Promise<number> {
  for (const r of fallbackRoutes(server.patterns())) server.mount(r);
  return server.listen(config.host, config.port);
}
