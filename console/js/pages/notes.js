// Release notes of the picked app (What's New): GET/POST/DELETE /api/v1/org/release-notes.
import {call, get, query, seg} from '../api.js';
import {field, h, render, table, when} from '../dom.js';

export default {
  title: 'Release notes',
  async render(ctx) {
    if (!ctx.app) return render(h('h1', {}, 'Release notes'), h('p', {}, 'This organization has no app yet.'));
    const notes = (await get('/api/v1/org/release-notes' + query({app_id: ctx.app}))).release_notes || [];
    const version = h('input', {type: 'text', name: 'version', required: true, placeholder: '2.1.0'});
    const title = h('input', {type: 'text', name: 'title', required: true, maxlength: 200});
    const body = h('textarea', {name: 'body', required: true});
    const publish = h('input', {type: 'datetime-local', name: 'publish_at'});
    const form = h('form', {class: 'stack', onsubmit: async e => {
      e.preventDefault();
      const note = {app_id: ctx.app, version: version.value.trim(), title: title.value, body: body.value};
      if (publish.value) note.publish_at = new Date(publish.value).toISOString().replace(/\.\d+Z$/, 'Z');
      await call('POST', '/api/v1/org/release-notes', note);
      ctx.reload();
    }}, field('Version', version), field('Title', title), field('Body (Markdown)', body),
    field('Publish at (empty: now)', publish), h('button', {type: 'submit'}, 'Add note'));
    render(
      h('h1', {}, 'Release notes'),
      table(`Release notes of ${ctx.app}`, ['Version', 'Title', 'Publish at', 'Published', ''],
        notes.map(n => [n.version, n.title, when(n.publish_at), n.published ? 'yes' : 'scheduled',
          h('button', {type: 'button', class: 'danger', 'aria-label': `Delete note ${n.version}`, onclick: async () => {
            await call('DELETE', `/api/v1/org/release-notes/${seg(n.id)}${query({app_id: ctx.app})}`);
            ctx.reload();
          }}, 'Delete')])),
      h('h2', {}, 'New note'), form);
  },
};
