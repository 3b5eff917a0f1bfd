// API keys (admins): GET/POST/DELETE /api/v1/org/api-keys. A new key is shown once.
import {call, get, seg} from '../api.js';
import {field, h, notice, render, select, table, when} from '../dom.js';

async function page(ctx, made) {
  const keys = (await get('/api/v1/org/api-keys')).api_keys || [];
  const name = h('input', {type: 'text', name: 'name', maxlength: 64});
  const scope = select('scope', ['all', 'heartbeat'], 'all', {all: 'all (the org API)', heartbeat: 'heartbeat (simulator and CI builds)'});
  const form = h('form', {class: 'row', onsubmit: async e => {
    e.preventDefault();
    const key = await call('POST', '/api/v1/org/api-keys', {name: name.value, scope: scope.value});
    await page(ctx, key);
  }}, field('Name', name), field('Scope', scope), h('button', {type: 'submit'}, 'Create key'));
  render(h('h1', {}, 'API keys'),
    made ? notice('Key ', h('code', {}, made.id), ' created. Copy it now, it is not shown again: ', h('code', {id: 'new-key'}, made.key)) : null,
    table('API keys', ['Id', 'Name', 'Scope', 'Created', 'Revoked', ''],
      keys.map(k => [h('code', {}, k.id), k.name || '', k.scope, when(k.created_at), k.revoked_at ? when(k.revoked_at) : '—',
        k.revoked_at ? '' : h('button', {type: 'button', class: 'danger', 'aria-label': `Revoke key ${k.id}`, onclick: async () => {
          if (!window.confirm(`Revoke ${k.id}? Apps using it stop working.`)) return;
          await call('DELETE', `/api/v1/org/api-keys/${seg(k.id)}`);
          await page(ctx);
        }}, 'Revoke')])),
    h('h2', {}, 'New key'), form);
}

export default {title: 'API keys', render: ctx => page(ctx)};
