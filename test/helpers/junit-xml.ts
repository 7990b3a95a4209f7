/**
 * A small, strict XML reader for the JUnit files the tests check: elements, attributes, text and the five
 * entities plus character references; a comment-free, DTD-free document as JUnit writers make. It refuses
 * what an XML 1.0 parser refuses (characters XML cannot hold, a raw `<` or a bare `&`, unbalanced tags,
 * duplicate attributes), so a file it reads is one CI can read.
 */

export interface XmlElement {
  name: string;
  attributes: Record<string, string>;
  children: XmlElement[];
  /** The element's own text (its children's text left out). */
  text: string;
}

const FORBIDDEN =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the characters XML 1.0 refuses
  /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const NAME = /[A-Za-z_:][-A-Za-z0-9_:.]*/y;

function decode(raw: string, at: number, attribute: boolean): string {
  if (raw.includes("<")) throw new Error(`a raw < at ${at}`);
  const text = attribute ? raw.replace(/[\t\n\r]/g, " ") : raw.replace(/\r\n?/g, "\n");
  return text.replace(/&([^;]*);?/g, (match, entity: string) => {
    if (!match.endsWith(";")) throw new Error(`a bare & at ${at}`);
    const named: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };
    if (entity in named) return named[entity] as string;
    const numeric = /^#(?:x([0-9a-fA-F]+)|([0-9]+))$/.exec(entity);
    if (!numeric) throw new Error(`unknown entity &${entity}; at ${at}`);
    const code = numeric[1] !== undefined ? Number.parseInt(numeric[1], 16) : Number(numeric[2]);
    const char = String.fromCodePoint(code);
    if (FORBIDDEN.test(char)) throw new Error(`&#${code}; is not allowed in XML 1.0 (at ${at})`);
    return char;
  });
}

/** Parses a document and returns its root element; throws on anything an XML 1.0 parser would refuse. */
export function parseXml(document: string): XmlElement {
  const bad = FORBIDDEN.exec(document);
  if (bad) throw new Error(`character U+${bad[0].charCodeAt(0).toString(16)} is not allowed in XML 1.0`);
  let at = 0;
  const skipSpace = () => {
    while (at < document.length && /\s/.test(document[at] as string)) at++;
  };
  if (document.startsWith("<?xml", at)) {
    const end = document.indexOf("?>", at);
    if (end < 0) throw new Error("unterminated XML declaration");
    at = end + 2;
  }
  skipSpace();
  const name = (): string => {
    NAME.lastIndex = at;
    const match = NAME.exec(document);
    if (!match) throw new Error(`expected a name at ${at}`);
    at += match[0].length;
    return match[0];
  };
  const element = (): XmlElement => {
    if (document[at] !== "<") throw new Error(`expected < at ${at}`);
    at++;
    const node: XmlElement = { name: name(), attributes: {}, children: [], text: "" };
    for (;;) {
      const before = at;
      skipSpace();
      if (document.startsWith("/>", at)) {
        at += 2;
        return node;
      }
      if (document[at] === ">") {
        at++;
        break;
      }
      if (at === before) throw new Error(`expected a space before an attribute at ${at}`);
      const key = name();
      if (Object.hasOwn(node.attributes, key)) throw new Error(`duplicate attribute ${key} at ${at}`);
      skipSpace();
      if (document[at] !== "=") throw new Error(`expected = at ${at}`);
      at++;
      skipSpace();
      const quote = document[at];
      if (quote !== '"' && quote !== "'") throw new Error(`expected a quoted value at ${at}`);
      const end = document.indexOf(quote, at + 1);
      if (end < 0) throw new Error(`unterminated attribute at ${at}`);
      node.attributes[key] = decode(document.slice(at + 1, end), at, true);
      at = end + 1;
    }
    for (;;) {
      const next = document.indexOf("<", at);
      if (next < 0) throw new Error(`unclosed <${node.name}>`);
      node.text += decode(document.slice(at, next), at, false);
      at = next;
      if (document.startsWith("</", at)) {
        at += 2;
        const closing = name();
        if (closing !== node.name) throw new Error(`</${closing}> closes <${node.name}> at ${at}`);
        skipSpace();
        if (document[at] !== ">") throw new Error(`expected > at ${at}`);
        at++;
        return node;
      }
      if (document.startsWith("<!", at) || document.startsWith("<?", at))
        throw new Error(`comments, CDATA and processing instructions are not expected (at ${at})`);
      node.children.push(element());
    }
  };
  const root = element();
  skipSpace();
  if (at !== document.length) throw new Error(`content after the root element at ${at}`);
  return root;
}

/** Every descendant element named `name`, in document order. */
export function elementsNamed(root: XmlElement, name: string): XmlElement[] {
  const found: XmlElement[] = [];
  const walk = (node: XmlElement) => {
    for (const child of node.children) {
      if (child.name === name) found.push(child);
      walk(child);
    }
  };
  walk(root);
  return found;
}

/** The first child named `name`, if any. */
export function childNamed(node: XmlElement, name: string): XmlElement | undefined {
  return node.children.find((child) => child.name === name);
}
