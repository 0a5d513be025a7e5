// Use over time, from the head's usage history (GET /api/usage/nodes/NODE
// and /api/usage/cluster, docs/DASHBOARD.md): a node's page, the cluster's
// totals on the cluster page, and on a job's page the use of each node its
// ranks ran on, over the job's time.
'use strict';
// The samples fetched so far, by API path; later fetches ask only for newer ones.
const histories = {};
// Samples kept per history: a day of one a second would be 86,400.
const samplesKept = 20000;
// A node's charts are drawn for this many of a job's nodes.
const jobNodesCharted = 8;

// The history at `path` from `sinceMs` on (0: all the head keeps), with the
// samples already fetched; `missing` when the head has none (a 404).
async function usageHistory(path, sinceMs) {
  const h = histories[path] = histories[path] || {samples: [], reply: null, missing: false};
  const newest = h.samples.length ? Number(h.samples[h.samples.length - 1].t_unix_ms) : 0;
  const from = Math.max(newest, sinceMs || 0);
  const reply = await get(path + (from ? '?since_unix_ms=' + from : ''), true);
  h.missing = !reply;
  if (!reply) return h;
  h.reply = reply;
  const fresh = (reply.samples || []).filter(s => Number(s.t_unix_ms) > newest);
  h.samples = h.samples.concat(fresh).slice(-samplesKept);
  return h;
}
// Said where a history is missing (a head without one, a node it does not
// know) or holds no sample yet (just started, or kept with a window of 0).
const noHistory = what => el('p', {class: 'muted no-history'}, 'No history yet ' + what + ': the head has no samples of its use.');
const historyEmpty = h => h.missing || !h.samples.length;

// Samples as one line: [t, f(sample)] where f gives a number.
const line = (samples, f) => samples.map(s => [Number(s.t_unix_ms), f(s)]).filter(p => Number.isFinite(p[1]));
const overTime = {xLabel: 'time', xFormat: clock, xMinSpan: 1000};
// A CPU chart: the busy share in percent where the nodes' agents measured
// it (`cpu_utilization`, 0..1; null: not measured then), else the 1-minute
// load average against the CPUs.
function cpuChart(id, samples, cpus, options) {
  if (samples.some(s => s.cpu_utilization != null)) {
    return lineChart({id, title: 'CPU utilisation', yLabel: 'busy' + (cpus ? ' of ' + fmtNum(cpus) + ' CPUs' : ''), yMin: 0, yMax: 100,
                      yFormat: percent, ...options,
                      series: [{name: 'busy', points: line(samples, s => s.cpu_utilization == null ? NaN : 100 * Number(s.cpu_utilization))}]});
  }
  return lineChart({id, title: 'CPU load', yLabel: 'load' + (cpus ? ' of ' + fmtNum(cpus) + ' CPUs' : ''), yMin: 0,
                    yMax: cpus || undefined, ...options, series: [{name: 'load', points: line(samples, s => Number(s.cpu_load || 0))}]});
}

// Use over time in a history with samples every `reply.interval_ms`: a line
// breaks where samples are missing (the node was not live then).
const overTimeOf = h => ({...overTime, breakOver: 1.5 * Number((h.reply || {}).interval_ms || 0) || undefined});

// A node's charts: CPU (cpuChart), memory, and each GPU's utilisation and memory
// (only `gpus`' when given: the GPUs a job's ranks held). The API gives
// utilisation as 0..1 (null: not read); charts show percent.
function nodeCharts(prefix, h, samples, gpus, size) {
  const r = h.reply || {};
  const cpus = Number(r.cpus || 0), total = Number(r.memory_total_bytes || 0);
  const gpuIndexes = [...new Set(samples.flatMap(s => (s.gpus || []).map(g => Number(g.index || 0))))]
    .filter(i => !gpus || gpus.has(i)).sort((a, b) => a - b);
  const perGpu = f => gpuIndexes.map(i => ({name: 'GPU ' + i,
    points: line(samples.filter(s => (s.gpus || []).some(g => Number(g.index || 0) === i)),
                 s => f(s.gpus.find(g => Number(g.index || 0) === i)))}));
  const gpuMemory = samples.reduce((m, s) => (s.gpus || []).reduce((n, g) => Math.max(n, Number(g.memory_total_bytes || 0)), m), 0);
  const charts = [
    cpuChart(prefix + 'cpu', samples, cpus, {...overTimeOf(h), ...size}),
    lineChart({id: prefix + 'memory', title: 'Memory used', yLabel: 'memory', yMin: 0, yMax: total || undefined, yFormat: bytes,
               ...overTimeOf(h), ...size, series: [{name: 'memory', points: line(samples, s => Number(s.memory_used_bytes || 0))}]})];
  if (gpuIndexes.length) {
    charts.push(lineChart({id: prefix + 'gpu-utilization', title: 'GPU utilisation', yLabel: 'utilisation', yMin: 0, yMax: 100,
                           yFormat: percent, ...overTimeOf(h), ...size, series: perGpu(g => g.utilization == null ? NaN : 100 * Number(g.utilization))}),
                lineChart({id: prefix + 'gpu-memory', title: 'GPU memory used', yLabel: 'memory', yMin: 0, yMax: gpuMemory || undefined,
                           yFormat: bytes, ...overTimeOf(h), ...size, series: perGpu(g => Number(g.memory_used_bytes || 0))}));
  }
  return charts;
}

