// Audit: who changed what (GET /api/v1/org/audit?before=&limit=), newest first, a page at a time.
import {get, query} from '../api.js';
import {h, render, table, when} from '../dom.js';

const COLUMNS = ['at', 'actor', 'action', 'target', 'detail'];

export default {
  title: 'Audit',
  async render(ctx) {
    const before = ctx.rest[0] || '';
    const r = await get('/api/v1/org/audit' + query({before, limit: 50}));
    const entries = r.entries || r.audit || [];
    const cell = (e, k) => {
      const v = k === 'actor' && e.actor && typeof e.actor === 'object' ? Object.values(e.actor).join(' ') : e[k];
      if (k === 'at') return when(v);
      return v === undefined || v === null ? '' : typeof v === 'string' ? v : JSON.stringify(v);
    };
    const next = r.next_before || (entries.length === 50 ? entries[entries.length - 1].id || entries[entries.length - 1].at : null);
    render(h('h1', {}, 'Audit'),
      table('Audit log, newest first', ['When', 'Who', 'Action', 'Target', 'Detail'], entries.map(e => COLUMNS.map(k => cell(e, k)))),
      next ? h('p', {}, h('a', {href: `#/audit/${encodeURIComponent(next)}`}, 'Older entries')) : null);
  },
};
