// ui/quality.js — Quality over time: for each platform, one figure across the versions that cover
// it, on its standing split (the same programs for every version), beside random order's.
import { get, seg } from './api.js';
import { el, clear } from './dom.js';
import { figures } from './lineage_model.js';
import { linePlot } from './plot.js';

const CHOICES = [
  ['top1', 'top-1 mean', 'random_top1'],
  ['top1_sum_ratio', 'top-1 sum', null],
  ['top5', 'top-5', 'random_top5'],
  ['pairwise_accuracy', 'pairwise accuracy', null],
  ['tuning_proxy', 'tuning proxy (lower is better)', 'random_tuning_proxy'],
];

const FIRST_PLOTS = 8;  // drawn before the page says it is ready: more than a screenful
const idle = window.requestIdleCallback ?? ((f) => setTimeout(f, 0));
const cancelIdle = window.cancelIdleCallback ?? clearTimeout;

function plots(versions, platforms, choice) {
  const [key, name, randomKey] = CHOICES.find((c) => c[0] === choice) ?? CHOICES[0];
  return platforms.map((p) => {
    const mine = [], random = [];
    for (const v of versions) {
      if (!(v.platforms ?? []).includes(p)) continue;
      const f = figures(v, p);
      if (!f) continue;
      const title = `v${v.version} (${v.status}) on ${p}: ${name} ${Number(f[key]).toFixed(3)} (${f.set})`;
      mine.push({ x: v.version, y: Number(f[key]), href: `#/version/${v.version}`, title });
      if (randomKey) random.push({ x: v.version, y: Number(f[randomKey]), title: `random order ${Number(f[randomKey]).toFixed(3)}` });
    }
    return el('figure', { class: 'quality', dataset: { platform: p } },
      el('figcaption', null, p, el('span', { class: 'muted' }, ` — ${name}, ${mine.length} versions`)),
      mine.length ? linePlot([{ name: 'model', cls: 'model', points: mine }, { name: 'random', cls: 'random', points: random }],
        { xLabel: 'version' }) : el('p', { class: 'empty' }, 'no figures yet'));
  });
}

// The lineage's figures of `some` platforms only (GET /v1/models's metrics_for).
function lineage(some) {
  return get(`/v1/models?view=summary&fields=version,platforms,status,metrics&metrics_for=${some.map(seg).join(',')}`);
}

// The first FIRST_PLOTS platforms' figures are fetched and drawn, then ready() (the rendered marker),
// then the other platforms' figures fetched and drawn one platform per idle callback;
// <div class=plots data-plots=complete> once every platform's plot is in. Returns the stop.
export async function render(main, _unused, ready) {
  const { platforms } = await get('/v1/platforms');
  const names = platforms.map((p) => p.name);
  const first = names.slice(0, FIRST_PLOTS), rest = names.slice(FIRST_PLOTS);
  const { versions } = first.length ? await lineage(first) : { versions: [] };
  const area = el('div', { class: 'plots' });
  const select = el('select', { id: 'metric', 'aria-label': 'figure' },
    CHOICES.map(([k, n]) => el('option', { value: k }, n)));
  let drawn = 0, handle = null, restIn = !rest.length, stopped = false;
  const draw = (n) => {
    area.append(...plots(versions, names.slice(drawn, drawn + n), select.value));
    drawn = Math.min(names.length, drawn + n);
  };
  const schedule = () => {
    if (stopped || handle !== null) return;
    if (drawn >= names.length) area.dataset.plots = 'complete';
    else if (restIn || drawn < first.length) handle = idle(() => { handle = null; draw(1); schedule(); });
  };
  const stop = () => {
    stopped = true;
    if (handle !== null) cancelIdle(handle);
    handle = null;
  };
  select.addEventListener('change', () => {
    const n = drawn;
    clear(area);
    drawn = 0;
    draw(n);
  });
  draw(first.length);
  main.append(el('h1', null, 'Quality over time'),
    el('p', { class: 'muted' }, 'Each platform\'s figure on its standing split (its held-out tasks; the same programs for every ' +
      'version), for every version that covers it; dashed: random order on the same tasks. ', select),
    el('p', { class: 'legend' }, el('span', { class: 'key model' }, 'the version\'s model'), ' ',
      el('span', { class: 'key random' }, 'random order')),
    area);
  if (rest.length) {
    ready?.();
    lineage(rest).then(({ versions: more }) => {
      const byVersion = new Map(versions.map((v) => [v.version, v]));
      for (const v of more) {
        const mine = byVersion.get(v.version);
        if (mine) mine.metrics = { ...(mine.metrics ?? {}), ...(v.metrics ?? {}) };
      }
      restIn = true;
      schedule();
    }, (e) => { if (!stopped) area.append(el('p', { class: 'error' }, `the other platforms' figures: ${e.message}`)); });
  }
  schedule();
  return stop;
}
