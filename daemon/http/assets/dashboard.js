// The dashboard's entry (loaded last by dashboard.html, after common.js,
// chart.js, usage.js, job.js and sweep.js): the cluster and store pages, and
// drawing the page its path names, refreshed every 2 s.
'use strict';
// Pages: path -> function drawing into #main; a true result: nothing more to refresh.
const pages = {'/': cluster, '/index.html': cluster, '/node': oneNode, '/jobs': jobList, '/job': oneJob,
               '/sweeps': sweepList, '/sweep': oneSweep, '/store': store};

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
          list.map(n => [nodeLink(n.node_id, n.name), stateCell(n.state), n.is_head ? 'head' : 'worker', n.address, res(n.total), res(used(n)),
                         fmtNum((n.usage || {}).cpu_load || 0), bytes((n.usage || {}).memory_used_bytes || 0),
                         (n.usage || {}).running_ranks || 0, (n.gpu_indexes || []).join(','), ago(n.last_heartbeat_unix_ms),
                         n.state_reason]))]));
  await clusterHistory();
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
                           p.more_like_it ? el('span', {}, jobLink(p.job_id),
                                               ' and ' + p.more_like_it + ' more like it')
                                          : jobLink(p.job_id),
                           p.job_name])),
    ...(rest ? [el('p', {class: 'muted'}, '... ' + rest.reason)] : [])] : []));
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
