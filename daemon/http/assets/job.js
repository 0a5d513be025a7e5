// The jobs page and a job's page: its attempts, placement, metric charts
// against a chosen x, each rank's node use (usage.js) and live log tails.
'use strict';
const jobStates = ['', 'PENDING', 'RUNNING', 'RESTARTING', 'SUCCEEDED', 'FAILED', 'STOPPED', 'INFEASIBLE'];
async function jobList() {
  const state = param('state') || '';
  if (!document.getElementById('filter')) {
    const select = el('select', {id: 'state'}, ...jobStates.map(s => el('option', {value: s}, s || 'every state')));
    select.value = state;
    select.onchange = () => { history.replaceState(null, '', select.value ? '/jobs?state=' + select.value : '/jobs'); refresh(); };
    section('filter', el('h1', {}, 'Jobs'), el('label', {}, 'State: ', select));
  }
  let reply = await get('/api/jobs?state=' + enc(state)), all = reply.jobs || [];
  // A few more pages, so that a filter shows what it finds; the rest is a link away.
  for (let i = 0; i < 4 && reply.next_page_token; ++i) {
    reply = await get('/api/jobs?state=' + enc(state) + '&page_token=' + enc(reply.next_page_token));
    all = all.concat(reply.jobs || []);
  }
  section('jobs', table(['id', 'name', 'owner', 'state', 'workers', 'attempts', 'submitted', 'reason'],
    all.map(j => [jobLink(j.job_id), (j.spec || {}).name, j.owner || 'admin',
                  stateCell(j.state),
                  (j.spec || {}).num_workers, (j.attempts || []).length + ((j.older_attempts || {}).count || 0),
                  when(j.submit_unix_ms), j.reason])),
    el('p', {class: 'muted'}, all.length + ' jobs' + (reply.next_page_token ? ' shown; more after ' + reply.next_page_token : '')));
}

// What the job page keeps between refreshes: metric records, log offsets,
// and which hang diagnoses the user opened or closed (by attempt).
const seen = {metrics: [], logs: {}, diagnosisOpen: {}};
// A hang diagnosis longer than this many lines starts collapsed.
const diagnosisLinesOpen = 15;
// What the head recorded when it found an attempt's gang hung (wait
// channels, kernel stacks, each rank's last lines; docs/RELIABILITY.md,
// Hung gangs), under its attempt; as text, never markup. Opening or
// closing one holds across the page's redraws.
function hangDiagnosis(a) {
  const text = String(a.hang_diagnosis), lines = text.split('\n').length;
  const open = seen.diagnosisOpen[a.attempt] ?? lines <= diagnosisLinesOpen;
  const box = el('details', {class: 'hang-diagnosis', 'data-attempt': a.attempt},
                 el('summary', {}, 'Hang diagnosis of attempt ' + a.attempt + ' (' + lines + ' lines)'),
                 el('pre', {class: 'log'}, text));
  box.open = open;
  box.ontoggle = () => { seen.diagnosisOpen[a.attempt] = box.open; };
  return box;
}

async function oneJob() {
  const id = param('id') || '';
  const j = await get('/api/job?id=' + enc(id));
  const spec = j.spec || {};
  section('facts', el('h1', {}, 'Job ', j.job_id, ' ', spec.name || ''),
          ...(spec.sweep_id ? [el('p', {}, 'Trial ' + spec.trial_index + ' of sweep ',
                                  link('/sweep?id=' + enc(spec.sweep_id), spec.sweep_id))] : []),
          table(['state', 'reason', 'owner', 'workers', 'submitted', 'ended', 'entrypoint'],
                [[stateCell(j.state), j.reason, j.owner || 'admin', spec.num_workers, when(j.submit_unix_ms),
                  when(j.end_unix_ms), commandLine(spec.entrypoint)]]));
  const older = j.older_attempts || {};
  section('attempts', el('h2', {}, 'Attempts'),
    ...(older.count ? [el('p', {class: 'muted'}, older.count + ' older attempts, ' + older.failed + ' failed; first failure: ' +
                         older.first_failure_reason + '; last: ' + older.last_failure_reason)] : []),
    // Preemption (docs/SHARING.md): the notice under way, and each preempted attempt.
    ...(j.preempting && j.preempting.by_job ? [el('p', {}, 'Being preempted by ', jobLink(j.preempting.by_job),
          ': SIGTERM at ' + when(j.preempting.deadline_unix_ms) + ', SIGKILL ' + (j.preempting.grace_ms || 0) / 1000 + ' s later')] : []),
    ...(j.preemptions ? [el('p', {class: 'muted'}, j.preemptions + ' preemption' + (j.preemptions > 1 ? 's' : '') +
                            ', not counted against max_failures')] : []),
    table(['attempt', 'started', 'ended', 'master', 'resumed from', 'preempted', 'failure'],
          (j.attempts || []).map(a => [a.attempt, when(a.start_unix_ms), when(a.end_unix_ms),
                                       a.master_addr ? a.master_addr + ':' + a.master_port : '', a.restored_checkpoint,
                                       a.preempted_by ? el('span', {}, 'by ', jobLink(a.preempted_by),
                                                           ' at ' + when(a.preempt_notice_unix_ms)) : '',
                                       a.failure_reason])),
    ...(j.attempts || []).filter(a => a.hang_diagnosis).map(hangDiagnosis),
    ...(j.attempts || []).slice(-1).flatMap(a => [el('h2', {}, 'Placement of attempt ' + a.attempt),
      table(['rank', 'node', 'local rank', 'node rank', 'GPUs', 'pid', 'exit'],
            (a.ranks || []).map(r => [r.rank, nodeLink(r.node_id, r.node_name), r.local_rank, r.node_rank, (r.gpus || []).join(','),
                                      r.pid, !r.exited ? 'running' : r.signal ? 'signal ' + r.signal : 'code ' + r.exit_code]))]));
  // Only the records not seen yet: a job's records are only ever appended.
  // Another user's job's metrics are its owner's (a 403): the page goes on without them.
  try {
    for (let page = 0; page < 20; ++page) {
      const m = await get('/api/metrics?id=' + enc(id) + '&page_token=' + seen.metrics.length);
      seen.metrics = seen.metrics.concat(m.records || []);
      if (!m.next_page_token) break;
    }
    metricCharts(seen.metrics);
  } catch (e) {
    section('metrics', el('h2', {}, 'Metrics'), el('p', {class: 'muted'}, e.message));
  }
  await jobNodeUse(j);
  // Logs removed to keep the head's log store under its limit: say so, not nothing.
  if (j.logs_released) section('logs', el('h2', {}, 'Logs'), el('p', {class: 'muted'}, j.logs_released));
  else for (let rank = 0; rank < (spec.num_workers || 0); ++rank) await logTail(id, rank);
  return ['SUCCEEDED', 'FAILED', 'STOPPED'].includes(j.state);
}

