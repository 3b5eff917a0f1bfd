// Feature requests of the picked app (docs/feedback.md, Moderation): the list by status, one
// request with its comments, the team's reply and status.
import {call, get, query, seg} from '../api.js';
import {field, h, render, select, table, when} from '../dom.js';

const STATUSES = ['pending', 'open', 'planned', 'in_progress', 'shipped', 'declined', 'duplicate'];

async function list(ctx) {
  const status = ctx.rest[0] === 'status' ? ctx.rest[1] : '';
  const filter = select('status', ['', ...STATUSES], status, {'': 'every status'});
  filter.addEventListener('change', () => { window.location.hash = filter.value ? `#/feedback/status/${filter.value}` : '#/feedback'; });
  const items = (await get('/api/v1/org/feedback' + query({app_id: ctx.app, status}))).feature_requests || [];
  render(h('h1', {}, 'Feedback'), h('form', {class: 'row'}, field('Status', filter)),
    table(`Feature requests of ${ctx.app}`, ['Title', 'Status', 'Votes', 'Comments', 'Updated'],
      items.map(r => [h('a', {href: `#/feedback/${r.id}`}, r.title), r.status, String(r.vote_count), String(r.comment_count), when(r.updated_at)]), [2, 3]));
}

async function one(ctx, id) {
  const r = await get(`/api/v1/org/feedback/${seg(id)}${query({app_id: ctx.app})}`);
  const status = select('status', STATUSES, r.status);
  const statusForm = h('form', {class: 'row', onsubmit: async e => {
    e.preventDefault();
    await call('PATCH', `/api/v1/org/feedback/${seg(id)}${query({app_id: ctx.app})}`, {status: status.value});
    ctx.reload();
  }}, field('Status', status), h('button', {type: 'submit'}, 'Set status'));
  const reply = h('textarea', {name: 'body', required: true, maxlength: 2000});
  const replyForm = h('form', {class: 'stack', onsubmit: async e => {
    e.preventDefault();
    await call('POST', `/api/v1/org/feedback/${seg(id)}/comments${query({app_id: ctx.app})}`, {body: reply.value});
    ctx.reload();
  }}, field('Reply as the team', reply), h('button', {type: 'submit'}, 'Reply'));
  render(h('h1', {}, r.title), h('p', {}, h('a', {href: '#/feedback'}, '← Feedback')),
    h('p', {}, r.description),
    h('p', {class: 'muted'}, `${r.status} · ${r.vote_count} votes · submitter ${r.submitter_id || '—'} · ${when(r.created_at)}`,
      r.merged_into ? ` · merged into ${r.merged_into}` : ''),
    statusForm,
    h('h2', {}, 'Comments'),
    h('ul', {class: 'thread'}, (r.comments || []).map(c => h('li', {class: c.author_type === 'admin' ? 'admin' : ''},
      h('div', {class: 'muted'}, `${c.author_type} · ${when(c.created_at)}`), h('div', {}, c.body)))),
    replyForm);
}

export default {
  title: 'Feedback',
  async render(ctx) {
    if (!ctx.app) return render(h('h1', {}, 'Feedback'), h('p', {}, 'This organization has no app yet.'));
    if (ctx.rest[0] && ctx.rest[0] !== 'status') return one(ctx, ctx.rest[0]);
    return list(ctx);
  },
};
