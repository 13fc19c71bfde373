// ui/version.js — one version: per platform the model that serves it and its figures beside its
// parent's, the gate's paired comparison, its verdict, how it was trained.
import { get, seg } from './api.js';
import { el, link, fmt, fmtBytes, fmtDuration, table } from './dom.js';
import { figures, method, platformsAdded, servedBy, verdict } from './lineage_model.js';
import { statusBadge } from './lineage.js';

const METRICS = [
  ['top1', 'top-1 mean'],
  ['top1_sum_ratio', 'top-1 sum'],
  ['top5', 'top-5'],
  ['pairwise_accuracy', 'pairwise'],
  ['tuning_proxy', 'tuning proxy'],
];

function pair(mine, theirs, key) {
  const a = mine?.[key], b = theirs?.[key];
  const cells = [el('span', { class: 'fig' }, fmt(a))];
  if (typeof b === 'number') {
    const d = typeof a === 'number' ? a - b : null;
    // tuning proxy: lower is better; the rest: higher.
    const better = d === null ? '' : (key === 'tuning_proxy' ? d < 0 : d > 0) ? 'up' : d === 0 ? '' : 'down';
    cells.push(el('span', { class: 'muted' }, ` (parent ${fmt(b)}`),
      d !== null ? el('span', { class: `delta ${better}` }, ` ${d >= 0 ? '+' : ''}${fmt(d)}`) : null,
      el('span', { class: 'muted' }, ')'));
  }
  return el('td', { class: 'num' }, cells);
}

function comparison(vp) {
  if (!vp || typeof vp !== 'object') return el('td', { class: 'muted' }, '–');
  if (typeof vp.top1 !== 'number') return el('td', { class: 'muted' }, `${vp.tasks ?? 0} tasks, no figures`);
  return el('td', { class: 'cmp' },
    el('div', null, `${vp.tasks} tasks (${vp.judged_on ?? 'judged set'})`),
    el('div', null, `top-1 ${fmt(vp.parent_top1)} → ${fmt(vp.top1)}, change ${fmt(vp.change)} ± ${fmt(vp.change_se)} se`),
    el('div', null, `sum ${fmt(vp.parent_top1_sum_ratio)} → ${fmt(vp.top1_sum_ratio)}, change ${fmt(vp.sum_change)} ± ${fmt(vp.sum_change_se)} se`),
    typeof vp.tuning_proxy === 'number'
      ? el('div', null, `tuning proxy ${fmt(vp.parent_tuning_proxy)} → ${fmt(vp.tuning_proxy)} (${vp.tuning_tasks} tasks)`)
      : null);
}

// What the page reads of the other versions (GET /v1/models's fields): the tree and what the model
// serving each platform comes from; the parent's figures come with the parent itself.
const FIELDS = 'version,parent,platforms,status,config,trained_on';

export async function render(main, version) {
  const [{ versions }, v] = await Promise.all([get(`/v1/models?view=summary&fields=${FIELDS}`), get(`/v1/models/${seg(version)}`)]);
  const byVersion = new Map(versions.map((x) => [x.version, x]));
  const parent = v.parent != null && byVersion.has(v.parent) ? await get(`/v1/models/${seg(v.parent)}`) : null;
  const children = versions.filter((x) => x.parent === v.version);
  const added = new Set(platformsAdded(v, byVersion));
  const g = verdict(v);

  const rows = (v.platforms ?? []).map((p) => {
    const mine = figures(v, p), theirs = parent ? figures(parent, p) : null;
    const served = servedBy(v, p, byVersion);
    return el('tr', { dataset: { platform: p } },
      el('td', null, link(p, 'platforms', p), added.has(p) ? el('span', { class: 'added' }, ' new') : null),
      el('td', null, served.version != null && served.version !== v.version
        ? [served.what, ' (', link(`v${served.version}`, 'version', served.version), ')'] : served.what),
      el('td', { class: 'muted' }, mine ? `${mine.set}, ${mine.eval_tasks ?? '?'} tasks` : 'no figures'),
      METRICS.map(([key]) => pair(mine, theirs, key)),
      comparison(v.metrics?.versus_parent?.[p]));
  });

  const ts = v.training_summary ?? {};
  const c = v.config ?? {};
  main.append(
    el('h1', null, `Version ${v.version} `, statusBadge(v.status),
      (v.aliases ?? []).map((a) => el('span', { class: 'alias' }, a))),
    el('p', null,
      'Parent: ', parent ? link(`v${parent.version}`, 'version', parent.version) : 'none (the first version)',
      '. Children: ', children.length ? children.map((x, i) => [i ? ', ' : '', link(`v${x.version}`, 'version', x.version)]) : 'none',
      `. ${method(v)}, ${c.model ?? 'model ?'}, ${fmtBytes(v.weights_size)}${v.has_fisher ? ', with Fisher' : ''}, created ${v.created_at}.`),
    el('h2', null, 'Platforms'),
    table(['platform', 'served by', 'figures on', ...METRICS.map(([, name]) => name), "gate's paired comparison with the parent"],
      rows, { class: 'version' }),
    el('h2', null, 'The gate'),
    el('div', { class: 'gate-box' },
      el('p', null, statusBadge(v.status), ' ', g.blocking.length ? 'refused:' : g.status === 'promoted' ? 'promoted.' : ''),
      g.blocking.length ? el('ul', { class: 'why' }, g.blocking.map((l) => el('li', null, l))) : null,
      g.reasons.length ? el('ul', null, g.reasons.map((l) => el('li', null, l))) : el('p', { class: 'muted' }, 'No reasons recorded (a train job is not judged).')),
    el('h2', null, 'Training'),
    table(['job', 'epochs', 'best epoch', 'steps', 'records read', 'wall', 'losses by epoch'], [el('tr', null,
      el('td', null, String(ts.job ?? '–')),
      el('td', null, `${ts.epochs_done ?? '–'} of ${ts.epochs_planned ?? '–'}`),
      el('td', null, String(ts.best_epoch ?? '–')),
      el('td', null, String(ts.steps ?? '–')),
      el('td', null, String(ts.records_read ?? '–')),
      el('td', null, fmtDuration(ts.wall_s)),
      el('td', null, (ts.epoch_losses ?? []).map((l) => fmt(l, 4)).join(' ')))]),
    el('details', null, el('summary', null, 'config'), el('pre', null, JSON.stringify(c, null, 2))));
}
