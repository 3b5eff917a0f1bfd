// Building the page without innerHTML: every text goes in as text, never as markup, so nothing
// a device or an API key wrote (a ticket subject, a flag description) can run as script.

/**
 * h('button', {class: 'danger', onclick: f, 'aria-label': 'Revoke'}, 'Revoke') → an element.
 * Attributes named on… become event listeners; `hidden`, `disabled`, `checked`, `required`,
 * `selected` are properties; null and undefined are left out; children are nodes or text.
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === 'onsubmit' && tag === 'form') el.addEventListener('submit', busyWhile(el, value));
    else if (name.startsWith('on')) el.addEventListener(name.slice(2), value);
    else if (['hidden', 'disabled', 'checked', 'required', 'selected', 'value', 'indeterminate'].includes(name)) el[name] = value;
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  append(el, children);
  return el;
}

/** A form's submit handler that disables the form's buttons until its promise settles. */
function busyWhile(form, handler) {
  return async e => {
    const buttons = [...form.querySelectorAll('button')].filter(b => !b.disabled);
    for (const b of buttons) b.disabled = true;
    try {
      await handler(e);
    } finally {
      for (const b of buttons) b.disabled = false;
    }
  };
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** A table in a scrolling, focusable region (keyboard users can scroll it at 390 px). */
export function table(caption, headers, rows, numeric = []) {
  return h('div', {class: 'table-wrap', tabindex: 0, role: 'region', 'aria-label': caption},
    h('table', {},
      h('caption', {class: 'muted'}, caption),
      h('thead', {}, h('tr', {}, headers.map((t, i) => h('th', {scope: 'col', class: numeric.includes(i) ? 'num' : null}, t)))),
      h('tbody', {}, rows.length ? rows.map(cells => h('tr', {}, cells.map((c, i) =>
        h('td', {class: numeric.includes(i) ? 'num' : null}, c))))
        : h('tr', {}, h('td', {colspan: headers.length, class: 'muted'}, 'Nothing yet.')))));
}

/** A labelled control: label text, then the control (its id links them). */
let counter = 0;
export function field(text, control) {
  const id = control.id || `f${++counter}`;
  control.id = id;
  return h('label', {for: id}, h('span', {}, text), control);
}

/** <select> of values; `labels` maps a value to its shown text. */
export function select(name, values, current, labels = {}) {
  return h('select', {name}, values.map(v => h('option', {value: v, selected: v === current}, labels[v] ?? v)));
}

/** Replaces main's content and focuses its heading's region (a new page for screen readers). */
export function render(...children) {
  const main = document.getElementById('main');
  main.replaceChildren();
  append(main, children);
}

export function json(value) {
  return h('pre', {}, JSON.stringify(value, null, 2));
}

export function when(text) {
  if (!text) return '—';
  const d = new Date(text);
  return isNaN(d) ? String(text) : d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

/** A notice (role=status) shown once, e.g. a new API key or webhook secret. */
export function notice(...children) {
  return h('div', {class: 'notice', role: 'status'}, ...children);
}

/** A server deviceId (32 hex digits, or a UUID) rather than a keyId (base64 or base64url of 32 bytes). */
export function isDeviceId(text) {
  return /^[0-9a-f]{32}$/i.test(text) || /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(text);
}
