/**
 * Loading llama.cpp's <a href="https://github.com/ggml-org/ggml/blob/master/docs/gguf.md">GGUF</a>
 * checkpoints in pure Java: {@link io.github.djlllmzoo.zoo.gguf.GgufFile} reads the header, the
 * {@link io.github.djlllmzoo.zoo.gguf.GgufMetadata} key-values and the {@link
 * io.github.djlllmzoo.zoo.gguf.GgufTensor}s from a memory mapping, decoding each {@link
 * io.github.djlllmzoo.zoo.gguf.GgufType} to float32 a row at a time; {@link
 * io.github.djlllmzoo.zoo.gguf.GgufCheckpoint} writes the equivalent Hugging Face files (config,
 * tokenizer, chat template) once and loads the weights from the file itself; {@link
 * io.github.djlllmzoo.zoo.gguf.GgufHubFiles} downloads a repository's GGUF file by name or
 * quantization tag. A malformed or unsupported file fails with an {@link
 * io.github.djlllmzoo.zoo.gguf.InvalidGgufException} naming the file and what is at fault.
 *
 * @serial exclude
 */
package io.github.djlllmzoo.zoo.gguf;
