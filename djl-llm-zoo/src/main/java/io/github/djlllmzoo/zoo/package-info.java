/**
 * The library an application depends on: the DJL model zoo of this project ({@link
 * io.github.djlllmzoo.zoo.LlmModelZoo}, {@link io.github.djlllmzoo.zoo.LlmModelLoader}, the registry
 * {@link io.github.djlllmzoo.zoo.KnownModel}), so that {@code Criteria} load checkpoint directories,
 * registry names and Hugging Face ids; and {@link io.github.djlllmzoo.zoo.LocalModel}, a checkpoint
 * loaded directly with its tokenizer and generation defaults. Checkpoint weights load through
 * {@link io.github.djlllmzoo.zoo.CheckpointWeights}; LoRA adapters in Hugging Face PEFT's layout
 * through {@link io.github.djlllmzoo.zoo.PeftAdapter}.
 *
 * @serial exclude
 */
package io.github.djlllmzoo.zoo;
