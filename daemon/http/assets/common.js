// What every page's script shares (loaded first by dashboard.html): making
// elements, fetching the JSON API (same origin, the token in an HttpOnly
// cookie), and writing numbers, bytes, times and resources as the CLI does.
'use strict';
// Every string from the daemon goes in as text (text nodes, textContent,
// setAttribute of a plain value); markup is only ever made here, by name.
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
// An answer of the API; a 404 is null when `missingIsNull` (an endpoint this
// head does not have, or a record it no longer keeps), any other failure throws.
async function get(path, missingIsNull) {
  const r = await fetch(path, {credentials: 'same-origin'});
  const headMs = Number(r.headers.get('X-Clusterd-Head-Unix-Ms'));
  if (headMs > 0) headOffsetMs = headMs - Date.now();
  if (r.status === 404 && missingIsNull) return null;
  const body = await r.json().catch(() => ({error: r.status + ' ' + r.statusText}));
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}
const param = name => new URLSearchParams(location.search).get(name);
const enc = encodeURIComponent;
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
const percent = v => fmtNum(Math.round(Number(v) * 10) / 10) + '%';
const when = ms => Number(ms) > 0 ? new Date(Number(ms)).toLocaleString() : '';
// A time of day, for a chart's time axis and readout.
const clock = ms => new Date(Number(ms)).toLocaleTimeString([], {hour12: false});
const ago = ms => Number(ms) > 0 ? Math.max(0, Math.round((Date.now() + headOffsetMs - Number(ms)) / 1000)) + ' s ago' : 'never';
const stateCell = s => el('td', {class: s}, s);
const link = (href, text) => el('a', {href}, text);
const jobLink = id => link('/job?id=' + enc(id), id);
const nodeLink = (id, name) => link('/node?id=' + enc(id), name || id);
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
// What a node uses: its total less what it has available.
function used(n) {
  const out = {};
  for (const [k, v] of Object.entries((n.total && n.total.amounts) || {})) out[k] = v - (((n.available || {}).amounts || {})[k] || 0);
  return {amounts: out};
}
