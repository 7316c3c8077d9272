/**
 * Reading and writing the <a href="https://github.com/huggingface/safetensors">safetensors</a>
 * checkpoint format: an 8-byte little-endian header length, a UTF-8 JSON header describing each
 * tensor, then the raw little-endian, row-major tensor bytes.
 *
 * <p>{@link io.github.djlllmzoo.zoo.safetensors.SafeTensorsReader} validates the whole header
 * before exposing any data and reports every format error as an {@link
 * io.github.djlllmzoo.blocks.InvalidCheckpointException} naming the file and the tensor or field at
 * fault. {@link io.github.djlllmzoo.zoo.safetensors.SafeTensorsWriter} writes files atomically.
 *
 * @serial exclude
 */
package io.github.djlllmzoo.zoo.safetensors;
