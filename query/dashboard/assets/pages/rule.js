// One rule: its printed text, its violations over time, and the runs of
// the range that violated it.

import { get } from '../api.js';
import { h, fill, num, card, empty, table, badge, runLink, when, pageHead, stat } from '../ui.js';
import { barChart } from '../chart.js';

export function title(ctx) { return `Rule ${ctx.arg}`; }

export async function render(main, ctx) {
  const id = ctx.arg;
  const [rules, stats, runs] = await Promise.all([
    get('/v1/rules', { since: ctx.since }),
    get(`/v1/rules/${encodeURIComponent(id)}/stats`, { since: ctx.since, step: ctx.step }),
    get('/v1/runs', { since: ctx.since, rule: id, status: 'violated', limit: 20 }),
  ]);
  const rule = (rules.rules || []).find((r) => r.ruleId === id);
  const series = (stats.points || []).map((p) => ({ t: p.t, v: p.violations }));
  const total = series.reduce((s, p) => s + p.v, 0);
  const box = h('div.chart-box');
  fill(main,
    pageHead(h('span', {}, 'Rule ', h('span.mono', { 'data-k': 'rule-id' }, id)), rule ? rule.description : 'This rule is not loaded now; its stored verdicts remain.'),
    rule ? h('div.stats', {},
      stat('Runs', num(rule.runs), { k: 'runs' }),
      stat('Violated', num(rule.violated), { k: 'violated', tone: rule.violated ? 'violated' : '' }),
      stat('Pending', num(rule.pending), { k: 'pending', tone: rule.pending ? 'pending' : '' }),
      stat('Unresolved', num(rule.unresolved), { k: 'unresolved' }),
      stat('Satisfied', num(rule.satisfied), { k: 'satisfied', tone: 'satisfied' })) : null,
    rule ? card('Rule', h('div', {},
      rule.text ? h('pre.formula', { 'data-k': 'text' }, rule.text) : h('p.muted', {}, 'A POLICY.md capability rule: it has no formula.'),
      h('p.small.muted', {}, `mode ${rule.mode || '–'}`, rule.version ? ` · version ${rule.version}` : '')), { k: 'rule' }) : null,
    card('Violations over time', total ? box : empty('No violations of this rule in the range', 'Pick a longer range above to look further back.'), { k: 'rule-chart', actions: h('span.small', {}, h('span', { 'data-k': 'violations-total' }, num(total)), ' in the range') }),
    card('Violating runs', (runs.runs || []).length ? table([
      { label: 'Run', cell: (r) => runLink(r.runId), k: 'run' },
      { label: 'Agent', cell: (r) => h('span.mono', {}, r.agent || '–') },
      { label: 'Started', cell: (r) => when(r.startedAt) },
      { label: 'Events', num: true, cell: (r) => num(r.events) },
      { label: 'Status', cell: (r) => badge(r.status) },
    ], runs.runs, { rowKey: (r) => r.runId }) : empty('No run violated this rule in the range'), {
      k: 'violating-runs', actions: h('a.small', { href: ctx.link(`/runs?rule=${encodeURIComponent(id)}&status=violated`) }, 'All →'),
    }));
  if (total) barChart(box, series, { stepMs: ctx.stepMs, unit: 'violations', k: 'rule-series' });
}
