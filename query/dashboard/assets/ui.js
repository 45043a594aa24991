// DOM building and formatting shared by the pages. Text always goes in as
// text nodes: nothing from the service is parsed as HTML.

/** h('div.card#x', {attrs}, ...children): an element; class and id may follow the tag. */
export function h(spec, attrs = {}, ...children) {
  const [, tag, rest] = /^([a-z0-9]+)(.*)$/i.exec(spec);
  const el = /^(svg|path|rect|line|text|g|title|circle|polyline)$/.test(tag) && attrs.svg !== false
    ? document.createElementNS('http://www.w3.org/2000/svg', tag)
    : document.createElement(tag);
  for (const m of rest.matchAll(/([.#])([\w-]+)/g)) {
    if (m[1] === '.') el.classList.add(m[2]); else el.id = m[2];
  }
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false || k === 'svg') continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') for (const c of String(v).split(/\s+/).filter(Boolean)) el.classList.add(c);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** Replaces the children of el. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

const nf = new Intl.NumberFormat('en-US');
/** A count with thousands separators. */
export function num(n) { return n === undefined || n === null ? '–' : nf.format(n); }

/** A fraction 0..1 as a percentage with one decimal. */
export function pct(f) {
  if (f === undefined || f === null || Number.isNaN(f)) return '–';
  return `${(f * 100).toFixed(1)}%`;
}

/** A timestamp as local date and time, to the second. */
export function time(ts) {
  if (!ts) return '–';
  const d = new Date(ts);
  if (Number.isNaN(d.getTime())) return String(ts);
  return d.toLocaleString('en-GB', { year: 'numeric', month: 'short', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit' });
}

/** A timestamp relative to now ("3 min ago"). */
export function ago(ts) {
  const d = new Date(ts).getTime();
  if (Number.isNaN(d)) return '–';
  const s = Math.round((Date.now() - d) / 1000);
  const abs = Math.abs(s);
  const say = (n, unit) => (s >= 0 ? `${n} ${unit} ago` : `in ${n} ${unit}`);
  if (abs < 45) return s >= 0 ? 'just now' : 'in a moment';
  if (abs < 3600) return say(Math.round(abs / 60), 'min');
  if (abs < 86400) return say(Math.round(abs / 3600), 'h');
  return say(Math.round(abs / 86400), 'd');
}

/** A <time> element showing ago(ts), with the exact time as its title. */
export function when(ts, { relative = false } = {}) {
  if (!ts) return h('span.muted', {}, '–');
  return h('time', { datetime: ts, title: String(ts) }, relative ? ago(ts) : time(ts));
}

/** A duration between two timestamps ("4m 12s"). */
export function span(from, to) {
  const ms = new Date(to).getTime() - new Date(from).getTime();
  if (Number.isNaN(ms) || ms < 0) return '–';
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
}

export const STATUSES = ['violated', 'pending', 'unresolved', 'satisfied'];
const glyph = { violated: '✕', pending: '◷', unresolved: '?', satisfied: '✓' };

/** A status badge: colour, glyph and word. */
export function badge(status) {
  const s = STATUSES.includes(status) ? status : 'none';
  return h(`span.badge.s-${s}`, { 'data-status': s }, h('span.glyph', { 'aria-hidden': 'true' }, glyph[s] || '·'), status || 'none');
}

/** The glyph of a status alone (matrix cells). */
export function statusGlyph(status) { return glyph[status] || ''; }

export function runLink(run) { return h('a.mono', { href: `/runs/${encodeURIComponent(run)}` }, run); }
export function ruleLink(rule) { return h('a.mono', { href: `/rules/${encodeURIComponent(rule)}` }, rule); }

/** A card with a title, optional actions and a body. */
export function card(title, body, { actions, cls = '', k } = {}) {
  return h(`section.card${cls ? '.' + cls : ''}`, { 'data-k': k },
    title ? h('header.card-head', {}, h('h2', {}, title), actions ? h('div.card-actions', {}, actions) : null) : null,
    h('div.card-body', {}, body));
}

/** An empty state: what is missing and what makes it appear. */
export function empty(title, hint) {
  return h('div.empty', {}, h('p.empty-title', {}, title), hint ? h('p.empty-hint', {}, hint) : null);
}

/**
 * A table. columns: [{label, num, cls, cell(row) -> node|text, k}] where k,
 * when set, becomes data-k on each cell (the browser tests read them).
 * rowKey(row) sets data-row on each row.
 */
export function table(columns, rows, { rowKey, cls = '', caption } = {}) {
  return h('div.table-wrap', {},
    h(`table${cls ? '.' + cls : ''}`, {},
      caption ? h('caption.sr', {}, caption) : null,
      h('thead', {}, h('tr', {}, columns.map((c) => h('th', { class: [c.num ? 'num' : '', c.cls || ''].join(' '), scope: 'col' }, c.label)))),
      h('tbody', {}, rows.map((r) => h('tr', { 'data-row': rowKey ? rowKey(r) : undefined },
        columns.map((c) => h('td', { class: [c.num ? 'num' : '', c.cls || ''].join(' '), 'data-k': c.k }, c.cell(r))))))));
}

/** A key figure: label, value, and an optional note. */
export function stat(label, value, { k, note, tone } = {}) {
  return h(`div.stat${tone ? '.tone-' + tone : ''}`, {},
    h('div.stat-label', {}, label),
    h('div.stat-value', { 'data-k': k }, value),
    note ? h('div.stat-note', {}, note) : null);
}

/** A horizontal meter of a fraction (0..1). */
export function meter(f, tone = '') {
  const bar = h(`span.meter-bar${tone ? '.tone-' + tone : ''}`);
  bar.style.width = `${Math.max(0, Math.min(1, f || 0)) * 100}%`;
  return h('span.meter', { 'aria-hidden': 'true' }, bar);
}

/** The error box of a failed request; unauthorized and forbidden say what to do. */
export function errorBox(err, { what = 'this page' } = {}) {
  if (err && err.kind === 'unauthorized') {
    return h('div.notice.notice-auth', { 'data-k': 'error', 'data-kind': 'unauthorized' },
      h('p.notice-title', {}, 'This service requires an access token'),
      h('p', {}, `Set a token with read scope (admin scope for subscriptions) to see ${what}. `,
        h('button.primary.small', { type: 'button', onclick: () => document.getElementById('token-button').click() }, 'Set token')),
      h('p.muted', {}, err.message));
  }
  if (err && err.kind === 'forbidden') {
    return h('div.notice.notice-auth', { 'data-k': 'error', 'data-kind': 'forbidden' },
      h('p.notice-title', {}, 'Your token lacks the scope for this'),
      h('p', {}, `${what[0].toUpperCase()}${what.slice(1)} needs a token with admin scope; the token in use is refused. `,
        h('button.ghost.small', { type: 'button', onclick: () => document.getElementById('token-button').click() }, 'Change token')),
      h('p.muted', {}, err.message));
  }
  const kind = (err && err.kind) || 'internal';
  return h('div.notice.notice-error', { 'data-k': 'error', 'data-kind': kind },
    h('p.notice-title', {}, kind === 'unreachable' ? 'The query service cannot be reached' : kind === 'not_found' ? 'Not found' : 'The query service answered with an error'),
    h('p.mono', {}, (err && err.message) || String(err)));
}

/** The page's title line: heading, a subtitle and actions on the right. */
export function pageHead(title, sub, actions) {
  return h('div.page-head', {},
    h('div', {}, h('h1', {}, title), sub ? h('p.page-sub', {}, sub) : null),
    actions ? h('div.page-actions', {}, actions) : null);
}
