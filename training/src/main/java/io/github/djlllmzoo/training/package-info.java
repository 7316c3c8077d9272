/**
 * Fine-tuning on DJL's training API: {@link io.github.djlllmzoo.training.FineTuner} trains a whole
 * model or a LoRA adapter with {@link io.github.djlllmzoo.training.CausalLmLoss} and {@link
 * io.github.djlllmzoo.training.ResumableAdamW} on {@link io.github.djlllmzoo.training.PackedTextDataset}
 * (text packed into windows) or {@link io.github.djlllmzoo.training.PromptCompletionDataset}
 * (completion tokens only), evaluates held-out {@link io.github.djlllmzoo.training.Perplexity}, and
 * saves atomic, resumable {@link io.github.djlllmzoo.training.TrainingCheckpoint}s.
 *
 * @serial exclude
 */
package io.github.djlllmzoo.training;
