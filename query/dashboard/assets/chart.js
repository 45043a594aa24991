// Charts drawn as inline SVG at the width of their container, redrawn when
// it changes size. Each bar carries data-t and data-v (its point), which
// the browser tests compare with the API's answer.

import { h, num } from './ui.js';

/** A rounded-up axis maximum and its tick step for values up to max. */
export function niceScale(max, ticks = 4) {
  if (!(max > 0)) return { top: ticks, step: 1 };
  const raw = max / ticks;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw);
  const whole = Math.max(1, Math.ceil(step));
  return { top: Math.ceil(max / whole) * whole, step: whole };
}

function tickLabel(t, stepMs) {
  const d = new Date(t);
  if (stepMs >= 86400000) return d.toLocaleDateString('en-GB', { month: 'short', day: '2-digit' });
  if (stepMs >= 6 * 3600000) return d.toLocaleString('en-GB', { month: 'short', day: '2-digit', hour: '2-digit', minute: '2-digit' });
  return d.toLocaleTimeString('en-GB', { hour: '2-digit', minute: '2-digit' });
}

/**
 * Draws a bar chart of points [{t, v}] into container (replacing its
 * content), with stepMs the width of a bar in time; unit names the values
 * in tooltips ("violations"). Returns a function that stops redrawing.
 */
export function barChart(container, points, { stepMs = 3600000, unit = 'violations', k, tone = 'violated', height = 220 } = {}) {
  const draw = () => {
    const W = Math.max(280, container.clientWidth || 600);
    const H = height;
    const pad = { l: 44, r: 12, t: 12, b: 28 };
    const iw = W - pad.l - pad.r;
    const ih = H - pad.t - pad.b;
    const max = Math.max(0, ...points.map((p) => p.v));
    const { top, step } = niceScale(max);
    const y = (v) => pad.t + ih - (v / top) * ih;
    const n = Math.max(points.length, 1);
    const slot = iw / n;
    const bw = Math.max(1, Math.min(40, slot * 0.72));
    const svg = h('svg.chart', { viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: 'img', 'data-k': k, 'aria-label': `${unit} over time` });
    for (let v = 0; v <= top; v += step) {
      svg.append(h('line.grid', { x1: pad.l, x2: W - pad.r, y1: y(v), y2: y(v) }));
      svg.append(h('text.axis', { x: pad.l - 8, y: y(v) + 4, 'text-anchor': 'end' }, num(v)));
    }
    const every = Math.max(1, Math.ceil(n / Math.max(2, Math.floor(iw / 90))));
    points.forEach((p, i) => {
      const x = pad.l + i * slot + (slot - bw) / 2;
      const bh = Math.max(p.v > 0 ? 2 : 0, (p.v / top) * ih);
      const bar = h(`rect.bar.tone-${tone}`, { x, y: pad.t + ih - bh, width: bw, height: bh, rx: Math.min(3, bw / 3), 'data-t': p.t, 'data-v': p.v },
        h('title', {}, `${tickLabel(p.t, stepMs)}: ${num(p.v)} ${unit}`));
      svg.append(bar);
      if (i % every === 0) svg.append(h('text.axis', { x: pad.l + i * slot + slot / 2, y: H - 8, 'text-anchor': 'middle' }, tickLabel(p.t, stepMs)));
    });
    svg.append(h('line.baseline', { x1: pad.l, x2: W - pad.r, y1: pad.t + ih, y2: pad.t + ih }));
    container.replaceChildren(svg);
  };
  draw();
  let last = container.clientWidth;
  const ro = new ResizeObserver(() => {
    if (container.clientWidth !== last) { last = container.clientWidth; draw(); }
  });
  ro.observe(container);
  return () => ro.disconnect();
}

/** A stacked horizontal bar of status counts {violated, pending, unresolved, satisfied}. */
export function stackBar(counts) {
  const order = ['violated', 'pending', 'unresolved', 'satisfied'];
  const total = order.reduce((s, k) => s + (counts[k] || 0), 0);
  const bar = h('span.stack', { 'aria-hidden': 'true' });
  if (total === 0) return bar;
  for (const k of order) {
    if (!counts[k]) continue;
    const seg = h(`span.seg.s-${k}`, { title: `${num(counts[k])} ${k}` });
    seg.style.width = `${(counts[k] / total) * 100}%`;
    bar.append(seg);
  }
  return bar;
}
