// The team page's download of a layout's show record: GET
// /admin/api/layouts/{layoutId}/record?format=csv|json[&from=...][&to=...], as a file
// (Content-Disposition: attachment), the same as `audiencectl show export`.
import { AppError, orUnavailable } from '../errors.js';
import type { Route } from '../http/route.js';
import { parseTime, recordCsv, recordJson } from '../store/show-export.js';
import { api, type AdminDeps } from './api.js';

const TYPES = { csv: 'text/csv; charset=utf-8', json: 'application/json' } as const;

export function recordApiRoute(d: AdminDeps): Route {
  return api({
    method: 'get',
    pattern: '/admin/api/layouts/:layoutId/record',
    params: 1,
    query: true,
    async handle(head) {
      const { session } = await d.guard.require(head, false);
      const layout = await orUnavailable(d.stores.layouts.requireOwned(session.teamId, head.params[0] ?? ''));
      const q = new URLSearchParams(head.query);
      const format = q.get('format') ?? 'csv';
      if (format !== 'csv' && format !== 'json') throw new AppError('invalid_argument', 'format must be csv or json');
      const [from, to] = [parseTime(q.get('from')), parseTime(q.get('to'))];
      if (Number.isNaN(from) || Number.isNaN(to)) throw new AppError('invalid_argument', 'from and to take an ISO 8601 time or ms since the epoch');
      const { entries, unreadable } = await orUnavailable(d.stores.showRecord.read(layout.layoutId, from ?? 0, to ?? undefined));
      const day = new Date(d.now()).toISOString().slice(0, 10);
      return {
        status: 200,
        body: null,
        headers: [
          ['content-disposition', `attachment; filename="show-${layout.layoutId}-${day}.${format}"`],
          ['x-unreadable-entries', String(unreadable)], // entries of the span that were not an entry's JSON, left out
        ],
        raw: { contentType: TYPES[format], data: format === 'csv' ? recordCsv(entries) : recordJson(layout.layoutId, from, to, entries, unreadable) },
      };
    },
  });
}
