// ui/jobs.js — the Jobs page: queued, running and finished jobs of every platform, with each running
// job's progress (phase, epoch, loss, ETA) refreshed every second without reloading the page.
import { get } from './api.js';
import { el, link, fmt, fmtDuration, clear, table } from './dom.js';

const POLL_MS = 1000;

function seconds(from, to) {
  const a = Date.parse(from), b = to ? Date.parse(to) : Date.now();
  return Number.isFinite(a) && Number.isFinite(b) ? Math.max(0, (b - a) / 1000) : null;
}

// "training, epoch 2/5, loss 0.4132, val top-1 0.812" / "evaluating 120/400 programs"
export function progressText(job) {
  const p = job.progress ?? {};
  const parts = [];
  if (p.phase && (job.state === 'running' || job.state === 'queued')) parts.push(String(p.phase));
  if (p.epoch != null) parts.push(`epoch ${p.epoch}/${p.epochs ?? '?'}`);
  if (typeof p.loss === 'number') parts.push(`loss ${fmt(p.loss, 4)}`);
  if (typeof p.val_top1 === 'number') parts.push(`val top-1 ${fmt(p.val_top1)}`);
  if (p.done != null && p.total != null) parts.push(`${p.done}/${p.total} ${p.unit ?? ''}`.trim());
  if (p.platform) parts.push(String(p.platform));
  return parts.join(', ');
}

function eta(job) {
  const p = job.progress ?? {};
  const elapsed = seconds(job.started_at, job.finished_at);
  if (job.state !== 'running' || !(p.epoch > 0) || !(p.epochs > p.epoch) || elapsed == null) return null;
  return (elapsed / p.epoch) * (p.epochs - p.epoch);
}

function bar(job) {
  const p = job.progress ?? {};
  const frac = p.done != null && p.total > 0 ? p.done / p.total : p.epochs > 0 ? (p.epoch ?? 0) / p.epochs : null;
  if (frac == null || job.state !== 'running') return null;
  const fill = el('span', { class: 'fill' });
  fill.style.width = `${Math.round(Math.min(1, frac) * 100)}%`;
  return el('span', { class: 'bar' }, fill);
}

function rows(jobs) {
  return jobs.map((j) => el('tr', { dataset: { job: j.id, state: j.state } },
    el('td', { class: 'num' }, `#${j.id}`),
    el('td', null, link(j.platform, 'platforms', j.platform)),
    el('td', null, j.kind, j.options?.method ? el('span', { class: 'muted' }, ` (${j.options.method})`) : null),
    el('td', null, el('span', { class: `badge ${j.state}` }, j.state), j.cancel_requested && j.state === 'running' ? ' cancelling' : null),
    el('td', { class: 'progress' }, bar(j), progressText(j)),
    el('td', { class: 'num' }, fmtDuration(seconds(j.started_at, j.finished_at))),
    el('td', { class: 'num' }, fmtDuration(eta(j))),
    el('td', null, j.result_version != null ? link(`v${j.result_version}`, 'version', j.result_version) : j.error ? el('span', { class: 'error' }, j.error) : '–'),
    el('td', { class: 'muted' }, j.created_at)));
}

function sections(jobs) {
  const by = (states) => jobs.filter((j) => states.includes(j.state));
  const out = [];
  for (const [title, states] of [['Running', ['running']], ['Queued', ['queued']], ['Finished', ['succeeded', 'failed', 'cancelled']]]) {
    const list = by(states);
    out.push(el('h2', null, `${title} (${list.length})`));
    out.push(list.length
      ? table(['job', 'platform', 'kind', 'state', 'progress', 'elapsed', 'ETA', 'result', 'created'], rows(list), { class: `jobs ${title.toLowerCase()}` })
      : el('p', { class: 'empty' }, 'none'));
  }
  return out;
}

// Returns a function that stops the refresh (called when the page changes).
export async function render(main, _arg, ready) {
  const first = await get('/v1/jobs');
  const area = el('div', { id: 'jobs' }, sections(first.jobs));
  const stamp = el('p', { class: 'muted', id: 'refreshed' }, `The 100 most recent jobs; refreshed every second.`);
  main.append(el('h1', null, 'Jobs'), stamp, area);
  ready();
  let stopped = false, timer = null;
  const tick = async () => {
    if (stopped) return;
    try {
      const { jobs } = await get('/v1/jobs');
      if (stopped) return;
      clear(area).append(...sections(jobs));
      stamp.textContent = `The 100 most recent jobs; refreshed every second (last ${new Date().toLocaleTimeString()}).`;
    } catch (e) {
      stamp.textContent = `Refresh failed: ${e.message}`;
    }
    if (!stopped) timer = setTimeout(tick, POLL_MS);
  };
  timer = setTimeout(tick, POLL_MS);
  return () => { stopped = true; clearTimeout(timer); };
}
