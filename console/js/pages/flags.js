// Flags of the picked app (docs/flags.md's org API): each flag's value per environment; a
// boolean flips with one checkbox per environment, other types are set as JSON in a field
// (PUT /api/v1/org/flags/:key {value, environment}); rules, rollouts and overrides listed per flag; "what would this device get"
// asks GET /api/v1/org/flag-evaluation for a device and an environment.
import {call, get, query, seg} from '../api.js';
import {field, h, isDeviceId, render, select, table, when} from '../dom.js';

function show(value) {
  return value === undefined ? '—' : JSON.stringify(value);
}

function valueCell(ctx, flag, env) {
  const has = Object.prototype.hasOwnProperty.call(flag.values || {}, env);
  if (flag.type !== 'bool') return valueForm(ctx, flag, env, has);
  const state = h('span', {}, has ? (flag.values[env] ? 'on' : 'off') : 'not set');
  const box = h('input', {type: 'checkbox', name: `${flag.key}:${env}`, checked: has && flag.values[env] === true,
    'data-flag': flag.key, 'data-env': env,
    onchange: async e => {
      const want = e.target.checked;
      e.target.disabled = true;
      try {
        await call('PUT', `/api/v1/org/flags/${seg(flag.key)}${query({app_id: ctx.app})}`, {value: want, environment: env});
        state.textContent = want ? 'on' : 'off';
      } catch {
        e.target.checked = !want;
      } finally {
        e.target.disabled = false;
      }
    }});
  const label = h('label', {class: 'switch'}, box, state);
  box.setAttribute('aria-label', `${flag.key} in ${env}`);
  return label;
}

// A value other than a boolean: its JSON in a text field, set with its button. A string flag
// takes plain text too (what is not JSON is sent as a string); the API checks the type.
function valueForm(ctx, flag, env, has) {
  const input = h('input', {type: 'text', name: `${flag.key}:${env}`, value: has ? JSON.stringify(flag.values[env]) : '',
    placeholder: 'not served', 'data-flag': flag.key, 'data-env': env, size: 12});
  input.setAttribute('aria-label', `${flag.key} in ${env} (JSON)`);
  const form = h('form', {class: 'row', onsubmit: async e => {
    e.preventDefault();
    let value;
    try {
      value = JSON.parse(input.value);
    } catch {
      if (flag.type !== 'string') {
        input.setCustomValidity('Not JSON: a ' + flag.type + ' such as ' + (flag.type === 'json' ? '{"a": 1}' : '3'));
        input.reportValidity();
        return;
      }
      value = input.value;
    }
    input.setCustomValidity('');
    await call('PUT', `/api/v1/org/flags/${seg(flag.key)}${query({app_id: ctx.app})}`, {value, environment: env});
    input.value = JSON.stringify(value);
  }}, input, h('button', {type: 'submit'}, 'Set'));
  return form;
}

const count = (n, what) => `${n} ${what}${n === 1 ? '' : 's'}`;

function details(flag) {
  const rules = (flag.rules || []).map(r => [String(r.index), r.name || '', r.environment || 'every', r.is_active ? 'on' : 'off',
    `${r.rollout_percentage}%`, show(r.value), (r.conditions || []).map(c => `${c.attribute} ${c.operator} ${JSON.stringify(c.value)}`).join('; ')]);
  const rollouts = (flag.rollouts || []).map(r => [r.environment, `${r.percentage}%`, show(r.value)]);
  return h('details', {},
    h('summary', {}, `${flag.key}: ${count((flag.rules || []).length, 'rule')}, ${count((flag.rollouts || []).length, 'rollout')}, overrides`),
    table(`Rules of ${flag.key}`, ['#', 'Name', 'Environment', 'Active', 'Rollout', 'Value', 'Conditions'], rules),
    table(`Rollouts of ${flag.key}`, ['Environment', 'Percentage', 'Value'], rollouts),
    h('div', {'data-overrides': flag.key}, h('p', {class: 'muted'}, 'Overrides load when opened.')));
}

async function loadOverrides(ctx, holder, key) {
  const list = (await get(`/api/v1/org/flags/${seg(key)}/overrides${query({app_id: ctx.app})}`)).overrides || [];
  holder.replaceChildren(table(`Overrides of ${key}`, ['Subject', 'Value', 'Until', 'Note'],
    list.map(o => [h('code', {}, o.subject), show(o.value), when(o.expires_at), o.note || ''])));
}

function evaluator(ctx, envs) {
  const env = select('environment', envs, 'production');
  const device = h('input', {type: 'text', name: 'device', placeholder: 'keyId or deviceId'});
  const out = h('div', {id: 'evaluation', 'aria-live': 'polite'});
  const form = h('form', {class: 'row', id: 'what-would', onsubmit: async e => {
    e.preventDefault();
    const v = device.value.trim();
    const byId = isDeviceId(v) ? {device_id: v} : {device_key_id: v};
    const r = await get('/api/v1/org/flag-evaluation' + query({app_id: ctx.app, environment: env.value, ...byId}));
    out.replaceChildren(
      h('p', {}, r.device ? `Device ${r.device.device_id || v} in ${r.environment}:` : `No such device; defaults of ${r.environment}:`),
      table('What this device would get', ['Flag', 'Value', 'Why'],
        Object.entries(r.flags || {}).map(([k, val]) => [k, h('code', {}, show(val)), (r.why || {})[k] || ''])));
  }}, field('Environment', env), field('Device', device), h('button', {type: 'submit'}, 'Evaluate'));
  return [h('h2', {}, 'What would this device get?'), form, out];
}

export default {
  title: 'Flags',
  async render(ctx) {
    if (!ctx.app) return render(h('h1', {}, 'Flags'), h('p', {}, 'This organization has no app yet.'));
    const [envList, flagList] = await Promise.all([
      get('/api/v1/org/flag-environments' + query({app_id: ctx.app})),
      get('/api/v1/org/flags' + query({app_id: ctx.app})),
    ]);
    const envs = (envList.environments || []).map(e => e.name);
    const flags = flagList.flags || [];
    const body = flags.map(f => [h('code', {}, f.key), f.type, f.description || '', ...envs.map(env => valueCell(ctx, f, env))]);
    const more = flags.map(details);
    render(
      h('h1', {}, 'Flags'),
      h('p', {class: 'muted'}, `App ${ctx.app}. A boolean flag flips with its checkbox, another is set as JSON with its Set button (that environment's default).`),
      h('div', {id: 'flags-table'}, table(`Flags of ${ctx.app} by environment`, ['Key', 'Type', 'Description', ...envs], body)),
      h('h2', {}, 'Rules, rollouts and overrides'),
      more,
      evaluator(ctx, envs),
    );
    for (const d of more) {
      d.addEventListener('toggle', () => {
        const holder = d.querySelector('[data-overrides]');
        if (d.open && !holder.dataset.loaded) {
          holder.dataset.loaded = '1';
          loadOverrides(ctx, holder, holder.dataset.overrides).catch(() => { holder.dataset.loaded = ''; });
        }
      });
    }
  },
};
