// The dead letters: messages the pipeline could not take (bad events,
// undeliverable alerts), with why, newest first.

import { get } from '../api.js';
import { h, fill, num, card, empty, table, when, pageHead } from '../ui.js';

export function title() { return 'Dead letters'; }

export async function render(main, ctx) {
  const reason = ctx.params.get('reason') || '';
  const data = await get('/v1/deadletters', { since: ctx.since, reason, limit: 200 });
  const rows = data.deadLetters || [];
  const reasons = new Map();
  for (const d of rows) reasons.set(d.reason, (reasons.get(d.reason) || 0) + 1);
  const go = (v) => { const q = new URLSearchParams(location.search); if (v) q.set('reason', v); else q.delete('reason'); location.search = q.toString(); };
  const filter = h('label.inline', {}, 'Reason ', h('select', { onchange: (e) => go(e.target.value) },
    h('option', { value: '' }, 'any'),
    [...new Set([...reasons.keys(), reason].filter(Boolean))].sort().map((r) => h('option', { value: r, selected: r === reason }, r))));
  fill(main,
    pageHead('Dead letters', h('span', {}, h('b', { 'data-k': 'count' }, num(rows.length)), ' messages the pipeline set aside instead of dropping: what came in, where, and why it was refused.'), filter),
    rows.length ? h('div.chips', {}, [...reasons].map(([r, n]) => h('a.chip', { href: '#', onclick: (e) => { e.preventDefault(); go(r); } }, r, ' ', h('b', {}, num(n))))) : null,
    card(null, rows.length ? table([
      { label: 'Seq', num: true, cell: (d) => num(d.streamSeq), k: 'seq' },
      { label: 'When', cell: (d) => when(d.ts) },
      { label: 'Reason', cell: (d) => h('span.chip.reason', {}, d.reason), k: 'reason' },
      { label: 'Source', cell: (d) => d.source || '–', k: 'source' },
      { label: 'Subject', cell: (d) => h('span.mono.small', {}, d.subject || '–') },
      { label: 'Error and message', cls: 'wide', cell: (d) => h('div', {}, h('div.dl-error', { 'data-k': 'error-text' }, d.error || '–'),
        d.body ? h('details', {}, h('summary', {}, `message, ${num(new Blob([d.body]).size)} bytes`), h('pre.body', {}, d.body)) : null) },
    ], rows, { rowKey: (d) => String(d.streamSeq) }) : empty('No dead letters in this time range', 'Every event and alert was taken. Messages refused by validation or delivery appear here with the reason.'), { k: 'deadletters' }));
}
