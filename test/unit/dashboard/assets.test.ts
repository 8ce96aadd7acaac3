import { readFileSync } from 'node:fs';
import { ASSETS_MODULE, renderAssetsModule } from '../../../infra/build/dashboard';

describe('the dashboard front end bundle', () => {
  it('is up to date with src/dashboard/web (run `npm run build:dashboard`)', async () => {
    // Act
    const { text, js } = await renderAssetsModule();

    // Assess
    expect(readFileSync(ASSETS_MODULE, 'utf8') === text).toBe(true);
    // Served from the package: no address outside the machine in the script.
    expect(js).not.toMatch(/https?:\/\/(?!www\.w3\.org)[a-z0-9.-]+\.[a-z]{2,}\//i);
  });
});
