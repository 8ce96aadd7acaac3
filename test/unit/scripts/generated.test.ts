import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import { scriptSources } from '../../../src/completion/scripts';
import { exportNameOf, generatedFiles, orphanModules, renderScriptModule, scriptFolders } from '../../../infra/build/lua-modules';

const ROOT = join(__dirname, '..', '..', '..');
const folders = scriptFolders(ROOT);
const luaFiles = folders.flatMap((folder) =>
  readdirSync(folder)
    .filter((file) => file.endsWith('.lua'))
    .map((file) => join(folder, file)),
);

describe('Lua scripts in the module graph', () => {
  it('finds every script in the one Redis-facing folder', () => {
    expect(folders.map((folder) => relative(ROOT, folder)).sort()).toEqual(['src/completion/scripts']);
  });

  it.each(folders.flatMap((folder) => generatedFiles(folder)).map((file) => [relative(ROOT, file.path), file.text]))(
    '%s is up to date with its .lua file (run `npm run build:scripts`)',
    (path, text) => {
      const file = join(ROOT, path);
      expect(existsSync(file)).toBe(true);
      expect(readFileSync(file, 'utf8')).toBe(text);
    },
  );

  it('leaves no generated module whose .lua file is gone', () => {
    expect(folders.flatMap((folder) => orphanModules(folder))).toEqual([]);
  });

  it('registers every .lua file once, with its current text', () => {
    const registered = Object.values(scriptSources);
    for (const file of luaFiles) {
      expect({ file: basename(file), count: registered.filter((lua) => lua === readFileSync(file, 'utf8')).length }).toEqual({
        file: basename(file),
        count: 1,
      });
    }
    expect(registered).toHaveLength(luaFiles.length);
  });
});

describe('renderScriptModule', () => {
  it('keeps backslashes, backticks and ${ of the Lua text', () => {
    const lua = "local s = '\\\\n `x` ${y}'\n";
    const module = renderScriptModule('odd-name-1.lua', lua);
    const body = module.slice(module.indexOf(' = `') + 3, module.lastIndexOf('`') + 1);
    // The template literal evaluates back to the exact Lua text.
    expect(new Function(`return ${body};`)()).toBe(lua);
  });

  it('names exports after the file and refuses a name without a key count', () => {
    expect(exportNameOf('extend-lease-1.lua')).toBe('extendLease1');
    expect(() => exportNameOf('advance.lua')).toThrow('Expected a Lua script named <kebab-name>-<key count>.lua, got advance.lua');
  });
});
