// The dashboard's one line chart (inline SVG), drawn by every chart it has:
// a job's metrics against step, epoch, time or report, a sweep's trials
// overlaid, and a node's or the cluster's use over time.
'use strict';
const palette = ['#26c', '#d62', '#2a2', '#a3c', '#c92', '#1aa', '#c36', '#667', '#8a2', '#57e'];
const seriesColor = i => palette[i % palette.length];
// Where the pointer rests on each chart (the point it reads out), by chart
// id: the page redraws every 2 s and the readout stays where it was.
const hovered = {};
// Legends list this many series; hovering a line names any of them.
const legendShown = 20;

// A chart of `o.series` ([{name, points: [[x, y], ...], strong, stopped}])
// in a box with its legend and a readout of the point nearest the pointer.
// o: {id, title, xLabel, yLabel, xFormat, yFormat, yMin, yMax, breakOver,
// note}: yMin and yMax widen the y range (0 and 100 for a percentage), never
// narrow it; a line breaks where its x jumps by more than breakOver (a node
// not sampled for a while). A `strong` series is drawn thicker and the rest lighter; a `stopped`
// one ends in an x. Chart, lines and marks carry data-chart, data-series and
// class names a test can find them by.
function lineChart(o) {
  const W = o.width || 440, H = o.height || 210, L = 56, R = 12, T = 20, B = 34;
  const xf = o.xFormat || fmtNum, yf = o.yFormat || fmtNum;
  const series = o.series.filter(s => s.points.length);
  const box = el('div', {class: 'chart-box', 'data-chart': o.id});
  const chart = svg('svg', {width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, class: 'chart', 'data-chart': o.id});
  box.append(chart);
  // A backdrop, so that the pointer anywhere on the chart reads it out.
  chart.append(svg('rect', {class: 'backdrop', x: 0, y: 0, width: W, height: H}),
               svg('text', {class: 'title', x: L, y: 13}, o.title));
  const points = series.flatMap(s => s.points);
  if (!points.length) {
    chart.append(svg('text', {class: 'empty', x: L, y: H / 2}, o.empty || 'no data yet'));
    return box;
  }
  // Folded, not spread: a history's tens of thousands of points would
  // overflow the arguments of Math.min(...).
  const fold = (f, k, start) => points.reduce((m, p) => f(m, p[k]), start);
  const x0 = fold(Math.min, 0, Infinity), x1 = Math.max(fold(Math.max, 0, -Infinity), x0 + (o.xMinSpan || 1));
  let y0 = fold(Math.min, 1, o.yMin ?? Infinity), y1 = fold(Math.max, 1, o.yMax ?? -Infinity);
  if (y0 === y1) { y0 -= 1; y1 += 1; }
  const X = x => L + (x - x0) / (x1 - x0) * (W - L - R), Y = y => T + (y1 - y) / (y1 - y0) * (H - T - B);
  const xMid = (x0 + x1) / 2, yMid = (y0 + y1) / 2;
  chart.append(svg('line', {class: 'axis', x1: L, y1: T, x2: L, y2: H - B}),
               svg('line', {class: 'axis', x1: L, y1: H - B, x2: W - R, y2: H - B}),
               svg('text', {x: L - 4, y: T + 4, 'text-anchor': 'end'}, yf(y1)),
               svg('text', {x: L - 4, y: Y(yMid) + 4, 'text-anchor': 'end'}, yf(yMid)),
               svg('text', {x: L - 4, y: H - B, 'text-anchor': 'end'}, yf(y0)),
               svg('text', {x: L, y: H - B + 12}, xf(x0)),
               svg('text', {x: X(xMid), y: H - B + 12, 'text-anchor': 'middle'}, xf(xMid)),
               svg('text', {x: W - R, y: H - B + 12, 'text-anchor': 'end'}, xf(x1)),
               svg('text', {class: 'x-label', x: L + (W - L - R) / 2, y: H - 4, 'text-anchor': 'middle'}, o.xLabel));
  if (o.yLabel) chart.append(svg('text', {class: 'y-label', x: W - R, y: 13, 'text-anchor': 'end'}, o.yLabel));
  const anyStrong = series.some(s => s.strong);
  series.forEach((s, i) => {
    const color = seriesColor(o.series.indexOf(s));
    const d = s.points.map((p, k) => (k && !(p[0] - s.points[k - 1][0] > o.breakOver) ? 'L' : 'M') +
                                     X(p[0]).toFixed(1) + ' ' + Y(p[1]).toFixed(1)).join(' ');
    const line = svg('path', {class: 'series' + (s.strong ? ' strong' : anyStrong ? ' faint' : ''), 'data-series': s.name,
                              d, stroke: color});
    line.append(svg('title', {}, s.name));
    chart.append(line);
    if (s.stopped) {
      const [px, py] = s.points[s.points.length - 1], cx = X(px), cy = Y(py);
      const mark = svg('path', {class: 'stop-mark', 'data-series': s.name, stroke: color,
                                d: `M${cx - 4} ${cy - 4} L${cx + 4} ${cy + 4} M${cx - 4} ${cy + 4} L${cx + 4} ${cy - 4}`});
      mark.append(svg('title', {}, s.name + ': ' + s.stopped));
      chart.append(mark);
    }
  });
  // The readout: the point nearest the pointer, marked with a ring.
  const ring = svg('circle', {class: 'hover-ring', r: 4, visibility: 'hidden'});
  const readout = el('div', {class: 'readout'}, '\u00a0');
  chart.append(ring);
  const show = (s, p) => {
    ring.setAttribute('cx', X(p[0]).toFixed(1));
    ring.setAttribute('cy', Y(p[1]).toFixed(1));
    ring.setAttribute('visibility', 'visible');
    readout.textContent = s.name + ': ' + o.xLabel + ' ' + xf(p[0]) + ', ' + (o.yLabel || o.title) + ' ' + yf(p[1]);
    hovered[o.id] = {series: s.name, x: p[0]};
  };
  chart.addEventListener('mousemove', ev => {
    const r = chart.getBoundingClientRect();
    const mx = (ev.clientX - r.left) * W / r.width, my = (ev.clientY - r.top) * H / r.height;
    let nearest, best = Infinity;
    for (const s of series) {
      for (const p of s.points) {
        const d = (X(p[0]) - mx) ** 2 + (Y(p[1]) - my) ** 2;
        if (d < best) { best = d; nearest = [s, p]; }
      }
    }
    show(...nearest);
  });
  chart.addEventListener('mouseleave', () => {
    ring.setAttribute('visibility', 'hidden');
    readout.textContent = '\u00a0';
    delete hovered[o.id];
  });
  const was = hovered[o.id], again = was && series.find(s => s.name === was.series);
  if (again) {
    const p = again.points.reduce((a, b) => Math.abs(b[0] - was.x) < Math.abs(a[0] - was.x) ? b : a);
    show(again, p);
  }
  if (o.series.length > 1) {
    box.append(el('div', {class: 'legend'},
      ...o.series.slice(0, legendShown).map((s, i) => el('span', {class: 'legend-item' + (s.strong ? ' strong' : '')},
        el('span', {class: 'swatch', style: 'background:' + seriesColor(i)}), s.name + (s.stopped ? ' (stopped)' : ''))),
      ...(o.series.length > legendShown ? [el('span', {class: 'muted'}, (o.series.length - legendShown) + ' more')] : [])));
  }
  box.append(readout);
  if (o.note) box.append(el('div', {class: 'muted note'}, o.note));
  return box;
}
