// The query service's client: JSON envelopes, JSON lines, and the verdict
// stream read with fetch() so that the Authorization header can be sent
// (EventSource cannot send headers).

const TOKEN_KEY = 'ponens.token';

/** The token kept in this browser, or '' when there is none. */
export function token() {
  try { return localStorage.getItem(TOKEN_KEY) || ''; } catch { return ''; }
}

/** Keeps t as the token (or forgets it when t is empty). */
export function setToken(t) {
  try {
    if (t) localStorage.setItem(TOKEN_KEY, t); else localStorage.removeItem(TOKEN_KEY);
  } catch { /* storage disabled: the token lasts for this page only */ }
}

/** An error of the query service, with the envelope's errorType as kind. */
export class APIError extends Error {
  constructor(kind, message, status, path) {
    super(message);
    this.kind = kind; // bad_data, not_found, unauthorized, forbidden, unavailable, timeout, internal, unreachable
    this.status = status;
    this.path = path;
  }
}

const kindOfStatus = { 400: 'bad_data', 401: 'unauthorized', 403: 'forbidden', 404: 'not_found', 503: 'unavailable', 504: 'timeout' };

function headers(extra = {}) {
  const t = token();
  return t ? { ...extra, Authorization: `Bearer ${t}` } : extra;
}

/** The URL of path with params; arrays give repeated parameters, empty values are left out. */
export function url(path, params = {}) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    for (const x of Array.isArray(v) ? v : [v]) {
      if (x !== undefined && x !== null && x !== '') q.append(k, String(x));
    }
  }
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

async function fetchOK(path, params, accept) {
  let resp;
  try {
    resp = await fetch(url(path, params), { headers: headers({ Accept: accept }) });
  } catch (e) {
    throw new APIError('unreachable', `the query service did not answer (${e.message})`, 0, path);
  }
  return resp;
}

async function failure(resp, path) {
  let body = null;
  try { body = await resp.json(); } catch { /* not an envelope */ }
  const kind = (body && body.errorType) || kindOfStatus[resp.status] || 'internal';
  const message = (body && body.error) || `HTTP ${resp.status} ${resp.statusText}`.trim();
  return new APIError(kind, message, resp.status, path);
}

/** GETs path and returns the data of its success envelope; throws an APIError otherwise. */
export async function get(path, params = {}) {
  const resp = await fetchOK(path, params, 'application/json');
  if (!resp.ok) throw await failure(resp, path);
  let body;
  try { body = await resp.json(); } catch {
    throw new APIError('internal', `${path}: the answer is not JSON`, resp.status, path);
  }
  if (body && body.status === 'success') return body.data;
  throw new APIError((body && body.errorType) || 'internal', (body && body.error) || `${path}: no success envelope`, resp.status, path);
}

/** GETs path whose answer is JSON without an envelope (summary.json) and returns it; throws an APIError otherwise. */
export async function getJSON(path, params = {}) {
  const resp = await fetchOK(path, params, 'application/json');
  if (!resp.ok) throw await failure(resp, path);
  try { return await resp.json(); } catch {
    throw new APIError('internal', `${path}: the answer is not JSON`, resp.status, path);
  }
}

/** GETs path as JSON lines and returns the parsed objects. */
export async function getLines(path, params = {}) {
  const resp = await fetchOK(path, params, 'application/x-ndjson');
  if (!resp.ok) throw await failure(resp, path);
  const text = await resp.text();
  return text.split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l));
}

/**
 * Reads the server-sent events of path until signal aborts, reconnecting
 * after a dropped connection (1 s, doubling up to 15 s). onEvent gets
 * {event, data} for each event; onState gets 'connecting', 'live',
 * 'reconnecting', or an APIError when the service refuses (then it stops).
 */
export async function stream(path, params, { onEvent, onState, signal }) {
  let wait = 1000;
  while (!signal.aborted) {
    onState('connecting');
    try {
      const resp = await fetch(url(path, params), { headers: headers({ Accept: 'text/event-stream' }), signal, cache: 'no-store' });
      if (!resp.ok) {
        const err = await failure(resp, path);
        if (err.kind === 'unauthorized' || err.kind === 'forbidden' || err.kind === 'bad_data' || err.kind === 'not_found') {
          onState(err);
          return;
        }
        throw err;
      }
      onState('live');
      wait = 1000;
      await readEvents(resp.body, onEvent);
    } catch (e) {
      if (signal.aborted) return;
    }
    if (signal.aborted) return;
    onState('reconnecting');
    await sleep(wait, signal);
    wait = Math.min(wait * 2, 15000);
  }
}

/** Parses a text/event-stream body, calling onEvent for each event; comments are skipped. */
export async function readEvents(body, onEvent) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    let cut;
    while ((cut = buf.search(/\r?\n\r?\n/)) >= 0) {
      const block = buf.slice(0, cut);
      buf = buf.slice(cut).replace(/^\r?\n\r?\n/, '');
      const ev = parseBlock(block);
      if (ev) onEvent(ev);
    }
  }
}

function parseBlock(block) {
  let event = 'message';
  const data = [];
  for (const line of block.split(/\r?\n/)) {
    if (line === '' || line.startsWith(':')) continue;
    const i = line.indexOf(':');
    const field = i < 0 ? line : line.slice(0, i);
    const value = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
    if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
  }
  return data.length ? { event, data: data.join('\n') } : null;
}

function sleep(ms, signal) {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
  });
}
