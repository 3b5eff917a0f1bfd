// Webhooks (docs/webhooks.md's management API): endpoints, a new one (its secret shown once),
// one endpoint's deliveries with every attempt, a test event, on/off, delete.
import {call, get, seg} from '../api.js';
import {field, h, notice, render, table, when} from '../dom.js';

async function list(ctx) {
  const hooks = (await get('/api/v1/org/webhooks')).webhooks || [];
  const url = h('input', {type: 'url', name: 'url', required: true, placeholder: 'https://example.com/hooks'});
  const events = h('input', {type: 'text', name: 'events', placeholder: 'empty: every event; or device.new, flag.changed'});
  const description = h('input', {type: 'text', name: 'description', maxlength: 256});
  const shown = h('div', {'aria-live': 'polite'});
  const form = h('form', {class: 'stack', onsubmit: async e => {
    e.preventDefault();
    const body = {url: url.value.trim(), events: events.value.split(',').map(s => s.trim()).filter(Boolean), description: description.value};
    const made = await call('POST', '/api/v1/org/webhooks', body);
    await list(ctx);
    document.getElementById('webhook-secret').replaceChildren(notice('Endpoint ', h('code', {}, made.id),
      ' added. Its signing secret, shown only now: ', h('code', {}, made.secret)));
  }}, field('URL', url), field('Events (comma-separated)', events), field('Description', description),
  h('button', {type: 'submit'}, 'Add endpoint'));
  shown.id = 'webhook-secret';
  render(h('h1', {}, 'Webhooks'), shown,
    table('Endpoints', ['Endpoint', 'URL', 'Events', 'Active', 'Created'],
      hooks.map(w => [h('a', {href: `#/webhooks/${w.id}`}, w.id), w.url, (w.events || []).join(', ') || 'every event',
        w.isActive ? 'yes' : 'no', when(w.createdAt)])),
    h('h2', {}, 'New endpoint'), form);
}

async function one(ctx, id) {
  const path = `/api/v1/org/webhooks/${seg(id)}`;
  const [w, log] = await Promise.all([get(path), get(`${path}/deliveries?limit=50`)]);
  const queued = h('div', {'aria-live': 'polite'});
  const rows = [];
  for (const d of log.deliveries || []) {
    const attempts = d.attempts || [];
    rows.push([h('code', {}, d.id), d.event, d.status, when(d.createdAt), String(attempts.length),
      attempts.map(a => h('div', {}, `${when(a.at)}: ${a.status ?? 'no answer'} in ${a.durationMs} ms`,
        a.error ? ` (${a.error})` : '', a.response ? h('pre', {}, a.response) : null))]);
  }
  render(h('h1', {}, `Webhook ${w.id}`), h('p', {}, h('a', {href: '#/webhooks'}, '← Webhooks')),
    h('dl', {class: 'facts'}, h('dt', {}, 'URL'), h('dd', {}, w.url),
      h('dt', {}, 'Events'), h('dd', {}, (w.events || []).join(', ') || 'every event'),
      h('dt', {}, 'Description'), h('dd', {}, w.description || '—'),
      h('dt', {}, 'Active'), h('dd', {}, w.isActive ? 'yes' : 'no')),
    h('p', {class: 'row'},
      h('button', {type: 'button', onclick: async () => {
        const r = await call('POST', `${path}/test`);
        queued.replaceChildren(notice(`Queued ${r.event} ${r.queued}. Reload to see its delivery.`));
      }}, 'Send test event'), ' ',
      h('button', {type: 'button', class: 'secondary', onclick: async () => {
        await call('PATCH', path, {isActive: !w.isActive});
        ctx.reload();
      }}, w.isActive ? 'Deactivate' : 'Activate'), ' ',
      h('button', {type: 'button', class: 'danger', onclick: async () => {
        if (!window.confirm(`Delete ${w.id} and its delivery log?`)) return;
        await call('DELETE', path);
        window.location.hash = '#/webhooks';
      }}, 'Delete')),
    queued,
    h('h2', {}, 'Deliveries'),
    table('Deliveries, newest first', ['Delivery', 'Event', 'Status', 'Created', 'Attempts', 'Each attempt'], rows, [4]));
}

export default {
  title: 'Webhooks',
  async render(ctx) {
    return ctx.rest[0] ? one(ctx, ctx.rest[0]) : list(ctx);
  },
};
