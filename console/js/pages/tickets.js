// Support tickets of the picked app (docs/feedback.md, Moderation): the inbox by status, one
// ticket's messages, the team's answer, status and priority.
import {call, get, query, seg} from '../api.js';
import {field, h, render, select, table, when} from '../dom.js';

const STATUSES = ['open', 'awaiting_reply', 'resolved', 'closed'];
const PRIORITIES = ['low', 'normal', 'high', 'urgent'];

async function list(ctx) {
  const status = ctx.rest[0] === 'status' ? ctx.rest[1] : '';
  const filter = select('status', ['', ...STATUSES], status, {'': 'every status'});
  filter.addEventListener('change', () => { window.location.hash = filter.value ? `#/tickets/status/${filter.value}` : '#/tickets'; });
  const items = (await get('/api/v1/org/tickets' + query({app_id: ctx.app, status}))).tickets || [];
  render(h('h1', {}, 'Tickets'), h('form', {class: 'row'}, field('Status', filter)),
    table(`Support tickets of ${ctx.app}`, ['Subject', 'Status', 'Priority', 'Messages', 'Updated'],
      items.map(t => [h('a', {href: `#/tickets/${t.id}`}, t.subject), t.status, t.priority, String(t.message_count), when(t.updated_at)]), [3]));
}

async function one(ctx, id) {
  const path = `/api/v1/org/tickets/${seg(id)}`;
  const t = await get(path + query({app_id: ctx.app}));
  const status = select('status', STATUSES, t.status);
  const priority = select('priority', PRIORITIES, t.priority);
  const meta = h('form', {class: 'row', onsubmit: async e => {
    e.preventDefault();
    await call('PATCH', path + query({app_id: ctx.app}), {status: status.value, priority: priority.value});
    ctx.reload();
  }}, field('Status', status), field('Priority', priority), h('button', {type: 'submit'}, 'Save'));
  const reply = h('textarea', {name: 'body', required: true, maxlength: 5000});
  const replyForm = h('form', {class: 'stack', id: 'ticket-reply', onsubmit: async e => {
    e.preventDefault();
    await call('POST', `${path}/messages${query({app_id: ctx.app})}`, {body: reply.value});
    ctx.reload();
  }}, field('Answer as the team', reply), h('button', {type: 'submit'}, 'Send answer'));
  render(h('h1', {}, t.subject), h('p', {}, h('a', {href: '#/tickets'}, '← Tickets')),
    h('p', {class: 'muted'}, `${t.status} · ${t.priority} · submitter ${t.submitter_id || '—'}`,
      t.submitter_email ? ` <${t.submitter_email}>` : '', ` · opened ${when(t.created_at)}`),
    meta,
    h('h2', {}, 'Messages'),
    h('ul', {class: 'thread', id: 'ticket-messages'}, (t.messages || []).map(m => h('li', {class: m.author_type === 'admin' ? 'admin' : ''},
      h('div', {class: 'muted'}, `${m.author_type} · ${when(m.created_at)}`), h('div', {}, m.body)))),
    replyForm);
}

export default {
  title: 'Tickets',
  async render(ctx) {
    if (!ctx.app) return render(h('h1', {}, 'Tickets'), h('p', {}, 'This organization has no app yet.'));
    if (ctx.rest[0] && ctx.rest[0] !== 'status') return one(ctx, ctx.rest[0]);
    return list(ctx);
  },
};
