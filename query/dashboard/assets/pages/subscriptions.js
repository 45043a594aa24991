// Alert subscriptions with their delivery status, and the silences, as
// /v1/subscriptions and /v1/silences answer (any token reads them; a
// service without the alerts bucket says so in its 404).

import { get } from '../api.js';
import { h, fill, num, card, empty, table, when, pageHead, errorBox } from '../ui.js';

export function title() { return 'Subscriptions'; }

export async function render(main) {
  const [subs, silences] = await Promise.allSettled([get('/v1/subscriptions'), get('/v1/silences')]);
  if (subs.status === 'rejected' && ['unauthorized', 'forbidden'].includes(subs.reason.kind)) {
    fill(main, pageHead('Subscriptions', 'Who is told about which verdicts, and whether the telling worked.'), errorBox(subs.reason, { what: 'the subscriptions' }));
    return;
  }
  fill(main,
    pageHead('Subscriptions', 'Who is told about which verdicts, and whether the telling worked. Manage them with ponens alerts or the API.'),
    card('Subscriptions', subs.status === 'fulfilled' ? subTable(subs.value.subscriptions || []) : errorBox(subs.reason), { k: 'subscriptions' }),
    card('Silences', silences.status === 'fulfilled' ? silenceTable(silences.value.silences || []) : errorBox(silences.reason), { k: 'silences' }));
}

/** Where a subscription delivers: the channel's kind and its target. */
export function channel(s) {
  if (s.webhook) return ['webhook', s.webhook];
  if (s.slack) return ['slack', s.slack];
  if (s.subject) return ['nats', s.subject];
  if (s.stream) return ['stream', '/v1/subscriptions/' + s.id + '/stream'];
  return ['–', ''];
}

function deliveryCell(s) {
  const d = s.delivery || {};
  const failed = Boolean(d.lastError);
  return h('div.delivery', {},
    h('div', {}, h(`span.dot-s.${failed ? 's-violated' : d.lastAt ? 's-satisfied' : 's-unresolved'}`),
      h('span', { 'data-k': 'last-status' }, d.lastStatus ? `HTTP ${d.lastStatus}` : d.lastAt ? 'delivered' : 'nothing sent yet'),
      d.lastAttempts ? h('span.muted', { 'data-k': 'last-attempts' }, ` · ${num(d.lastAttempts)} ${d.lastAttempts === 1 ? 'attempt' : 'attempts'}`) : null,
      d.lastAt ? h('span.muted', {}, ' · ', when(d.lastAt, { relative: true })) : null),
    failed ? h('div.dl-error', { 'data-k': 'last-error' }, d.lastError) : null);
}

/** A subscription's grouping: wait / interval, and its repeat. */
function groupCell(s) {
  if (!s.groupWait) return '–';
  const g = [s.groupWait, s.groupInterval].filter(Boolean).join(' / ');
  return s.repeatInterval ? `${g}, repeat ${s.repeatInterval}` : g;
}

function subTable(rows) {
  if (!rows.length) return empty('No subscriptions', 'Subscribe with: ponens alerts subscribe --rule \'*\' --webhook https://…');
  return table([
    { label: 'Id', cell: (s) => h('span.mono', {}, s.id), k: 'id' },
    { label: 'Rules', cell: (s) => (s.rules && s.rules.length ? s.rules.join(', ') : 'all'), k: 'rules' },
    { label: 'Statuses', cell: (s) => (s.statuses && s.statuses.length ? s.statuses.join(', ') : 'violated') },
    { label: 'Agents', cell: (s) => (s.agents && s.agents.length ? s.agents.join(', ') : 'all') },
    { label: 'Channel', cls: 'wide', cell: (s) => { const [kind, to] = channel(s); return h('div', {}, h('span.chip', {}, kind), s.secretSet ? h('span.chip', { title: 'signed with its secret' }, 'signed') : null, ' ', h('span.mono.small.break', {}, to)); }, k: 'channel' },
    { label: 'Group', cell: groupCell, k: 'group' },
    { label: 'Rate limit', cell: (s) => (s.rateLimit ? `${num(s.rateLimit)} / ${s.ratePeriod || '1m'}` : '–'), k: 'rate' },
    { label: 'Sent', num: true, cell: (s) => num((s.delivery || {}).delivered || 0), k: 'delivered' },
    { label: 'Dead', num: true, cell: (s) => num((s.delivery || {}).dead || 0), k: 'dead' },
    { label: 'Limited', num: true, cell: (s) => num((s.delivery || {}).rateLimited || 0), k: 'limited' },
    { label: 'Last delivery', cls: 'wide', cell: deliveryCell },
  ], rows, { rowKey: (s) => s.id, caption: 'Subscriptions' });
}

function silenceTable(rows) {
  if (!rows.length) return empty('No silences', 'Silence a rule, agent or run until a time with: ponens alerts silence');
  const now = Date.now();
  return table([
    { label: 'Id', cell: (s) => h('span.mono', {}, s.id), k: 'id' },
    { label: 'Rule', cell: (s) => s.rule || 'any' },
    { label: 'Agent', cell: (s) => s.agent || 'any' },
    { label: 'Run', cell: (s) => s.run || 'any' },
    { label: 'Ends', cell: (s) => when(s.ends) },
    { label: 'State', cell: (s) => (new Date(s.ends).getTime() > now ? h('span.chip.active', {}, 'active') : h('span.chip', {}, 'expired')), k: 'state' },
  ], rows, { rowKey: (s) => s.id, caption: 'Silences' });
}
