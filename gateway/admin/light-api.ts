// The light part of the admin API: the team page's light panel plays a look on a layout's canvas
// (as audiencectl light does), and its sync panel reads how closely the layout's phones are synced,
// per zone, across every gateway process (store/clock-figures.ts).
import { AppError, orUnavailable } from '../errors.js';
import { parseJson } from '../http/body.js';
import type { RequestHead, Route } from '../http/route.js';
import { api, json, teamLayout, type AdminDeps } from './api.js';

export function lightApiRoutes(d: AdminDeps): Route[] {
  const ownedLayout = async (head: RequestHead, write: boolean) => (await teamLayout(d, head, write)).layout;
  return [
    api({
      method: 'post',
      pattern: '/admin/api/layouts/:layoutId/light',
      params: 1,
      body: true,
      async handle(head, raw) {
        const layout = await ownedLayout(head, true);
        const look = parseJson(raw);
        if (look === null || typeof look !== 'object') throw new AppError('invalid_body', 'send a look: {"zone": "left", "color": "#ff8800", ...} (light-look.schema.json)');
        const played = await orUnavailable(d.stores.light.play(layout.layoutId, look));
        return json({ layoutId: layout.layoutId, ...played, at: new Date(played.at).toISOString() });
      },
    }),
    api({
      method: 'get',
      pattern: '/admin/api/layouts/:layoutId/sync',
      params: 1,
      async handle(head) {
        const layout = await ownedLayout(head, false);
        const now = d.now();
        const figures = await orUnavailable(d.stores.clockFigures.read(layout.layoutId, now));
        return json({ layoutId: layout.layoutId, at: new Date(now).toISOString(), light: layout.light, ...figures });
      },
    }),
  ];
}
