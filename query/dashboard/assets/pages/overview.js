// The fleet overview: key figures, violations over time, the most violated
// rules, agents by compliance, and the live feed of violations.

import { get, stream } from '../api.js';
import { h, fill, num, pct, card, empty, table, stat, meter, badge, runLink, ruleLink, when, pageHead } from '../ui.js';
import { barChart } from '../chart.js';

export function title() { return 'Fleet overview'; }

/** The share of runs of the fleet that violated nothing (null without runs). */
export function fleetCompliance(agents) {
  const runs = agents.reduce((s, a) => s + a.runs, 0);
  const bad = agents.reduce((s, a) => s + a.violating, 0);
  return runs ? (runs - bad) / runs : null;
}

const HOUR = 3600000;

/** The fleet's bucket: the range's step, at least an hour (violations are counted per hour). */
export function fleetStep(ctx) {
  return ctx.stepMs < HOUR ? ['1h', HOUR] : [ctx.step, ctx.stepMs];
}

/** Whether the service streams verdicts: its API description lists /v1/stream. */
async function streams() {
  try {
    const resp = await fetch('/openapi.json', { headers: { Accept: 'application/json' } });
    return resp.ok && Boolean(((await resp.json()).paths || {})['/v1/stream']);
  } catch {
    return false;
  }
}

export async function render(main, ctx) {
  const [step, stepMs] = fleetStep(ctx);
  const [fleet, live] = await Promise.all([get('/v1/fleet', { since: ctx.since, step }), streams()]);
  const series = (fleet.violationsOverTime || []).map((p) => ({ t: p.t, v: p.violations }));
  const violations = series.reduce((s, p) => s + p.v, 0);
  const agents = [...(fleet.agents || [])].sort((a, b) => a.compliance - b.compliance || a.agent.localeCompare(b.agent));
  const compliance = fleetCompliance(agents);
  const chartBox = h('div.chart-box');
  const feed = liveFeed();

  fill(main,
    pageHead('Fleet overview', 'Runs, violations and agents over the selected time range; violations stream in live below.'),
    h('div.stats', {},
      stat('Runs', num(fleet.runs.total), { k: 'runs-total', note: h('span', {}, h('span', { 'data-k': 'runs-open' }, num(fleet.runs.open)), ' open · ', h('span', { 'data-k': 'runs-ended' }, num(fleet.runs.ended)), ' ended') }),
      stat('Violations', num(violations), { k: 'violations-total', tone: violations ? 'violated' : '', note: 'verdicts that turned violated' }),
      stat('Agents', num(agents.length), { k: 'agents-count', note: `${num(agents.filter((a) => a.violating > 0).length)} with a violating run` }),
      stat('Fleet compliance', pct(compliance), { k: 'fleet-compliance', tone: compliance === null ? '' : compliance >= 0.95 ? 'satisfied' : compliance >= 0.8 ? 'pending' : 'violated', note: 'runs that violated no rule' })),
    card('Violations over time', series.length && violations ? chartBox : empty('No violations in this time range', 'Violations appear here as the monitor reports them. Pick a longer range above to look further back.'), { k: 'violations-chart' }),
    h('div.grid-2', {},
      card('Top violated rules', topRules(fleet.topRules || []), { k: 'top-rules', actions: h('a.small', { href: ctx.link('/rules') }, 'All rules →') }),
      card('Agents by compliance', agentTable(agents), { k: 'agents', actions: h('span.muted.small', {}, 'worst first') })),
    feed.el);
  if (series.length && violations) barChart(chartBox, series, { stepMs, unit: 'violations', k: 'violations-series' });
  if (live) feed.start(); else feed.off();
}

function topRules(rows) {
  if (!rows.length) return empty('No rule was violated', 'Every run in this time range satisfied every rule so far.');
  const most = Math.max(...rows.map((r) => r.violations), 1);
  return table([
    { label: 'Rule', cell: (r) => ruleLink(r.ruleId), k: 'rule' },
    { label: 'Violations', num: true, cell: (r) => num(r.violations), k: 'violations' },
    { label: 'Runs', num: true, cell: (r) => num(r.runs), k: 'runs' },
    { label: '', cls: 'bar-cell', cell: (r) => meter(r.violations / most, 'violated') },
  ], rows, { rowKey: (r) => r.ruleId, caption: 'Top violated rules' });
}

function agentTable(rows) {
  if (!rows.length) return empty('No agent ran in this time range', 'Agents appear once they publish the events of a run.');
  return table([
    { label: 'Agent', cell: (a) => h('span.mono', {}, a.agent), k: 'agent' },
    { label: 'Runs', num: true, cell: (a) => num(a.runs), k: 'runs' },
    { label: 'Violating', num: true, cell: (a) => num(a.violating), k: 'violating' },
    { label: 'Compliance', num: true, cell: (a) => pct(a.compliance), k: 'compliance' },
    { label: '', cls: 'bar-cell', cell: (a) => meter(a.compliance, a.compliance >= 0.95 ? 'satisfied' : a.compliance >= 0.8 ? 'pending' : 'violated') },
  ], rows, { rowKey: (a) => a.agent, caption: 'Agents by compliance' });
}

const MAX_FEED = 50;

/** The live feed: violations as the service streams them, newest first. */
function liveFeed() {
  const state = h('span.live-state', { 'data-k': 'feed-state', 'data-state': 'connecting' }, 'connecting');
  const count = h('span', { 'data-k': 'feed-count' }, '0');
  const list = h('ol.feed', { 'data-k': 'feed' });
  const placeholder = empty('Waiting for violations…', 'New violations appear here the moment the monitor reports them; nothing here is older than this page.');
  const body = h('div', {}, placeholder, list);
  const el = card('Live violations', body, { k: 'live', actions: h('span.live', {}, h('span.dot'), state, ' · ', count, ' received') });
  let n = 0;
  const onEvent = (ev) => {
    if (ev.event !== 'verdict') return;
    let v;
    try { v = JSON.parse(ev.data); } catch (e) {
      console.warn('ponens dashboard: a stream event that is not JSON:', ev.data.slice(0, 80));
      return;
    }
    n += 1;
    count.textContent = num(n);
    placeholder.remove();
    list.prepend(h('li.feed-item', { 'data-run': v.runId, 'data-rule': v.rule && v.rule.id, 'data-seq': v.seq },
      h('div.feed-line', {}, badge(v.status), ruleLink(v.rule ? v.rule.id : '?'), h('span.muted', {}, 'in'), runLink(v.runId), h('span.muted.mono', {}, `#${v.seq}`), h('span.feed-time', {}, when(new Date().toISOString(), { relative: true }))),
      v.cause && v.cause.subformula ? h('code.feed-sub', {}, v.cause.subformula) : null));
    while (list.children.length > MAX_FEED) list.lastElementChild.remove();
  };
  const onState = (s) => {
    if (typeof s === 'string') {
      state.textContent = s;
      state.dataset.state = s;
      return;
    }
    state.textContent = s.kind === 'forbidden' ? 'refused' : s.kind;
    state.dataset.state = 'refused';
    body.replaceChildren(empty('The live feed is refused', s.message));
  };
  const ctl = new AbortController();
  window.addEventListener('pagehide', () => ctl.abort());
  const off = () => {
    state.textContent = 'off';
    state.dataset.state = 'off';
    body.replaceChildren(empty('No live feed from this service', 'This query service runs without NATS, so it cannot stream verdicts; ponens serve does. The figures above are from the store.'));
  };
  return { el, off, start: () => stream('/v1/stream', { status: 'violated' }, { onEvent, onState, signal: ctl.signal }) };
}
