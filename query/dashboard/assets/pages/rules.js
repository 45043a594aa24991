// Every rule with its runs by status over the range.

import { get } from '../api.js';
import { h, fill, num, card, empty, table, ruleLink, pageHead } from '../ui.js';
import { stackBar } from '../chart.js';

export function title() { return 'Rules'; }

export async function render(main, ctx) {
  const data = await get('/v1/rules', { since: ctx.since });
  const rows = [...(data.rules || [])].sort((a, b) => b.violated - a.violated || a.ruleId.localeCompare(b.ruleId));
  fill(main,
    pageHead('Rules', 'Every loaded rule, most violated first: how many runs of the range it held in, broke, or left open.'),
    card(null, rows.length ? table([
      { label: 'Rule', cell: (r) => h('div', {}, ruleLink(r.ruleId), r.description ? h('div.muted.small.desc', {}, r.description) : null), k: 'rule' },
      { label: 'Mode', cell: (r) => r.mode || '–' },
      { label: 'Runs', num: true, cell: (r) => num(r.runs), k: 'runs' },
      { label: 'Violated', num: true, cls: 'c-violated', cell: (r) => num(r.violated), k: 'violated' },
      { label: 'Pending', num: true, cls: 'c-pending', cell: (r) => num(r.pending), k: 'pending' },
      { label: 'Unresolved', num: true, cls: 'c-unresolved', cell: (r) => num(r.unresolved), k: 'unresolved' },
      { label: 'Satisfied', num: true, cls: 'c-satisfied', cell: (r) => num(r.satisfied), k: 'satisfied' },
      { label: '', cls: 'bar-cell', cell: (r) => stackBar(r) },
    ], rows, { rowKey: (r) => r.ruleId, caption: 'Rules' }) : empty('No rules loaded', 'Start the service with --rules to load rules.'), { k: 'rules' }));
}
