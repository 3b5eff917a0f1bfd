// The console's shell: hash routes (#/page/rest…), the navigation (a Menu button below 700 px),
// the organization and role of the session, the app picker shared by the pages that are per
// app, and signing out (DELETE /api/v1/console/session).
import {call, clearAlert, currentSession, get, showError, toLogin} from './api.js';
import {h, render} from './dom.js';
import overview from './pages/overview.js';
import devices from './pages/devices.js';
import apps from './pages/apps.js';
import flags from './pages/flags.js';
import notes from './pages/notes.js';
import feedback from './pages/feedback.js';
import tickets from './pages/tickets.js';
import webhooks from './pages/webhooks.js';
import apiKeys from './pages/apikeys.js';
import audit from './pages/audit.js';

const PAGES = {overview, devices, apps, flags, notes, feedback, tickets, webhooks, 'api-keys': apiKeys, audit};
const APP_KEY = 'attestedge.console.app';
const state = {session: null, apps: [], app: null};

/** The organization's apps: GET /api/v1/org/apps, or (a server without it) the usage report's ids. */
async function loadApps() {
  try {
    return ((await get('/api/v1/org/apps', {quiet: true})).apps || []);
  } catch (e) {
    if (e.status !== 404 && e.status !== 501) throw e;
    return ((await get('/api/v1/org/usage')).apps || []).map(a => ({id: a.appId}));
  }
}

function fillPicker() {
  const picker = document.getElementById('app-picker');
  picker.replaceChildren(...state.apps.map(a => h('option', {value: a.id, selected: a.id === state.app}, a.id)));
  if (!state.apps.length) picker.append(h('option', {value: ''}, 'no apps'));
}

async function route() {
  const hash = window.location.hash;
  if (hash && !hash.startsWith('#/')) return; // the skip link's #main, not a page
  const [name, ...rest] = (hash || '#/overview').slice(2).split('/').map(decodeURIComponent);
  const page = PAGES[name] || overview;
  for (const a of document.querySelectorAll('#nav a')) {
    if (a.getAttribute('href') === `#/${name in PAGES ? name : 'overview'}`) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  document.getElementById('nav').classList.remove('open');
  document.getElementById('menu-button').setAttribute('aria-expanded', 'false');
  clearAlert();
  const main = document.getElementById('main');
  main.setAttribute('aria-busy', 'true');
  render(h('h1', {}, page.title), h('p', {class: 'muted'}, 'Loading…'));
  try {
    await page.render({...state, rest, reload: route});
  } catch (e) {
    if (e.status === 401) return;
    render(h('h1', {}, page.title), h('p', {class: 'muted'}, 'This page could not be loaded.'));
    showError(e);
  } finally {
    main.dataset.route = hash || '#/overview';
    main.setAttribute('aria-busy', 'false');
  }
  document.title = `${page.title} · AttestEdge console`;
}

async function start() {
  const menu = document.getElementById('menu-button');
  menu.addEventListener('click', () => {
    const open = document.getElementById('nav').classList.toggle('open');
    menu.setAttribute('aria-expanded', String(open));
  });
  document.querySelector('.skip').addEventListener('click', e => {
    e.preventDefault();
    document.getElementById('main').focus();
  });
  document.getElementById('logout').addEventListener('click', async () => {
    try {
      await call('DELETE', '/api/v1/console/session');
    } catch {
      return; // 401 went to login already; any other refusal is in the alert region
    }
    toLogin();
  });
  try {
    state.session = await currentSession();
  } catch (e) {
    if (e.status !== 401) showError(e);
    return;
  }
  document.getElementById('who').textContent = `${state.session.org} · ${state.session.role}`;
  try {
    state.apps = await loadApps();
  } catch (e) {
    state.apps = [];
  }
  const saved = localStorage.getItem(APP_KEY);
  state.app = state.apps.some(a => a.id === saved) ? saved : (state.apps[0] || {}).id || null;
  fillPicker();
  document.getElementById('app-picker').addEventListener('change', e => {
    state.app = e.target.value;
    localStorage.setItem(APP_KEY, state.app);
    route();
  });
  window.addEventListener('hashchange', route);
  await route();
}

start();
