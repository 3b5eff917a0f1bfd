// The console suite's accessibility pass over the page as rendered (nginx/e2e/console.py runs it
// with execute_script; it returns a list of problems, [] when none). The checks: <html lang>;
// exactly one h1; every visible input, select, textarea and button has an accessible name
// (aria-label, aria-labelledby, a <label for>, a wrapping label, or its own text for a
// button; a wrapping label by its own text); no positive tabindex; the contrast of every
// visible text against the background it is drawn on, computed from the styles (colour,
// background colours and opacity; not background images), at least 4.5:1.
const problems = [];
const visible = el => {
  const s = getComputedStyle(el), r = el.getBoundingClientRect();
  return s.display !== 'none' && s.visibility !== 'hidden' && (r.width > 0 || r.height > 0) && !el.closest('[hidden]');
};
const describe = el => `${el.tagName.toLowerCase()}${el.id ? '#' + el.id : ''}${el.name ? '[name=' + el.name + ']' : ''}`
  + ` "${(el.textContent || '').trim().slice(0, 40)}"`;

if (!document.documentElement.getAttribute('lang')) problems.push('html has no lang attribute');
const h1s = document.querySelectorAll('h1');
if (h1s.length !== 1) problems.push(`${h1s.length} h1 elements (want exactly one)`);

function accessibleName(el) {
  if ((el.getAttribute('aria-label') || '').trim()) return el.getAttribute('aria-label').trim();
  const by = el.getAttribute('aria-labelledby');
  if (by) {
    const t = by.split(/\s+/).map(id => (document.getElementById(id) || {}).textContent || '').join(' ').trim();
    if (t) return t;
  }
  if (el.id) {
    const l = document.querySelector(`label[for="${CSS.escape(el.id)}"]`);
    if (l && l.textContent.trim()) return l.textContent.trim();
  }
  // A wrapping label names the control by its own text: the control's text (a select's
  // options) is not part of the name.
  const wrap = el.closest('label');
  if (wrap) {
    const copy = wrap.cloneNode(true);
    for (const c of copy.querySelectorAll('input, select, textarea, button')) c.remove();
    if (copy.textContent.trim()) return copy.textContent.trim();
  }
  if (el.tagName === 'BUTTON' && el.textContent.trim()) return el.textContent.trim();
  if ((el.getAttribute('title') || '').trim()) return el.getAttribute('title').trim();
  return '';
}
for (const el of document.querySelectorAll('input, select, textarea, button')) {
  if (el.type === 'hidden' || !visible(el)) continue;
  if (!accessibleName(el)) problems.push(`no accessible name: ${describe(el)}`);
}
for (const el of document.querySelectorAll('[tabindex]')) {
  if (parseInt(el.getAttribute('tabindex'), 10) > 0) problems.push(`positive tabindex: ${describe(el)}`);
}

function rgba(text) {
  const m = text.match(/rgba?\(([^)]+)\)/);
  if (!m) return [0, 0, 0, 0];
  const p = m[1].split(',').map(Number);
  return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
}
function over(top, bottom) {
  const a = top[3];
  return [0, 1, 2].map(i => top[i] * a + bottom[i] * (1 - a)).concat(1);
}
function background(el) {
  const layers = [];
  for (let e = el; e; e = e.parentElement) {
    const c = rgba(getComputedStyle(e).backgroundColor);
    if (c[3] > 0) layers.push(c);
    if (c[3] >= 1) break;
  }
  let result = [255, 255, 255, 1];
  for (const c of layers.reverse()) result = over(c, result);
  return result;
}
function luminance([r, g, b]) {
  const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
  return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
}
const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
const seen = new Set();
let lowest = 21, checked = 0;
for (let n = walker.nextNode(); n; n = walker.nextNode()) {
  const el = n.parentElement;
  if (!n.textContent.trim() || seen.has(el) || !visible(el) || el.closest('svg')) continue;
  seen.add(el);
  // Opacity of the element and its ancestors fades the text into what is behind it.
  let opacity = 1;
  for (let e = el; e; e = e.parentElement) opacity *= parseFloat(getComputedStyle(e).opacity);
  const color = rgba(getComputedStyle(el).color);
  color[3] *= opacity;
  const bg = background(el), fg = over(color, bg);
  const [l1, l2] = [luminance(fg), luminance(bg)].sort((a, b) => b - a);
  const ratio = (l1 + 0.05) / (l2 + 0.05);
  checked++;
  lowest = Math.min(lowest, ratio);
  if (ratio < 4.5) problems.push(`contrast ${ratio.toFixed(2)} < 4.5: ${describe(el)}`);
}
return {problems, lowestContrast: lowest, textsChecked: checked};
