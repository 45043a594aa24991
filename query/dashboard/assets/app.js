// The dashboard's entry: picks the page from the path, keeps the time
// range and the token, and renders the page into <main>. Links between
// pages are ordinary links (each page load renders one page).

import { token, setToken } from './api.js';
import { h, fill, errorBox } from './ui.js';
import * as overview from './pages/overview.js';
import * as matrix from './pages/matrix.js';
import * as runs from './pages/runs.js';
import * as run from './pages/run.js';
import * as rules from './pages/rules.js';
import * as rule from './pages/rule.js';
import * as deadletters from './pages/deadletters.js';
import * as subscriptions from './pages/subscriptions.js';

const RANGE_KEY = 'ponens.range';
const ranges = { '1h': [300000, '5m'], '6h': [900000, '15m'], '24h': [3600000, '1h'], '168h': [21600000, '6h'], '720h': [86400000, '24h'] };

/** The page for a path, and its argument (a run or rule id) when it has one. */
export function route(path) {
  const tail = (prefix) => decodeURIComponent(path.slice(prefix.length));
  if (path === '/' || path === '') return { page: overview, nav: 'overview' };
  if (path === '/matrix') return { page: matrix, nav: 'matrix' };
  if (path === '/runs') return { page: runs, nav: 'runs' };
  if (path.startsWith('/runs/') && path.length > 6) return { page: run, nav: 'runs', arg: tail('/runs/') };
  if (path === '/rules') return { page: rules, nav: 'rules' };
  if (path.startsWith('/rules/') && path.length > 7) return { page: rule, nav: 'rules', arg: tail('/rules/') };
  if (path === '/deadletters') return { page: deadletters, nav: 'deadletters' };
  if (path === '/subscriptions') return { page: subscriptions, nav: 'subscriptions' };
  return { page: null, nav: '' };
}

function currentRange() {
  const q = new URLSearchParams(location.search).get('since');
  if (q && ranges[q]) {
    try { localStorage.setItem(RANGE_KEY, q); } catch { /* no storage */ }
    return q;
  }
  let kept = '';
  try { kept = localStorage.getItem(RANGE_KEY) || ''; } catch { /* no storage */ }
  return ranges[kept] ? kept : '24h';
}

function setupRange(since) {
  const sel = document.getElementById('range');
  sel.value = since;
  sel.addEventListener('change', () => {
    try { localStorage.setItem(RANGE_KEY, sel.value); } catch { /* no storage */ }
    const q = new URLSearchParams(location.search);
    q.set('since', sel.value);
    q.delete('cursor');
    location.search = q.toString();
  });
  for (const a of document.querySelectorAll('a[data-page]')) {
    a.href = `${a.getAttribute('href')}?since=${since}`;
  }
}

function setupToken() {
  const dlg = document.getElementById('token-dialog');
  const input = document.getElementById('token-input');
  const button = document.getElementById('token-button');
  const label = () => { button.textContent = token() ? 'Token set' : 'Token'; button.classList.toggle('on', !!token()); };
  label();
  button.addEventListener('click', () => { input.value = token(); dlg.showModal(); input.focus(); });
  document.getElementById('token-cancel').addEventListener('click', () => dlg.close());
  document.getElementById('token-clear').addEventListener('click', () => { setToken(''); dlg.close(); location.reload(); });
  document.getElementById('token-form').addEventListener('submit', (e) => {
    e.preventDefault();
    setToken(input.value.trim());
    dlg.close();
    location.reload();
  });
}

async function main() {
  const since = currentRange();
  const [stepMs, step] = ranges[since];
  setupRange(since);
  setupToken();
  const { page, nav, arg } = route(location.pathname);
  for (const a of document.querySelectorAll('a[data-page]')) {
    a.classList.toggle('active', a.dataset.page === nav);
    if (a.dataset.page === nav) a.setAttribute('aria-current', 'page');
  }
  const el = document.getElementById('main');
  if (!page) {
    document.title = 'Not found · ponens';
    fill(el, h('div.notice.notice-error', { 'data-k': 'error', 'data-kind': 'not_found' },
      h('p.notice-title', {}, 'No such page'),
      h('p', {}, `${location.pathname} is not a page of the dashboard. `, h('a', { href: '/' }, 'Go to the overview'))));
    document.body.dataset.ready = 'true';
    return;
  }
  const ctx = { since, step, stepMs, arg, params: new URLSearchParams(location.search), link: (path) => `${path}${path.includes('?') ? '&' : '?'}since=${since}` };
  document.title = `${page.title(ctx)} · ponens`;
  try {
    await page.render(el, ctx);
  } catch (err) {
    console.warn('ponens dashboard:', err.message || err);
    fill(el, errorBox(err, { what: page.title(ctx).toLowerCase() }));
  }
  document.body.dataset.ready = 'true'; // the browser tests wait for this
}

main();