// What a job's metrics may be drawn against: a value the reports carry
// (`key`), or something every record has (`of`).
const metricAxes = {
  step: {key: 'step'},
  epoch: {key: 'epoch'},
  time: {of: r => Number(r.unix_ms || 0), format: clock, span: 1000},
  report: {of: r => Number(r.index || 0)},
};
// The x chooser, made once and kept across redraws (a redraw must not close it under the pointer).
let metricX;
function chosenAxis(records) {
  const carried = k => records.some(r => (r.values || {})[k] !== undefined);
  const asked = metricAxes[param('x')] ? param('x') : carried('step') ? 'step' : carried('epoch') ? 'epoch' : 'time';
  if (!metricX) {
    metricX = el('select', {id: 'metric-x'}, ...Object.keys(metricAxes).map(k => el('option', {value: k}, k)));
    metricX.onchange = () => {
      const q = new URLSearchParams(location.search);
      q.set('x', metricX.value);
      history.replaceState(null, '', location.pathname + '?' + q);
      metricCharts(seen.metrics);
    };
  }
  metricX.value = asked;
  // A key no report carries: the reports' index in their attempt, said on the chart.
  if (metricAxes[asked].key && !carried(asked)) {
    return {name: 'report', ...metricAxes.report,
            note: 'No report carries "' + asked + '": drawn against the report index (report() calls of each attempt, from 0).'};
  }
  return {name: asked, ...metricAxes[asked]};
}

// One chart per metric, a line per attempt (and per rank, where several
// report), against the chosen x.
function metricCharts(records) {
  const axis = chosenAxis(records);
  const xOf = axis.key ? r => (r.values || {})[axis.key] : axis.of;
  const ranks = new Set(records.map(r => r.rank || 0));
  const lineOf = r => 'attempt ' + (r.attempt || 0) + (ranks.size > 1 ? ' rank ' + (r.rank || 0) : '');
  const metrics = {};
  for (const r of records) {
    const x = xOf(r);
    if (x === undefined) continue;
    for (const [name, v] of Object.entries(r.values || {})) {
      if (name === axis.key) continue;
      const lines = metrics[name] = metrics[name] || {};
      (lines[lineOf(r)] = lines[lineOf(r)] || []).push([Number(x), Number(v)]);
    }
  }
  section('metrics', el('h2', {}, 'Metrics (' + records.length + ' reports)'),
    el('label', {}, 'against ', metricX),
    el('div', {class: 'charts'}, ...Object.keys(metrics).sort().map(name => lineChart({
      id: 'metric-' + name, title: name, xLabel: axis.name, xFormat: axis.format, xMinSpan: axis.span, note: axis.note,
      series: Object.entries(metrics[name]).map(([line, points]) => ({name: line, points}))}))));
}

// A rank's log: its tail first, then what was added since, kept to 64 KiB.
async function logTail(id, rank) {
  const s = seen.logs[rank] = seen.logs[rank] || {text: '', decoder: new TextDecoder()};
  const q = '/api/logs?id=' + enc(id) + '&rank=' + rank + (s.offset !== undefined ? '&offset=' + s.offset : '');
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
