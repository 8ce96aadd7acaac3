/**
 * A comment in `src/` that sends the reader to a section of the docs (`README, "Test your handler"`,
 * `docs/ARCHITECTURE.md, "Redis layout"`) names one that exists: a heading of that document, or the bold lead of one
 * of its paragraphs (`**The first minute.**`, how docs/durability.md and docs/ARCHITECTURE.md name their parts). A
 * section that moved or was renamed fails here, naming the file and line that cite it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const ROOT = join(__dirname, '..', '..', '..');
const SRC = join(ROOT, 'src');

/** One citation: where it is, the document it names (relative to the repository) and the section. */
interface Citation {
  readonly at: string;
  readonly doc: string;
  readonly section: string;
}

/**
 * The sections of a markdown document: its headings (outside code blocks), each also by its name before a colon
 * (`Fourth pass` for "Fourth pass: concurrency 1,000"), and its bold paragraph leads.
 */
function sectionsOf(markdown: string): Set<string> {
  const sections = new Set<string>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    if (fenced) continue;
    const heading = /^#{1,6}\s+(.+?)\s*#*\s*$/.exec(line)?.[1];
    if (heading !== undefined) sections.add(heading).add(heading.split(': ')[0] ?? heading);
    const lead = /^\*\*(.+?)\*\*/.exec(line)?.[1];
    if (lead !== undefined) sections.add(lead.replace(/[.:]$/, ''));
  }
  return sections;
}

/**
 * The citations in a source file's text: `README, "<section>"` or `docs/<name>.md, "<section>"`, the section's name
 * possibly wrapped onto the next comment line.
 */
function citationsIn(file: string, text: string): Citation[] {
  const found: Citation[] = [];
  const pattern = /(README(?:\.md)?|docs\/[\w./-]+\.md),?\s*(?:\n[ \t]*(?:\*|\/\/|--)?[ \t]*)?"([^"]+?)"/g;
  for (const match of text.matchAll(pattern)) {
    const [, doc = '', section = ''] = match;
    const line = text.slice(0, match.index).split('\n').length;
    found.push({ at: `${file}:${line}`, doc: doc.startsWith('README') ? 'README.md' : doc, section: section.replace(/\s*\n[ \t]*(?:\*|\/\/|--)?[ \t]*/g, ' ') });
  }
  return found;
}

/** Every file under `folder`, relative to the repository. */
function filesUnder(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesUnder(join(folder, entry.name)) : [relative(ROOT, join(folder, entry.name))]);
}

/** The citations whose document or section does not exist, each with what is wrong. */
function deadCitations(citations: readonly Citation[], read: (doc: string) => string | undefined): string[] {
  const sections = new Map<string, Set<string> | undefined>();
  return citations.flatMap(({ at, doc, section }) => {
    if (!sections.has(doc)) {
      const text = read(doc);
      sections.set(doc, text === undefined ? undefined : sectionsOf(text));
    }
    const known = sections.get(doc);
    if (known === undefined) return [`${at}: cites ${doc}, which does not exist`];
    return known.has(section) ? [] : [`${at}: cites ${doc}, "${section}", which has no such section`];
  });
}

const readDoc = (doc: string): string | undefined => {
  try {
    return readFileSync(join(ROOT, doc), 'utf8');
  } catch {
    return undefined;
  }
};

describe('citations of the docs in src/', () => {
  const citations = filesUnder(SRC)
    .filter((file) => /\.(ts|cts|mts|cjs|js|lua)$/.test(file))
    .flatMap((file) => citationsIn(file, readFileSync(join(ROOT, file), 'utf8')));

  it('finds the citations it checks', () => {
    // Guards the check itself: a pattern that matched nothing would pass every tree.
    expect(citations.length).toBeGreaterThan(20);
    expect(citations).toContainEqual(expect.objectContaining({ doc: 'docs/ARCHITECTURE.md', section: 'Redis layout' }));
  });

  it('names a section that exists in the document it cites, for every one', () => {
    expect(deadCitations(citations, readDoc)).toEqual([]);
  });

  it('reads headings and bold leads, not a heading inside a code block, and a section name wrapped onto the next line', () => {
    const doc = ['# Guide', '', '## Redis layout: keys', '', '**The first minute.** Before ...', '', '```yaml', '# serverless.yml', '```'].join('\n');
    const source = [
      '/** See docs/guide.md, "Redis layout" and docs/guide.md, "The first', ' * minute"; README, "Durability".', ' * docs/guide.md, "serverless.yml" */',
      '-- docs/gone.md, "Anything"',
    ].join('\n');
    const found = citationsIn('src/a.ts', source);
    expect(found.map((c) => c.section)).toEqual(['Redis layout', 'The first minute', 'Durability', 'serverless.yml', 'Anything']);
    const read = (name: string): string | undefined => ({ 'docs/guide.md': doc, 'README.md': '# kafka-lanes\n## Install\n' } as Record<string, string>)[name];
    expect(deadCitations(found, read)).toEqual([
      'src/a.ts:2: cites README.md, "Durability", which has no such section',
      'src/a.ts:3: cites docs/guide.md, "serverless.yml", which has no such section',
      'src/a.ts:4: cites docs/gone.md, which does not exist',
    ]);
  });
});
