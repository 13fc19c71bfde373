// ui/dom.js — the only way the console builds its pages: elements from createElement and text from
// text nodes, so a name, a description or a reason from the API is always shown as text, never read
// as HTML (no HTML is parsed from strings anywhere in ui/). Attributes are set one by one; inline style attributes
// would break the Content-Security-Policy, so sizes go through the CSSOM (node.style).

const SVG_NS = 'http://www.w3.org/2000/svg';

function append(node, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

function setProps(node, props) {
  for (const [k, v] of Object.entries(props ?? {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') node.setAttribute('class', v);
    else if (k === 'text') node.textContent = String(v);
    else if (k === 'dataset') Object.assign(node.dataset, v);
    else if (k === 'style') Object.assign(node.style, v);
    else if (k.startsWith('on') && typeof v === 'function') node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, String(v));
  }
}

// el('td', {class: 'num'}, 'text', otherNode, [more]) — an HTML element.
export function el(tag, props, ...children) {
  const node = document.createElement(tag);
  setProps(node, props);
  return append(node, children);
}

// svg('line', {x1: 0, ...}) — an SVG element.
export function svg(tag, props, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  setProps(node, props);
  return append(node, children);
}

// A link to a page of the console (#/version/3): `parts` are joined after encodeURIComponent.
export function link(text, ...parts) {
  return el('a', { href: '#/' + parts.map((p) => encodeURIComponent(String(p))).join('/') }, text);
}

export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

// Numbers as the API's figures read: 3 decimals, '–' when missing.
export function fmt(x, digits = 3) {
  return typeof x === 'number' && Number.isFinite(x) ? x.toFixed(digits) : '–';
}

export function fmtBytes(n) {
  if (typeof n !== 'number') return '–';
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

export function fmtDuration(s) {
  if (typeof s !== 'number' || !Number.isFinite(s) || s < 0) return '–';
  const t = Math.round(s);
  if (t < 60) return `${t} s`;
  if (t < 3600) return `${Math.floor(t / 60)} min ${t % 60} s`;
  const m = Math.round(t / 60);
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

// A table from column headers and rows of cells (each cell: text, a node, or an array of them).
export function table(headers, rows, props) {
  return el('table', props,
    el('thead', null, el('tr', null, headers.map((h) => el('th', null, h)))),
    el('tbody', null, rows));
}
