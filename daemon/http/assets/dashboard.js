// The dashboard's script, loaded by dashboard.html for every page: draws the
// page its path names from the JSON API (same origin, the token in an
// HttpOnly cookie) and refreshes it every 2 s.
'use strict';
// Every string from the daemon goes in as text (text nodes, textContent,
// setAttribute of a plain value); markup is only ever made here, by name.
// Pages: path -> function drawing into #main.
const pages = {'/': cluster, '/index.html': cluster, '/jobs': jobList, '/job': oneJob, '/sweeps': sweepList,
               '/sweep': oneSweep, '/store': store};
const SVG = 'http://www.w3.org/2000/svg';

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c ?? '')));
  return e;
}
function svg(tag, attrs, text) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = String(text);
  return e;
}
// The head's clock minus the browser's, as of the last answer: the times
// shown were stamped by the head, whose clock this machine's may not match.
let headOffsetMs = 0;
async function get(path) {
  const r = await fetch(path, {credentials: 'same-origin'});
  const headMs = Number(r.headers.get('X-Clusterd-Head-Unix-Ms'));
  if (headMs > 0) headOffsetMs = headMs - Date.now();
  const body = await r.json().catch(() => ({error: r.status + ' ' + r.statusText}));
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}
const param = name => new URLSearchParams(location.search).get(name);
// A ResourceSet as "4 CPU, 2 GPU, 1.5 GiB memory, 1 trainium": CPU, GPU,
// memory, then other names in order, as the CLI writes it (FormatResources
// in common/resources.cc); an object's own key order is not one to rely on.
// Memory is in bytes; other resources are counts.
const resourceOrder = ['CPU', 'GPU', 'memory'];
function res(r) {
  const amounts = (r && r.amounts) || {};
  const known = k => { const i = resourceOrder.indexOf(k); return i < 0 ? resourceOrder.length : i; };
  return Object.keys(amounts).sort((a, b) => known(a) - known(b) || (a < b ? -1 : a > b ? 1 : 0))
    .map(k => (k === 'memory' ? bytes(amounts[k]) : fmtNum(amounts[k])) + ' ' + k).join(', ');
}
// A job's entrypoint as the CLI writes it (FormatEntrypoint in
// cli/job_printer.cc): the string of ["/bin/sh", "-c", s], else the argv
// joined by spaces, each argument quoted only where a shell needs it
// (Python's shlex.join).
const shellWord = a => /^[A-Za-z0-9_\-.\/=:,+@%]+$/.test(a) ? a : "'" + a.replace(/'/g, "'\\''") + "'";
const commandLine = argv => (argv = argv || []).length === 3 && argv[0] === '/bin/sh' && argv[1] === '-c' ? argv[2]
                                                                                                : argv.map(shellWord).join(' ');
const fmtNum = v => { const n = Number(v); return Number.isInteger(n) ? String(n) : n.toPrecision(4).replace(/\.?0+$/, ''); };
const bytes = v => { let n = Number(v), u = 0; const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  while (n >= 1024 && u < units.length - 1) { n /= 1024; ++u; } return (u ? n.toFixed(1) : n) + ' ' + units[u]; };
const when = ms => Number(ms) > 0 ? new Date(Number(ms)).toLocaleString() : '';
const ago = ms => Number(ms) > 0 ? Math.max(0, Math.round((Date.now() + headOffsetMs - Number(ms)) / 1000)) + ' s ago' : 'never';
const stateCell = s => el('td', {class: s}, s);
const link = (href, text) => el('a', {href}, text);
function table(head, rows) {
  return el('table', {}, el('tr', {}, ...head.map(h => el('th', {}, h))),
            ...rows.map(r => el('tr', {}, ...r.map(c => c instanceof Node && c.tagName === 'TD' ? c : el('td', {}, c)))));
}
// Replaces what a section shows, keeping the rest of the page (and its scroll) as it is.
function section(id, ...children) {
  let s = document.getElementById(id);
  if (!s) { s = el('section', {id}); document.getElementById('main').append(s); }
  s.replaceChildren(...children);
  return s;
}
function used(n) {
  const out = {};
  for (const [k, v] of Object.entries((n.total && n.total.amounts) || {})) out[k] = v - (((n.available || {}).amounts || {})[k] || 0);
  return {amounts: out};
}

async function cluster() {
  const s = await get('/api/status');
  const nodes = s.nodes || [];
  section('summary', el('h1', {}, 'Cluster'),
          el('p', {}, nodes.length + ' nodes; resources ' + (res(s.total) || 'none') + '; in use ' + (res(s.used) || 'nothing') +
                      '; head ' + s.head_address),
          el('p', {class: s.journal && s.journal.ok ? 'muted' : 'FAILED'},
             s.journal && s.journal.ok ? 'journal ' + bytes(s.journal.bytes) : 'journal failing: ' + (s.journal || {}).reason));
  const byState = ['ALIVE', 'DRAINING', 'DEAD'].map(state => [state, nodes.filter(n => n.state === state)]);
  section('nodes', ...byState.filter(([, list]) => list.length).flatMap(([state, list]) => [
    el('h2', {class: state}, state + ' (' + list.length + ')'),
    table(['name', 'state', 'role', 'address', 'total', 'used', 'cpu load', 'memory', 'ranks', 'GPUs', 'last heartbeat', 'reason'],
          list.map(n => [n.name, stateCell(n.state), n.is_head ? 'head' : 'worker', n.address, res(n.total), res(used(n)),
                         fmtNum((n.usage || {}).cpu_load || 0), bytes((n.usage || {}).memory_used_bytes || 0),
                         (n.usage || {}).running_ranks || 0, (n.gpu_indexes || []).join(','), ago(n.last_heartbeat_unix_ms),
                         n.state_reason]))]));
  // One row per shape of what waiting jobs ask (the head sums its queue
  // up by shape, at most a screenful); a last row with no workers counts
  // the shapes not listed.
  const pending = s.pending || [];
  const shapes = pending.filter(p => p.num_workers);
  const rest = pending.find(p => !p.num_workers);
  section('pending', ...(pending.length ? [el('h2', {}, 'Waiting for resources'),
    table(['jobs', 'workers', 'per worker', 'reason', 'first job', 'name'],
          shapes.map(p => [(1 + (p.more_like_it || 0)).toLocaleString('en-US'), p.num_workers, res(p.per_worker),
                           (p.infeasible ? 'INFEASIBLE: ' : '') + p.reason,
                           p.more_like_it ? el('span', {}, link('/job?id=' + encodeURIComponent(p.job_id), p.job_id),
                                               ' and ' + p.more_like_it + ' more like it')
                                          : link('/job?id=' + encodeURIComponent(p.job_id), p.job_id),
                           p.job_name])),
    ...(rest ? [el('p', {class: 'muted'}, '... ' + rest.reason)] : [])] : []));
}

const jobStates = ['', 'PENDING', 'RUNNING', 'RESTARTING', 'SUCCEEDED', 'FAILED', 'STOPPED', 'INFEASIBLE'];
async function jobList() {
  const state = param('state') || '';
  if (!document.getElementById('filter')) {
    const select = el('select', {id: 'state'}, ...jobStates.map(s => el('option', {value: s}, s || 'every state')));
    select.value = state;
    select.onchange = () => { history.replaceState(null, '', select.value ? '/jobs?state=' + select.value : '/jobs'); refresh(); };
    section('filter', el('h1', {}, 'Jobs'), el('label', {}, 'State: ', select));
  }
  let reply = await get('/api/jobs?state=' + encodeURIComponent(state)), all = reply.jobs || [];
  // A few more pages, so that a filter shows what it finds; the rest is a link away.
  for (let i = 0; i < 4 && reply.next_page_token; ++i) {
    reply = await get('/api/jobs?state=' + encodeURIComponent(state) + '&page_token=' + encodeURIComponent(reply.next_page_token));
    all = all.concat(reply.jobs || []);
  }
  section('jobs', table(['id', 'name', 'owner', 'state', 'workers', 'attempts', 'submitted', 'reason'],
    all.map(j => [link('/job?id=' + encodeURIComponent(j.job_id), j.job_id), (j.spec || {}).name, j.owner || 'admin',
                  stateCell(j.state),
                  (j.spec || {}).num_workers, (j.attempts || []).length + ((j.older_attempts || {}).count || 0),
                  when(j.submit_unix_ms), j.reason])),
    el('p', {class: 'muted'}, all.length + ' jobs' + (reply.next_page_token ? ' shown; more after ' + reply.next_page_token : '')));
}

// What the job page keeps between refreshes: metric records and log offsets.
const seen = {metrics: [], metricsDone: false, logs: {}};
async function oneJob() {
  const id = param('id') || '';
  const j = await get('/api/job?id=' + encodeURIComponent(id));
  const spec = j.spec || {};
  section('facts', el('h1', {}, 'Job ', j.job_id, ' ', spec.name || ''),
          ...(spec.sweep_id ? [el('p', {}, 'Trial ' + spec.trial_index + ' of sweep ',
                                  link('/sweep?id=' + encodeURIComponent(spec.sweep_id), spec.sweep_id))] : []),
          table(['state', 'reason', 'owner', 'workers', 'submitted', 'ended', 'entrypoint'],
                [[stateCell(j.state), j.reason, j.owner || 'admin', spec.num_workers, when(j.submit_unix_ms),
                  when(j.end_unix_ms), commandLine(spec.entrypoint)]]));
  const older = j.older_attempts || {};
  section('attempts', el('h2', {}, 'Attempts'),
    ...(older.count ? [el('p', {class: 'muted'}, older.count + ' older attempts, ' + older.failed + ' failed; first failure: ' +
                         older.first_failure_reason + '; last: ' + older.last_failure_reason)] : []),
    // Preemption (docs/SHARING.md): the notice under way, and each preempted attempt.
    ...(j.preempting && j.preempting.by_job ? [el('p', {}, 'Being preempted by ',
          link('/job?id=' + encodeURIComponent(j.preempting.by_job), j.preempting.by_job),
          ': SIGTERM at ' + when(j.preempting.deadline_unix_ms) + ', SIGKILL ' + (j.preempting.grace_ms || 0) / 1000 + ' s later')] : []),
    ...(j.preemptions ? [el('p', {class: 'muted'}, j.preemptions + ' preemption' + (j.preemptions > 1 ? 's' : '') +
                            ', not counted against max_failures')] : []),
    table(['attempt', 'started', 'ended', 'master', 'resumed from', 'preempted', 'failure'],
          (j.attempts || []).map(a => [a.attempt, when(a.start_unix_ms), when(a.end_unix_ms),
                                       a.master_addr ? a.master_addr + ':' + a.master_port : '', a.restored_checkpoint,
                                       a.preempted_by ? el('span', {}, 'by ', link('/job?id=' + encodeURIComponent(a.preempted_by), a.preempted_by),
                                                           ' at ' + when(a.preempt_notice_unix_ms)) : '',
                                       a.failure_reason])),
    ...(j.attempts || []).slice(-1).flatMap(a => [el('h2', {}, 'Placement of attempt ' + a.attempt),
      table(['rank', 'node', 'local rank', 'node rank', 'GPUs', 'pid', 'exit'],
            (a.ranks || []).map(r => [r.rank, r.node_name || r.node_id, r.local_rank, r.node_rank, (r.gpus || []).join(','),
                                      r.pid, !r.exited ? 'running' : r.signal ? 'signal ' + r.signal : 'code ' + r.exit_code]))]));
  // Only the records not seen yet: a job's records are only ever appended.
  for (let page = 0; page < 20; ++page) {
    const m = await get('/api/metrics?id=' + encodeURIComponent(id) + '&page_token=' + seen.metrics.length);
    seen.metrics = seen.metrics.concat(m.records || []);
    if (!m.next_page_token) break;
  }
  charts(seen.metrics);
  // Logs removed to keep the head's log store under its limit: say so, not nothing.
  if (j.logs_released) section('logs', el('h2', {}, 'Logs'), el('p', {class: 'muted'}, j.logs_released));
  else for (let rank = 0; rank < (spec.num_workers || 0); ++rank) await logTail(id, rank);
  return ['SUCCEEDED', 'FAILED', 'STOPPED'].includes(j.state);
}

// One line chart per metric, over the records in the order they came.
function charts(records) {
  const series = {};
  records.forEach((r, i) => { for (const [k, v] of Object.entries(r.values || {})) (series[k] = series[k] || []).push([i, Number(v)]); });
  const W = 360, H = 150, L = 48, B = 18, T = 16;
  section('metrics', el('h2', {}, 'Metrics (' + records.length + ' reports)'), el('div', {class: 'charts'},
    ...Object.entries(series).map(([name, pts]) => {
      const xs = pts.map(p => p[0]), ys = pts.map(p => p[1]);
      const x0 = Math.min(...xs), x1 = Math.max(...xs, x0 + 1);
      let y0 = Math.min(...ys), y1 = Math.max(...ys);
      if (y0 === y1) { y0 -= 1; y1 += 1; }
      const X = x => L + (x - x0) / (x1 - x0) * (W - L - 8), Y = y => T + (y1 - y) / (y1 - y0) * (H - T - B);
      const chart = svg('svg', {width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, class: 'chart', 'data-metric': name});
      chart.append(svg('text', {x: L, y: 11}, name),
                   svg('line', {class: 'axis', x1: L, y1: T, x2: L, y2: H - B}),
                   svg('line', {class: 'axis', x1: L, y1: H - B, x2: W - 8, y2: H - B}),
                   svg('text', {x: 2, y: T + 8}, fmtNum(y1)), svg('text', {x: 2, y: H - B}, fmtNum(y0)),
                   svg('text', {x: L, y: H - 4}, 'report ' + x0), svg('text', {x: W - 60, y: H - 4}, 'report ' + Math.max(...xs)),
                   svg('polyline', {points: pts.map(p => X(p[0]).toFixed(1) + ',' + Y(p[1]).toFixed(1)).join(' ')}));
      // Dots with their values on hover, while there are few enough to see apart.
      if (pts.length <= 200) {
        for (const p of pts) {
          const dot = svg('circle', {cx: X(p[0]).toFixed(1), cy: Y(p[1]).toFixed(1), r: 2.5});
          dot.append(svg('title', {}, name + ' = ' + fmtNum(p[1])));
          chart.append(dot);
        }
      }
      return el('div', {}, chart);
    })));
}

// A rank's log: its tail first, then what was added since, kept to 64 KiB.
async function logTail(id, rank) {
  const s = seen.logs[rank] = seen.logs[rank] || {text: '', decoder: new TextDecoder()};
  const q = '/api/logs?id=' + encodeURIComponent(id) + '&rank=' + rank + (s.offset !== undefined ? '&offset=' + s.offset : '');
  const reply = await get(q);
  for (const c of reply.chunks || []) {
    const raw = Uint8Array.from(atob(c.data || ''), ch => ch.charCodeAt(0));
    let text = s.decoder.decode(raw, {stream: true});
    // A tail may begin mid-line: drop that part line.
    if (s.offset === undefined && Number(c.end_offset) > raw.length) text = text.slice(text.indexOf('\n') + 1);
    s.text = (s.text + text).slice(-65536);
    s.offset = Number(c.end_offset);
  }
  let box = document.getElementById('log-' + rank);
  if (!box) {
    if (rank === 0) section('logs', el('h2', {}, 'Logs'));
    box = el('pre', {class: 'log', id: 'log-' + rank});
    document.getElementById('logs').append(el('h3', {}, 'rank ' + rank), box);
  }
  if (box.textContent !== s.text) { box.textContent = s.text; box.scrollTop = box.scrollHeight; }
}

// Sweeps: trial states without their TRIAL_ prefix, counted per sweep.
const trialState = t => (t.state || 'TRIAL_WAITING').replace(/^TRIAL_/, '');
const sweepState = w => (w.state || '').replace(/^SWEEP_/, '');
const params = t => Object.entries(t.params || {}).map(([k, v]) => k + '=' + v).join(' ');
function trialCounts(w) {
  const n = {};
  for (const t of w.trials || []) n[trialState(t)] = (n[trialState(t)] || 0) + 1;
  return Object.entries(n).map(([k, v]) => v + ' ' + k.toLowerCase().replace('_', ' ')).join(', ');
}
const best = w => (w.best_trial ?? -1) >= 0 ? (w.trials || [])[w.best_trial] : undefined;
const goal = w => { const t = (w.spec || {}).tune || {}; return (t.mode_min ? 'min ' : 'max ') + (t.metric || ''); };

async function sweepList() {
  const sweeps = (await get('/api/sweeps')).sweeps || [];
  section('sweeps', el('h1', {}, 'Sweeps'),
    table(['id', 'name', 'owner', 'state', 'trials', 'metric', 'best', 'best parameters', 'submitted'],
          sweeps.map(w => { const b = best(w);
            return [link('/sweep?id=' + encodeURIComponent(w.sweep_id), w.sweep_id), (w.spec || {}).name, w.owner || 'admin',
                    stateCell(sweepState(w)), (w.trials || []).length + ': ' + trialCounts(w), goal(w),
                    b ? fmtNum(b.metric) : '', b ? params(b) : '', when(w.submit_unix_ms)]; })),
    el('p', {class: 'muted'}, sweeps.length + ' sweeps'));
}

async function oneSweep() {
  const w = await get('/api/sweep?id=' + encodeURIComponent(param('id') || ''));
  const tune = (w.spec || {}).tune || {}, asha = tune.asha, b = best(w);
  section('facts', el('h1', {}, 'Sweep ', w.sweep_id, ' ', (w.spec || {}).name || ''),
    table(['state', 'reason', 'metric', 'scheduler', 'trials', 'best', 'submitted', 'ended'],
          [[stateCell(sweepState(w)), w.reason, goal(w),
            asha ? 'ASHA (max_t ' + asha.max_t + ', grace ' + asha.grace_period + ', rf ' + asha.reduction_factor + ')' : 'none',
            (w.trials || []).length + ': ' + trialCounts(w), b ? 'trial ' + b.index + ': ' + fmtNum(b.metric) + ' (' + params(b) + ')' : '',
            when(w.submit_unix_ms), when(w.end_unix_ms)]]));
  const rows = (w.trials || []).map(t => {
    const row = el('tr', {class: b && t.index === b.index ? 'best' : ''},
      ...[t.index, t.job_id ? link('/job?id=' + encodeURIComponent(t.job_id), t.job_id) : '', params(t)].map(c => el('td', {}, c)),
      el('td', {class: trialState(t)}, trialState(t)),
      ...[t.iterations || 0, t.has_metric ? fmtNum(t.metric) : '', t.reason].map(c => el('td', {}, c)));
    return row;
  });
  section('trials', el('h2', {}, 'Trials'),
    el('table', {}, el('tr', {}, ...['trial', 'job', 'parameters', 'state', 'iterations', tune.metric || 'metric', 'reason'].map(h => el('th', {}, h))),
       ...rows));
  return w.state !== 'SWEEP_RUNNING';
}

async function store() {
  const u = await get('/api/store');
  const cap = Number(u.capacity_bytes), usedBytes = Number(u.used_bytes);
  section('store', el('h1', {}, 'Store'),
    table(['blobs', 'used', 'held by live jobs', 'capacity'],
          [[u.blobs, bytes(usedBytes), bytes(u.pinned_bytes), cap > 0 ? bytes(cap) : 'no cap']]),
    ...(cap > 0 ? [el('div', {class: 'bar', title: Math.round(100 * usedBytes / cap) + '% used'},
                      el('div', {style: 'width:' + Math.min(100, 100 * usedBytes / cap).toFixed(1) + '%'}))] : []));
}

const draw = pages[location.pathname] || cluster;
let finished = false, busy = false;
async function refresh() {
  if (busy) return;  // a slow answer: skip a turn rather than draw twice at once
  busy = true;
  try {
    finished = (await draw()) === true;
    document.getElementById('err').textContent = '';
  } catch (e) { document.getElementById('err').textContent = 'error: ' + e.message; }
  busy = false;
}
document.getElementById('nav').append(...[['/', 'Cluster'], ['/jobs', 'Jobs'], ['/sweeps', 'Sweeps'], ['/store', 'Store']].map(([href, text]) =>
  el('a', {href, class: (pages[location.pathname] === pages[href]) ? 'here' : ''}, text)));
// Every 2 s; a finished job's page stops once it has drawn its last state.
refresh();
const timer = setInterval(() => finished ? clearInterval(timer) : refresh(), 2000);
