import { RecordEffects } from '../../../src/engine/steps';
import { resolveOptions } from '../../../src/options';
import { EffectsModel } from '../../../src/testing/effects-model';

const options = resolveOptions({ group: 'orders' }, {});
const at = { ref: { group: 'orders', topic: 'orders', partition: 0 }, offset: 5 };
const deadline = { expired: false, reason: undefined };

describe('RecordEffects.stored: the steps whose results go once the record is terminal', () => {
  it('names the steps of this run and those an earlier run stored, even ones this run did not reach', async () => {
    // Prepare: an earlier run stored `charge` and `email`, then crashed.
    const port = new EffectsModel();
    await port.saveStep(at, 'charge', '"ch_1"');
    await port.saveStep(at, 'email', '"sent"');
    const effects = new RecordEffects(port, at, 'orders', options, 60_000, deadline);

    // Act: this run takes another branch after `charge`.
    const charged = await effects.step('charge', () => 'ch_2');
    await effects.step('refund', () => 'rf_1');

    // Assess
    expect(charged).toBe('ch_1');
    expect(effects.stored).toEqual({ ...at, names: ['charge', 'refund', 'email'] });
  });

  it('names only the steps of this run for a record that never ran before', async () => {
    const effects = new RecordEffects(new EffectsModel(), at, 'orders', options, 60_000, deadline, true);
    await effects.step('charge', () => 1);
    expect(effects.stored).toEqual({ ...at, names: ['charge'] });
  });
});
