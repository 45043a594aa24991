// The rule × run matrix: the newest runs down, the rules across, each cell
// the run's final (or current) status for the rule, linking to the run.

import { get, getJSON } from '../api.js';
import { h, fill, num, card, empty, pageHead, statusGlyph, STATUSES } from '../ui.js';

export function title() { return 'Rule × run matrix'; }

const LIMITS = [25, 50, 100, 200];

export async function render(main, ctx) {
  const limit = LIMITS.includes(Number(ctx.params.get('limit'))) ? Number(ctx.params.get('limit')) : 50;
  const m = await matrixOf(ctx.since, limit);
  const counts = Object.fromEntries(STATUSES.map((s) => [s, 0]));
  for (const r of m.runs) for (const s of Object.values(r.cells || {})) if (s in counts) counts[s] += 1;

  const picker = h('label.inline', {}, 'Runs ', h('select', {
    onchange: (e) => { const q = new URLSearchParams(location.search); q.set('limit', e.target.value); location.search = q.toString(); },
  }, LIMITS.map((n) => h('option', { value: n, selected: n === limit }, `newest ${n}`))));
  const legend = h('div.legend', { 'data-k': 'legend' }, STATUSES.map((s) =>
    h('span.legend-item', {}, h(`span.cell.s-${s}`, { 'aria-hidden': 'true' }, statusGlyph(s)), ` ${s} `, h('b.num', { 'data-k': `count-${s}` }, num(counts[s])))));

  fill(main,
    pageHead('Rule × run matrix', `The newest ${num(m.runs.length)} runs of the range against every rule: a cell is the run's status for the rule; follow a cell to the run, a column head to the rule.`, picker),
    card(null, m.runs.length && m.rules.length ? h('div', {}, legend, grid(m)) : empty('No runs in this time range', 'Runs appear as agents publish their events. Pick a longer range above to look further back.'), { k: 'matrix' }));
}

/**
 * The newest runs of the range (/v1/runs) against every rule, each cell
 * the run's status for the rule from summary.json's matrix (/v1/summary
 * of those runs): { rules: [id], runs: [{ runId, agent, cells: { rule: status } }] }.
 */
export async function matrixOf(since, limit) {
  const page = await get('/v1/runs', { since, limit });
  if (!page.runs.length) return { rules: [], runs: [] };
  const summary = await getJSON('/v1/summary', { run: page.runs.map((r) => r.runId) });
  const col = new Map(summary.matrix.traces.map((id, j) => [id, j]));
  return {
    rules: summary.matrix.rules,
    runs: page.runs.map((r) => ({
      runId: r.runId,
      agent: r.agent,
      cells: Object.fromEntries(summary.matrix.rules.map((rule, i) => [rule, summary.matrix.cells[i][col.get(r.runId)]])),
    })),
  };
}

function grid(m) {
  const head = h('tr', {}, h('th.run-col', { scope: 'col' }, 'Run'), h('th.agent-col', { scope: 'col' }, 'Agent'),
    m.rules.map((r) => h('th.rule-col', { scope: 'col', title: r }, h('a', { href: `/rules/${encodeURIComponent(r)}` }, h('span', {}, r)))));
  const rows = m.runs.map((run) => h('tr', { 'data-row': run.runId },
    h('th.run-col', { scope: 'row' }, h('a.mono', { href: `/runs/${encodeURIComponent(run.runId)}` }, run.runId)),
    h('td.agent-col.mono', {}, run.agent || '–'),
    m.rules.map((rule) => {
      const s = (run.cells || {})[rule];
      if (!s) return h('td.mcell', { 'data-rule': rule }, h('span.cell.s-none', { title: `${rule} · ${run.runId}: no verdict` }, ''));
      return h('td.mcell', { 'data-rule': rule, 'data-status': s },
        h(`a.cell.s-${s}`, { href: `/runs/${encodeURIComponent(run.runId)}`, title: `${rule} · ${run.runId}: ${s}`, 'aria-label': `${rule} ${s}` }, statusGlyph(s)));
    })));
  return h('div.table-wrap.matrix-wrap', {}, h('table.matrix', {}, h('thead', {}, head), h('tbody', {}, rows)));
}
