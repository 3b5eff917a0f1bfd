// Audit: who changed what, newest first, 50 at a time (docs/console.md, "Audit"):
// GET /api/v1/org/audit?limit=&before=<cursor> ← {"entries": [{at, actor: {kind, id, name,
// role}, action, target, detail, cursor}], "next": cursor|null}.
import {get, query} from '../api.js';
import {h, render, table, when} from '../dom.js';

function who(actor) {
  if (!actor) return '';
  const parts = [actor.kind, actor.name || actor.id];
  if (actor.role) parts.push(`(${actor.role})`);
  return parts.filter(Boolean).join(' ');
}

export default {
  title: 'Audit',
  async render(ctx) {
    const before = ctx.rest[0] || '';
    const r = await get('/api/v1/org/audit' + query({limit: 50, before}));
    const entries = r.entries || [];
    render(h('h1', {}, 'Audit'),
      table('Audit log, newest first', ['When', 'Who', 'Action', 'Target', 'Detail'],
        entries.map(e => [when(e.at), who(e.actor), h('code', {}, e.action), e.target || '', e.detail || ''])),
      h('p', {}, before ? h('a', {href: '#/audit'}, 'Newest') : null, before && r.next ? ' · ' : null,
        r.next ? h('a', {href: `#/audit/${encodeURIComponent(r.next)}`}, 'Older entries') : null));
  },
};
