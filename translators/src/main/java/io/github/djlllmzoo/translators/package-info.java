/**
 * Tokenization and generation: {@link io.github.djlllmzoo.translators.TextTokenizer} over DJL's
 * Hugging Face tokenizers, {@link io.github.djlllmzoo.translators.GenerationConfig} and the logits
 * processors and {@link io.github.djlllmzoo.translators.Sampler} it configures, the {@link
 * io.github.djlllmzoo.translators.Generator} and {@link io.github.djlllmzoo.translators.BatchGenerator}
 * that decode with a KV cache, stop strings and incremental detokenization, and the DJL translators
 * ({@link io.github.djlllmzoo.translators.GenerationTranslatorFactory}) behind a {@code Predictor} of
 * {@link io.github.djlllmzoo.translators.GenerationRequest} to {@link
 * io.github.djlllmzoo.translators.GenerationResult} (or of {@code String} to {@code String}).
 *
 * @serial exclude
 */
package io.github.djlllmzoo.translators;
