// DOM building for the console. Every name and value from the catalog goes into the page as a
// text node (or an attribute set by name), never as markup: a table named
// `<img src=x onerror=alert(1)>` shows as those characters and runs nothing.

export type Child = Node | string | number | null | undefined | false;

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    // Event handlers are attached with addEventListener, never as attributes.
    if (name.toLowerCase().startsWith('on')) throw new Error(`no ${name} attribute`);
    node.setAttribute(name, value);
  }
  append(node, ...children);
  return node;
}

export function append(node: Node, ...children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    node.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

export function clear(node: Node): void {
  while (node.firstChild) node.removeChild(node.firstChild);
}

// A table of text (or nodes), one header row.
export function table(headers: string[], rows: Child[][], attrs: Record<string, string> = {}): HTMLTableElement {
  const head = el('tr', {}, ...headers.map((h) => el('th', {}, h)));
  const body = el('tbody');
  for (const r of rows) body.appendChild(el('tr', {}, ...r.map((c) => el('td', {}, c))));
  return el('table', attrs, el('thead', {}, head), body);
}

export function section(title: string, ...children: Child[]): HTMLElement {
  return el('section', { class: 'card' }, el('h2', {}, title), ...children);
}

export function fmtInt(n: number | string | null | undefined): string {
  if (n === null || n === undefined || n === '') return '–';
  const v = Number(n);
  return Number.isFinite(v) ? v.toLocaleString('en-US') : String(n);
}

export function fmtBytes(n: number | string | null | undefined): string {
  if (n === null || n === undefined || n === '') return '–';
  let v = Number(n);
  if (!Number.isFinite(v)) return String(n);
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${i === 0 ? v : v.toFixed(1)} ${units[i]}`;
}

export function fmtTime(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '–';
  return new Date(ms).toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

export function errorBox(message: string): HTMLElement {
  return el('p', { class: 'error', role: 'alert' }, message);
}
