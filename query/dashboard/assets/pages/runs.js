// The runs of the range, newest first, filtered by status and agent, a
// page at a time.

import { get } from '../api.js';
import { h, fill, num, card, empty, table, badge, runLink, ruleLink, when, pageHead, span, STATUSES } from '../ui.js';

export function title() { return 'Runs'; }

const PAGE = 50;

export async function render(main, ctx) {
  const status = STATUSES.includes(ctx.params.get('status')) ? ctx.params.get('status') : '';
  const agent = ctx.params.get('agent') || '';
  const rule = ctx.params.get('rule') || '';
  const params = { since: ctx.since, status, agent, rule, limit: PAGE };
  const first = await get('/v1/runs', params);

  const go = (k, v) => { const q = new URLSearchParams(location.search); if (v) q.set(k, v); else q.delete(k); location.search = q.toString(); };
  const filters = h('form.filters', { onsubmit: (e) => { e.preventDefault(); go('agent', e.target.agent.value.trim()); } },
    h('label.inline', {}, 'Status ', h('select', { name: 'status', onchange: (e) => go('status', e.target.value) },
      h('option', { value: '' }, 'any'), STATUSES.map((s) => h('option', { value: s, selected: s === status }, s)))),
    h('label.inline', {}, 'Agent ', h('input', { name: 'agent', value: agent, placeholder: 'agent id', size: 14 })),
    rule ? h('span.chip', {}, 'rule ', h('b.mono', {}, rule), ' ', h('a', { href: '#', onclick: (e) => { e.preventDefault(); go('rule', ''); } }, '×')) : null);

  const body = h('tbody');
  const tbl = h('div.table-wrap', {}, h('table', {},
    h('thead', {}, h('tr', {}, ['Run', 'Agent', 'Project', 'Started', 'Duration', 'Outcome', 'Events', 'Status', 'Violated rules'].map((c, i) =>
      h('th', { class: i === 6 ? 'num' : '', scope: 'col' }, c)))),
    body));
  const more = h('button.ghost', { type: 'button', 'data-k': 'more' }, 'Load more');
  const shown = h('span', { 'data-k': 'shown' }, '0');
  let n = 0;
  const add = (rows) => {
    for (const r of rows) body.append(row(r));
    n += rows.length;
    shown.textContent = num(n);
  };
  add(first.runs);
  let cursor = first.nextCursor;
  more.hidden = !cursor;
  more.addEventListener('click', async () => {
    more.disabled = true;
    const next = await get('/v1/runs', { ...params, cursor });
    add(next.runs);
    cursor = next.nextCursor;
    more.hidden = !cursor;
    more.disabled = false;
  });
  fill(main,
    pageHead('Runs', 'Newest first. A run\'s status is the worst over its rules: violated, then unresolved, pending, satisfied.', filters),
    card(null, first.runs.length ? h('div', {}, tbl, h('div.table-foot', {}, h('span.muted', {}, shown, ' runs shown'), more))
      : empty('No runs match', status || agent || rule ? 'Clear a filter, or pick a longer range above.' : 'Runs appear as agents publish their events.'), { k: 'runs' }));
}

function row(r) {
  return h('tr', { 'data-row': r.runId },
    h('td', { 'data-k': 'run' }, runLink(r.runId)),
    h('td.mono', { 'data-k': 'agent' }, r.agent || '–'),
    h('td', { 'data-k': 'project' }, r.project || h('span.muted', {}, '–')),
    h('td', {}, when(r.startedAt)),
    h('td', {}, r.endedAt ? span(r.startedAt, r.endedAt) : h('span.chip.open', {}, 'open')),
    h('td', { 'data-k': 'outcome' }, r.outcome || h('span.muted', {}, '–')),
    h('td.num', { 'data-k': 'events' }, num(r.events)),
    h('td', { 'data-k': 'status' }, badge(r.status)),
    h('td.rules-cell', {}, (r.violated || []).length ? r.violated.map((id) => ruleLink(id)) : h('span.muted', {}, '–')));
}
