// The sweeps page and a sweep's page: its trials, and every trial's metric
// on one chart, early stops marked, the best trial drawn stronger.
'use strict';
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
            return [link('/sweep?id=' + enc(w.sweep_id), w.sweep_id), (w.spec || {}).name, w.owner || 'admin',
                    stateCell(sweepState(w)), (w.trials || []).length + ': ' + trialCounts(w), goal(w),
                    b ? fmtNum(b.metric) : '', b ? params(b) : '', when(w.submit_unix_ms)]; })),
    el('p', {class: 'muted'}, sweeps.length + ' sweeps'));
}

async function oneSweep() {
  const w = await get('/api/sweep?id=' + enc(param('id') || ''));
  const tune = (w.spec || {}).tune || {}, asha = tune.asha, b = best(w);
  section('facts', el('h1', {}, 'Sweep ', w.sweep_id, ' ', (w.spec || {}).name || ''),
    table(['state', 'reason', 'metric', 'scheduler', 'trials', 'best', 'submitted', 'ended'],
          [[stateCell(sweepState(w)), w.reason, goal(w),
            asha ? 'ASHA (max_t ' + asha.max_t + ', grace ' + asha.grace_period + ', rf ' + asha.reduction_factor + ')' : 'none',
            (w.trials || []).length + ': ' + trialCounts(w), b ? 'trial ' + b.index + ': ' + fmtNum(b.metric) + ' (' + params(b) + ')' : '',
            when(w.submit_unix_ms), when(w.end_unix_ms)]]));
  await trialsChart(w);
  const rows = (w.trials || []).map(t => {
    const row = el('tr', {class: b && t.index === b.index ? 'best' : ''},
      ...[t.index, t.job_id ? jobLink(t.job_id) : '', params(t)].map(c => el('td', {}, c)),
      el('td', {class: trialState(t)}, trialState(t)),
      ...[t.iterations || 0, t.has_metric ? fmtNum(t.metric) : '', t.reason].map(c => el('td', {}, c)));
    return row;
  });
  section('trials', el('h2', {}, 'Trials'),
    el('table', {}, el('tr', {}, ...['trial', 'job', 'parameters', 'state', 'iterations', tune.metric || 'metric', 'reason'].map(h => el('th', {}, h))),
       ...rows));
  return w.state !== 'SWEEP_RUNNING';
}

// Each trial's metric records, by job, fetched once a trial has ended and
// as they come while it runs.
const trialRecords = {};
// The overlay chart draws this many trials (a page's fetches stay bounded).
const trialsCharted = 100;
const trialEnded = t => !['WAITING', 'ACTIVE'].includes(trialState(t));

// Every trial's metric on one chart, against ASHA's time_attr where the
// reports carry it, else the trial's iteration (its rank 0 reports, from 1).
async function trialsChart(w) {
  const tune = (w.spec || {}).tune || {}, b = best(w);
  const timeAttr = tune.asha && tune.asha.time_attr && tune.asha.time_attr !== 'training_iteration' ? tune.asha.time_attr : '';
  const trials = (w.trials || []).filter(t => t.job_id).slice(0, trialsCharted);
  for (const t of trials) {
    const kept = trialRecords[t.job_id] = trialRecords[t.job_id] || {records: [], complete: false};
    if (kept.complete) continue;
    for (let page = 0; page < 20; ++page) {
      // Another user's trials' metrics are the owner's (a 403): no line for them.
      const m = await get('/api/metrics?id=' + enc(t.job_id) + '&page_token=' + kept.records.length, true)
          .catch(() => null);
      if (!m) break;  // a trial's job deleted: its line is what was fetched
      kept.records = kept.records.concat(m.records || []);
      if (!m.next_page_token) break;
    }
    kept.complete = trialEnded(t);
  }
  const series = trials.map(t => {
    const points = [];
    let iteration = 0;
    for (const r of trialRecords[t.job_id].records) {
      if (r.rank) continue;
      ++iteration;
      const v = (r.values || {})[tune.metric], x = timeAttr ? (r.values || {})[timeAttr] : iteration;
      if (v !== undefined && x !== undefined) points.push([Number(x), Number(v)]);
    }
    return {name: 'trial ' + t.index + (params(t) ? ' (' + params(t) + ')' : ''), points,
            strong: b !== undefined && t.index === b.index,
            stopped: trialState(t) === 'EARLY_STOPPED' ? 'stopped early: ' + t.reason : ''};
  });
  const left = (w.trials || []).filter(t => t.job_id).length - trials.length;
  section('overlay', el('h2', {}, 'Trials\u2019 ' + (tune.metric || 'metric')),
    lineChart({id: 'trials', title: goal(w) + ', every trial', xLabel: timeAttr || 'iteration', yLabel: tune.metric,
               width: 640, height: 280, series, empty: 'no trial has reported ' + (tune.metric || 'its metric') + ' yet',
               note: 'An x marks where ASHA stopped a trial; the best trial is the thick line.' +
                     (left > 0 ? ' The first ' + trialsCharted + ' trials are drawn, ' + left + ' more are not.' : '')}));
}
