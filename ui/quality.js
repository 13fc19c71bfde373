// ui/quality.js — Quality over time: for each platform, one figure across the versions that cover
// it, on its standing split (the same programs for every version), beside random order's.
import { get } from './api.js';
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

export async function render(main) {
  const [{ versions }, { platforms }] = await Promise.all([get('/v1/models?view=summary'), get('/v1/platforms')]);
  const names = platforms.map((p) => p.name);
  const area = el('div', { class: 'plots' });
  const select = el('select', { id: 'metric', 'aria-label': 'figure' },
    CHOICES.map(([k, n]) => el('option', { value: k }, n)));
  select.addEventListener('change', () => clear(area).append(...plots(versions, names, select.value)));
  area.append(...plots(versions, names, 'top1'));
  main.append(el('h1', null, 'Quality over time'),
    el('p', { class: 'muted' }, 'Each platform\'s figure on its standing split (its held-out tasks; the same programs for every ' +
      'version), for every version that covers it; dashed: random order on the same tasks. ', select),
    el('p', { class: 'legend' }, el('span', { class: 'key model' }, 'the version\'s model'), ' ',
      el('span', { class: 'key random' }, 'random order')),
    area);
}
