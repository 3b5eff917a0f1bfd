// The usage chart as SVG made here (no library): per day, the devices active that day and the
// new ones, and the organization's monthly limit as a dashed line when it fits the scale. The
// same numbers are in the table beside it (the chart is aria-hidden: the table is what a
// screen reader and the browser suite read).
const NS = 'http://www.w3.org/2000/svg';

function el(tag, attrs, text) {
  const e = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

/** Whether the limit line is drawn: only when it is at most twice the month's devices (a far
 *  higher limit would flatten every bar). */
export function limitDrawn(total, limit) {
  return limit > 0 && limit <= 2 * Math.max(1, total);
}

/** daily: [{date, newDevices, activeDevices}]; total: the month's devices; limit: 0 = none. */
export function usageChart(daily, total, limit) {
  const W = 720, H = 240, left = 44, bottom = 28, top = 12, right = 8;
  const peak = Math.max(1, ...daily.map(d => d.activeDevices), total, limitDrawn(total, limit) ? limit : 0);
  const y = v => top + (H - top - bottom) * (1 - v / peak);
  const slot = (W - left - right) / Math.max(1, daily.length);
  const svg = el('svg', {viewBox: `0 0 ${W} ${H}`, class: 'chart', 'aria-hidden': 'true', focusable: 'false'});
  for (const tick of [0, Math.round(peak / 2), peak]) {
    svg.append(el('text', {x: left - 6, y: y(tick) + 4, 'text-anchor': 'end'}, tick));
    svg.append(el('line', {x1: left, x2: W - right, y1: y(tick), y2: y(tick), stroke: '#c8c8c8'}));
  }
  daily.forEach((d, i) => {
    const x = left + i * slot, w = Math.max(1, slot * 0.4);
    svg.append(el('rect', {class: 'bar-active', x: x + slot * 0.1, y: y(d.activeDevices), width: w, height: y(0) - y(d.activeDevices)}));
    svg.append(el('rect', {class: 'bar-new', x: x + slot * 0.5, y: y(d.newDevices), width: w, height: y(0) - y(d.newDevices)}));
    if (daily.length <= 16 || i % 5 === 0) svg.append(el('text', {x: x + slot / 2, y: H - 10, 'text-anchor': 'middle'}, d.date.slice(8)));
  });
  if (limitDrawn(total, limit)) svg.append(el('line', {class: 'limit', x1: left, x2: W - right, y1: y(limit), y2: y(limit)}));
  return svg;
}
