// ui/plot.js — a small SVG line plot drawn by the console itself: series of (x, y) points, axes with
// a few ticks, each point a link (its title says what it is). Each series is one <path class=series>.
import { svg } from './dom.js';

const W = 520, H = 220, L = 44, R = 12, T = 12, B = 28;

function ticks(lo, hi, n) {
  if (hi === lo) return [lo];
  const out = [];
  for (let i = 0; i <= n; ++i) out.push(lo + ((hi - lo) * i) / n);
  return out;
}

// series: [{name, cls, points: [{x, y, href, title}]}]; yRange: [lo, hi] or null (from the data);
// xTick, yTick: a tick's text (the quality plots' defaults: versions on x, 2 decimals on y).
export function linePlot(series, { yRange = null, xLabel = '', yLabel = '', xTick = (x) => `v${x}`, yTick = (y) => y.toFixed(2) } = {}) {
  const all = series.flatMap((s) => s.points).filter((p) => Number.isFinite(p.y));
  const xs = all.map((p) => p.x), ys = all.map((p) => p.y);
  let x0 = Math.min(...xs), x1 = Math.max(...xs);
  if (!all.length) { x0 = 0; x1 = 1; }
  if (x0 === x1) { x0 -= 1; x1 += 1; }
  let [y0, y1] = yRange ?? [Math.min(...ys), Math.max(...ys)];
  if (!all.length) { y0 = 0; y1 = 1; }
  if (y0 === y1) { y0 -= 0.05; y1 += 0.05; }
  const sx = (x) => L + ((x - x0) / (x1 - x0)) * (W - L - R);
  const sy = (y) => H - B - ((y - y0) / (y1 - y0)) * (H - T - B);
  const parts = [
    svg('line', { x1: L, y1: H - B, x2: W - R, y2: H - B, class: 'axis' }),
    svg('line', { x1: L, y1: T, x2: L, y2: H - B, class: 'axis' }),
  ];
  for (const y of ticks(y0, y1, 4)) {
    parts.push(svg('line', { x1: L, y1: sy(y), x2: W - R, y2: sy(y), class: 'grid' }),
      svg('text', { x: L - 4, y: sy(y) + 4, class: 'tick', 'text-anchor': 'end' }, yTick(y)));
  }
  const xt = [...new Set(ticks(x0, x1, Math.min(5, Math.round(x1 - x0))).map(Math.round))];
  for (const x of xt) {
    parts.push(svg('text', { x: sx(x), y: H - B + 14, class: 'tick', 'text-anchor': 'middle' }, xTick(x)));
  }
  if (xLabel) parts.push(svg('text', { x: W - R, y: H - 2, class: 'label', 'text-anchor': 'end' }, xLabel));
  if (yLabel) parts.push(svg('text', { x: L + 4, y: T + 8, class: 'label' }, yLabel));
  for (const s of series) {
    const pts = s.points.filter((p) => Number.isFinite(p.y));
    if (!pts.length) continue;
    parts.push(svg('path', { d: pts.map((p, i) => `${i ? 'L' : 'M'}${sx(p.x).toFixed(1)},${sy(p.y).toFixed(1)}`).join(' '),
      class: `series ${s.cls}` }));
    if (pts.length <= 200) {
      for (const p of pts) {
        const dot = svg('circle', { cx: sx(p.x), cy: sy(p.y), r: 3, class: `dot ${s.cls}` }, svg('title', null, p.title));
        parts.push(p.href ? svg('a', { href: p.href }, dot) : dot);
      }
    }
  }
  return svg('svg', { viewBox: `0 0 ${W} ${H}`, width: W, height: H, class: 'plot', role: 'img' }, parts);
}
