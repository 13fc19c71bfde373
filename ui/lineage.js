// ui/lineage.js — the Lineage page: every version as a tree (parent links), with its aliases, the
// platforms it added, its method and size, and the promotion gate's verdict with its reasons.
import { get } from './api.js';
import { el, svg, link, fmtBytes, table } from './dom.js';
import { layout, method, platformsAdded, trainedOn, verdict } from './lineage_model.js';

const COL = 16;  // px per tree column
const CY = 16;   // px from a row's top to its node

function treeCell(t, r) {
  const row = t.rows[r];
  const w = t.columns * COL + 4;
  const x = (c) => c * COL + COL / 2;
  const parts = [];
  for (const c of t.through[r]) parts.push(svg('line', { x1: x(c), y1: 0, x2: x(c), y2: '100%', class: 'edge' }));
  if (row.parentRow >= 0) parts.push(svg('line', { x1: x(row.col), y1: 0, x2: x(row.col), y2: CY, class: 'edge' }));
  // Edges leaving this row, to each child: across to the child's column, then down.
  for (const child of t.childRows[r]) {
    const cc = t.rows[child].col;
    if (cc !== row.col) parts.push(svg('line', { x1: x(row.col), y1: CY, x2: x(cc), y2: CY, class: 'edge' }));
    parts.push(svg('line', { x1: x(cc), y1: CY, x2: x(cc), y2: '100%', class: 'edge' }));
  }
  parts.push(svg('circle', { cx: x(row.col), cy: CY, r: 5, class: `node ${row.v.status}` }));
  const pic = svg('svg', { width: w, class: 'tree', 'aria-hidden': 'true' }, parts);
  const cell = el('td', { class: 'treecell' }, pic);
  cell.style.width = `${w}px`;
  cell.style.minWidth = `${w}px`;
  return cell;
}

export function gateCell(v) {
  const g = verdict(v);
  const why = g.blocking.length ? g.blocking : g.status === 'promoted' ? ['promoted by the gate'] : [];
  return el('td', { class: 'gate' },
    why.map((line) => el('div', { class: g.status === 'promoted' ? 'ok' : 'why' }, line)),
    g.reasons.length ? reasonsDetails(g.reasons) : null);
}

// The reasons behind a fold, built when first opened: a long lineage draws only what is seen.
function reasonsDetails(reasons) {
  const details = el('details', null, el('summary', null, `${reasons.length} reason${reasons.length > 1 ? 's' : ''}`));
  details.addEventListener('toggle', () => {
    if (details.open && details.childElementCount === 1) details.append(el('ul', null, reasons.map((line) => el('li', null, line))));
  });
  return details;
}

export function statusBadge(status) {
  return el('span', { class: `badge ${status}` }, status);
}

// What the page reads of each version (GET /v1/models's fields): no figures, no serving.
const FIELDS = 'version,parent,platforms,status,status_reasons,aliases,config,weights_size,created_at,trained_on';
const FIRST_ROWS = 40;   // drawn before the page says it is ready: more than a screenful
const IDLE_ROWS = 150;   // then this many per idle callback, until every row is in

function versionRow(t, r) {
  const row = t.rows[r];
  const v = row.v;
  const added = platformsAdded(v, t.byVersion);
  const trained = trainedOn(v, t.byVersion);
  const again = v.parent != null && trained && !added.includes(trained) ? trained : null;
  return el('tr', { dataset: { version: v.version } },
    treeCell(t, r),
    el('td', { class: 'num' }, link(`v${v.version}`, 'version', v.version)),
    el('td', null, v.parent != null ? link(`v${v.parent}`, 'version', v.parent) : '–'),
    el('td', null, (v.aliases ?? []).map((a) => el('span', { class: 'alias' }, a))),
    el('td', null, statusBadge(v.status)),
    el('td', null, added.map((p) => el('span', { class: 'added' }, `+${p}`)),
      again ? el('span', { class: 'again' }, `${again} again`) : null,
      el('span', { class: 'muted' }, ` (${(v.platforms ?? []).length} in all)`)),
    el('td', null, method(v)),
    el('td', { class: 'num' }, fmtBytes(v.weights_size)),
    el('td', { class: 'muted' }, v.created_at),
    gateCell(v));
}

const idle = window.requestIdleCallback ?? ((f) => setTimeout(f, 0));
const cancelIdle = window.cancelIdleCallback ?? clearTimeout;

// The table's first FIRST_ROWS rows are drawn, then ready() (the rendered marker), then the rest in
// idle callbacks; <table data-rows=complete> once every version has its row. Returns the stop.
export async function render(main, _unused, ready) {
  const { versions } = await get(`/v1/models?view=summary&fields=${FIELDS}`);
  if (!versions.length) {
    main.append(el('h1', null, 'Lineage'), el('p', { class: 'empty' },
      'No model version yet: start a train job (tclctl job start --platform NAME --wait).'));
    return;
  }
  const t = layout(versions);
  t.childRows = t.rows.map(() => []);
  t.rows.forEach((row, r) => { if (row.parentRow >= 0) t.childRows[row.parentRow].push(r); });
  const treeWidth = t.columns * COL + 12;
  const first = [];
  for (let r = 0; r < Math.min(FIRST_ROWS, t.rows.length); ++r) first.push(versionRow(t, r));
  const tbl = fixTreeColumn(table(['', 'version', 'parent', 'aliases', 'status', 'platforms added (or trained again)', 'method', 'size', 'created', 'gate'], first,
    { class: 'lineage' }), treeWidth);
  main.append(
    el('h1', null, 'Lineage'),
    el('p', { class: 'muted' }, `${versions.length} versions. Production: `,
      versions.filter((v) => (v.aliases ?? []).includes('production')).map((v) => link(`v${v.version}`, 'version', v.version)),
      '. Click a version for its platforms, metrics and the gate\'s comparison with its parent.'),
    tbl);
  const body = tbl.tBodies[0];
  let next = first.length, handle = null;
  const more = () => {
    const chunk = document.createDocumentFragment();
    for (const end = Math.min(next + IDLE_ROWS, t.rows.length); next < end; ++next) chunk.append(versionRow(t, next));
    body.append(chunk);
    if (next < t.rows.length) handle = idle(more);
    else tbl.dataset.rows = 'complete';
  };
  if (next < t.rows.length) {
    ready?.();
    handle = idle(more);
  } else {
    tbl.dataset.rows = 'complete';
  }
  return () => { if (handle !== null) cancelIdle(handle); };
}

function fixTreeColumn(tbl, width) {
  tbl.querySelector('th').style.width = `${width}px`;
  return tbl;
}
