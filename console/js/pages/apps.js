// Apps: GET /api/v1/org/apps (environments, policy, custom claims), and the claims test
// (POST /api/v1/org/apps/:appId/claims-test): which rules a device's token would carry, and why.
import {call, get, seg} from '../api.js';
import {field, h, json, render} from '../dom.js';

export default {
  title: 'Apps',
  async render(ctx) {
    const apps = (await get('/api/v1/org/apps')).apps || [];
    const out = h('div', {id: 'claims-result', 'aria-live': 'polite'});
    const keyInput = h('input', {type: 'text', name: 'device_key_id', placeholder: 'keyId of a device of this app'});
    const appSelect = h('select', {name: 'app'}, apps.map(a => h('option', {value: a.id, selected: a.id === ctx.app}, a.id)));
    const form = h('form', {class: 'row', onsubmit: async e => {
      e.preventDefault();
      const body = keyInput.value.trim() ? {device_key_id: keyInput.value.trim()} : {};
      const result = await call('POST', `/api/v1/org/apps/${seg(appSelect.value)}/claims-test`, body);
      out.replaceChildren(h('h3', {}, 'Result'), json(result));
    }}, field('App', appSelect), field('Device keyId', keyInput), h('button', {type: 'submit'}, 'Test claims'));
    render(
      h('h1', {}, 'Apps'),
      apps.map(a => h('section', {'aria-label': a.id},
        h('h2', {}, a.id),
        h('dl', {class: 'facts'},
          h('dt', {}, 'Team'), h('dd', {}, a.team_id ?? '—'),
          h('dt', {}, 'Bundle'), h('dd', {}, a.bundle_id ?? '—'),
          h('dt', {}, 'Environments'), h('dd', {}, [].concat(a.environments ?? a.environment ?? []).join(', ') || '—')),
        h('h3', {}, 'Policy'), json(a.policy ?? {}),
        h('h3', {}, `Custom claims (${(a.custom_claims || []).length} rules)`), json(a.custom_claims || []))),
      h('h2', {}, 'Claims test'),
      h('p', {class: 'muted'}, 'What claims a token for this device would carry, with the rules that matched (the same as attestctl claims test).'),
      form, out,
    );
  },
};
