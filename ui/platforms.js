// ui/platforms.js — the Platforms page: each platform's target and hardware, counts, onboarding state
// and rounds (its sample requests: picked, measured), and the versions that cover it.
import { get, seg } from './api.js';
import { el, link, table } from './dom.js';

const HW = ['cores', 'vector bytes', 'cache line', 'shared mem', 'local mem', 'threads', 'vthreads', 'warp'];

function hardware(params) {
  return el('dl', { class: 'hw' }, (params ?? []).map((v, i) => [el('dt', null, HW[i] ?? `#${i}`), el('dd', null, String(v))]));
}

function rounds(list) {
  if (!list.length) return el('span', { class: 'muted' }, 'none');
  return el('ol', { class: 'rounds', reversed: 'reversed' }, list.map((s) =>
    el('li', null, `#${s.id} ${s.strategy}: picked ${s.items_total}, measured ${s.items_measured} — ${s.status}`,
      s.model_version != null ? [' (model ', link(`v${s.model_version}`, 'version', s.model_version), ')'] : null)));
}

export async function render(main, only) {
  // Every platform with its counts in one request; then each one's sample requests.
  const [{ platforms }, { versions }] = await Promise.all([get('/v1/platforms?with=counts'),
    get('/v1/models?view=summary&fields=version,platforms')]);
  const shown = only ? platforms.filter((p) => p.name === only) : platforms;
  const samples = await Promise.all(shown.map((p) => get(`/v1/platforms/${seg(p.name)}/sample-requests`)));
  const rows = shown.map((p, i) => {
    const d = p, s = samples[i];
    const c = d.counts ?? {};
    const covering = versions.filter((v) => (v.platforms ?? []).includes(p.name));
    const newest = covering.length ? covering[covering.length - 1] : null;
    return el('tr', { dataset: { platform: p.name } },
      el('td', null, el('div', { class: 'name' }, link(p.name, 'platforms', p.name)), el('div', { class: 'desc' }, p.description)),
      el('td', null, el('code', { class: 'target' }, p.target), hardware(p.hardware_params)),
      el('td', { class: 'num' }, String(c.programs ?? '–')),
      el('td', { class: 'num' }, String(c.tasks ?? '–')),
      el('td', { class: 'num' }, `${c.measurements ?? '–'}`, c.failed ? el('span', { class: 'muted' }, ` (${c.failed} failed)`) : null),
      el('td', { class: 'num' }, String(c.candidates ?? '–')),
      el('td', null, el('span', { class: 'badge state' }, d.onboarding?.state ?? '–')),
      el('td', null, rounds(s.sample_requests ?? [])),
      el('td', null, covering.length ? [`${covering.length}, newest `, link(`v${newest.version}`, 'version', newest.version)] : '–'));
  });
  main.append(el('h1', null, only ? `Platform ${only}` : 'Platforms'),
    only ? el('p', null, link('all platforms', 'platforms')) : el('p', { class: 'muted' }, `${platforms.length} platforms.`),
    table(['platform', 'target and hardware', 'programs', 'tasks', 'measured (uploaded)', 'candidates', 'onboarding',
      'rounds (sample requests)', 'versions'], rows, { class: 'platforms' }));
}
