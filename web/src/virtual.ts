// Virtualised lists: a scroll box that holds only the rows in view (and a few either side), with
// two spacers standing in for the rows above and below, so that a list of 100,000 rows costs the
// page a few dozen elements. Rows have one fixed height (the stylesheet's, given here too). Rows
// may come a page at a time from the server (PagedRows): a row not loaded yet shows as a
// placeholder and is drawn again when its page arrives.
import { el } from './dom';

export interface VirtualOptions {
  // The row height in pixels, as the stylesheet sets it for `rowClass`.
  rowHeight: number;
  // Rows drawn beyond each edge of the view.
  overscan?: number;
  // The element rows go in (a tbody or a list) and the one that scrolls (an ancestor of it).
  items: HTMLElement;
  viewport: HTMLElement;
  // A spacer for `items` (a tr with one cell spanning the table, or an li): its height is set.
  spacer: () => HTMLElement;
  // The i-th row, drawn each time it comes into view.
  render: (i: number) => HTMLElement;
}

export class VirtualList {
  private count = 0;
  private first = -1;
  private last = -1;
  private frame = 0;
  private readonly before: HTMLElement;
  private readonly after: HTMLElement;

  constructor(private readonly o: VirtualOptions) {
    this.before = o.spacer();
    this.after = o.spacer();
    this.before.classList.add('vspacer');
    this.after.classList.add('vspacer');
    o.viewport.addEventListener('scroll', () => this.schedule(), { passive: true });
    // Also when the box is first laid out (rows drawn before it joined the page are redrawn).
    new ResizeObserver(() => {
      this.first = this.last = -1;
      this.schedule();
    }).observe(o.viewport);
  }

  // Sets how many rows the list has and draws the view again.
  setCount(n: number): void {
    this.count = n;
    this.redraw();
  }

  size(): number {
    return this.count;
  }

  // Draws the rows in view again (their data changed).
  redraw(): void {
    this.first = this.last = -1;
    this.update();
  }

  // Whether row i is drawn now.
  shown(i: number): boolean {
    return i >= this.first && i < this.last;
  }

  // Scrolls row i into view.
  scrollTo(i: number): void {
    this.o.viewport.scrollTop = this.offsetInViewport() + i * this.o.rowHeight;
    this.update();
  }

  private schedule(): void {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.update();
    });
  }

  // Where row 0 would start, in the viewport's scrolled content (a table's header comes first).
  private offsetInViewport(): number {
    const v = this.o.viewport;
    const top = this.o.items.getBoundingClientRect().top - v.getBoundingClientRect().top + v.scrollTop;
    return Math.max(0, top);
  }

  private update(): void {
    const { rowHeight, viewport, items } = this.o;
    const overscan = this.o.overscan ?? 10;
    const view = viewport.clientHeight || window.innerHeight;
    const from = Math.max(0, viewport.scrollTop - this.offsetInViewport());
    const first = Math.max(0, Math.min(this.count, Math.floor(from / rowHeight) - overscan));
    const last = Math.min(this.count, Math.ceil((from + view) / rowHeight) + overscan);
    if (first === this.first && last === this.last) return;
    this.first = first;
    this.last = last;
    // Heights through the CSSOM (the CSP allows no style attributes).
    this.before.style.height = `${first * rowHeight}px`;
    this.after.style.height = `${(this.count - last) * rowHeight}px`;
    const rows: HTMLElement[] = [this.before];
    for (let i = first; i < last; i++) {
      const row = this.o.render(i);
      row.dataset.index = String(i);
      rows.push(row);
    }
    rows.push(this.after);
    items.replaceChildren(...rows);
  }
}

// A spacer row for a table of `columns` columns.
export function tableSpacer(columns: number): () => HTMLElement {
  return () => el('tr', { 'aria-hidden': 'true' }, el('td', { colspan: String(columns) }));
}

// Rows fetched a page at a time (`load(offset, limit)` answers the rows and the total), each page
// once; `changed` is called when a page arrives (or the total changes).
export class PagedRows<T> {
  private readonly pages = new Map<number, T[]>();
  private readonly loading = new Set<number>();
  total = 0;

  constructor(
    private readonly pageSize: number,
    private readonly load: (offset: number, limit: number) => Promise<{ rows: T[]; total: number }>,
    private readonly changed: () => void,
    private readonly failed: (e: unknown) => void,
  ) {}

  // The first page (which also tells the total).
  async start(): Promise<void> {
    const { rows, total } = await this.load(0, this.pageSize);
    this.pages.set(0, rows);
    this.total = total;
  }

  // Row i, or undefined while its page loads (asked for here).
  get(i: number): T | undefined {
    const page = Math.floor(i / this.pageSize);
    const rows = this.pages.get(page);
    if (rows) return rows[i - page * this.pageSize];
    if (!this.loading.has(page)) {
      this.loading.add(page);
      this.load(page * this.pageSize, this.pageSize)
        .then(({ rows: got, total }) => {
          this.pages.set(page, got);
          this.total = total;
          this.changed();
        })
        .catch((e) => this.failed(e))
        .finally(() => this.loading.delete(page));
    }
    return undefined;
  }
}

// Rows a server hands out in order, a page at a time, each page with a token for the next (the
// file lists): row i is asked for by loading the pages before it one after the other. `changed`
// is called when a page arrives; a page that fails is not asked for again.
export class TokenRows<T> {
  private readonly rows: T[] = [];
  private next: string | null = null;
  private done = false;
  private loading = false;
  private broken = false;
  // The rows there are in all, when the server says; null when it does not know.
  total: number | null = null;

  constructor(
    private readonly load: (token: string | null) => Promise<{ rows: T[]; next: string | null; total: number | null }>,
    private readonly changed: () => void,
    private readonly failed: (e: unknown) => void,
  ) {}

  // The first page.
  async start(): Promise<void> {
    this.take(await this.load(null));
  }

  // The rows a list of them has: the total when known, else those loaded and, while more come,
  // one placeholder whose drawing asks for the next page.
  count(): number {
    if (this.total !== null) return this.total;
    return this.rows.length + (this.done ? 0 : 1);
  }

  loaded(): number {
    return this.rows.length;
  }

  // Row i, or undefined while the pages up to it load (the next one is asked for here).
  get(i: number): T | undefined {
    if (i < this.rows.length) return this.rows[i];
    if (!this.done && !this.loading && !this.broken) {
      this.loading = true;
      this.load(this.next)
        .then((page) => {
          this.loading = false;
          this.take(page);
          this.changed();
        })
        .catch((e) => {
          this.loading = false;
          this.broken = true;
          this.failed(e);
        });
    }
    return undefined;
  }

  private take(page: { rows: T[]; next: string | null; total: number | null }): void {
    this.rows.push(...page.rows);
    this.next = page.next;
    this.done = page.next === null;
    this.total = page.total;
    // A total that disagrees with the pages (a manifest without counts) gives way to them.
    if (this.total !== null && (this.rows.length > this.total || (this.done && this.rows.length !== this.total))) {
      this.total = this.done ? this.rows.length : null;
    }
  }
}
