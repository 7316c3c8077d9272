package io.github.djlllmzoo.translators;

/**
 * Divides the logits by a temperature: below 1 sharpens the distribution, above 1 flattens it.
 * Temperature 0 is greedy decoding and never reaches this processor.
 */
public final class TemperatureProcessor implements LogitsProcessor {

    private final float temperature;

    /** @param temperature the temperature (> 0) */
    public TemperatureProcessor(float temperature) {
        if (!(temperature > 0) || Float.isInfinite(temperature)) {
            throw new IllegalArgumentException(
                    "temperature must be a finite number > 0 here (0 means greedy), got " + temperature);
        }
        this.temperature = temperature;
    }

    @Override
    public void process(long[] context, int length, float[] logits) {
        for (int i = 0; i < logits.length; i++) {
            logits[i] /= temperature;
        }
    }
}
