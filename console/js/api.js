// The console's one way to the server. Same-origin fetch with the session cookie
// (__Host-attestedge_console, HttpOnly: this script never sees it); every call but GET/HEAD
// carries X-CSRF-Token, the session's csrf from GET /api/v1/console/session. An error answer is
// the JSON envelope {"error","code","requestId","reason"}: its message goes to the page's
// alert region (role=alert). 401 (no or no longer a live session) sends the page to login.

const SESSION = '/api/v1/console/session';
let session = null;

export class ApiError extends Error {
  constructor(status, body) {
    super((body && (body.error || body.reason)) || `HTTP ${status}`);
    this.status = status;
    this.code = body && body.code;
    this.requestId = body && body.requestId;
  }
}

/** The live session {id, org, role, csrf, expires_at}, read once per page load. */
export async function currentSession() {
  if (!session) session = (await call('GET', SESSION)).session;
  return session;
}

export function toLogin() {
  window.location.assign('/console/login.html');
}

/**
 * call('POST', '/api/v1/org/…', body, {quiet: true}) → the decoded JSON answer (null for an
 * empty one). Throws ApiError for a non-2xx; unless quiet, its message is shown in the alert.
 * A change refused 403 is tried once more when the session's CSRF token has changed since the
 * page read it (a sign-in in another tab replaced the cookie) and the new session is of the
 * same organization and role; of another, the page reloads instead and nothing is retried. A
 * role refusal keeps its token and is not retried.
 */
export async function call(method, path, body, {quiet = false, retried = false} = {}) {
  const headers = {Accept: 'application/json'};
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (method !== 'GET' && method !== 'HEAD') {
    if (!session) await currentSession();
    headers['X-CSRF-Token'] = session.csrf;
  }
  let response;
  try {
    response = await fetch(path, {method, headers, credentials: 'same-origin', cache: 'no-store',
      body: body === undefined ? undefined : JSON.stringify(body)});
  } catch (e) {
    const err = new ApiError(0, {error: `The server did not answer (${e.message}).`});
    if (!quiet) showError(err);
    throw err;
  }
  const text = await response.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = null; }
  if (response.status === 401) {
    toLogin();
    throw new ApiError(401, data);
  }
  if (response.status === 403 && headers['X-CSRF-Token'] && !retried) {
    const before = session;
    session = null;
    const now = await currentSession();
    if (now.csrf !== before.csrf) {
      // Another organization or role now: show the page as that session sees it, change nothing.
      if (now.org !== before.org || now.role !== before.role) {
        window.location.reload();
        throw new ApiError(403, data);
      }
      return call(method, path, body, {quiet, retried: true});
    }
  }
  if (!response.ok) {
    const err = new ApiError(response.status, data);
    if (!quiet) showError(err);
    throw err;
  }
  return data;
}

export const get = (path, opts) => call('GET', path, undefined, opts);

/** Shows an ApiError (or any message) in the alert region; clearAlert hides it. */
export function showError(err) {
  const box = document.getElementById('alert');
  if (!box) return;
  const parts = [err.message || String(err)];
  if (err.code) parts.push(`(${err.status} ${err.code})`);
  if (err.requestId) parts.push(`request ${err.requestId}`);
  box.textContent = parts.join(' ');
  box.hidden = false;
}

export function clearAlert() {
  const box = document.getElementById('alert');
  if (box) { box.hidden = true; box.textContent = ''; }
}

/** `?a=1&b=2` from an object, leaving out empty values; %-encoded (a space is %20: the org
 *  API refuses a bare +). */
export function query(params) {
  const parts = Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== '')
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`);
  return parts.length ? `?${parts.join('&')}` : '';
}

/** A path segment, %-encoded. */
export const seg = s => encodeURIComponent(s);

export function forgetSession() { session = null; }
