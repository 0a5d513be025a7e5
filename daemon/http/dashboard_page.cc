#include "daemon/http/dashboard_page.h"

namespace clusterd {

const char kDashboardPage[] = R"HTML(<!doctype html>
<html><head><meta charset="utf-8"><title>clusterd</title>
<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}
.ALIVE,.SUCCEEDED{color:#080}.DEAD,.FAILED{color:#b00}.DRAINING,.PENDING,.RESTARTING,.INFEASIBLE{color:#a60}</style></head>
<body><h1>clusterd</h1><p id="err"></p><h2>Nodes</h2><table id="nodes"></table><h2>Jobs</h2><table id="jobs"></table>
<script>
const token = new URLSearchParams(location.search).get('token') || '';
const get = p => fetch(p, {headers: {Authorization: 'Bearer ' + token}}).then(r => r.ok ? r.json() : r.json().then(e => Promise.reject(e.error)));
const res = r => Object.entries((r && r.amounts) || {}).map(([k, v]) => v + ' ' + k).join(', ');
// A table row of text cells; a cell given as {text, state} is coloured by its state's class.
function row(cells, tag) {
  const tr = document.createElement('tr');
  for (const c of cells) {
    const cell = document.createElement(tag);
    const plain = c === null || typeof c !== 'object';
    cell.textContent = String((plain ? c : c.text) ?? '');
    if (!plain) cell.className = String(c.state ?? '');
    tr.appendChild(cell);
  }
  return tr;
}
function fill(id, head, rows) {
  document.getElementById(id).replaceChildren(row(head, 'th'), ...rows.map(r => row(r, 'td')));
}
async function refresh() {
  try {
    const s = await get('/api/status'), j = await get('/api/jobs');
    fill('nodes', ['name', 'state', 'address', 'available', 'total', 'reason'],
         (s.nodes || []).map(n => [n.name, {text: n.state, state: n.state}, n.address, res(n.available), res(n.total), n.state_reason]));
    fill('jobs', ['id', 'name', 'state', 'attempts', 'reason'],
         (j.jobs || []).map(x => [x.job_id, (x.spec || {}).name, {text: x.state, state: x.state}, (x.attempts || []).length, x.reason]));
    document.getElementById('err').textContent = '';
  } catch (e) { document.getElementById('err').textContent = 'error: ' + e; }
}
refresh(); setInterval(refresh, 2000);
</script></body></html>
)HTML";

}  // namespace clusterd
