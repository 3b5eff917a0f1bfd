// login.html: the one-time URL's fragment is the sign-in token (a fragment never reaches a
// server's access log, and a link preview that GETs the URL does not use it up). It is
// POSTed once, the fragment is cleared from the address bar and history, and the console opens.
const status = document.getElementById('status');
const alertBox = document.getElementById('alert');

function fail(message) {
  status.textContent = 'Not signed in.';
  alertBox.textContent = message;
  alertBox.hidden = false;
}

async function signIn() {
  const raw = window.location.hash.replace(/^#/, '');
  history.replaceState(null, '', window.location.pathname + window.location.search);
  let token;
  try {
    token = decodeURIComponent(raw);
  } catch {
    fail('This sign-in URL is damaged (it was cut or changed on the way). Ask for a new one (attestctl console login).');
    return;
  }
  if (!token) {
    // Perhaps a session is live already (a second tab): then straight in.
    const r = await fetch('/api/v1/console/session', {credentials: 'same-origin', cache: 'no-store'});
    if (r.ok) { window.location.replace('/console/'); return; }
    fail('This page needs the one-time URL printed by attestctl console login.');
    return;
  }
  let r;
  try {
    r = await fetch('/api/v1/console/session', {
      method: 'POST', credentials: 'same-origin', cache: 'no-store',
      headers: {'Content-Type': 'application/json', Accept: 'application/json'},
      body: JSON.stringify({token}),
    });
  } catch (e) {
    fail(`The server did not answer (${e.message}).`);
    return;
  }
  if (r.status === 201 || r.status === 200) {
    status.textContent = 'Signed in.';
    window.location.replace('/console/');
    return;
  }
  let body = null;
  try { body = await r.json(); } catch { body = null; }
  const why = r.status === 401
    ? 'This sign-in URL has been used, has expired or is unknown. Ask for a new one (attestctl console login).'
    : (body && body.error) || `HTTP ${r.status}`;
  fail(why + (body && body.requestId ? ` (request ${body.requestId})` : ''));
}

// A second link opened in a tab already on this page changes only the fragment: no new load.
window.addEventListener('hashchange', () => { if (window.location.hash.length > 1) signIn(); });
signIn();
