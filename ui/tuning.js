// ui/tuning.js — Tuning runs: every platform's runs as `tclctl tune` reports them after each round
// (GET /v1/platforms/{name}/tuning-runs), each with its curve: the network's latency (each task's
// best program so far, weighted) against the measurements made.
import { get, seg } from './api.js';
import { el, link, fmtDuration, table } from './dom.js';
import { linePlot } from './plot.js';

function ms(seconds) {
  return typeof seconds === 'number' && Number.isFinite(seconds) ? `${(seconds * 1e3).toPrecision(4)} ms` : '–';
}

function curve(run) {
  const points = run.rounds.filter((r) => typeof r.network_seconds === 'number').map((r, i) => ({
    x: r.measured, y: r.network_seconds * 1e3, title: `${r.measured} measured: ${ms(r.network_seconds)} (round ${i + 1})` }));
  return el('figure', { class: 'quality tuning', dataset: { run: run.id, platform: run.platform } },
    el('figcaption', null, `${run.network} on ${run.platform}`,
      el('span', { class: 'muted' }, ` — ${run.model}, seed ${run.seed}, ${run.rounds.length} rounds`)),
    points.length
      ? linePlot([{ name: 'latency', cls: 'model', points }], {
        xLabel: 'measurements', yLabel: 'network latency (ms)', xTick: (x) => String(x), yTick: (y) => y.toPrecision(3) })
      : el('p', { class: 'empty' }, 'no latency yet: not every task has a valid program'));
}

export async function render(main) {
  const { platforms } = await get('/v1/platforms');
  const lists = await Promise.all(platforms.map((p) => get(`/v1/platforms/${seg(p.name)}/tuning-runs`)));
  const runs = lists.flatMap((l) => l.runs).sort((a, b) => (a.updated_at < b.updated_at ? 1 : a.updated_at > b.updated_at ? -1 : 0));
  main.append(el('h1', null, 'Tuning runs'));
  if (!runs.length) {
    main.append(el('p', { class: 'empty' }, 'No tuning run yet: `tclctl tune --platform NAME --network resnet50` ' +
      'stores its run here after every round it uploads.'));
    return;
  }
  const rows = runs.map((r) => {
    const last = r.rounds[r.rounds.length - 1];
    return el('tr', { dataset: { run: r.id, platform: r.platform } },
      el('td', null, r.id),
      el('td', null, link(r.platform, 'platforms', r.platform)),
      el('td', null, r.network),
      el('td', null, r.model),
      el('td', { class: 'num' }, String(r.seed)),
      el('td', { class: 'num' }, String(r.rounds.length)),
      el('td', { class: 'num' }, String(last?.measured ?? 0)),
      el('td', { class: 'num' }, ms(last?.network_seconds)),
      el('td', { class: 'num' }, fmtDuration(last?.wall_seconds)),
      el('td', { class: 'muted' }, r.updated_at));
  });
  main.append(el('p', { class: 'muted' }, `${runs.length} run${runs.length === 1 ? '' : 's'}, the last updated first.`),
    table(['run', 'platform', 'network', 'model', 'seed', 'rounds', 'measured', 'latency', 'wall', 'updated'], rows,
      { class: 'tuning' }),
    el('div', { class: 'plots' }, runs.map(curve)));
}
