/**
 * The only way the client builds DOM. Text always goes in as text nodes (textContent), never
 * as markup; attributes that could run or load something (on*, href, src, style, srcdoc) are
 * refused here and set only by the narrow helpers below, which validate what they set.
 */
export type Child = Node | string | number | null | undefined | false;

const FORBIDDEN_ATTR = /^(on|href$|src$|srcset$|srcdoc$|style$|formaction$|xlink:href$|action$)/i;

export interface Props {
  class?: string;
  attrs?: Record<string, string>;
  title?: string;
  onClick?: (ev: MouseEvent) => void;
}

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, props: Props | null = null, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (props?.class) el.className = props.class;
  if (props?.title !== undefined) el.title = props.title;
  if (props?.attrs) {
    for (const [k, v] of Object.entries(props.attrs)) {
      if (FORBIDDEN_ATTR.test(k)) throw new Error(`attribute ${k} must be set through a checked helper`);
      el.setAttribute(k, v);
    }
  }
  if (props?.onClick) el.addEventListener("click", props.onClick as EventListener);
  append(el, ...children);
  return el;
}

export function append(parent: Node, ...children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    parent.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
  }
}

export function clear(el: Element): void {
  while (el.firstChild) el.removeChild(el.firstChild);
}

/** The URL as a string when it is http(s), else null: javascript:, data: and the rest never become links. */
export function safeHttpUrl(raw: unknown): string | null {
  if (typeof raw !== "string") return null;
  try {
    const u = new URL(raw.trim());
    return u.protocol === "http:" || u.protocol === "https:" ? u.href : null;
  } catch {
    return null;
  }
}

/**
 * A link that opens in a new tab without handing the page to the target or leaking the
 * view's address; the page never fetches it. Anything but http(s) is shown as plain text.
 */
export function externalLink(url: unknown, text?: string): HTMLElement {
  const href = safeHttpUrl(url);
  const label = text ?? (typeof url === "string" ? url : String(url));
  if (!href) return h("span", { class: "url-text", title: "not an http(s) link" }, label);
  const a = document.createElement("a");
  a.href = href;
  a.target = "_blank";
  a.rel = "noopener noreferrer";
  a.referrerPolicy = "no-referrer";
  a.textContent = label;
  return a;
}

/**
 * A download of a path on the page's own origin (the server's export of this case); anything
 * that is not a plain absolute path (a scheme, another host as `//host`) is shown as text.
 */
export function downloadLink(path: unknown, text: string): HTMLElement {
  if (typeof path !== "string" || !/^\/(?![/\\])/.test(path)) return h("span", { class: "url-text" }, text);
  const a = document.createElement("a");
  a.href = path;
  a.download = "";
  a.referrerPolicy = "no-referrer";
  a.textContent = text;
  return a;
}

const IMAGE_DATA_URI = /^data:image\/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/]+={0,2}$/;

/** An <img> from an embedded data: URI (checked again here); null when there is none. */
export function dataImage(uri: string | undefined, alt: string): HTMLImageElement | null {
  if (!uri || !IMAGE_DATA_URI.test(uri)) return null;
  const img = document.createElement("img");
  img.alt = alt;
  img.src = uri;
  return img;
}

/** Sets a percentage width through the CSSOM (not a style attribute, which the CSP forbids). */
export function setWidthPercent(el: HTMLElement, fraction: number): void {
  el.style.width = `${Math.max(0, Math.min(1, fraction)) * 100}%`;
}

export function fmt(n: number | null | undefined, digits = 2): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return "\u2014";
  return Number.isInteger(n) ? String(n) : n.toFixed(digits);
}

export function section(title: string, opts: { wide?: boolean; id: string }): HTMLElement {
  return h("section", { class: `panel${opts.wide ? " wide" : ""}`, attrs: { id: opts.id } }, h("h2", null, title));
}

export function kv(rows: Array<[string, Child]>): HTMLElement {
  const dl = h("dl", { class: "kv" });
  for (const [k, v] of rows) append(dl, h("dt", null, k), h("dd", null, v));
  return dl;
}

export function table(headers: Array<string | [string, string]>, rows: HTMLTableRowElement[], attrs?: Record<string, string>): HTMLTableElement {
  const thead = h("thead", null, h("tr", null, ...headers.map((c) => (Array.isArray(c) ? h("th", { class: c[1] }, c[0]) : h("th", null, c)))));
  return h("table", attrs ? { attrs } : null, thead, h("tbody", null, ...rows));
}
