// Devices: search (GET /api/v1/org/devices?q=), one device (GET /api/v1/org/devices/:keyId):
// its standing and why refresh/validate refuse it, risk factors, attestations, the history of
// its operator flags; an admin's actions (POST …/:keyId/actions {action, reason}).
import {call, get, query, seg} from '../api.js';
import {field, h, render, select, table, when} from '../dom.js';

const ACTIONS = ['flag', 'block', 'clear', 'revoke'];

async function search(ctx) {
  const q = ctx.rest[0] === 'search' ? (ctx.rest[1] || '') : '';
  const input = h('input', {type: 'search', name: 'q', value: q, placeholder: 'keyId, deviceId, fingerprint or subject'});
  const form = h('form', {class: 'row', role: 'search', onsubmit: e => {
    e.preventDefault();
    window.location.hash = `#/devices/search/${encodeURIComponent(input.value.trim())}`;
  }}, field('Find devices', input), h('button', {type: 'submit'}, 'Search'));
  const parts = [h('h1', {}, 'Devices'), form];
  const rows = list => list.map(d => [h('a', {href: `#/devices/key/${encodeURIComponent(d.key_id)}`}, d.key_id.slice(0, 16) + '…'),
    d.app_id, d.status, `${d.risk_score ?? '—'} ${d.risk_category ?? ''}`, when(d.last_seen_at), h('code', {}, d.device_id)]);
  const headers = ['Key', 'App', 'Status', 'Last token’s risk', 'Last seen', 'Device id'];
  if (q) {
    const found = (await get('/api/v1/org/devices' + query({q, limit: 50}))).devices || [];
    parts.push(table(`Devices matching “${q}”`, headers, rows(found)));
  } else {
    parts.push(h('p', {class: 'muted'}, 'Search by keyId (base64 or base64url, a prefix is enough), deviceId, fingerprint or subject id.'));
    if (ctx.app) {
      // Without an identifier: the app's first devices, those refresh refuses (blocked, revoked,
      // invalidated) first, so a refused device can be found from here too.
      const listed = await get('/api/v1/org/devices' + query({app_id: ctx.app, limit: 200}));
      const refused = d => ['blocked', 'revoked', 'invalidated'].includes(d.status) ? 0 : 1;
      const all = (listed.devices || []).slice().sort((a, b) => refused(a) - refused(b));
      parts.push(table(`Devices of ${ctx.app}, refused first` + (listed.truncated ? ' (the first ones found: search for others)' : ''),
        headers, rows(all)));
    }
  }
  render(parts);
}

async function device(ctx, keyId) {
  const d = await get(`/api/v1/org/devices/${seg(keyId)}`);
  const standing = d.standing || {};
  const reason = h('textarea', {name: 'reason', required: true, maxlength: 500});
  const action = select('action', ACTIONS, 'flag');
  const form = h('form', {class: 'stack', id: 'device-action', onsubmit: async e => {
    e.preventDefault();
    await call('POST', `/api/v1/org/devices/${seg(keyId)}/actions`, {action: action.value, reason: reason.value});
    ctx.reload();
  }}, field('Action', action), field('Reason (kept in the audit log)', reason), h('button', {type: 'submit'}, 'Apply'));
  const risk = d.risk || {};
  const meta = d.metadata || {};
  render(
    h('h1', {}, 'Device'),
    h('p', {}, h('a', {href: '#/devices'}, '← Devices')),
    h('dl', {class: 'facts'},
      h('dt', {}, 'Key'), h('dd', {}, h('code', {}, d.key_id)),
      h('dt', {}, 'Device id'), h('dd', {}, h('code', {}, d.device_id)),
      h('dt', {}, 'App'), h('dd', {}, `${d.app_id} (${d.environment})`),
      h('dt', {}, 'Fingerprint'), h('dd', {}, d.fingerprint_full || d.fingerprint || '—'),
      h('dt', {}, 'Status'), h('dd', {id: 'device-status'}, d.status, d.flags && d.flags.length ? ` · flags: ${[].concat(d.flags).join(', ')}` : ''),
      h('dt', {}, 'Model'), h('dd', {}, [meta.device_model, meta.platform, meta.os_version && `OS ${meta.os_version}`,
        meta.app_version && `app ${meta.app_version}`].filter(Boolean).join(' · ') || '—'),
      h('dt', {}, 'Counter'), h('dd', {}, `${d.counter ?? '—'} (failed assertions: ${d.failed_assertions ?? 0})`),
      h('dt', {}, 'Standing'), h('dd', {id: 'device-standing', class: standing.refused ? 'status-refused' : 'status-ok'},
        standing.refused ? 'Refused: ' : 'Served: ', standing.why || ''),
      h('dt', {}, 'Created'), h('dd', {}, when(d.created_at)),
      h('dt', {}, 'Last seen'), h('dd', {}, when(d.last_seen_at)),
      d.subject ? [h('dt', {}, 'Subject'), h('dd', {}, d.subject.subject_id,
        (d.subject.entitlements || []).length ? ` · entitlements: ${d.subject.entitlements.join(', ')}` : '',
        d.subject.expires_at ? ` · until ${when(d.subject.expires_at)}` : '')] : null),
    h('h2', {}, `Risk: ${risk.score ?? d.risk_score ?? '—'} (${risk.category ?? d.risk_category ?? '—'})`),
    table('Risk factors', ['Signal', 'Points', 'Detail'], (risk.factors || []).map(f => [f.signal, String(f.points), f.detail || '']), [1]),
    h('h2', {}, 'Attestations'),
    table('Attestations of this device', ['Key', 'Attested'], (d.attestations || []).map(a => [h('code', {}, a.key_id), when(a.attested_at)])),
    h('h2', {}, 'History'),
    table('Operator flag changes', ['When', 'From', 'To', 'Reason'],
      (d.flag_changes || []).map(c => [when(c.at), c.previous, c.flags, c.reason || ''])),
    h('h2', {}, 'Actions'),
    h('p', {class: 'muted'}, 'Admins only. flag: mark it; block: refuse it (and its fingerprint in the app); clear: lift both; revoke: end this key for good.'),
    form,
  );
}

export default {
  title: 'Devices',
  async render(ctx) {
    if (ctx.rest[0] === 'key' && ctx.rest[1]) return device(ctx, ctx.rest[1]);
    return search(ctx);
  },
};
