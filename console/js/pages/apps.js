// Apps: GET /api/v1/org/apps (environments, policy, custom claims), and the claims test
// (POST /api/v1/org/apps/:appId/claims-test): which rules a device's token would carry, and why.
import {call, get, seg} from '../api.js';
import {field, h, isDeviceId, json, render, table} from '../dom.js';

export default {
  title: 'Apps',
  async render(ctx) {
    const apps = (await get('/api/v1/org/apps')).apps || [];
    const out = h('div', {id: 'claims-result', 'aria-live': 'polite'});
    const keyInput = h('input', {type: 'text', name: 'device', placeholder: 'a device of this app'});
    const appSelect = h('select', {name: 'app'}, apps.map(a => h('option', {value: a.id, selected: a.id === ctx.app}, a.id)));
    const form = h('form', {class: 'row', onsubmit: async e => {
      e.preventDefault();
      const v = keyInput.value.trim();
      const body = !v ? {} : isDeviceId(v) ? {device_id: v} : {device_key_id: v};
      const r = await call('POST', `/api/v1/org/apps/${seg(appSelect.value)}/claims-test`, body);
      out.replaceChildren(
        h('p', {}, `Risk ${r.risk_score ?? '—'} (${r.risk_category ?? '—'})`),
        table('Custom claim rules, in order', ['Key', 'Value', 'When', 'Applied', 'Why'],
          (r.claims || []).map(c => [c.key, JSON.stringify(c.value), c.when || 'always', c.applied ? 'yes' : 'no', c.why || ''])),
        h('h3', {}, 'The token would carry'), json(r.custom_claims || {}));
    }}, field('App', appSelect), field('Device (keyId or deviceId; empty: no device)', keyInput), h('button', {type: 'submit'}, 'Test claims'));
    render(
      h('h1', {}, 'Apps'),
      apps.map(a => h('section', {'aria-label': a.id},
        h('h2', {}, a.id),
        h('dl', {class: 'facts'},
          h('dt', {}, 'Team'), h('dd', {}, a.team_id ?? '—'),
          h('dt', {}, 'Bundle'), h('dd', {}, a.bundle_id ?? '—'),
          h('dt', {}, 'App Attest environments'), h('dd', {}, (a.environments || []).join(', ') || '—'),
          h('dt', {}, 'Flag environments'), h('dd', {}, (a.flag_environments || []).join(', ') || '—'),
          h('dt', {}, 'Enabled'), h('dd', {}, a.enabled === false ? 'no' : 'yes'),
          Object.entries(a.policy || {}).map(([k, v]) => [h('dt', {}, k.replaceAll('_', ' ')), h('dd', {}, v === null || v === '' ? '—' : String(v))])),
        table(`Custom claims of ${a.id}, in order (a later key wins)`, ['Key', 'Value', 'When'],
          (a.custom_claims || []).map(c => [c.key, JSON.stringify(c.value), c.when || 'always'])))),
      h('h2', {}, 'Claims test'),
      h('p', {class: 'muted'}, 'What claims a token for this device would carry, with the rules that matched (the same as attestctl claims test).'),
      form, out,
    );
  },
};
