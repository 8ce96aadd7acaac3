import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { SRC, sourceFiles, sourceImports, unitOf } from './source-tree';

/** The interfaces a class declares it implements, by the class name, in one source file. */
function implementsOf(file: string): Map<string, string[]> {
  const source = ts.createSourceFile(file, readFileSync(join(SRC, file), 'utf8'), ts.ScriptTarget.ES2022);
  const found = new Map<string, string[]>();
  for (const statement of source.statements) {
    if (!ts.isClassDeclaration(statement) || statement.name === undefined) continue;
    const clauses = statement.heritageClauses?.filter((clause) => clause.token === ts.SyntaxKind.ImplementsKeyword) ?? [];
    found.set(statement.name.text, clauses.flatMap((clause) => clause.types.map((type) => type.expression.getText(source))));
  }
  return found;
}

describe('the ports stand below their adapters', () => {
  it.each([
    ['completion/store.ts', 'CompletionStore', 'CompletionPort'],
    ['completion/effects-store.ts', 'RedisEffects', 'EffectsPort'],
    ['handoff/writer.ts', 'HandOffWriter', 'HandOffSink'],
    ['testing/completion-model.ts', 'CompletionModelStore', 'CompletionPort'],
    ['testing/effects-model.ts', 'EffectsModel', 'EffectsPort'],
  ])('%s: class %s implements %s', (file, name, port) => {
    expect(implementsOf(file).get(name)).toContain(port);
  });

  it('holds the port nouns and interfaces in ports/, which imports no folder but event/ (and the error family)', () => {
    const files = sourceFiles().filter((file) => unitOf(file) === 'ports/');
    expect(files.length).toBeGreaterThan(0);
    const outside = sourceImports()
      .filter((edge) => unitOf(edge.from) === 'ports/' && !['ports/', 'event/', 'errors.ts'].includes(unitOf(edge.to)))
      .map((edge) => `${edge.from} imports ${edge.to}`);
    expect(outside).toEqual([]);
  });

  it('lets lanes/ take its nouns from ports/, never from completion/', () => {
    const edges = sourceImports().filter((edge) => unitOf(edge.from) === 'lanes/' && unitOf(edge.to) === 'completion/');
    expect(edges).toEqual([]);
  });

  it('keeps durability/ pure rules, low enough for lanes/, source/ and retry/: it imports ports/ alone', () => {
    const edges = sourceImports()
      .filter((edge) => unitOf(edge.from) === 'durability/' && !['durability/', 'ports/'].includes(unitOf(edge.to)))
      .map((edge) => `${edge.from} imports ${edge.to}`);
    expect(edges).toEqual([]);
  });
});
