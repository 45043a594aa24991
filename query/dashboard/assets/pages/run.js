// A run's timeline: its facts, the status of each rule, and its events in
// order with the verdict transitions each caused, the violating part of
// the rule highlighted in the printed rule.

import { get } from '../api.js';
import { h, fill, num, card, empty, table, badge, ruleLink, when, pageHead, span, STATUSES } from '../ui.js';

export function title(ctx) { return `Run ${ctx.arg}`; }

export async function render(main, ctx) {
  const id = encodeURIComponent(ctx.arg);
  const [detail, tl, rules] = await Promise.all([
    get(`/v1/runs/${id}`),
    get(`/v1/runs/${id}/timeline`),
    get('/v1/rules', { since: ctx.since }).catch(() => ({ rules: [] })), // the texts only embellish
  ]);
  const run = detail.run;
  const texts = new Map((rules.rules || []).map((r) => [r.ruleId, r]));
  const counts = Object.fromEntries(STATUSES.map((s) => [s, 0]));
  for (const r of detail.rules || []) if (r.status in counts) counts[r.status] += 1;

  fill(main,
    pageHead(h('span', {}, 'Run ', h('span.mono', { 'data-k': 'run-id' }, run.runId)), null, badge(run.status)),
    h('div.facts', { 'data-k': 'facts' },
      fact('Agent', h('span.mono', { 'data-k': 'agent' }, run.agent || '–')),
      fact('Project', h('span', { 'data-k': 'project' }, run.project || '–')),
      fact('Started', when(run.startedAt)),
      fact('Ended', run.endedAt ? when(run.endedAt) : h('span.chip.open', {}, 'open')),
      fact('Duration', run.endedAt ? span(run.startedAt, run.endedAt) : '–'),
      fact('Outcome', h('span', { 'data-k': 'outcome' }, run.outcome || '–')),
      fact('Events', h('span.num', { 'data-k': 'events' }, num(run.events))),
      fact('Rules', h('span', {}, STATUSES.filter((s) => counts[s]).map((s) => h(`span.count.s-${s}`, { 'data-k': `rules-${s}` }, `${num(counts[s])} ${s}`))))),
    card('Rules', ruleTable(detail.rules || []), { k: 'rules' }),
    timeline(tl.events || [], tl.verdicts || [], texts, run.startedAt));
}

function fact(label, value) {
  return h('div.fact', {}, h('div.fact-label', {}, label), h('div.fact-value', {}, value));
}

function ruleTable(rows) {
  if (!rows.length) return empty('No rule has a verdict for this run yet', 'A rule without a verdict has held so far.');
  const order = (s) => STATUSES.indexOf(s);
  rows = [...rows].sort((a, b) => order(a.status) - order(b.status) || a.ruleId.localeCompare(b.ruleId));
  return table([
    { label: 'Rule', cell: (r) => ruleLink(r.ruleId), k: 'rule' },
    { label: 'Version', cell: (r) => h('span.mono.muted', {}, r.version || '–') },
    { label: 'Mode', cell: (r) => r.mode || '–' },
    { label: 'Status', cell: (r) => badge(r.status), k: 'status' },
    { label: 'At event', num: true, cell: (r) => (r.seq ? h('a.mono', { href: `#e-${r.seq}` }, `#${r.seq}`) : '–'), k: 'seq' },
    { label: 'When', cell: (r) => when(r.ts) },
  ], rows, { rowKey: (r) => r.ruleId, caption: 'Rules of the run' });
}

/** The printed rule with sub marked where it first occurs; null without a text. */
export function highlighted(text, sub) {
  if (!text) return null;
  const i = sub ? text.indexOf(sub) : -1;
  if (i < 0) return h('pre.formula', {}, text);
  return h('pre.formula', {}, text.slice(0, i), h('mark', { 'data-k': 'subformula' }, sub), text.slice(i + sub.length));
}

function timeline(events, verdicts, texts, startedAt) {
  const bySeq = new Map();
  for (const v of verdicts) {
    if (!bySeq.has(v.seq)) bySeq.set(v.seq, []);
    bySeq.get(v.seq).push(v);
  }
  const previous = new Map(); // rule -> status before the transition (a rule starts satisfied)
  const list = h('ol.timeline', { 'data-k': 'timeline' });
  for (const e of events) {
    const vs = bySeq.get(e.seq) || [];
    bySeq.delete(e.seq);
    list.append(eventItem(e, vs.map((v) => transition(v, previous, texts)), startedAt));
  }
  for (const [seq, vs] of bySeq) { // verdicts whose event is not stored (yet): shown all the same
    list.append(eventItem({ seq, type: 'event not stored', ts: null }, vs.map((v) => transition(v, previous, texts)), startedAt));
  }
  const only = h('input', { type: 'checkbox', id: 'only-verdicts', onchange: (e) => list.classList.toggle('only-verdicts', e.target.checked) });
  const actions = h('span.small', {}, h('span', { 'data-k': 'event-count' }, num(events.length)), ' events · ',
    h('span', { 'data-k': 'verdict-count' }, num(verdicts.length)), ' transitions · ',
    h('label.inline', { for: 'only-verdicts' }, only, ' only events with verdicts'));
  return card('Timeline', events.length || verdicts.length ? list : empty('No events stored for this run yet', 'Events appear as the store receives them, a moment after the agent publishes them.'), { k: 'timeline-card', actions });
}

function eventItem(e, transitions, startedAt) {
  const what = [e.type, e.actionType].filter(Boolean).join(' · ');
  return h(`li.ev${transitions.length ? '.has-verdicts' : ''}`, { id: `e-${e.seq}`, 'data-seq': e.seq },
    h('div.ev-rail', {}, h('a.ev-seq.mono', { href: `#e-${e.seq}` }, `#${e.seq}`), h('span.ev-time', { title: e.ts || '' }, e.ts && startedAt ? `+${span(startedAt, e.ts)}` : '')),
    h('div.ev-body', {},
      h('div.ev-line', {}, h(`span.ev-type.t-${(e.type || '').replace(/[^a-z]/g, '')}`, {}, what || 'event'),
        e.target ? h('span.ev-target.mono', {}, e.target) : null,
        e.capability ? h('span.chip', {}, e.capability) : null,
        e.label ? h('span.ev-label', {}, e.label) : null),
      transitions));
}

function transition(v, previous, texts) {
  const id = v.rule ? v.rule.id : '?';
  const from = previous.get(id) || 'satisfied';
  previous.set(id, v.status);
  const rule = texts.get(id) || texts.get(id.split('@')[0]);
  const sub = v.cause && v.cause.subformula;
  return h(`div.tr.tr-${v.status}`, { 'data-rule': id, 'data-status': v.status },
    h('div.tr-line', {}, ruleLink(id), h('span.muted', {}, from), h('span.arrow', { 'aria-hidden': 'true' }, '→'), badge(v.status),
      v.leaning ? h('span.chip', {}, `leaning ${v.leaning}`) : null,
      v.mode && v.mode !== 'observe' ? h('span.chip.mode', {}, v.mode) : null),
    sub ? (rule && rule.text ? highlighted(rule.text, sub) : h('pre.formula', {}, h('mark', { 'data-k': 'subformula' }, sub))) : null);
}