// /node?id=NODE (its id or name): what the cluster page says of it, and its use over time.
async function oneNode() {
  const id = param('id') || '';
  const s = await get('/api/status');
  const n = (s.nodes || []).find(n => n.node_id === id) || (s.nodes || []).find(n => n.name === id);
  section('facts', el('h1', {}, 'Node ', n ? n.name : id),
    n ? table(['id', 'state', 'role', 'address', 'total', 'used', 'GPUs', 'last heartbeat', 'reason'],
              [[n.node_id, stateCell(n.state), n.is_head ? 'head' : 'worker', n.address, res(n.total), res(used(n)),
                (n.gpu_indexes || []).join(','), ago(n.last_heartbeat_unix_ms), n.state_reason]])
      : el('p', {class: 'muted'}, 'The head has no node ' + id + ' now.'));
  const h = await usageHistory('/api/usage/nodes/' + enc(n ? n.node_id : id));
  if (historyEmpty(h)) return section('history', el('h2', {}, 'Use over time'), noHistory('for this node')), false;
  const r = h.reply;
  section('history', el('h2', {}, 'Use over time'),
    el('p', {class: 'muted'}, h.samples.length + ' samples, one every ' + fmtNum(Number(r.interval_ms || 0) / 1000) + ' s' +
                              (h.samples.length ? ', since ' + when(h.samples[0].t_unix_ms) : '')),
    el('div', {class: 'charts'}, ...nodeCharts('node-', h, h.samples),
       lineChart({id: 'node-ranks', title: 'Running ranks', yLabel: 'ranks', yMin: 0, ...overTimeOf(h),
                  series: [{name: 'ranks', points: line(h.samples, s => Number(s.running_ranks || 0))}]})));
  return false;
}

// The cluster's totals over time, on the cluster page.
async function clusterHistory() {
  const h = await usageHistory('/api/usage/cluster');
  if (historyEmpty(h)) return section('history', el('h2', {}, 'Totals over time'), noHistory('for the cluster'));
  const ss = h.samples, last = ss[ss.length - 1] || {};
  const size = {width: 280, height: 170};
  section('history', el('h2', {}, 'Totals over time'), el('div', {class: 'charts'},
    cpuChart('cluster-cpu', ss, Number(last.cpus || 0), {...overTimeOf(h), ...size}),
    lineChart({id: 'cluster-memory', title: 'Memory used', yLabel: 'memory', yMin: 0,
               yMax: Number(last.memory_total_bytes || 0) || undefined, yFormat: bytes, ...overTimeOf(h), ...size,
               series: [{name: 'memory', points: line(ss, s => Number(s.memory_used_bytes || 0))}]}),
    lineChart({id: 'cluster-gpu-utilization', title: 'GPU utilisation, mean', yLabel: 'utilisation', yMin: 0, yMax: 100,
               yFormat: percent, ...overTimeOf(h), ...size, empty: 'no GPUs',
               series: [{name: 'mean', points: line(ss.filter(s => Number(s.gpu_memory_total_bytes || 0) > 0),
                                                    s => 100 * Number(s.gpu_utilization_mean || 0))}]}),
    lineChart({id: 'cluster-gpu-memory', title: 'GPU memory used', yLabel: 'memory', yMin: 0,
               yMax: Number(last.gpu_memory_total_bytes || 0) || undefined, yFormat: bytes, ...overTimeOf(h), ...size, empty: 'no GPUs',
               series: [{name: 'memory', points: line(ss.filter(s => Number(s.gpu_memory_total_bytes || 0) > 0),
                                                      s => Number(s.gpu_memory_used_bytes || 0))}]}),
    lineChart({id: 'cluster-counts', title: 'Nodes and ranks', yLabel: 'count', yMin: 0, ...overTimeOf(h), ...size,
               series: [{name: 'nodes alive', points: line(ss, s => Number(s.nodes_alive || 0))},
                        {name: 'running ranks', points: line(ss, s => Number(s.running_ranks || 0))}]})));
}

// On a job's page: each node its ranks ran on (in any attempt shown), with
// its use from the first attempt's start to the job's end.
async function jobNodeUse(j) {
  const attempts = j.attempts || [];
  const nodes = new Map();
  for (const a of attempts) {
    for (const r of a.ranks || []) {
      if (!r.node_id) continue;
      const n = nodes.get(r.node_id) || {name: r.node_name || r.node_id, ranks: new Set(), gpus: new Set()};
      n.ranks.add(Number(r.rank || 0));
      for (const g of r.gpus || []) n.gpus.add(Number(g));
      nodes.set(r.node_id, n);
    }
  }
  if (!nodes.size) return section('node-use');
  const from = Math.min(...attempts.map(a => Number(a.start_unix_ms || 0)).filter(t => t > 0), Date.now() + headOffsetMs);
  const to = Number(j.end_unix_ms || 0) || Infinity;
  const size = {width: 320, height: 170};
  const shown = [...nodes].slice(0, jobNodesCharted), parts = [];
  for (const [id, n] of shown) {
    const h = await usageHistory('/api/usage/nodes/' + enc(id), from - 1);
    const head = el('h3', {}, 'Node ', nodeLink(id, n.name), ': rank' + (n.ranks.size > 1 ? 's ' : ' ') + [...n.ranks].sort((a, b) => a - b).join(', ') +
                    (n.gpus.size ? ', GPU' + (n.gpus.size > 1 ? 's ' : ' ') + [...n.gpus].sort((a, b) => a - b).join(', ') : ''));
    if (historyEmpty(h)) { parts.push(head, noHistory('for this node')); continue; }
    const samples = h.samples.filter(s => Number(s.t_unix_ms) >= from && Number(s.t_unix_ms) <= to);
    parts.push(head, el('div', {class: 'charts', 'data-node': id},
                        ...nodeCharts('use-' + id + '-', h, samples, n.gpus.size ? n.gpus : new Set(), size)));
  }
  section('node-use', el('h2', {}, 'Node use'), ...parts,
          ...(nodes.size > shown.length ? [el('p', {class: 'muted'}, (nodes.size - shown.length) + ' more nodes, on their own pages')] : []));
}
