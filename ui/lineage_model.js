// ui/lineage_model.js — what the pages read from GET /v1/models, as plain functions of the JSON
// (no DOM): the tree's layout, each version's method, the platforms it added, the model serving each
// platform, and the figure that compares across versions.

// How a version was made: "train", "fine-tune", "distill (best-of)", "distill (adapter)", "distill (student)".
export function method(v) {
  const c = v.config ?? {};
  if (c.kind === 'distill') return `distill (${c.distill?.method ?? 'student'})`;
  if (c.kind === 'train') return c.init != null ? 'fine-tune' : 'train';
  return c.kind ?? '–';
}

// Platforms this version covers that its parent did not.
export function platformsAdded(v, byVersion) {
  const parent = v.parent != null ? byVersion.get(v.parent) : null;
  const old = new Set(parent?.platforms ?? []);
  return (v.platforms ?? []).filter((p) => !old.has(p));
}

// The platform the version's job trained (a train job's, or the platform a distill folded in or
// distilled again): the one whose standing-split figure says whether the job held it out
// (metrics.<p>.standing_split.held_out, written for the job's own platform only; the summary view's
// trained_on says the same); else the ones added.
export function trainedOn(v, byVersion) {
  if ('trained_on' in v) return v.trained_on ?? platformsAdded(v, byVersion)[0] ?? null;  // the summary says it
  for (const [p, m] of Object.entries(v.metrics ?? {})) {
    if (p !== 'versus_parent' && m?.standing_split && 'held_out' in m.standing_split) return p;
  }
  return platformsAdded(v, byVersion)[0] ?? null;
}

// Which model serves `platform` in version `v`: an adapter keeps every other platform exactly as its
// parent served it (api/openapi.yaml, startJob's `method`); a train job or a student distill serves
// every platform from its own weights.
export function servedBy(v, platform, byVersion) {
  // A best-of distill says itself which model serves each platform (GET /v1/models/{version}'s serving).
  const s = v.config?.distill?.method === 'best-of' ? v.serving?.[platform] : null;
  if (s && typeof s === 'object' && typeof s.model === 'string') {
    return { version: s.from_version ?? v.version, what: `${s.model}: ${s.origin ?? ''}` };
  }
  let cur = v;
  for (let guard = 0; cur && guard < 100000; ++guard) {
    const c = cur.config ?? {};
    const adapter = c.kind === 'distill' && c.distill?.method === 'adapter';
    if (!adapter) return { version: cur.version, what: `${method(cur)} weights of v${cur.version}` };
    if (trainedOn(cur, byVersion) === platform || cur.parent == null) {
      return {
        version: cur.version,
        what: `v${cur.version}'s adapter (rank ${c.distill?.adapter_rank ?? '?'}) on v${cur.parent}'s frozen trunk`,
      };
    }
    cur = byVersion.get(cur.parent);
  }
  return { version: null, what: '–' };
}

// The platform's figures for a version: its standing split's when it has one (the same programs for
// every version, so they compare), else the set its job judged.
export function figures(v, platform) {
  const m = v.metrics?.[platform];
  if (!m || typeof m !== 'object') return null;
  if (m.standing_split && typeof m.standing_split === 'object') return { set: 'standing split', ...m.standing_split };
  return { set: 'judged set', ...m };
}

// The gate's verdict in words, and its lines.
export function verdict(v) {
  const r = v.status_reasons ?? {};
  return {
    status: v.status,
    blocking: Array.isArray(r.blocking) ? r.blocking.map(String) : [],
    reasons: Array.isArray(r.reasons) ? r.reasons.map(String) : [],
  };
}

// The lineage as rows of a tree, oldest first along each branch. Each row: {v, col, parentRow}. A
// version's main child (promoted first, then the largest subtree, then the newest) stays in its
// column, so a long lineage stays one column wide; its other children branch to the right and come
// first. `edges[row]` lists the vertical lines crossing each row, for drawing.
export function layout(versions) {
  const byVersion = new Map(versions.map((v) => [v.version, v]));
  const children = new Map();
  const roots = [];
  for (const v of versions) {
    if (v.parent != null && byVersion.has(v.parent)) {
      if (!children.has(v.parent)) children.set(v.parent, []);
      children.get(v.parent).push(v);
    } else {
      roots.push(v);
    }
  }
  const size = new Map();
  const sorted = [...versions].sort((a, b) => b.version - a.version);  // children before parents
  for (const v of sorted) {
    let s = 1;
    for (const c of children.get(v.version) ?? []) s += size.get(c.version) ?? 1;
    size.set(v.version, s);
  }
  const rank = (v) => [v.status === 'promoted' ? 1 : 0, size.get(v.version), v.version];
  const better = (a, b) => {
    const ra = rank(a), rb = rank(b);
    for (let i = 0; i < ra.length; ++i) if (ra[i] !== rb[i]) return ra[i] > rb[i];
    return false;
  };
  const rows = [];
  // Iterative, so that a lineage of any length never overflows the stack.
  const place = (root, rootCol) => {
    let maxCol = rootCol;
    const stack = [{ v: root, col: rootCol, parentRow: -1 }];
    while (stack.length) {
      const { v, col, parentRow } = stack.pop();
      const row = rows.length;
      rows.push({ v, col, parentRow });
      maxCol = Math.max(maxCol, col);
      const kids = children.get(v.version) ?? [];
      if (!kids.length) continue;
      let main = kids[0];
      for (const k of kids) if (better(k, main)) main = k;
      const side = kids.filter((k) => k !== main);
      // Pushed in reverse: side children pop first, each a column further right, then the main one.
      stack.push({ v: main, col, parentRow: row });
      for (let i = side.length - 1; i >= 0; --i) stack.push({ v: side[i], col: col + 1 + i, parentRow: row });
    }
    return maxCol;
  };
  let width = 0;
  for (const r of roots) width = Math.max(width, place(r, 0));
  const through = rows.map(() => []);
  for (let r = 0; r < rows.length; ++r) {
    const p = rows[r].parentRow;
    for (let k = p + 1; k < r; ++k) through[k].push(rows[r].col);
  }
  return { rows, through, columns: width + 1, byVersion };
}
