// Overview: the organization's month from GET /api/v1/org/usage[?month=] (docs/usage.md):
// monthly active devices against the limit, the grace, API-key devices, per app, and per day
// the devices active and new, the attestations (validates) and the refreshes.
import {get, query} from '../api.js';
import {field, h, render, table, when} from '../dom.js';
import {limitDrawn, usageChart} from '../chart.js';

export default {
  title: 'Overview',
  async render(ctx) {
    const month = ctx.rest[0] || '';
    const u = await get('/api/v1/org/usage' + query({month}));
    const monthInput = h('input', {type: 'month', name: 'month', value: u.month});
    const form = h('form', {class: 'row', onsubmit: e => {
      e.preventDefault();
      window.location.hash = `#/overview/${monthInput.value}`;
    }}, field('Month', monthInput), h('button', {type: 'submit'}, 'Show'));
    const limit = u.limit ? String(u.limit) : 'unlimited';
    const grace = u.graceStartedAt ? `started ${when(u.graceStartedAt)}, ends ${when(u.graceEndsAt)}` : 'not started';
    render(
      h('h1', {}, 'Overview'),
      form,
      h('div', {class: 'cards', id: 'usage-cards'},
        h('div', {class: 'card'}, h('div', {}, 'Monthly active devices'), h('div', {class: 'big', 'data-usage': 'activeDevices'}, u.activeDevices),
          h('div', {class: 'muted'}, `of ${limit}`)),
        h('div', {class: 'card'}, h('div', {}, 'API-key devices'), h('div', {class: 'big', 'data-usage': 'apiKeyDevices'}, u.apiKeyDevices),
          h('div', {class: 'muted'}, 'not billed')),
        h('div', {class: 'card'}, h('div', {}, 'Grace'), h('div', {'data-usage': 'grace'}, grace),
          h('div', {class: 'muted'}, u.onboardingPaused ? 'new devices are refused (402)' : 'new devices are admitted'))),
      h('h2', {}, `Devices per day, ${u.month}`),
      h('div', {class: 'legend'}, h('span', {class: 'l-active'}, 'active that day'), h('span', {class: 'l-new'}, 'new that day'),
        limitDrawn(u.activeDevices, u.limit) ? h('span', {class: 'l-limit'}, `monthly limit ${u.limit}`) : null),
      usageChart(u.daily || [], u.activeDevices, u.limit),
      h('div', {id: 'usage-daily'}, table('Per day: devices (the chart\'s numbers), attestations and refreshes',
        ['Date', 'Active', 'New', 'Attestations', 'Refreshes'],
        (u.daily || []).map(d => [d.date, String(d.activeDevices), String(d.newDevices), String(d.attestations ?? '—'),
          String(d.refreshes ?? '—')]), [1, 2, 3, 4])),
      h('h2', {}, 'Per app'),
      table('Monthly active devices per app', ['App', 'Active devices'], (u.apps || []).map(a => [a.appId, String(a.activeDevices)]), [1]),
    );
  },
};
