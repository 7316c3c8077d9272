package io.github.djlllmzoo.training;

import ai.djl.training.tracker.CosineTracker;
import ai.djl.training.tracker.Tracker;
import ai.djl.training.tracker.WarmUpTracker;

/**
 * Linear warm-up then cosine decay to zero, as Hugging Face's {@code
 * get_cosine_schedule_with_warmup}, built from DJL's {@link WarmUpTracker} and {@link
 * CosineTracker}. The tracker is indexed by the 1-based optimizer update {@code u}: {@code peak *
 * u / warmup} while {@code u < warmup}, then {@code peak * (1 + cos(pi * (u - warmup) / (steps -
 * warmup + 1))) / 2}, which would reach 0 one update after the last, so no update is wasted.
 */
public final class LearningRateSchedule {

    private LearningRateSchedule() {}

    /**
     * Creates the schedule.
     *
     * @param peak the learning rate after warm-up
     * @param warmupSteps updates of linear warm-up (0 for none)
     * @param totalSteps all updates of the run
     * @return the tracker
     * @throws IllegalArgumentException if {@code peak} is not positive or the step counts are
     *     inconsistent
     */
    public static Tracker warmupCosine(float peak, int warmupSteps, int totalSteps) {
        if (!(peak > 0) || Float.isInfinite(peak)) {
            throw new IllegalArgumentException("learning rate must be positive and finite, got " + peak);
        }
        if (warmupSteps < 0 || totalSteps < 1 || warmupSteps > totalSteps) {
            throw new IllegalArgumentException(
                    "need 0 <= warmup (" + warmupSteps + ") <= steps (" + totalSteps + ") and steps >= 1");
        }
        int decaySteps = totalSteps - warmupSteps + 1;
        Tracker cosine =
                CosineTracker.builder()
                        .setBaseValue(peak)
                        .optFinalValue(0f)
                        .setMaxUpdates(decaySteps)
                        .build();
        return WarmUpTracker.builder().setMainTracker(cosine).optWarmUpSteps(warmupSteps).build();
    }
}
